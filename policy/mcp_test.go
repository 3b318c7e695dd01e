package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/miniopenclaw/tool/policy/bearer"
)

// TestMCPPerPrincipal serves one registry over MCP to two sessions made
// for different principals: each lists and calls only its own tools.
func TestMCPPerPrincipal(t *testing.T) {
	a := newTestAuthorizer(t)
	reg, _ := testRegistry(t, a)
	srv := mcptool.NewServer(reg, mcptool.WithToolFilter(func(ctx context.Context, name string) bool {
		tl, ok := reg.Get(name)
		return ok && a.CanList(ctx, name, tool.OptionsOf(tl))
	}))
	defer srv.Close()
	session := func(p policy.Principal) *mcp.ClientSession {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.MCP().Connect(policy.WithPrincipal(t.Context(), p), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	for _, tt := range []struct {
		p         policy.Principal
		tools     []string
		call      string
		args      map[string]any
		allowed   bool
		forbidden string
	}{
		{carol, []string{"read_file", "report", "search"}, "read_file", map[string]any{"path": "docs/a"}, true, "write_file"},
		{bob, []string{"delete_file", "read_file", "search", "write_file"}, "write_file", map[string]any{"path": "docs/a", "content": "x"}, true, "report"},
	} {
		cs := session(tt.p)
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if !slices.Equal(names, tt.tools) {
			t.Errorf("%s lists %v, want %v", tt.p.ID, names, tt.tools)
		}
		r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tt.call, Arguments: tt.args})
		if err != nil || r.IsError {
			t.Errorf("%s calls %s: %v %+v", tt.p.ID, tt.call, err, r)
		}
		// A hidden tool called anyway is refused by the registry.
		r, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tt.forbidden, Arguments: map[string]any{"path": "docs/a", "content": "x"}})
		if err != nil || !r.IsError {
			t.Errorf("%s calls hidden %s: %v %+v", tt.p.ID, tt.forbidden, err, r)
		}
	}
}

var hmacKey = []byte("test key: 32 bytes long, at least")

func signHS256(t *testing.T, claims jwt.MapClaims, key []byte) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func claimsFor(sub string, roles ...string) jwt.MapClaims {
	return jwt.MapClaims{"sub": sub, "roles": roles, "iss": "https://issuer.test", "aud": "clawtool", "exp": time.Now().Add(time.Hour).Unix(), "tenant": "a"}
}

func tokenVerifier() *bearer.JWTVerifier {
	return &bearer.JWTVerifier{Keys: map[string]any{"": hmacKey}, Issuer: "https://issuer.test", Audience: "clawtool", AttrClaims: []string{"tenant"}}
}

// withToken sends every request with a bearer token.
type withToken struct{ token string }

func (b withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPOverHTTPWithTokens serves one registry over MCP HTTP to two
// users with different roles: each lists and calls only its tools, a
// request without a valid token is refused with a challenge, and the
// audit log records both users and verifies.
func TestMCPOverHTTPWithTokens(t *testing.T) {
	var audit bytes.Buffer
	a := newTestAuthorizer(t, policy.WithAudit(policy.NewAuditLog(&audit)))
	reg, _ := testRegistry(t, a)
	srv := mcptool.NewServer(reg, mcptool.WithToolFilter(func(ctx context.Context, name string) bool {
		tl, ok := reg.Get(name)
		return ok && a.CanList(ctx, name, tool.OptionsOf(tl))
	}))
	defer srv.Close()
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	defer ts.Close()
	metaURL := ts.URL + "/.well-known/oauth-protected-resource"
	mux.Handle("/mcp", bearer.RequireToken(tokenVerifier(), metaURL)(srv))
	mux.Handle("/.well-known/oauth-protected-resource", bearer.ResourceMetadata{Resource: ts.URL + "/mcp", AuthorizationServers: []string{"https://issuer.test"}})

	// Refusals.
	for _, tok := range []string{"", "forged.token.here", signHS256(t, claimsFor("carol", "admin"), []byte("not the key, but 32 bytes long.."))} {
		req, _ := http.NewRequest("POST", ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(ch, `resource_metadata="`+metaURL+`"`) {
			t.Errorf("token %q: status %d, challenge %q", tok, resp.StatusCode, ch)
		}
	}
	resp, err := http.Get(metaURL)
	if err != nil {
		t.Fatal(err)
	}
	var meta bearer.ResourceMetadata
	json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if meta.Resource != ts.URL+"/mcp" || len(meta.AuthorizationServers) != 1 {
		t.Errorf("metadata = %+v", meta)
	}

	for _, tt := range []struct {
		token  string
		tools  []string
		call   string
		args   map[string]any
		hidden string
		hargs  map[string]any
	}{
		{signHS256(t, claimsFor("carol", "viewer"), hmacKey), []string{"read_file", "report", "search"}, "report", map[string]any{}, "write_file", map[string]any{"path": "docs/a", "content": "x"}},
		// bob's token carries tenant "a" too, so he may run reports.
		{signHS256(t, claimsFor("bob", "editor"), hmacKey), []string{"delete_file", "read_file", "report", "search", "write_file"}, "write_file", map[string]any{"path": "docs/a", "content": "x"}, "admin_reset", map[string]any{}},
	} {
		client := &http.Client{Transport: withToken{tt.token}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: client}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if !slices.Equal(names, tt.tools) {
			t.Errorf("lists %v, want %v", names, tt.tools)
		}
		if r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tt.call, Arguments: tt.args}); err != nil || r.IsError {
			t.Errorf("call %s: %v %+v", tt.call, err, r)
		}
		if r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tt.hidden, Arguments: tt.hargs}); err != nil || !r.IsError {
			t.Errorf("hidden %s: %v %+v", tt.hidden, err, r)
		}
		cs.Close()
	}
	sum, err := policy.VerifyAudit(bytes.NewReader(audit.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{`"principal":"carol"`, `"principal":"bob"`} {
		if !strings.Contains(audit.String(), who) {
			t.Errorf("audit lacks %s", who)
		}
	}
	if sum.Records != 6 { // per user: decision and outcome of the call, decision of the refused call
		t.Errorf("%d records:\n%s", sum.Records, audit.String())
	}
}
