package bearer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy/bearer"
)

// TestJWKSPlainHTTPRefused: a key set fetched over plain http from
// another machine travels unprotected: whoever is on the path answers
// with a set holding their own key, and signs tokens for anyone. NewJWKS
// (--auth-jwks) took any http URL before the fix (the attack rows were
// accepted), and a JWKS made by hand fetched it. Now only https, or http
// to this machine's loopback (a local authorization server, the tests'),
// is accepted; a JWKS given another http URL answers no key
// (ErrKeysUnavailable, so 503), without connecting. The controls are the
// https and loopback URLs.
func TestJWKSPlainHTTPRefused(t *testing.T) {
	for _, u := range []string{"http://as.example/jwks", "http://10.0.0.7:8080/jwks", "http://127.0.0.1.as.example/jwks", "http://[2001:db8::1]/jwks", "HTTP://as.example/jwks"} {
		t.Run("attack "+u, func(t *testing.T) {
			if _, err := bearer.NewJWKS(u); err == nil || !strings.Contains(err.Error(), "https") {
				t.Fatalf("NewJWKS(%q) = %v, want it refused, saying to use https", u, err)
			}
			// Made by hand: no key, and no connection (the URL is refused
			// before the fetch; a connection would need the network).
			_, err := (&bearer.JWKS{URL: u}).Key(context.Background(), "k", "RS256")
			if !errors.Is(err, bearer.ErrKeysUnavailable) || !strings.Contains(err.Error(), "https") {
				t.Fatalf("Key = %v, want ErrKeysUnavailable saying to use https", err)
			}
		})
	}
	for _, u := range []string{"https://as.example/jwks", "http://127.0.0.1:8080/jwks", "http://[::1]:8080/jwks", "http://localhost:8080/jwks"} {
		t.Run("control "+u, func(t *testing.T) {
			if s, err := bearer.NewJWKS(u); err != nil || s.URL != u {
				t.Fatalf("NewJWKS(%q) = %v", u, err)
			}
		})
	}
}
