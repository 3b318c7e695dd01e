package oauth_test

import (
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/mcptool/oauth"
)

func TestDecodeServerMetadata(t *testing.T) {
	const iss = "https://as.example"
	good := `{"issuer":"https://as.example","authorization_endpoint":"https://as.example/a","token_endpoint":"https://as.example/t","code_challenge_methods_supported":["S256"]}`
	if _, err := oauth.DecodeServerMetadata([]byte(good), iss); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ doc, want string }{
		{strings.Replace(good, `"issuer":"https://as.example"`, `"issuer":"https://AS.example"`, 1), "is not"},
		{strings.Replace(good, `"S256"`, `"plain"`, 1), "PKCE"},
		{strings.Replace(good, `https://as.example/t`, `https://as.example/t#frag`, 1), "fragment"},
		{strings.Replace(good, `https://as.example/t`, `https://user:pw@as.example/t`, 1), "user information"},
		{strings.Replace(good, `https://as.example/a`, ``, 1), "missing"},
		{strings.Replace(good, `}`, `,"response_types_supported":["token"]}`, 1), "authorization code flow"},
		{strings.Replace(good, `}`, `,"scopes_supported":["a b"]}`, 1), "not a scope token"},
		{`[]`, "not valid JSON"},
	} {
		if _, err := oauth.DecodeServerMetadata([]byte(c.doc), iss); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DecodeServerMetadata(%s): %v, want an error with %q", c.doc, err, c.want)
		}
	}
}

func FuzzDecodeMetadata(f *testing.F) {
	f.Add([]byte(`{"resource":"https://r.example/mcp","authorization_servers":["https://as.example"],"scopes_supported":["a"]}`))
	f.Add([]byte(`{"issuer":"https://as.example","authorization_endpoint":"https://as.example/a","token_endpoint":"https://as.example/t","code_challenge_methods_supported":["S256"]}`))
	f.Add([]byte(`{"resource":"http://127.0.0.1:1/mcp","authorization_servers":["http://localhost"]}`))
	f.Add([]byte(`{"issuer":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := oauth.DecodeResourceMetadata(data); err == nil {
			if m.Resource == "" || len(m.AuthorizationServers) == 0 {
				t.Fatalf("accepted %+v", m)
			}
			for _, as := range m.AuthorizationServers {
				if !strings.HasPrefix(as, "https://") && !strings.HasPrefix(as, "http://") {
					t.Fatalf("accepted the authorization server %q", as)
				}
			}
		}
		if m, err := oauth.DecodeServerMetadata(data, "https://as.example"); err == nil {
			if m.Issuer != "https://as.example" || !strings.HasPrefix(m.AuthorizationEndpoint, "http") || !strings.HasPrefix(m.TokenEndpoint, "http") {
				t.Fatalf("accepted %+v", m)
			}
		}
	})
}
