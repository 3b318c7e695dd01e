package bearer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/miniopenclaw/tool/policy"
	"github.com/miniopenclaw/tool/policy/bearer"
)

// plainVerifier hides the expiry a JWTVerifier reports: RequireToken
// without the defence of catalog row H33.
type plainVerifier struct{ v *bearer.JWTVerifier }

func (p plainVerifier) VerifyToken(ctx context.Context, token string) (policy.Principal, error) {
	return p.v.VerifyToken(ctx, token)
}

// TestRequireTokenEndsRequestAtExpiry is the unit form of catalog row H33
// (cmd/clawtool/catalog_http_stream_test.go): a request that lasts, like
// an event stream, ends when the token that let it in expires (its exp
// plus the verifier's leeway), on the fake clock of a synctest bubble.
// The control hides the expiry from RequireToken: the same request is
// still served an hour after the token expired.
func TestRequireTokenEndsRequestAtExpiry(t *testing.T) {
	for _, tc := range []struct {
		name   string
		leeway time.Duration
		plain  bool // the control: RequireToken without the expiry
	}{
		{name: "exp", leeway: 0},
		{name: "exp plus leeway", leeway: 30 * time.Second},
		{name: "control: expiry not reported", plain: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				c := claimsFor("carol", "viewer")
				c["exp"] = start.Add(10 * time.Second).Unix()
				tok := sign(t, c, hmacKey, jwt.SigningMethodHS256, "")
				v := verifier()
				v.Leeway = tc.leeway
				var tv bearer.TokenVerifier = v
				if tc.plain {
					tv = plainVerifier{v}
				}
				var served time.Duration
				stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					// Serve until the request ends, or for two hours.
					select {
					case <-r.Context().Done():
					case <-time.After(2 * time.Hour):
					}
					served = time.Since(start)
				})
				r := httptest.NewRequest("GET", "/mcp", nil)
				r.Header.Set("Authorization", "Bearer "+tok)
				w := httptest.NewRecorder()
				bearer.RequireToken(tv, "http://meta.test")(stream).ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					t.Fatalf("status %d: %s", w.Code, w.Body)
				}
				want := 10*time.Second + tc.leeway
				if tc.plain {
					want = 2 * time.Hour
				}
				if served != want {
					t.Errorf("served for %v, want %v", served, want)
				}
			})
		})
	}
}

// TestVerifyTokenUntil: the time a JWTVerifier reports is the token's
// exp plus Leeway, and with Now set, the time Now leaves, from time.Now.
func TestVerifyTokenUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		c := claimsFor("carol", "viewer")
		c["exp"] = now.Add(time.Hour).Unix()
		tok := sign(t, c, hmacKey, jwt.SigningMethodHS256, "")
		v := verifier()
		v.Leeway = time.Minute
		if _, until, err := v.VerifyTokenUntil(context.Background(), tok); err != nil || !until.Equal(now.Add(time.Hour+time.Minute)) {
			t.Errorf("until = %v, %v; want %v", until, err, now.Add(time.Hour+time.Minute))
		}
		v.Now = func() time.Time { return now.Add(30 * time.Minute) } // a clock 30 min ahead
		if _, until, err := v.VerifyTokenUntil(context.Background(), tok); err != nil || !until.Equal(now.Add(31*time.Minute)) {
			t.Errorf("until with Now = %v, %v; want %v", until, err, now.Add(31*time.Minute))
		}
	})
}
