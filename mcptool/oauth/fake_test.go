package oauth_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/miniopenclaw/tool/mcptool/oauth"
)

// secretMark is in every token and secret the fake servers issue, so a
// test can look for it in logs and errors.
const secretMark = "SECRETVALUE"

// fakeAS is an authorization server for the tests: it serves RFC 8414
// metadata, dynamic registration, an authorization endpoint that
// approves at once (redirecting the user agent to the redirect URI) and
// a token endpoint. Its hooks let a test make it misbehave.
type fakeAS struct {
	srv  *httptest.Server
	name string // the origin it is known by, when not its listener's (https://NAME)

	mu        sync.Mutex
	meta      map[string]any // metadata overrides; nil values delete
	authReqs  []url.Values
	tokenReqs []url.Values
	regReqs   []map[string]any
	refreshes int
	issued    []string // access tokens
	refresh   map[string]bool
	clientIDs []string

	// Hooks; nil means the honest behaviour.
	onMeta      func(w http.ResponseWriter, r *http.Request) bool // true: handled
	onRegister  func(body map[string]any) (int, any)
	onAuthorize func(q url.Values, redirect *url.URL) // may change the redirect
	onToken     func(form url.Values) (int, any)      // nil result: honest
	expiresIn   int
	keepRefresh bool // refreshes answer with the same refresh token (no rotation)
	grantScope  string
	tokenType   string
	accessToken func() string
}

func newFakeAS(t *testing.T) *fakeAS {
	as := &fakeAS{meta: map[string]any{}, refresh: map[string]bool{}, expiresIn: 3600}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", as.serveMeta)
	mux.HandleFunc("/register", as.serveRegister)
	mux.HandleFunc("/authorize", as.serveAuthorize)
	mux.HandleFunc("/token", as.serveToken)
	mux.HandleFunc("/revoke", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		as.mu.Lock()
		delete(as.refresh, r.PostForm.Get("token"))
		as.mu.Unlock()
	})
	as.srv = httptest.NewServer(mux)
	t.Cleanup(as.srv.Close)
	return as
}

func (as *fakeAS) url() string {
	if as.name != "" {
		return as.name
	}
	return as.srv.URL
}

