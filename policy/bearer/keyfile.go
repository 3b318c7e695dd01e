package bearer

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/miniopenclaw/tool/internal/regularfile"
	"io"
	"net"
	"net/url"
)

// minSecretBytes is the least length of an HMAC secret [ParseKey] takes.
const minSecretBytes = 32

// MaxKeyFileBytes bounds a key file [ReadKeyFile] reads: a longer one
// (or one without end, such as /dev/zero or a pipe that is never
// closed) is refused after that many bytes.
const MaxKeyFileBytes = 1 << 20

// ReadKeyFile reads the file name and returns the key in it, as
// [ParseKey] reads it, for a [JWTVerifier]'s Keys. A parse error names
// the file. On Unix an HMAC secret is refused unless its file is the
// process's user's and no other user may read or write it (mode 0600 or
// 0400): anyone who can read the secret can sign tokens with it. A public
// key is refused when users other than its owner may write it, or its
// owner is neither the process's user nor root: whoever may write it can
// put their own key there. Both are judged on the file opened, so a
// symbolic link is judged by its target. A file that is not a regular
// file (a named pipe, a device, a socket) is refused without waiting on
// it, and one longer than [MaxKeyFileBytes] without reading further.
func ReadKeyFile(name string) (any, error) {
	// A named pipe blocked serve's start until someone wrote a key into
	// it; a device was read to the bound. Only a regular file holds a key,
	// opened without waiting and judged as opened.
	f, _, err := regularfile.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxKeyFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxKeyFileBytes {
		return nil, fmt.Errorf("%s: longer than %d bytes (MaxKeyFileBytes): not a key file", name, MaxKeyFileBytes)
	}
	key, err := ParseKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	check := checkPublicKeyFile
	if _, secret := key.([]byte); secret {
		// A secret signs tokens as well as it verifies them: one that
		// others may read or write lets them sign for anyone.
		check = checkSecretFile
	}
	if err := check(f); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return key, nil
}

// ParseKey returns the verification key data holds: the public key of a
// PEM block of type PUBLIC KEY (*rsa.PublicKey, *ecdsa.PublicKey or
// ed25519.PublicKey), or else data itself as an HMAC secret ([]byte) of at
// least 32 bytes. Data that holds public key material in any other form
// (DER, PKCS #1, a certificate, a JSON Web Key or key set, an OpenSSH
// line, a PEM block of another type or that does not decode) is refused:
// taken as an HMAC secret, it would let anyone who has the public key sign
// tokens (algorithm confusion).
func ParseKey(data []byte) (any, error) {
	if block, _ := pem.Decode(data); block != nil {
		if block.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("a PEM %q block, not a public key (PEM type PUBLIC KEY)", block.Type)
		}
		return x509.ParsePKIXPublicKey(block.Bytes)
	}
	if what := publicMaterial(data); what != "" {
		return nil, fmt.Errorf("%s is public, not an HMAC secret; give a public key as PEM (PUBLIC KEY), or a secret", what)
	}
	if len(data) < minSecretBytes {
		return nil, fmt.Errorf("an HMAC secret must be at least %d bytes", minSecretBytes)
	}
	return data, nil
}

// publicMaterial says what public key material data is, in a form other
// than a PEM block, or "" when it is none that ParseKey knows.
func publicMaterial(data []byte) string {
	text := bytes.TrimSpace(data)
	switch {
	case bytes.Contains(data, []byte("-----BEGIN")):
		return "PEM text that does not decode, holding a public key or certificate"
	case len(text) > 0 && text[0] == '{' && json.Valid(text):
		return "JSON (a JSON Web Key or key set) holding a public key"
	case bytes.HasPrefix(text, []byte("ssh-")), bytes.HasPrefix(text, []byte("ecdsa-sha2-")), bytes.HasPrefix(text, []byte("sk-ssh-")), bytes.HasPrefix(text, []byte("sk-ecdsa-")):
		return "an OpenSSH public key"
	}
	if _, err := x509.ParsePKIXPublicKey(data); err == nil {
		return "a DER public key"
	}
	if _, err := x509.ParsePKCS1PublicKey(data); err == nil {
		return "a PKCS #1 DER public key"
	}
	if _, err := x509.ParseCertificate(data); err == nil {
		return "a DER certificate, holding a public key"
	}
	return ""
}

// NewJWKS returns a [JWKS] that fetches the key set at rawURL, or an
// error when rawURL is not an absolute https URL with a host, or an http
// URL of this machine's loopback (see [JWKS]).
func NewJWKS(rawURL string) (*JWKS, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("not an http or https URL")
	}
	if err := protectedURL(u); err != nil {
		return nil, err
	}
	return &JWKS{URL: rawURL}, nil
}

// protectedURL refuses a key set URL whose answer could be changed on
// its way: one that is neither https nor http to this machine's
// loopback. Over plain http, whoever is on the path answers with a set
// holding their own key.
func protectedURL(u *url.URL) error {
	if u.Scheme == "https" {
		return nil
	}
	if h := u.Hostname(); u.Scheme == "http" && (h == "localhost" || net.ParseIP(h).IsLoopback()) {
		return nil
	}
	return fmt.Errorf("%s is fetched without protection: whoever is on its path could answer with their own key; use https (plain http only to this machine's loopback)", u.Redacted())
}
