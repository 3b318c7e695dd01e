package bearer_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/miniopenclaw/tool/policy/bearer"
)

// TestJWKSKeyPurpose: a published key the set does not give for
// verifying signatures. A key whose "key_ops" lacks "verify" (an
// encryption key: ["encrypt","wrapKey"]) was used to verify tokens, since
// only "use" was read; and a key whose members JSON parsers read apart
// ("use":"enc" beside "USE":"sig", two "use" members: the set was read
// case-insensitively, the last kept) was read as a signing key. A token
// signed with such a key's private half (by whoever holds it for
// decryption, or through a decryption oracle) was accepted before the
// fix: the attack rows verified. Such keys are now skipped, saying why;
// the controls are the same key with "key_ops":["verify"], and with
// "use":"sig" alone, which verify.
func TestJWKSKeyPurpose(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	member := func(kid, extra string) string {
		m := rsaJWK(kid, "", &key.PublicKey)
		b, _ := json.Marshal(m)
		if extra == "" {
			return string(b)
		}
		return strings.TrimSuffix(string(b), "}") + "," + extra + "}"
	}
	body := `{"keys":[` + strings.Join([]string{
		member("verify", `"key_ops":["verify"]`),
		member("sig", `"use":"sig"`),
		member("encrypt", `"key_ops":["encrypt","wrapKey"]`),
		member("empty-ops", `"key_ops":[]`),
		member("case", `"use":"enc","USE":"sig"`),
		member("twice", `"use":"enc","use":"sig"`),
		member("kid-twice", `"kid":"sig2"`),
	}, ",") + `]}`
	srv := &jwksServer{}
	srv.set([]byte(body))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	src := &bearer.JWKS{URL: hs.URL}
	v := jwksVerifier(src)
	for _, tc := range []struct {
		kid string
		ok  bool
	}{
		{"verify", true}, {"sig", true},
		{"encrypt", false}, {"empty-ops", false}, {"case", false}, {"twice", false}, {"kid-twice", false}, {"sig2", false},
	} {
		t.Run(tc.kid, func(t *testing.T) {
			_, err := v.VerifyToken(context.Background(), sign(t, claimsFor("ann"), key, jwt.SigningMethodRS256, tc.kid))
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok %v; skipped: %q", err, tc.ok, src.Skipped())
			}
		})
	}
	skipped := strings.Join(src.Skipped(), "\n")
	for _, want := range []string{`"encrypt"`, `"empty-ops"`, "key_ops", `"case"`, `"twice"`} {
		if !strings.Contains(skipped, want) {
			t.Errorf("skipped reasons lack %q:\n%s", want, skipped)
		}
	}
}