func (as *fakeAS) metadata() map[string]any {
	m := map[string]any{
		"issuer":                                as.url(),
		"authorization_endpoint":                as.url() + "/authorize",
		"token_endpoint":                        as.url() + "/token",
		"registration_endpoint":                 as.url() + "/register",
		"revocation_endpoint":                   as.url() + "/revoke",
		"response_types_supported":              []string{"code"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic"},
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	for k, v := range as.meta {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

func (as *fakeAS) serveMeta(w http.ResponseWriter, r *http.Request) {
	if as.onMeta != nil && as.onMeta(w, r) {
		return
	}
	writeJSON(w, 200, as.metadata())
}

func (as *fakeAS) serveRegister(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	as.mu.Lock()
	as.regReqs = append(as.regReqs, body)
	id := fmt.Sprintf("client-%d", len(as.regReqs))
	as.clientIDs = append(as.clientIDs, id)
	as.mu.Unlock()
	if as.onRegister != nil {
		code, v := as.onRegister(body)
		writeJSON(w, code, v)
		return
	}
	writeJSON(w, 201, map[string]any{"client_id": id, "redirect_uris": body["redirect_uris"], "token_endpoint_auth_method": "none"})
}

func (as *fakeAS) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.mu.Lock()
	as.authReqs = append(as.authReqs, q)
	as.mu.Unlock()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", 400)
		return
	}
	rq := redirect.Query()
	rq.Set("code", "code-"+q.Get("code_challenge"))
	rq.Set("state", q.Get("state"))
	redirect.RawQuery = rq.Encode()
	if as.onAuthorize != nil {
		as.onAuthorize(q, redirect)
	}
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (as *fakeAS) serveToken(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	form := r.PostForm
	if u, p, ok := r.BasicAuth(); ok {
		form.Set("basic_client_id", u)
		form.Set("basic_client_secret", p)
	}
	as.mu.Lock()
	as.tokenReqs = append(as.tokenReqs, form)
	as.mu.Unlock()
	if as.onToken != nil {
		if code, v := as.onToken(form); v != nil {
			writeJSON(w, code, v)
			return
		}
	}
	switch form.Get("grant_type") {
	case "authorization_code":
	case "refresh_token":
		as.mu.Lock()
		ok := as.refresh[form.Get("refresh_token")]
		if !as.keepRefresh {
			delete(as.refresh, form.Get("refresh_token")) // rotated
		}
		as.refreshes++
		as.mu.Unlock()
		if !ok {
			writeJSON(w, 400, map[string]any{"error": "invalid_grant", "error_description": "unknown refresh token"})
			return
		}
	default:
		writeJSON(w, 400, map[string]any{"error": "unsupported_grant_type"})
		return
	}
	at := "at-" + secretMark + "-" + rand.Text()
	if as.accessToken != nil {
		at = as.accessToken()
	}
	rt := "rt-" + secretMark + "-" + rand.Text()
	if as.keepRefresh && form.Get("grant_type") == "refresh_token" {
		rt = form.Get("refresh_token")
	}
	as.mu.Lock()
	as.issued = append(as.issued, at)
	as.refresh[rt] = true
	as.mu.Unlock()
	tt := as.tokenType
	if tt == "" {
		tt = "Bearer"
	}
	resp := map[string]any{"access_token": at, "token_type": tt, "refresh_token": rt, "expires_in": as.expiresIn}
	if as.grantScope != "" {
		resp["scope"] = as.grantScope
	}
	writeJSON(w, 200, resp)
}

func (as *fakeAS) valid(token string) bool {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Contains(as.issued, token)
}

func (as *fakeAS) counts() (auth, token, reg, refresh int) {
	as.mu.Lock()
	defer as.mu.Unlock()
	return len(as.authReqs), len(as.tokenReqs), len(as.regReqs), as.refreshes
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// fakeRS is a protected MCP endpoint at /mcp that wants tokens of its AS.
type fakeRS struct {
	srv  *httptest.Server
	as   *fakeAS
	name string // the origin it is known by, when not its listener's

	mu        sync.Mutex
	prm       func(base string) any // the protected resource metadata
	challenge func(base string) string
	// need returns the scope a request with token lacks, "" if none.
	need  func(token string) string
	calls int
	okays int
}

func newFakeRS(t *testing.T, as *fakeAS) *fakeRS {
	rs := &fakeRS{as: as}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		if rs.prm == nil {
			writeJSON(w, 200, map[string]any{"resource": rs.url(), "authorization_servers": []string{as.url()}})
			return
		}
		writeJSON(w, 200, rs.prm(rs.base()))
	})
	mux.HandleFunc("/mcp", rs.serve)
	rs.srv = httptest.NewServer(mux)
	t.Cleanup(rs.srv.Close)
	return rs
}

func (rs *fakeRS) url() string { return rs.base() + "/mcp" }

// base is the origin the resource is known by.
func (rs *fakeRS) base() string {
	if rs.name != "" {
		return rs.name
	}
	return rs.srv.URL
}

func (rs *fakeRS) serve(w http.ResponseWriter, r *http.Request) {
	rs.mu.Lock()
	rs.calls++
	rs.mu.Unlock()
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	challenge := fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, rs.base())
	if rs.challenge != nil {
		challenge = rs.challenge(rs.base())
	}
	if tok == "" || !rs.as.valid(tok) {
		w.Header().Set("WWW-Authenticate", challenge)
		http.Error(w, "unauthorized", 401)
		return
	}
	if rs.need != nil {
		if s := rs.need(tok); s != "" {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, s, rs.base()))
			http.Error(w, "forbidden", 403)
			return
		}
	}
	rs.mu.Lock()
	rs.okays++
	rs.mu.Unlock()
	io.WriteString(w, "ok")
}

// userAgent is the test's user: it fetches the authorization URL and
// follows the redirects, to the Loopback's port, approving everything.
func userAgent(opened *int) func(ctx context.Context, authURL string) error {
	return func(ctx context.Context, authURL string) error {
		if opened != nil {
			*opened++
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil
	}
}

// call sends a request to rs the way the go-sdk transport does: the
// token source's token, and on 401 or 403 one Authorize and one retry.
func call(ctx context.Context, h *oauth.Handler, target string) error {
	return callWith(ctx, h, http.DefaultClient, target)
}

// callWith is call through client.
func callWith(ctx context.Context, h *oauth.Handler, client *http.Client, target string) error {
	do := func() (*http.Request, *http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader([]byte("{}")))
		ts, err := h.TokenSource(ctx)
		if err != nil {
			return nil, nil, err
		}
		tok, err := ts.Token()
		if err != nil {
			return nil, nil, err
		}
		if tok != nil {
			req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		}
		resp, err := client.Do(req)
		return req, resp, err
	}
	req, resp, err := do()
	if err != nil {
		return err
	}
	if resp.StatusCode == 401 || resp.StatusCode == 403 {
		if err := h.Authorize(ctx, req, resp); err != nil {
			return err
		}
		if _, resp, err = do(); err != nil {
			return err
		}
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// logBuffer collects what a Handler logs, at every level.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
