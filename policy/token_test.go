package policy_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
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
)

var hmacKey = []byte("test key: 32 bytes long, at least")

func sign(t *testing.T, claims jwt.MapClaims, key any, method jwt.SigningMethod, kid string) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func claimsFor(sub string, roles ...string) jwt.MapClaims {
	return jwt.MapClaims{"sub": sub, "roles": roles, "iss": "https://issuer.test", "aud": "clawtool", "exp": time.Now().Add(time.Hour).Unix(), "tenant": "a"}
}

func verifier() *policy.JWTVerifier {
	return &policy.JWTVerifier{Keys: map[string]any{"": hmacKey}, Issuer: "https://issuer.test", Audience: "clawtool", AttrClaims: []string{"tenant"}}
}

func TestJWTVerifier(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	_, otherPriv, _ := ed25519.GenerateKey(nil)
	v := verifier()
	v.Keys["ed"] = pub
	expired := claimsFor("carol", "viewer")
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	noExp := claimsFor("carol", "viewer")
	delete(noExp, "exp")
	otherAud := claimsFor("carol", "viewer")
	otherAud["aud"] = "another-service"
	otherIss := claimsFor("carol", "viewer")
	otherIss["iss"] = "https://evil.test"
	tests := []struct {
		name, token string
		ok          bool
	}{
		{"hmac", sign(t, claimsFor("carol", "viewer"), hmacKey, jwt.SigningMethodHS256, ""), true},
		{"ed25519 by kid", sign(t, claimsFor("carol", "viewer"), priv, jwt.SigningMethodEdDSA, "ed"), true},
		{"forged signature", sign(t, claimsFor("carol", "viewer"), []byte("another key, 32 bytes long......"), jwt.SigningMethodHS256, ""), false},
		{"forged ed25519", sign(t, claimsFor("carol", "viewer"), otherPriv, jwt.SigningMethodEdDSA, "ed"), false},
		{"unknown kid", sign(t, claimsFor("carol", "viewer"), hmacKey, jwt.SigningMethodHS256, "nope"), false},
		{"expired", sign(t, expired, hmacKey, jwt.SigningMethodHS256, ""), false},
		{"no expiry", sign(t, noExp, hmacKey, jwt.SigningMethodHS256, ""), false},
		{"other audience", sign(t, otherAud, hmacKey, jwt.SigningMethodHS256, ""), false},
		{"other issuer", sign(t, otherIss, hmacKey, jwt.SigningMethodHS256, ""), false},
		{"alg none", sign(t, claimsFor("carol", "viewer"), jwt.UnsafeAllowNoneSignatureType, jwt.SigningMethodNone, ""), false},
		{"garbage", "not.a.token", false},
		{"crit", signCrit(t, claimsFor("carol", "viewer")), false},
		{"huge", strings.Repeat("a", 20000), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := v.VerifyToken(context.Background(), tt.token)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok %v", err, tt.ok)
			}
			if tt.ok && (p.ID != "carol" || !slices.Equal(p.Roles, []string{"viewer"}) || p.Attrs["tenant"] != "a") {
				t.Errorf("principal = %+v", p)
			}
		})
	}
}

// signCrit signs claims with hmacKey and a header naming a critical
// extension.
func signCrit(t *testing.T, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	tok.Header["crit"] = []string{"b64"}
	tok.Header["b64"] = true
	s, err := tok.SignedString(hmacKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRequireTokenRefusals: a request with two Authorization headers is
// refused with 400 whatever they hold (the control: either alone is
// let through), and a token whose key cannot be fetched gets 503, not
// 401 and never the next handler.
func TestRequireTokenRefusals(t *testing.T) {
	ran := 0
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran++ })
	good := sign(t, claimsFor("carol", "viewer"), hmacKey, jwt.SigningMethodHS256, "")
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusBadGateway) }))
	defer down.Close()
	v := verifier()
	v.Source = &policy.JWKS{URL: down.URL}
	h := policy.RequireToken(v, "http://meta.test")(next)
	do := func(auth ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/mcp", nil)
		for _, a := range auth {
			r.Header.Add("Authorization", a)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := do("Bearer " + good); w.Code != http.StatusOK || ran != 1 {
		t.Fatalf("control: %d, ran %d", w.Code, ran)
	}
	for _, auth := range [][]string{{"Bearer " + good, "Bearer " + good}, {"Bearer x", "Bearer " + good}, {"Bearer " + good, ""}} {
		w := do(auth...)
		if ch := w.Header().Get("WWW-Authenticate"); w.Code != http.StatusBadRequest || !strings.Contains(ch, `error="invalid_request"`) {
			t.Errorf("%d Authorization headers: %d %q", len(auth), w.Code, ch)
		}
	}
	withKid := sign(t, claimsFor("carol", "viewer"), hmacKey, jwt.SigningMethodHS256, "rotated")
	for range 2 { // the first fetch fails, the second is not due yet: both unavailable
		w := do("Bearer " + withKid)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Errorf("key set down: %d %v", w.Code, w.Header())
		}
	}
	if _, err := v.VerifyToken(context.Background(), withKid); !errors.Is(err, policy.ErrKeysUnavailable) || errors.Is(err, policy.ErrInvalidToken) {
		t.Errorf("VerifyToken with the key set down: %v", err)
	}
	if ran != 1 {
		t.Errorf("the next handler ran %d times", ran)
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
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
	mux.Handle("/mcp", policy.RequireToken(verifier(), metaURL)(srv))
	mux.Handle("/.well-known/oauth-protected-resource", policy.ResourceMetadata{Resource: ts.URL + "/mcp", AuthorizationServers: []string{"https://issuer.test"}})

	// Refusals.
	for _, tok := range []string{"", "forged.token.here", sign(t, claimsFor("carol", "admin"), []byte("not the key, but 32 bytes long.."), jwt.SigningMethodHS256, "")} {
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
	var meta policy.ResourceMetadata
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
		{sign(t, claimsFor("carol", "viewer"), hmacKey, jwt.SigningMethodHS256, ""), []string{"read_file", "report", "search"}, "report", map[string]any{}, "write_file", map[string]any{"path": "docs/a", "content": "x"}},
		// bob's token carries tenant "a" too, so he may run reports.
		{sign(t, claimsFor("bob", "editor"), hmacKey, jwt.SigningMethodHS256, ""), []string{"delete_file", "read_file", "report", "search", "write_file"}, "write_file", map[string]any{"path": "docs/a", "content": "x"}, "admin_reset", map[string]any{}},
	} {
		client := &http.Client{Transport: bearer{tt.token}}
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
