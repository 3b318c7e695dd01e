package mcptool_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/miniopenclaw/tool/policy/bearer"
)

// sessionPolicy lets everyone ask who they are, and writers write notes.
const sessionPolicy = `
permit (principal, action == Action::"call", resource == Tool::"whoami");
permit (principal in Role::"writer", action == Action::"call", resource == Tool::"write_note");
`

// An authServer is a Server behind bearer tokens (bearer.RequireToken with
// an HMAC JWTVerifier) and sessionPolicy, counting the calls each
// principal's tools ran.
type authServer struct {
	url    string
	srv    *mcptool.Server
	secret []byte
	mu     sync.Mutex
	ran    map[string]int // "tool principal" → calls that ran
}

func newAuthServer(t *testing.T, opts ...mcptool.ServerOption) *authServer {
	t.Helper()
	s := &authServer{secret: []byte("a test secret of at least thirty-two bytes"), ran: map[string]int{}}
	a, err := policy.New("session.cedar", []byte(sessionPolicy))
	if err != nil {
		t.Fatal(err)
	}
	r := tool.NewRegistry(tool.WithAuthorizer(a))
	count := func(name string) func(ctx context.Context, in struct{}) (string, error) {
		return func(ctx context.Context, in struct{}) (string, error) {
			p, _ := policy.PrincipalFrom(ctx)
			s.mu.Lock()
			s.ran[name+" "+p.ID]++
			s.mu.Unlock()
			return p.ID, nil
		}
	}
	r.Register(tool.Must(tool.New("whoami", "Says who calls.", count("whoami"))))
	r.Register(tool.Must(tool.New("write_note", "Writes a note.", count("write_note"))))
	opts = append(opts, mcptool.WithToolFilter(func(ctx context.Context, name string) bool {
		t, ok := r.Get(name)
		return ok && a.CanList(ctx, name, tool.OptionsOf(t))
	}))
	srv := mcptool.NewServer(r, opts...)
	t.Cleanup(func() { srv.Close() })
	v := &bearer.JWTVerifier{Keys: map[string]any{"": s.secret}, Issuer: "https://issuer.test", Audience: "mcp"}
	hs := httptest.NewServer(bearer.RequireToken(v, "http://metadata.test")(srv))
	t.Cleanup(hs.Close)
	s.url, s.srv = hs.URL, srv
	return s
}

// ranCount returns how many calls of name ran for principal.
func (s *authServer) ranCount(name, principal string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ran[name+" "+principal]
}

// ranTotal returns how many calls ran in all.
func (s *authServer) ranTotal() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.ran {
		n += c
	}
	return n
}

// token signs a token for sub with roles.
func (s *authServer) token(t *testing.T, sub string, roles ...string) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": sub, "roles": roles, "iss": "https://issuer.test", "aud": "mcp", "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString(s.secret)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// A rawCall is one HTTP request to the MCP endpoint.
type rawCall struct {
	method, token, session, version, body string
}

// send sends c to url and returns the status and the JSON-RPC message of
// the response (from a JSON body or the last event of a stream), or the
// body as text when it holds none.
func send(t *testing.T, url string, c rawCall) (int, string, http.Header) {
	t.Helper()
	method := c.method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.version != "" {
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	if method == http.MethodGet {
		// A stream that opens stays open: read what comes at once.
		ctx, cancel = context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		req = req.WithContext(ctx)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", c.body, err)
	}
	defer resp.Body.Close()
	var msg string
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id"`) {
				msg = d
				break
			}
		}
	} else {
		b, _ := io.ReadAll(resp.Body)
		msg = string(b)
	}
	return resp.StatusCode, msg, resp.Header
}

const initialize2025 = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

