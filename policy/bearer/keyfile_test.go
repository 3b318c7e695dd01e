package bearer_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy/bearer"
)

// TestParseKeyPublicMaterialIsNoSecret: ParseKey takes data that is not
// a PEM key as an HMAC secret. A public key in another form (DER, a JWK,
// an OpenSSH line, a PEM block that is not a public key) is public: taken
// as a secret, anyone could sign HS256 tokens with it (algorithm
// confusion). Such a file is refused. Controls: a PEM public key and a
// random secret are accepted.
func TestParseKeyPublicMaterialIsNoSecret(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(nil)
	der, _ := x509.MarshalPKIXPublicKey(pub)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	pkcs1 := x509.MarshalPKCS1PublicKey(&rsaKey.PublicKey)
	jwk, _ := json.Marshal(map[string]string{"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(pub)})
	secret := make([]byte, 48)
	rand.Read(secret)
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"control: PEM public key", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), true},
		{"control: random secret", secret, true},
		{"control: printable secret", []byte("a secret of at least thirty-two bytes"), true},
		{"DER public key", der, false},
		{"PKCS #1 DER RSA public key", pkcs1, false},
		{"JWK", jwk, false},
		{"JWK set", []byte(`{"keys":[` + string(jwk) + `]}`), false},
		{"OpenSSH public key", []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host\n"), false},
		{"PEM that is not a public key", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not a certificate, but long enough")}), false},
		{"PEM after text", append([]byte("key:\n"), pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: pkcs1})...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := bearer.ParseKey(tc.data)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseKey: %v, want ok %v", err, tc.ok)
			}
			if !tc.ok {
				if !strings.Contains(err.Error(), "public key") {
					t.Errorf("the refusal does not say why: %v", err)
				}
				return
			}
			if _, isSecret := key.([]byte); isSecret != (tc.name != "control: PEM public key") {
				t.Errorf("key %T", key)
			}
		})
	}
}

// TestReadKeyFile reads a PEM public key and a secret from files, and
// names the file in a refusal.
func TestReadKeyFile(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(nil)
	der, _ := x509.MarshalPKIXPublicKey(pub)
	dir := t.TempDir()
	pemFile, short := filepath.Join(dir, "key.pem"), filepath.Join(dir, "short")
	os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)
	os.WriteFile(short, []byte("too short"), 0o600)
	if key, err := bearer.ReadKeyFile(pemFile); err != nil || !pub.Equal(key) {
		t.Errorf("PEM file: %v %T", err, key)
	}
	if _, err := bearer.ReadKeyFile(short); err == nil || !strings.Contains(err.Error(), short) || !strings.Contains(err.Error(), "at least 32 bytes") {
		t.Errorf("short secret: %v", err)
	}
	if _, err := bearer.ReadKeyFile(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

// TestNewJWKS refuses a key set URL that is not http or https.
func TestNewJWKS(t *testing.T) {
	for _, u := range []string{"file:///etc/keys", "https://", "keys.json", "ftp://as.test/jwks"} {
		if _, err := bearer.NewJWKS(u); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
	for _, u := range []string{"https://as.test/jwks", "http://127.0.0.1:8080/jwks"} {
		if s, err := bearer.NewJWKS(u); err != nil || s.URL != u {
			t.Errorf("%q: %v", u, err)
		}
	}
}

// TestReadKeyFileBounded: --auth-key named a file read whole, so
// /dev/zero (or a pipe that is never closed) kept `clawtool serve` reading
// into memory without end. The control reads past the bound from
// /dev/zero, which never ends; ReadKeyFile now refuses it as a device
// before reading, and stops a regular file at MaxKeyFileBytes, saying why.
func TestReadKeyFileBounded(t *testing.T) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.ReadFull(f, make([]byte, bearer.MaxKeyFileBytes+1))
	f.Close()
	if err != nil || n != bearer.MaxKeyFileBytes+1 {
		t.Fatalf("control: /dev/zero gave %d bytes: %v", n, err)
	}
	if _, err := bearer.ReadKeyFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadKeyFile(/dev/zero) = %v, want refused as a device", err)
	}
	long := filepath.Join(t.TempDir(), "long.key")
	if err := os.WriteFile(long, bytes.Repeat([]byte("k"), bearer.MaxKeyFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bearer.ReadKeyFile(long); err == nil || !strings.Contains(err.Error(), "MaxKeyFileBytes") {
		t.Errorf("ReadKeyFile of %d bytes = %v, want refused past the bound", bearer.MaxKeyFileBytes+1, err)
	}
}
