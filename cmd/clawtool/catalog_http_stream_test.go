package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestCatalogH33StreamEndsWithToken is row H33 of catalog H: a long-lived
// response outlives the token that opened it. Ann opens her session's GET
// stream (which carries the server's requests and notifications for the
// session) with a token that expires two seconds later, and keeps
// reading. A credential is checked on every request, and a stream is one
// request: the server must end it when its token expires, as it would
// refuse a new request with that token (H25). The control is the same
// stream opened with a token valid for an hour, on another of Ann's
// sessions: it is still open after the short token's stream ended, so
// what ends the stream is the token's expiry. Without the defence
// (bearer.RequireToken bounding the request by the token's exp) the
// expired stream stays open until the client leaves.
func TestCatalogH33StreamEndsWithToken(t *testing.T) {
	f := newHFix(t)

	short := f.signWith(f.claims("ann", func(c jwt.MapClaims) { c["exp"] = time.Now().Add(2 * time.Second).Unix() }), jwt.SigningMethodRS256, f.priv, nil)
	f.annSID = f.openSession(f.addr, f.token("ann"))
	attackEnd := f.openStream(f.annSID, short)
	controlEnd := f.openStream(f.openSession(f.addr, f.token("ann")), f.token("ann"))
	select {
	case err := <-attackEnd:
		if err != nil {
			t.Fatalf("attack: the stream failed instead of ending: %v", err)
		}
	case <-time.After(wait):
		t.Fatalf("attack: the GET stream still serves %v after its token expired", wait)
	}
	select {
	case err := <-controlEnd:
		t.Fatalf("control: the stream of a valid token ended too (%v): the expiry did not end the attack's", err)
	default:
	}
	// The session goes on with a fresh token: only the stream ended.
	if status, _, msg, _ := f.send(f.addr, eraSession, f.good(eraSession, "h33.txt")); status != http.StatusOK || !f.written("h33.txt") {
		t.Errorf("a call after the stream ended: %d %s", status, msg)
	}
}

// openStream opens the GET stream of session sid with token, checks that
// it is served, and returns a channel that receives nil when the server
// ends its body (or the read error); the stream is closed at the end of
// the test.
func (f *hFix) openStream(sid, token string) <-chan error {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+f.addr+serveEndpoint, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", string(eraSession))
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		f.t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	end := make(chan error, 1)
	go func() {
		defer resp.Body.Close()
		_, err := io.Copy(io.Discard, resp.Body)
		end <- err
	}()
	return end
}

// TestCatalogH35AlternateRoutes is row H35 of catalog H, kept because the
// rows of TestCatalogH all use POST /mcp: the same write_file call sent
// without a token by another method (OPTIONS, HEAD, PUT, PATCH, GET,
// DELETE) or to another spelling of the endpoint (a double slash, a
// trailing slash, another case, an escaped letter or slash, dot
// segments) never runs: /mcp answers 401 whatever the method, and every
// other spelling is not the endpoint (a redirect, which is not followed
// here, or 404), so it reaches no handler that runs tools. The control:
// the same call on POST /mcp with Ann's token runs. (Blocked when
// tried: no finding.)
func TestCatalogH35AlternateRoutes(t *testing.T) {
	f := newHFix(t)

	noRedirect := &http.Client{Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, target, token, file string) int {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"` + file +
			`","content":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, err := http.NewRequest(method, "http://"+f.addr+"/", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = "//" + f.addr + target // sent as written, not cleaned
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "write_file")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		return resp.StatusCode
	}
	i := 0
	for _, method := range []string{"POST", "OPTIONS", "HEAD", "PUT", "PATCH", "GET", "DELETE"} {
		for _, target := range []string{"/mcp", "//mcp", "/mcp/", "/MCP", "/%6dcp", "/mcp%2F", "/./mcp", "/x/../mcp", "/mcp/.", "/ui/../mcp"} {
			i++
			file := fmt.Sprintf("h35-%d.txt", i)
			before := len(auditRecords(t, f.audit))
			status := send(method, target, "", file)
			if target == "/mcp" && status != http.StatusUnauthorized {
				t.Errorf("%s %s without a token: %d, want 401", method, target, status)
			}
			if status >= 200 && status < 300 {
				t.Errorf("%s %s without a token: %d", method, target, status)
			}
			if f.written(file) || len(auditRecords(t, f.audit)) != before {
				t.Errorf("%s %s without a token: the call ran", method, target)
			}
		}
	}
	if status := send("POST", "/mcp", f.token("ann"), "h35-control.txt"); status != http.StatusOK || !f.written("h35-control.txt") {
		t.Fatalf("control: POST /mcp with Ann's token: %d", status)
	}
}
