//go:build unix

package bearer_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy/bearer"
)

// TestReadKeyFileSecretPrivate is an attack on --auth-key: an HMAC secret
// signs tokens as well as it verifies them, so a secret file that other
// users of the machine may read lets any of them mint a token for any
// principal and role (ReadKeyFile took it). A secret is refused unless
// only its owner, the server's user, may read it; a public key, which
// signs nothing, may be readable by all. The controls are the same
// secret at mode 0600, and a public key at 0644.
func TestReadKeyFileSecretPrivate(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(nil)
	der, _ := x509.MarshalPKIXPublicKey(pub)
	secret := []byte("0123456789abcdef0123456789abcdef-secret")
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		data   []byte
		mode   os.FileMode
		refuse bool
	}{
		{"secret 0600 (control)", secret, 0o600, false},
		{"secret 0400 (control)", secret, 0o400, false},
		{"secret 0644", secret, 0o644, true},
		{"secret 0640", secret, 0o640, true},
		{"secret 0604", secret, 0o604, true},
		{"secret 0620", secret, 0o620, true},
		{"public key 0644 (control)", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(dir, strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(tc.name))
			if err := os.WriteFile(name, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(name, tc.mode); err != nil {
				t.Fatal(err)
			}
			_, err := bearer.ReadKeyFile(name)
			switch {
			case tc.refuse && (err == nil || !strings.Contains(err.Error(), "other users") || !strings.Contains(err.Error(), name)):
				t.Errorf("ReadKeyFile = %v, want it refused, naming the file and saying other users may use it", err)
			case !tc.refuse && err != nil:
				t.Errorf("ReadKeyFile = %v", err)
			}
		})
	}
	// A secret of another user's (chown needs root).
	if os.Geteuid() == 0 {
		name := filepath.Join(dir, "theirs")
		os.WriteFile(name, secret, 0o600)
		if err := os.Chown(name, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := bearer.ReadKeyFile(name); err == nil || !strings.Contains(err.Error(), "another user") {
			t.Errorf("a secret another user owns: %v, want it refused", err)
		}
	}
}
