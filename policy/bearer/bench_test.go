package bearer_test

import (
	"context"
	"crypto/ed25519"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/miniopenclaw/tool/policy/bearer"
)

// BenchmarkJWKSVerify measures VerifyToken with a static key and, in the
// same run, with the key from a JWKS already fetched, and reports the
// ratio: what the key source adds once its set is cached.
func BenchmarkJWKSVerify(b *testing.B) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	srv := &jwksServer{}
	srv.set(keySet(edJWK("k", pub)))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	static := &bearer.JWTVerifier{Keys: map[string]any{"k": pub}, Issuer: "https://issuer.test", Audience: "clawtool"}
	fetched := jwksVerifier(&bearer.JWKS{URL: hs.URL})
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claimsFor("ann", "viewer"))
	tok.Header["kid"] = "k"
	s, err := tok.SignedString(priv)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	run := func(v *bearer.JWTVerifier) time.Duration {
		start := time.Now()
		for range b.N {
			if _, err := v.VerifyToken(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	run(fetched) // fetch the set once, outside the measure
	b.ReportAllocs()
	base := run(static)
	with := run(fetched)
	if n := srv.requests.Load(); n != 1 {
		b.Fatalf("%d fetches, want 1", n)
	}
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "static-ns/op")
	b.ReportMetric(float64(with.Nanoseconds())/float64(b.N), "jwks-ns/op")
	b.ReportMetric(float64(with)/float64(base), "ratio")
}
