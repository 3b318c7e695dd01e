package oauth_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/mcptool/oauth"
)

// TestMixUpWithoutIss is the mix-up attack (RFC 9700 §4.4) on an
// authorization server that does not send iss (RFC 9207). The user logged
// in to an honest server R at its authorization server H. A malicious
// MCP server S names its own authorization server E; E sends the user
// agent on to H with the client's state, PKCE challenge and redirect,
// but H's client ID and the redirect path H registered. H, asked by its
// own client, approves; its code comes back to the loopback, and the
// client would exchange it, with the PKCE verifier, at E: E then holds
// H's code and its verifier, which redeem at H for a token of the user's
// (a public client needs nothing else). The defence: a dynamically
// registered client's redirect URI names its authorization server (a
// path of its own under the Loopback's), and the Loopback takes only the
// redirect the authorization request named, so H's answer, sent to H's
// path, is not taken for E's. The control: the same servers, E honest,
// log in.
func TestMixUpWithoutIss(t *testing.T) {
	for _, attack := range []bool{false, true} {
		h := newFakeAS(t)
		r := newFakeRS(t, h)
		e := newFakeAS(t)
		s := newFakeRS(t, e)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()

		// The user's earlier login to R: H registered a client for it.
		lbR := &oauth.Loopback{Open: userAgent(nil)}
		defer lbR.Close()
		hR, err := oauth.New(oauth.Config{Server: r.url(), Authorizer: lbR})
		if err != nil {
			t.Fatal(err)
		}
		if err := call(ctx, hR, r.url()); err != nil {
			t.Fatalf("login to R: %v", err)
		}
		h.mu.Lock()
		regR := h.regReqs[0]["redirect_uris"].([]any)[0].(string)
		clientR := h.clientIDs[0]
		h.mu.Unlock()

		if attack {
			e.onAuthorize = func(q url.Values, redirect *url.URL) {
				// On to H, as H's own client, to H's registered path on
				// the port the client listens on now.
				now, _ := url.Parse(q.Get("redirect_uri"))
				reg, _ := url.Parse(regR)
				reg.Host = now.Host
				fwd := url.Values{}
				for k, v := range q {
					fwd[k] = v
				}
				fwd.Set("client_id", clientR)
				fwd.Set("redirect_uri", reg.String())
				u, _ := url.Parse(h.url() + "/authorize")
				u.RawQuery = fwd.Encode()
				*redirect = *u
			}
		}
		lbS := &oauth.Loopback{Open: userAgent(nil)}
		defer lbS.Close()
		hS, err := oauth.New(oauth.Config{Server: s.url(), Authorizer: lbS})
		if err != nil {
			t.Fatal(err)
		}
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		err = call(actx, hS, s.url())
		acancel()
		if !attack {
			if err != nil {
				t.Fatalf("control (E honest): %v", err)
			}
			continue
		}
		_, tokens, _, _ := e.counts()
		var got []string
		e.mu.Lock()
		for _, f := range e.tokenReqs {
			got = append(got, fmt.Sprintf("code=%s verifier=%t", f.Get("code"), f.Get("code_verifier") != ""))
		}
		e.mu.Unlock()
		if tokens != 0 {
			t.Fatalf("E's token endpoint got H's code and its verifier: %s", strings.Join(got, "; "))
		}
		if err == nil {
			t.Fatal("the mixed-up login succeeded")
		}
		if s.okays != 0 {
			t.Errorf("S served %d requests", s.okays)
		}
	}
}
