package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"

	"github.com/miniopenclaw/tool/policy/bearer"
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
	fs.StringVar(&af.jwks, "auth-jwks", "", "with --http, require JWT bearer tokens signed with a key of the JSON Web Key Set at `URL` (the authorization server's jwks_uri, https, or http to this machine's loopback only; fetched when needed, refreshed hourly or as its Cache-Control says, and at once, at most once a minute, for a token naming a new kid)")
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
func (af *authFlags) verifier() (*bearer.JWTVerifier, error) {
	if af.key == "" && af.jwks == "" {
		if af.issuer != "" || af.audience != "" {
			return nil, errors.New("--auth-issuer and --auth-audience need --auth-key or --auth-jwks")
		}
		return nil, nil
	}
	if af.issuer == "" || af.audience == "" {
		return nil, errors.New("--auth-key and --auth-jwks need --auth-issuer and --auth-audience")
	}
	v := &bearer.JWTVerifier{Issuer: af.issuer, Audience: af.audience}
	if af.jwks != "" {
		src, err := bearer.NewJWKS(af.jwks)
		if err != nil {
			return nil, fmt.Errorf("--auth-jwks %q: %w", af.jwks, err)
		}
		v.Source = src
	}
	if af.key != "" {
		key, err := bearer.ReadKeyFile(af.key)
		if err != nil {
			return nil, fmt.Errorf("--auth-key: %w", err)
		}
		v.Keys = map[string]any{"": key}
	}
	return v, nil
}

// protect puts the MCP endpoint behind bearer tokens when the flags ask
// for it, and publishes the metadata on mux; base is the server's URL.
func (af *authFlags) protect(mux *http.ServeMux, h http.Handler, base string) (http.Handler, error) {
	v, err := af.verifier()
	if err != nil || v == nil {
		return h, err
	}
	mux.Handle(metadataPath, bearer.ResourceMetadata{Resource: base + serveEndpoint, AuthorizationServers: []string{af.issuer}})
	return bearer.RequireToken(v, base+metadataPath)(h), nil
}
