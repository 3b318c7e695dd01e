package bearer_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/miniopenclaw/tool/policy/bearer"
)

var hmacKey = []byte("test key: 32 bytes long, at least")

func sign(t *testing.T, claims jwt.MapClaims, key any, method jwt.SigningMethod, kid string) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func claimsFor(sub string, roles ...string) jwt.MapClaims {
	return jwt.MapClaims{"sub": sub, "roles": roles, "iss": "https://issuer.test", "aud": "clawtool", "exp": time.Now().Add(time.Hour).Unix(), "tenant": "a"}
}

func verifier() *bearer.JWTVerifier {
	return &bearer.JWTVerifier{Keys: map[string]any{"": hmacKey}, Issuer: "https://issuer.test", Audience: "clawtool", AttrClaims: []string{"tenant"}}
}

func TestJWTVerifier(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	_, otherPriv, _ := ed25519.GenerateKey(nil)
	v := verifier()
	v.Keys["ed"] = pub
	expired := claimsFor("carol", "viewer")
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	noExp := claimsFor("carol", "viewer")
	delete(noExp, "exp")
	otherAud := claimsFor("carol", "viewer")
	otherAud["aud"] = "another-service"
	otherIss := claimsFor("carol", "viewer")
	otherIss["iss"] = "https://evil.test"
	tests := []struct {
		name, token string
		ok          bool
	}{
		{"hmac", sign(t, claimsFor("carol", "viewer"), hmacKey, jwt.SigningMethodHS256, ""), true},
		{"ed25519 by kid", sign(t, claimsFor("carol", "viewer"), priv, jwt.SigningMethodEdDSA, "ed"), true},
		{"forged signature", sign(t, claimsFor("carol", "viewer"), []byte("another key, 32 bytes long......"), jwt.SigningMethodHS256, ""), false},
		{"forged ed25519", sign(t, claimsFor("carol", "viewer"), otherPriv, jwt.SigningMethodEdDSA, "ed"), false},
		{"unknown kid", sign(t, claimsFor("carol", "viewer"), hmacKey, jwt.SigningMethodHS256, "nope"), false},
		{"expired", sign(t, expired, hmacKey, jwt.SigningMethodHS256, ""), false},
		{"no expiry", sign(t, noExp, hmacKey, jwt.SigningMethodHS256, ""), false},
		{"other audience", sign(t, otherAud, hmacKey, jwt.SigningMethodHS256, ""), false},
		{"other issuer", sign(t, otherIss, hmacKey, jwt.SigningMethodHS256, ""), false},
		{"alg none", sign(t, claimsFor("carol", "viewer"), jwt.UnsafeAllowNoneSignatureType, jwt.SigningMethodNone, ""), false},
		{"garbage", "not.a.token", false},
		{"crit", signCrit(t, claimsFor("carol", "viewer")), false},
		{"huge", strings.Repeat("a", 20000), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := v.VerifyToken(context.Background(), tt.token)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok %v", err, tt.ok)
			}
			if tt.ok && (p.ID != "carol" || !slices.Equal(p.Roles, []string{"viewer"}) || p.Attrs["tenant"] != "a") {
				t.Errorf("principal = %+v", p)
			}
		})
	}
}

// signCrit signs claims with hmacKey and a header naming a critical
// extension.
func signCrit(t *testing.T, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	tok.Header["crit"] = []string{"b64"}
	tok.Header["b64"] = true
	s, err := tok.SignedString(hmacKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRequireTokenRefusals: a request with two Authorization headers is
// refused with 400 whatever they hold (the control: either alone is
// let through), and a token whose key cannot be fetched gets 503, not
// 401 and never the next handler.
func TestRequireTokenRefusals(t *testing.T) {
	ran := 0
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran++ })
	good := sign(t, claimsFor("carol", "viewer"), hmacKey, jwt.SigningMethodHS256, "")
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusBadGateway) }))
	defer down.Close()
	v := verifier()
	v.Source = &bearer.JWKS{URL: down.URL}
	h := bearer.RequireToken(v, "http://meta.test")(next)
	do := func(auth ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/mcp", nil)
		for _, a := range auth {
			r.Header.Add("Authorization", a)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := do("Bearer " + good); w.Code != http.StatusOK || ran != 1 {
		t.Fatalf("control: %d, ran %d", w.Code, ran)
	}
	for _, auth := range [][]string{{"Bearer " + good, "Bearer " + good}, {"Bearer x", "Bearer " + good}, {"Bearer " + good, ""}} {
		w := do(auth...)
		if ch := w.Header().Get("WWW-Authenticate"); w.Code != http.StatusBadRequest || !strings.Contains(ch, `error="invalid_request"`) {
			t.Errorf("%d Authorization headers: %d %q", len(auth), w.Code, ch)
		}
	}
	withKid := sign(t, claimsFor("carol", "viewer"), hmacKey, jwt.SigningMethodHS256, "rotated")
	for range 2 { // the first fetch fails, the second is not due yet: both unavailable
		w := do("Bearer " + withKid)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Errorf("key set down: %d %v", w.Code, w.Header())
		}
	}
	if _, err := v.VerifyToken(context.Background(), withKid); !errors.Is(err, bearer.ErrKeysUnavailable) || errors.Is(err, bearer.ErrInvalidToken) {
		t.Errorf("VerifyToken with the key set down: %v", err)
	}
	if ran != 1 {
		t.Errorf("the next handler ran %d times", ran)
	}
}
