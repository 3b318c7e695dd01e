package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
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
	dir := t.TempDir()
	f := &hFix{t: t, jti: new(atomic.Int64), ws: filepath.Join(dir, "ws"), audit: filepath.Join(dir, "audit.jsonl")}
	if err := os.Mkdir(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.priv, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&f.priv.PublicKey)
	keyFile, pol := filepath.Join(dir, "rsa.pem"), filepath.Join(dir, "writers.cedar")
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)
	os.WriteFile(pol, []byte(catPolicy), 0o600)
	f.addr = startHTTP(t, "--workspace", f.ws, "--policy", pol, "--audit", f.audit,
		"--auth-key", keyFile, "--auth-issuer", catIssuer, "--auth-audience", catAudience)

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
