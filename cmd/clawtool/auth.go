package main

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"

	"github.com/miniopenclaw/tool/policy"
)

// metadataPath is where serve --http publishes its protected-resource
// metadata (RFC 9728).
const metadataPath = "/.well-known/oauth-protected-resource"

// authFlags are serve's bearer-token settings for --http.
type authFlags struct {
	key, jwks, issuer, audience string
}

func addAuthFlags(fs *flag.FlagSet) *authFlags {
	af := &authFlags{}
	fs.StringVar(&af.key, "auth-key", "", "with --http, require JWT bearer tokens signed with the key in `FILE` (a PEM public key, or the raw HMAC secret); the token's sub and roles claims are the principal")
	fs.StringVar(&af.jwks, "auth-jwks", "", "with --http, require JWT bearer tokens signed with a key of the JSON Web Key Set at `URL` (the authorization server's jwks_uri; fetched when needed, refreshed hourly or as its Cache-Control says, and at once, at most once a minute, for a token naming a new kid)")
	fs.StringVar(&af.issuer, "auth-issuer", "", "with --auth-key or --auth-jwks, the `ISSUER` tokens must name (iss); also listed as the authorization server")
	fs.StringVar(&af.audience, "auth-audience", "", "with --auth-key or --auth-jwks, the `AUDIENCE` tokens must name (aud)")
	return af
}

// set reports whether any --auth flag was given.
func (af *authFlags) set() bool {
	return af.key != "" || af.jwks != "" || af.issuer != "" || af.audience != ""
}

// verifier returns the token verifier the flags ask for, nil without
// --auth-key and --auth-jwks.
func (af *authFlags) verifier() (*policy.JWTVerifier, error) {
	if af.key == "" && af.jwks == "" {
		if af.issuer != "" || af.audience != "" {
			return nil, errors.New("--auth-issuer and --auth-audience need --auth-key or --auth-jwks")
		}
		return nil, nil
	}
	if af.issuer == "" || af.audience == "" {
		return nil, errors.New("--auth-key and --auth-jwks need --auth-issuer and --auth-audience")
	}
	v := &policy.JWTVerifier{Issuer: af.issuer, Audience: af.audience}
	if af.jwks != "" {
		u, err := url.Parse(af.jwks)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("--auth-jwks %q: not an http or https URL", af.jwks)
		}
		v.Source = &policy.JWKS{URL: af.jwks}
	}
	if af.key == "" {
		return v, nil
	}
	data, err := os.ReadFile(af.key)
	if err != nil {
		return nil, err
	}
	var key any = data
	if block, _ := pem.Decode(data); block != nil {
		if block.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("--auth-key %s: a PEM %q block, not a public key (PEM type PUBLIC KEY)", af.key, block.Type)
		}
		if key, err = x509.ParsePKIXPublicKey(block.Bytes); err != nil {
			return nil, fmt.Errorf("--auth-key %s: %w", af.key, err)
		}
	} else if what := publicMaterial(data); what != "" {
		// Taken as an HMAC secret, public material would let anyone
		// sign tokens (algorithm confusion): refuse it.
		return nil, fmt.Errorf("--auth-key %s: %s is public, not an HMAC secret; give a public key as PEM (PUBLIC KEY), or a secret", af.key, what)
	} else if len(data) < 32 {
		return nil, fmt.Errorf("--auth-key %s: an HMAC secret must be at least 32 bytes", af.key)
	}
	v.Keys = map[string]any{"": key}
	return v, nil
}

// publicMaterial says what public key material data is, in a form other
// than a PEM block, or "" when it is none that clawtool knows.
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

// protect puts the MCP endpoint behind bearer tokens when the flags ask
// for it, and publishes the metadata on mux; base is the server's URL.
func (af *authFlags) protect(mux *http.ServeMux, h http.Handler, base string) (http.Handler, error) {
	v, err := af.verifier()
	if err != nil || v == nil {
		return h, err
	}
	mux.Handle(metadataPath, policy.ResourceMetadata{Resource: base + serveEndpoint, AuthorizationServers: []string{af.issuer}})
	return policy.RequireToken(v, base+metadataPath)(h), nil
}
