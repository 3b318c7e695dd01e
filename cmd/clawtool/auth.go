package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"

	"github.com/miniopenclaw/tool/policy"
)

// metadataPath is where serve --http publishes its protected-resource
// metadata (RFC 9728).
const metadataPath = "/.well-known/oauth-protected-resource"

// authFlags are serve's bearer-token settings for --http.
type authFlags struct {
	key, issuer, audience string
}

func addAuthFlags(fs *flag.FlagSet) *authFlags {
	af := &authFlags{}
	fs.StringVar(&af.key, "auth-key", "", "with --http, require JWT bearer tokens signed with the key in `FILE` (a PEM public key, or the raw HMAC secret); the token's sub and roles claims are the principal")
	fs.StringVar(&af.issuer, "auth-issuer", "", "with --auth-key, the `ISSUER` tokens must name (iss); also listed as the authorization server")
	fs.StringVar(&af.audience, "auth-audience", "", "with --auth-key, the `AUDIENCE` tokens must name (aud)")
	return af
}

// verifier returns the token verifier the flags ask for, nil without --auth-key.
func (af *authFlags) verifier() (*policy.JWTVerifier, error) {
	if af.key == "" {
		if af.issuer != "" || af.audience != "" {
			return nil, errors.New("--auth-issuer and --auth-audience need --auth-key")
		}
		return nil, nil
	}
	if af.issuer == "" || af.audience == "" {
		return nil, errors.New("--auth-key needs --auth-issuer and --auth-audience")
	}
	data, err := os.ReadFile(af.key)
	if err != nil {
		return nil, err
	}
	var key any = data
	if block, _ := pem.Decode(data); block != nil {
		if key, err = x509.ParsePKIXPublicKey(block.Bytes); err != nil {
			return nil, fmt.Errorf("--auth-key %s: %w", af.key, err)
		}
	} else if len(data) < 32 {
		return nil, fmt.Errorf("--auth-key %s: an HMAC secret must be at least 32 bytes", af.key)
	}
	return &policy.JWTVerifier{Keys: map[string]any{"": key}, Issuer: af.issuer, Audience: af.audience}, nil
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
