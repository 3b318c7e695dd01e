package oauth_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/mcptool/oauth"
)

// refreshChildEnv makes the test binary a child of TestRefreshAcrossProcesses.
const refreshChildEnv = "CLAWTOOL_OAUTH_REFRESH_CHILD"

// TestRefreshAcrossProcesses: four processes share one FileStore whose
// access token has expired. Exactly one refresh request reaches the
// authorization server, and every process ends with the one new token:
// the FileStore's lock serialises refresh-and-save across processes, and
// the processes that wait read the saved record instead of refreshing.
// Without the lock all four refresh, and, where the authorization server
// rotates refresh tokens (a used one is refused), three are refused (and
// may overwrite the good record with a dead one). Where it does not
// rotate them (oidc-provider for a confidential client), a waiting
// process must still see that the access token changed: comparing only
// the refresh tokens let each refresh again (the end-to-end test,
// cmd/clawtool's TestOAuthE2E, saw two refreshes for three calls).
func TestRefreshAcrossProcesses(t *testing.T) {
	if os.Getenv(refreshChildEnv) != "" {
		refreshChild(t)
		return
	}
	if runtime.GOOS == "windows" {
		t.Skip("the FileStore lock is flock(2), Unix only")
	}
	for _, rotate := range []bool{true, false} {
		t.Run(fmt.Sprintf("rotating=%v", rotate), func(t *testing.T) { refreshAcrossProcesses(t, rotate) })
	}
}

func refreshAcrossProcesses(t *testing.T, rotate bool) {
	as := newFakeAS(t)
	as.keepRefresh = !rotate
	// Hold each token response a little, so the children overlap.
	as.onToken = func(url.Values) (int, any) { time.Sleep(200 * time.Millisecond); return 0, nil }
	const server = "https://mcp.example/mcp"
	dir := t.TempDir() + "/oauth"
	store := &oauth.FileStore{Dir: dir}
	rt := "rt-" + secretMark + "-first"
	as.refresh[rt] = true
	past := time.Now().Add(-time.Hour)
	if err := store.Save(t.Context(), oauth.Key{Server: server}, &oauth.Record{
		Server: server, Resource: server, Issuer: as.url(), TokenEndpoint: as.url() + "/token",
		Registration: "dynamic", ClientID: "client-1", AuthMethod: "none",
		AccessToken: "at-" + secretMark + "-first", RefreshToken: oauth.Secret(rt),
		Obtained: past, Expiry: past.Add(time.Minute),
	}); err != nil {
		t.Fatal(err)
	}
	const n = 4
	out := make([]bytes.Buffer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRefreshAcrossProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), refreshChildEnv+"="+dir+"\n"+server)
		cmd.Stdout, cmd.Stderr = &out[i], &out[i]
		cmd.WaitDelay = 10 * time.Second
		wg.Go(func() { errs[i] = cmd.Run() })
	}
	wg.Wait()
	var tokens []string
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("child %d: %v\n%s", i, errs[i], out[i].String())
		}
		_, after, ok := strings.Cut(out[i].String(), "TOKEN=")
		if !ok {
			t.Fatalf("child %d printed no token:\n%s", i, out[i].String())
		}
		tok, _, _ := strings.Cut(after, "\n")
		tokens = append(tokens, tok)
		if strings.Contains(strings.ReplaceAll(out[i].String(), "TOKEN="+tok, ""), secretMark) {
			t.Errorf("child %d logged a secret:\n%s", i, out[i].String())
		}
	}
	if _, _, _, r := as.counts(); r != 1 {
		t.Fatalf("%d refresh requests reached the authorization server from %d processes, want 1", r, n)
	}
	for i, tok := range tokens {
		if tok != tokens[0] || !as.valid(tok) || strings.Contains(tok, "first") {
			t.Fatalf("child %d ended with token %q; want the one refreshed token (all: %q)", i, tok, tokens)
		}
	}
	rec, err := store.Load(t.Context(), oauth.Key{Server: server})
	if err != nil || rec == nil || string(rec.AccessToken) != tokens[0] || rec.RefreshToken == "" {
		t.Fatalf("stored record after the refreshes: %v, %v", rec, err)
	}
}

// refreshChild asks for a token through a FileStore whose token has
// expired and prints it.
func refreshChild(t *testing.T) {
	dir, server, _ := strings.Cut(os.Getenv(refreshChildEnv), "\n")
	logs := &logBuffer{}
	h, err := oauth.New(oauth.Config{Server: server, Store: &oauth.FileStore{Dir: dir}, Logger: logs.logger(),
		HTTPClient: &http.Client{Timeout: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ts, _ := h.TokenSource(ctx)
	tok, err := ts.Token()
	if err != nil {
		t.Fatalf("Token: %v\n%s", err, logs)
	}
	fmt.Printf("logs: %s\nTOKEN=%s\n", logs, tok.AccessToken)
}
