package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type bearerTransport struct{ token string }

// noKeepAlive sends each request on a fresh connection: a POST sent on a
// kept-alive connection the server is closing at that moment is reset,
// not retried (HTTP/1.1 does not replay a POST), and at load 30 that race
// failed TestServeHTTPAuth about one run in five; it is not what the
// tests are about.
var noKeepAlive = &http.Transport{DisableKeepAlives: true}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return noKeepAlive.RoundTrip(r)
}

// TestServeHTTPAuth serves the built-in tools over HTTP behind JWT bearer
// tokens and a policy: a request without a token gets a 401 challenge,
// and a token's principal sees only the tools the policy lets it call.
func TestServeHTTPAuth(t *testing.T) {
	secret := []byte("a secret of at least thirty-two bytes")
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, secret, 0o600)
	addr := startHTTP(t, "--policy", filepath.Join("testdata", "policy", "roles.cedar"), "--roles-in", "operator:analyst",
		"--auth-key", keyFile, "--auth-issuer", "https://issuer.test", "--auth-audience", "clawtool")
	url := "http://" + addr + "/mcp"

	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(ch, "/.well-known/oauth-protected-resource") {
		t.Errorf("no token: %d %q", resp.StatusCode, ch)
	}
	meta, err := http.Get("http://" + addr + "/.well-known/oauth-protected-resource")
	if err != nil || meta.StatusCode != http.StatusOK {
		t.Fatalf("metadata: %v %v", err, meta)
	}
	meta.Body.Close()

	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": "bob", "roles": []string{"analyst"}, "iss": "https://issuer.test", "aud": "clawtool", "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{tok}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "calc,convert_units,current_time,kv,wait" {
		t.Errorf("bob lists %s", got)
	}
	r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "kv", Arguments: map[string]any{"op": "set", "key": "a", "value": "v"}})
	if err != nil || !r.IsError {
		t.Errorf("analyst set a note: %v %+v", err, r)
	}
}

// TestServeHTTPAuthJWKS takes the signing keys from a JWKS URL: a token
// signed with a key the set publishes is accepted, a token signed with
// another key under the same kid is not.
func TestServeHTTPAuthJWKS(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	set, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "OKP", "crv": "Ed25519", "kid": "k1", "x": base64.RawURLEncoding.EncodeToString(pub)}}})
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(set) }))
	defer jwks.Close()
	addr := startHTTP(t, "--policy", filepath.Join("testdata", "policy", "roles.cedar"), "--roles-in", "operator:analyst",
		"--auth-jwks", jwks.URL, "--auth-issuer", "https://issuer.test", "--auth-audience", "clawtool")
	url := "http://" + addr + "/mcp"
	token := func(key ed25519.PrivateKey) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
			"sub": "bob", "roles": []string{"analyst"}, "iss": "https://issuer.test", "aud": "clawtool", "exp": time.Now().Add(time.Hour).Unix(),
		})
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	list := func(tok string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok)
		return http.DefaultClient.Do(req)
	}
	for _, tc := range []struct {
		name   string
		key    ed25519.PrivateKey
		status int
	}{{"published key", priv, http.StatusOK}, {"forged key", other, http.StatusUnauthorized}} {
		resp, err := list(token(tc.key))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
	}
}

func TestAuthJWKSFlags(t *testing.T) {
	for _, tc := range []struct {
		af   authFlags
		want string
	}{
		{authFlags{jwks: "file:///etc/keys", issuer: "i", audience: "a"}, "not an http or https URL"},
		{authFlags{jwks: "https://as.test/jwks"}, "need --auth-issuer and --auth-audience"},
	} {
		if _, err := tc.af.verifier(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.af, err, tc.want)
		}
	}
	v, err := (&authFlags{jwks: "https://as.test/jwks", issuer: "i", audience: "a"}).verifier()
	if err != nil || v.Source == nil || v.Keys != nil {
		t.Errorf("--auth-jwks alone: %v %+v", err, v)
	}
}

// TestServeApproveByClient asks the MCP client's user, by elicitation,
// about a call that needs an approval.
func TestServeApproveByClient(t *testing.T) {
	addr := startHTTP(t, "--policy", filepath.Join("testdata", "policy", "roles.cedar"), "--roles-in", "operator:analyst",
		"--as", "ann:operator", "--approve-by-client")
	var asked []string
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	}).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "kv", Arguments: map[string]any{"op": "delete", "key": "a"}})
	if err != nil || res.IsError {
		t.Fatalf("approved delete: %v %+v", err, res)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], `ann asks to call "kv"`) {
		t.Errorf("asked %q", asked)
	}
}
