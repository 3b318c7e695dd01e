package oauth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/mcptool/oauth"
)

// TestPreRegisteredClientBoundToIssuer: a client registered in advance
// (an ID and a secret) belongs to one authorization server (MCP
// 2026-07-28, authorization server binding). Unbound, a server naming an
// authorization server of its own at the first login got the secret at
// its token endpoint (and, where no iss is sent, the code and verifier
// of a mix-up). So a configured client ID needs Config.Issuer; the
// control: bound to the server's own authorization server, the login
// works, and bound to another, a server naming this one is refused
// before anything is sent.
func TestPreRegisteredClientBoundToIssuer(t *testing.T) {
	e := newFakeAS(t)
	s := newFakeRS(t, e)
	const secret = "cs-" + secretMark
	_, err := oauth.New(oauth.Config{Server: s.url(), Authorizer: &oauth.Loopback{Open: userAgent(nil)}, ClientID: "pre", ClientSecret: secret})
	if err == nil || !strings.Contains(err.Error(), "Issuer") {
		t.Fatalf("a client ID without an issuer: %v, want a refusal naming Issuer", err)
	}

	for _, bound := range []string{"own", "other"} {
		h := newFakeAS(t)
		issuer := e.url()
		if bound == "other" {
			issuer = h.url()
		}
		lb := &oauth.Loopback{Open: userAgent(nil)}
		defer lb.Close()
		hd, err := oauth.New(oauth.Config{Server: s.url(), Authorizer: lb, ClientID: "pre", ClientSecret: secret, Issuer: issuer})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		err = call(ctx, hd, s.url())
		cancel()
		e.mu.Lock()
		sent := len(e.tokenReqs)
		e.mu.Unlock()
		switch {
		case bound == "own" && (err != nil || sent != 1):
			t.Fatalf("bound to the server's authorization server: %v, %d token requests", err, sent)
		case bound == "other" && (err == nil || !strings.Contains(err.Error(), "configured issuer") || sent != 1):
			t.Fatalf("bound to another authorization server: %v, %d token requests (want only the control's)", err, sent)
		}
	}
}
