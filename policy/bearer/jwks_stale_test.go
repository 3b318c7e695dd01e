package bearer_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/miniopenclaw/tool/policy/bearer"
)

// TestJWKSStaleSetIsBounded is row H34 of catalog H
// (cmd/clawtool/catalog_http_test.go): the last good key set stays in force while
// refreshes fail (TestJWKSBadSetsKeepLastGood), but not forever. The
// authorization server drops a key (a leaked one) from its set, and its
// key set cannot be fetched from then on (it is down, or the attacker
// who holds the key keeps the fetch from reaching it): a token signed
// with the dropped key is refused with ErrKeysUnavailable (503) once the
// set is MaxStale past its refresh, instead of being accepted for as long
// as the fetch fails. The control is the same token within that time,
// still accepted, and a working fetch after the bound, which brings the
// keys back.
func TestJWKSStaleSetIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxStale time.Duration // 0: DefaultJWKSMaxStale
	}{
		{name: "default"},
		{name: "10 minutes", maxStale: 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pub, priv, _ := ed25519.GenerateKey(nil)
				srv := &jwksServer{}
				srv.set(keySet(edJWK("a", pub)))
				src := &bearer.JWKS{URL: "https://jwks.test/keys", Client: &http.Client{Transport: handlerTransport{srv}},
					Refresh: time.Hour, MaxStale: tc.maxStale}
				bound := tc.maxStale
				if bound == 0 {
					bound = bearer.DefaultJWKSMaxStale
				}
				v := jwksVerifier(src)
				ctx := context.Background()
				verify := func() error {
					// A fresh token each time: only the key set ages.
					_, err := v.VerifyToken(ctx, sign(t, claimsFor("ann"), priv, jwt.SigningMethodEdDSA, "a"))
					return err
				}
				if err := verify(); err != nil {
					t.Fatal(err)
				}
				// The key is dropped, and the set cannot be fetched.
				srv.mu.Lock()
				srv.body, srv.status = []byte("down"), http.StatusInternalServerError
				srv.mu.Unlock()
				time.Sleep(time.Hour + bound - time.Second)
				if err := verify(); err != nil {
					t.Fatalf("control: within MaxStale, the last good set is in force: %v", err)
				}
				time.Sleep(time.Second)
				err := verify()
				if !errors.Is(err, bearer.ErrKeysUnavailable) || errors.Is(err, bearer.ErrInvalidToken) {
					t.Fatalf("attack: the set is %v past its refresh and the fetch fails: %v, want ErrKeysUnavailable", bound, err)
				}
				time.Sleep(24 * time.Hour)
				if err := verify(); !errors.Is(err, bearer.ErrKeysUnavailable) {
					t.Fatalf("attack, a day later: %v, want ErrKeysUnavailable", err)
				}
				// The server is back: the next fetch restores the keys.
				srv.set(keySet(edJWK("a", pub)))
				time.Sleep(bearer.DefaultJWKSMinRefresh)
				if err := verify(); err != nil {
					t.Fatalf("after the set could be fetched again: %v", err)
				}
			})
		})
	}
}
