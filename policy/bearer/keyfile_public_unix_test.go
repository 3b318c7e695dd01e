//go:build unix

package bearer_test

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/miniopenclaw/tool/policy/bearer"
)

// TestReadKeyFilePublicKeyOthersMayWrite is an attack on --auth-key with
// a public key: a public key signs nothing, so others may read it, but
// whoever may write the file puts their own public key there and then
// signs a token for any principal and role with its private key
// (ReadKeyFile took the file whatever its mode and owner, and the next
// start trusted the attacker's key). A public key file that users other
// than its owner may write, or that another user than this process's or
// root owns, is refused, judged on the file opened (a symbolic link by
// its target). Before the fix the attack rows verified the attacker's
// token; the controls are the same file at 0644 and 0600, whose
// attacker's key then verifies (what writing the file gives).
func TestReadKeyFilePublicKeyOthersMayWrite(t *testing.T) {
	attackerPub, attackerPriv, _ := ed25519.GenerateKey(nil)
	der, _ := x509.MarshalPKIXPublicKey(attackerPub)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	forged := sign(t, claimsFor("mallory", "admin"), attackerPriv, jwt.SigningMethodEdDSA, "")
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, p string) string
		refuse string // "": the key is taken
	}{
		{"control: 0644", func(t *testing.T, p string) string { return p }, ""},
		{"control: 0600", func(t *testing.T, p string) string { chmodKey(t, p, 0o600); return p }, ""},
		{"attack: others may write it", func(t *testing.T, p string) string { chmodKey(t, p, 0o646); return p }, "other users may write"},
		{"attack: the group may write it", func(t *testing.T, p string) string { chmodKey(t, p, 0o664); return p }, "other users may write"},
		{"attack: a link to a file others may write", func(t *testing.T, p string) string {
			chmodKey(t, p, 0o666)
			link := filepath.Join(t.TempDir(), "link.pem")
			if err := os.Symlink(p, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "other users may write"},
		{"attack: another user owns it", func(t *testing.T, p string) string {
			if os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			if err := os.Chown(p, 4242, 4242); err != nil {
				t.Fatal(err)
			}
			return p
		}, "another user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "auth.pem")
			if err := os.WriteFile(p, pemKey, 0o644); err != nil {
				t.Fatal(err)
			}
			chmodKey(t, p, 0o644)
			name := tc.setup(t, p)
			key, err := bearer.ReadKeyFile(name)
			if tc.refuse != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refuse) {
					t.Fatalf("ReadKeyFile = %v, want it refused: %s", err, tc.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v := verifier()
			v.Keys = map[string]any{"": key}
			if p, err := v.VerifyToken(context.Background(), forged); err != nil || p.ID != "mallory" {
				t.Fatalf("the key file's key does not verify its token: %+v, %v", p, err)
			}
		})
	}
}

func chmodKey(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}
