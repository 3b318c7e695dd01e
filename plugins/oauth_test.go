package plugins

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/mcptool/oauth"
)

func TestParseOAuth(t *testing.T) {
	env := map[string]string{"GH_SECRET": "s3cret-value", "GH_ID": "Iv1.abc"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c, err := Parse([]byte(`{"mcpServers": {"gh": {"url": "https://mcp.example/mcp",
		"oauth": {"clientId": "${GH_ID}", "clientSecret": "${GH_SECRET}", "issuer": "https://auth.example", "scopes": ["repo"], "redirectPort": 8976}}}}`), lookup)
	if err != nil {
		t.Fatal(err)
	}
	o := c.Servers["gh"].OAuth
	if o.ClientID != "Iv1.abc" || o.ClientSecret != "s3cret-value" || o.RedirectPort != 8976 {
		t.Errorf("oauth = %+v", o)
	}
	if got := c.Redact("secret is s3cret-value"); strings.Contains(got, "s3cret") {
		t.Errorf("Redact left the client secret: %q", got)
	}
	for _, bad := range []struct{ json, want string }{
		{`{"command": "x", "oauth": {}}`, "URL servers"},
		{`{"url": "https://m.example/mcp", "headers": {"authorization": "Bearer x"}, "oauth": {}}`, "Authorization header"},
		{`{"url": "http://m.example/mcp", "oauth": {}}`, "plain http"},
		{`{"url": "https://m.example/mcp", "oauth": {"redirectPort": 70000}}`, "redirectPort"},
		{`{"url": "https://m.example/mcp", "oauth": {"clientSecret": "${GH_SECRET}"}}`, "client ID"},
		{`{"url": "https://m.example/mcp", "oauth": {"clientId": "${GH_ID}", "clientSecret": "${GH_SECRET}"}}`, `"issuer"`},
		{`{"url": "https://m.example/mcp", "oauth": {"clientMetadataUrl": "http://x/"}}`, "https URL with a path"},
		{`{"url": "https://m.example/mcp", "oauth": {"scopes": ["a b"]}}`, "scope"},
	} {
		_, err := Parse([]byte(`{"mcpServers": {"s": `+bad.json+`}}`), lookup)
		if err == nil || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Parse(%s): %v, want an error with %q", bad.json, err, bad.want)
		}
	}
	// Disabled, the same settings are not checked further.
	if _, err := Parse([]byte(`{"mcpServers": {"s": {"url": "http://m.example/mcp", "oauth": {"disabled": true}}}}`), lookup); err != nil {
		t.Error(err)
	}
}

// protected serves a registry's tools at /mcp to requests with the
// bearer token tok only, challenging the others.
func protected(t *testing.T, tok string) *httptest.Server {
	reg := tool.NewRegistry()
	reg.Register(tool.Must(tool.New("hello", "says hello", func(context.Context, struct{}) (string, error) { return "hello", nil })))
	srv := mcptool.NewServer(reg)
	t.Cleanup(func() { srv.Close() })
	var hs *httptest.Server
	hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+tok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+hs.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

// TestHostOAuth: a URL server behind OAuth loads with the stored token,
// and fails, saying to log in, without one; the host never asks.
func TestHostOAuth(t *testing.T) {
	const tok = "tok-0123456789"
	hs := protected(t, tok)
	cfg := &Config{Servers: map[string]Server{"remote": {URL: hs.URL + "/mcp"}}}

	empty := &oauth.MemoryStore{}
	reg := tool.NewRegistry()
	h := NewHost(reg, WithTokenStore(empty))
	h.Apply(t.Context(), cfg)
	st := h.Status()
	h.Close()
	if st[0].State != Failed || !strings.Contains(st[0].Err, "clawtool auth login remote") {
		t.Fatalf("without a token: %+v, want Failed asking to log in", st[0])
	}

	stored := &oauth.MemoryStore{}
	stored.Save(t.Context(), oauth.Key{Server: hs.URL + "/mcp"}, &oauth.Record{Resource: hs.URL + "/mcp", AccessToken: tok})
	reg = tool.NewRegistry()
	h = NewHost(reg, WithTokenStore(stored))
	defer h.Close()
	h.Apply(t.Context(), cfg)
	if st := h.Status(); st[0].State != Ready || st[0].Tools != 1 {
		t.Fatalf("with a token: %+v", st[0])
	}
	if res := reg.Execute(t.Context(), "hello", []byte(`{}`)); res.IsError || res.Output != "hello" {
		t.Errorf("hello: %+v", res)
	}
	rec, err := AuthStatus(t.Context(), cfg, "remote", stored)
	if err != nil || rec == nil || string(rec.AccessToken) != tok {
		t.Errorf("AuthStatus = %v, %v", rec, err)
	}
	res, err := Logout(t.Context(), cfg, "remote", stored)
	if err != nil || !res.Removed {
		t.Errorf("Logout = %+v, %v", res, err)
	}
	if rec, _ := stored.Load(t.Context(), oauth.Key{Server: hs.URL + "/mcp"}); rec != nil {
		t.Error("Logout left the record")
	}
}

func TestOAuthNotForEveryServer(t *testing.T) {
	cfg := &Config{Servers: map[string]Server{
		"stdio":  {Command: "x"},
		"static": {URL: "https://m.example/mcp", Headers: map[string]string{"Authorization": "Bearer x"}},
		"off":    {URL: "https://m.example/mcp", OAuth: &OAuth{Disabled: true}},
		"plain":  {URL: "http://m.example/mcp"},
	}}
	for name := range cfg.Servers {
		if _, err := AuthStatus(t.Context(), cfg, name, &oauth.MemoryStore{}); err == nil {
			t.Errorf("AuthStatus(%s) accepted a server without OAuth", name)
		}
	}
	if _, err := Login(t.Context(), cfg, "missing", LoginOptions{}); err == nil || !strings.Contains(err.Error(), "no server") {
		t.Errorf("Login(missing): %v", err)
	}
	_, err := AuthStatus(t.Context(), cfg, "static", &oauth.MemoryStore{})
	if errors.Is(err, oauth.ErrLoginRequired) {
		t.Error("unexpected ErrLoginRequired")
	}
}