// openSession initializes a 2025-11-25 session with token and returns its
// id.
func openSession(t *testing.T, url, token string) string {
	t.Helper()
	status, msg, h := send(t, url, rawCall{token: token, body: initialize2025})
	sid := h.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q (session %q)", status, msg, sid)
	}
	status, msg, _ = send(t, url, rawCall{token: token, session: sid, version: "2025-11-25", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`})
	if status != http.StatusAccepted {
		t.Fatalf("initialized: %d %q", status, msg)
	}
	return sid
}

func callBody(name string) string {
	return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + name + `","arguments":{}}}`
}

const listBody = `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`

// listed returns the names of the tools in a tools/list response.
func listed(t *testing.T, msg string) []string {
	t.Helper()
	var resp struct {
		Result struct {
			Tools []struct{ Name string }
		}
	}
	if err := json.Unmarshal([]byte(msg), &resp); err != nil {
		t.Fatalf("tools/list response %q: %v", msg, err)
	}
	var names []string
	for _, tl := range resp.Result.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// TestHTTPSessionIsNotAuthentication sends Bob's valid token with Ann's
// session id, by every method of the 2025-11-25 protocol: each request is
// refused with 404 (the session does not exist for Bob) and no tool runs;
// Ann's own requests on her session (the control) keep working, Bob's
// DELETE did not end her session, and Bob's own session works for Bob.
func TestHTTPSessionIsNotAuthentication(t *testing.T) {
	s := newAuthServer(t)
	ann, bob := s.token(t, "ann", "writer"), s.token(t, "bob")
	sid := openSession(t, s.url, ann)

	// Control: Ann's session, Ann's token.
	if status, msg, _ := send(t, s.url, rawCall{token: ann, session: sid, version: "2025-11-25", body: listBody}); status != http.StatusOK || !slices.Equal(listed(t, msg), []string{"whoami", "write_note"}) {
		t.Fatalf("control tools/list: %d %s", status, msg)
	}

	attacks := []rawCall{
		{body: callBody("write_note")},
		{body: callBody("whoami")},
		{body: listBody},
		{body: `{"jsonrpc":"2.0","id":4,"method":"ping"}`},
		{body: `{"jsonrpc":"2.0","id":5,"method":"resources/list"}`},
		{body: `{"jsonrpc":"2.0","id":6,"method":"prompts/list"}`},
		{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`},
		{body: `{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"debug"}}`},
		{method: http.MethodGet},
		{method: http.MethodDelete},
		// A 2026-07-28 request on the session is the session's too.
		{body: callBody("write_note"), version: "2026-07-28"},
	}
	for _, a := range attacks {
		a.token, a.session = bob, sid
		if a.version == "" {
			a.version = "2025-11-25"
		}
		status, msg, _ := send(t, s.url, a)
		if status != http.StatusNotFound {
			t.Errorf("Bob's %s %s on Ann's session: %d %q, want 404", a.method, a.body, status, msg)
		}
	}
	if n := s.ranTotal(); n != 0 {
		t.Errorf("%d calls ran for the attacks: %v", n, s.ran)
	}

	// Ann's session outlived Bob's DELETE and still answers for Ann.
	status, msg, _ := send(t, s.url, rawCall{token: ann, session: sid, version: "2025-11-25", body: callBody("write_note")})
	if status != http.StatusOK || !strings.Contains(msg, `"text":"ann"`) || s.ranCount("write_note", "ann") != 1 {
		t.Errorf("Ann's write_note on her session after the attacks: %d %s", status, msg)
	}
	// Bob on a session of his own is Bob, and sees Bob's tools.
	bsid := openSession(t, s.url, bob)
	if status, msg, _ := send(t, s.url, rawCall{token: bob, session: bsid, version: "2025-11-25", body: listBody}); status != http.StatusOK || !slices.Equal(listed(t, msg), []string{"whoami"}) {
		t.Errorf("Bob's tools/list on his session: %d %s", status, msg)
	}
	if status, msg, _ := send(t, s.url, rawCall{token: bob, session: bsid, version: "2025-11-25", body: callBody("whoami")}); status != http.StatusOK || !strings.Contains(msg, `"text":"bob"`) {
		t.Errorf("Bob's whoami on his session: %d %s", status, msg)
	}
	// Ann may end her own session.
	if status, msg, _ := send(t, s.url, rawCall{method: http.MethodDelete, token: ann, session: sid, version: "2025-11-25"}); status != http.StatusNoContent {
		t.Errorf("Ann's DELETE of her session: %d %q", status, msg)
	}
}

// TestHTTPSessionTokenRefresh: a new token for the same principal may go
// on with the session (tokens expire and are refreshed while a session
// lasts), and each request is decided for its own token: when the new
// token drops a role, the next tools/list and tools/call see it at once.
func TestHTTPSessionTokenRefresh(t *testing.T) {
	s := newAuthServer(t)
	sid := openSession(t, s.url, s.token(t, "ann", "writer"))
	fewer := s.token(t, "ann")
	status, msg, _ := send(t, s.url, rawCall{token: fewer, session: sid, version: "2025-11-25", body: listBody})
	if status != http.StatusOK || !slices.Equal(listed(t, msg), []string{"whoami"}) {
		t.Errorf("tools/list with Ann's token without writer: %d %s", status, msg)
	}
	status, msg, _ = send(t, s.url, rawCall{token: fewer, session: sid, version: "2025-11-25", body: callBody("write_note")})
	if status != http.StatusOK || !strings.Contains(msg, `"isError":true`) || s.ranCount("write_note", "ann") != 0 {
		t.Errorf("write_note with Ann's token without writer: %d %s (ran %d)", status, msg, s.ranCount("write_note", "ann"))
	}
	status, msg, _ = send(t, s.url, rawCall{token: s.token(t, "ann", "writer"), session: sid, version: "2025-11-25", body: callBody("write_note")})
	if status != http.StatusOK || !strings.Contains(msg, `"text":"ann"`) || s.ranCount("write_note", "ann") != 1 {
		t.Errorf("write_note with a fresh writer token: %d %s", status, msg)
	}
}

// TestHTTPStatelessCaller: the 2026-07-28 protocol has no sessions, and
// every request is decided for its own token, on the direct path and
// through go-sdk's stateless handler (a progress token sends it there).
func TestHTTPStatelessCaller(t *testing.T) {
	s := newAuthServer(t)
	bob := s.token(t, "bob")
	call := func(meta string) string {
		return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_note","arguments":{},` + meta + `}}`
	}
	for _, body := range []string{call(meta2026), call(`"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`)} {
		status, msg, _ := sendHeaders(t, s.url, bob, body, "write_note")
		if status != http.StatusOK || !strings.Contains(msg, `"isError":true`) {
			t.Errorf("Bob's write_note: %d %s", status, msg)
		}
		status, msg, _ = sendHeaders(t, s.url, s.token(t, "ann", "writer"), body, "write_note")
		if status != http.StatusOK || !strings.Contains(msg, `"text":"ann"`) {
			t.Errorf("Ann's write_note: %d %s", status, msg)
		}
	}
	if n := s.ranCount("write_note", "bob"); n != 0 {
		t.Errorf("write_note ran %d times for bob", n)
	}
	list := `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + meta2026 + `}}`
	status, msg, _ := sendHeaders(t, s.url, bob, list, "")
	if status != http.StatusOK || !slices.Equal(listed(t, msg), []string{"whoami"}) {
		t.Errorf("Bob's 2026-07-28 tools/list: %d %s", status, msg)
	}
	// A list made for its caller is no cache's to hand to another.
	if !strings.Contains(msg, `"cacheScope":"private"`) {
		t.Errorf("a filtered tools/list may be cached for others: %s", msg)
	}
}

// TestHTTPSessionAnonymous: a session opened without a principal is bound
// to the anonymous caller, and one opened with a principal cannot be used
// without one. The principal comes from a gateway's middleware here (the
// X-User header stands for whatever it verified).
func TestHTTPSessionAnonymous(t *testing.T) {
	r := newRegistry(echo{})
	srv := mcptool.NewServer(r)
	defer srv.Close()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-User"); u != "" {
			r = r.WithContext(policy.WithPrincipal(r.Context(), policy.Principal{ID: u}))
		}
		srv.ServeHTTP(w, r)
	}))
	defer hs.Close()
	do := func(user, session, body string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, hs.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if user != "" {
			req.Header.Set("X-User", user)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if session == "" {
			return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
		}
		return resp.StatusCode, string(b)
	}
	ping := `{"jsonrpc":"2.0","id":9,"method":"ping"}`
	for _, tc := range []struct{ opener, user string }{{"", "ann"}, {"ann", ""}, {"ann", "Ann"}, {"ann", "anne"}} {
		status, sid := do(tc.opener, "", initialize2025)
		if status != http.StatusOK || sid == "" {
			t.Fatalf("initialize as %q: %d %q", tc.opener, status, sid)
		}
		if status, body := do(tc.opener, sid, ping); status != http.StatusOK {
			t.Errorf("control: %q pings its session: %d %s", tc.opener, status, body)
		}
		if status, body := do(tc.user, sid, ping); status != http.StatusNotFound {
			t.Errorf("%q pings the session of %q: %d %s, want 404", tc.user, tc.opener, status, body)
		}
	}
}

// sendHeaders posts a 2026-07-28 request with its Mcp-Method and Mcp-Name
// headers.
func sendHeaders(t *testing.T, url, token, body, name string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	var m struct{ Method string }
	json.Unmarshal([]byte(body), &m)
	req.Header.Set("Mcp-Method", m.Method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg string
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id"`) {
				msg = d
			}
		}
	} else {
		b, _ := io.ReadAll(resp.Body)
		msg = string(b)
	}
	return resp.StatusCode, msg, resp.Header
}
