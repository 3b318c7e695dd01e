package oauth_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/mcptool/oauth"
)

// setup is one test's servers, Handler and what it logged.
type setup struct {
	as     *fakeAS
	rs     *fakeRS
	h      *oauth.Handler
	lb     *oauth.Loopback
	logs   *logBuffer
	opened int
}

func newSetup(t *testing.T, mod func(*oauth.Config)) *setup {
	t.Helper()
	s := &setup{logs: &logBuffer{}}
	s.as = newFakeAS(t)
	s.rs = newFakeRS(t, s.as)
	s.lb = &oauth.Loopback{Open: userAgent(&s.opened)}
	t.Cleanup(func() { s.lb.Close() })
	cfg := oauth.Config{Server: s.rs.url(), Authorizer: s.lb, Logger: s.logs.logger()}
	if mod != nil {
		mod(&cfg)
	}
	h, err := oauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.h = h
	return s
}

func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// noLeak fails t if a token or secret the fake servers issued is in the
// logs or in err.
func (s *setup) noLeak(t *testing.T, err error) {
	t.Helper()
	if strings.Contains(s.logs.String(), secretMark) {
		t.Errorf("a secret reached the log:\n%s", s.logs.String())
	}
	if err != nil && strings.Contains(err.Error(), secretMark) {
		t.Errorf("a secret reached the error: %v", err)
	}
}

func TestAuthorizationCodeFlow(t *testing.T) {
	s := newSetup(t, nil)
	ctx := ctxTimeout(t)
	if err := call(ctx, s.h, s.rs.url()); err != nil {
		t.Fatal(err)
	}
	s.noLeak(t, nil)
	auth, token, reg, _ := s.as.counts()
	if auth != 1 || token != 1 || reg != 1 {
		t.Fatalf("authorization requests %d, token requests %d, registrations %d; want 1 each", auth, token, reg)
	}
	q := s.as.authReqs[0]
	for k, want := range map[string]string{
		"response_type":         "code",
		"code_challenge_method": "S256",
		"resource":              s.rs.url(),
		"client_id":             "client-1",
	} {
		if got := q.Get(k); got != want {
			t.Errorf("authorization request %s = %q, want %q", k, got, want)
		}
	}
	if q.Get("code_challenge") == "" || q.Get("state") == "" || q.Has("scope") {
		t.Errorf("authorization request %v: want a code challenge and a state, and no scope (none was asked for)", q)
	}
	redirect, _ := url.Parse(q.Get("redirect_uri"))
	if redirect.Hostname() != "127.0.0.1" {
		t.Errorf("redirect URI %s: want 127.0.0.1", redirect)
	}
	f := s.as.tokenReqs[0]
	if f.Get("resource") != s.rs.url() || f.Get("code_verifier") == "" || f.Get("redirect_uri") != q.Get("redirect_uri") {
		t.Errorf("token request %v: want the resource, the code verifier and the redirect URI", f)
	}
	if reg := s.as.regReqs[0]; reg["application_type"] != "native" || fmt.Sprint(reg["grant_types"]) != "[authorization_code refresh_token]" {
		t.Errorf("registration %v: want a native client with the refresh_token grant", reg)
	}
	// A second call uses the token: no new authorization.
	if err := call(ctx, s.h, s.rs.url()); err != nil {
		t.Fatal(err)
	}
	if auth, _, _, _ := s.as.counts(); auth != 1 {
		t.Errorf("%d authorizations after a second call, want 1", auth)
	}
	rec, _ := s.h.Record(ctx)
	if got := fmt.Sprintf("%v %+v %#v", rec, rec, rec); strings.Contains(got, secretMark) {
		t.Errorf("a printed Record shows its secrets: %s", got)
	}
}

// TestMaliciousServers: each case makes the authorization server or the
// protected resource lie in one way; the Handler must refuse it with an
// error that says so, before it sends the user anywhere (opens) or
// hands over a code (tokens), and must leak nothing.
func TestMaliciousServers(t *testing.T) {
	huge := strings.Repeat("x", oauth.MaxResponseBytes+1)
	cases := []struct {
		name string
		mod  func(s *setup)
		// want is in the error; opens and tokens are the most allowed.
		want          string
		opens, tokens int
	}{
		// The control: the same setup, honest, succeeds (so each row
		// below fails for its lie, not for the setup).
		{"control: honest servers", func(*setup) {}, "", 1, 1},
		{"metadata for another issuer", func(s *setup) { s.as.meta["issuer"] = "https://evil.example" }, "is not", 0, 0},
		{"issuer with a trailing slash", func(s *setup) { s.as.meta["issuer"] = s.as.url() + "/" }, "is not", 0, 0},
		{"authorization endpoint javascript:", func(s *setup) { s.as.meta["authorization_endpoint"] = "javascript:alert(1)" }, "not an https URL", 0, 0},
		{"authorization endpoint file:", func(s *setup) { s.as.meta["authorization_endpoint"] = "file:///etc/passwd" }, "not an https URL", 0, 0},
		{"token endpoint plain http elsewhere", func(s *setup) { s.as.meta["token_endpoint"] = "http://evil.example/token" }, "plain http", 0, 0},
		{"no PKCE", func(s *setup) { s.as.meta["code_challenge_methods_supported"] = nil }, "PKCE", 0, 0},
		{"plain PKCE only", func(s *setup) { s.as.meta["code_challenge_methods_supported"] = []string{"plain"} }, "PKCE", 0, 0},
		{"huge metadata", func(s *setup) { s.as.meta["padding"] = huge }, "longer than", 0, 0},
		{"malformed metadata", func(s *setup) {
			s.as.onMeta = func(w http.ResponseWriter, _ *http.Request) bool { w.Write([]byte(`{"issuer": [`)); return true }
		}, "not valid JSON", 0, 0},
		{"metadata of the wrong type", func(s *setup) { s.as.meta["token_endpoint"] = 42 }, `field "token_endpoint" is a JSON number, want a string`, 0, 0},
		{"endless redirects", func(s *setup) {
			s.as.onMeta = func(w http.ResponseWriter, r *http.Request) bool {
				http.Redirect(w, r, r.URL.Path+"?again="+fmt.Sprint(len(r.URL.RawQuery)), http.StatusFound)
				return true
			}
		}, "redirects", 0, 0},
		{"redirect to plain http elsewhere", func(s *setup) {
			s.as.onMeta = func(w http.ResponseWriter, r *http.Request) bool {
				http.Redirect(w, r, "http://evil.example/meta", http.StatusFound)
				return true
			}
		}, "plain http", 0, 0},
		{"resource metadata for another server", func(s *setup) {
			s.rs.prm = func(string) any {
				return map[string]any{"resource": "https://evil.example/mcp", "authorization_servers": []string{s.as.url()}}
			}
		}, "not for", 0, 0},
		{"resource metadata for a sibling path", func(s *setup) {
			s.rs.prm = func(base string) any {
				return map[string]any{"resource": base + "/mc", "authorization_servers": []string{s.as.url()}}
			}
		}, "not for", 0, 0},
		{"huge resource metadata", func(s *setup) {
			s.rs.prm = func(base string) any {
				return map[string]any{"resource": base + "/mcp", "authorization_servers": []string{s.as.url()}, "padding": huge}
			}
		}, "longer than", 0, 0},
		{"malformed resource metadata", func(s *setup) {
			s.rs.prm = func(base string) any { return map[string]any{"resource": 42, "authorization_servers": s.as.url()} }
		}, `field "authorization_servers" is a JSON string, want an array`, 0, 0},
		{"resource metadata without authorization servers", func(s *setup) {
			s.rs.prm = func(base string) any { return map[string]any{"resource": base + "/mcp"} }
		}, "no authorization_servers", 0, 0},
		{"authorization server over plain http elsewhere", func(s *setup) {
			s.rs.prm = func(base string) any {
				return map[string]any{"resource": base + "/mcp", "authorization_servers": []string{"http://evil.example"}}
			}
		}, "plain http", 0, 0},
		{"registration for another redirect URI (open redirect)", func(s *setup) {
			s.as.onRegister = func(map[string]any) (int, any) {
				return 201, map[string]any{"client_id": "c", "redirect_uris": []string{"https://evil.example/callback"}}
			}
		}, "redirect URIs", 0, 0},
		{"malformed registration", func(s *setup) {
			s.as.onRegister = func(map[string]any) (int, any) { return 201, []string{"client_id", "c"} }
		}, "the document is a JSON array, want an object", 0, 0},
		{"registration without a client ID", func(s *setup) {
			s.as.onRegister = func(body map[string]any) (int, any) {
				return 201, map[string]any{"redirect_uris": body["redirect_uris"]}
			}
		}, "no usable client_id", 0, 0},
		{"huge registration", func(s *setup) {
			s.as.onRegister = func(map[string]any) (int, any) { return 201, map[string]any{"client_id": huge} }
		}, "longer than", 0, 0},
		{"authorization response for another state", func(s *setup) {
			// The user agent is sent to the redirect URI with a forged
			// state: the Loopback ignores it, and the wait ends with the
			// context.
			s.as.onAuthorize = func(_ url.Values, r *url.URL) { q := r.Query(); q.Set("state", "forged"); r.RawQuery = q.Encode() }
		}, "waiting for the authorization's redirect", 1, 0},
		{"authorization response from another issuer (mix-up)", func(s *setup) {
			s.as.onAuthorize = func(_ url.Values, r *url.URL) {
				q := r.Query()
				q.Set("iss", "https://evil.example")
				q.Set("error", "access_denied")
				q.Set("error_description", "click https://evil.example to fix")
				r.RawQuery = q.Encode()
			}
		}, "mix-up", 1, 0},
		{"iss advertised but missing", func(s *setup) { s.as.meta["authorization_response_iss_parameter_supported"] = true }, "carries no iss", 1, 0},
		{"iss normalised", func(s *setup) {
			s.as.meta["authorization_response_iss_parameter_supported"] = true
			s.as.onAuthorize = func(_ url.Values, r *url.URL) { q := r.Query(); q.Set("iss", s.as.url()+"/"); r.RawQuery = q.Encode() }
		}, "mix-up", 1, 0},
		{"authorization refused", func(s *setup) {
			s.as.onAuthorize = func(_ url.Values, r *url.URL) {
				q := r.Query()
				q.Del("code")
				q.Set("error", "access_denied")
				r.RawQuery = q.Encode()
			}
		}, "refused the authorization: access_denied", 1, 0},
		{"token for another audience", func(s *setup) {
			s.as.accessToken = func() string { return jwtFor("https://other.example/mcp") }
		}, "for the audience", 1, 1},
		{"token that is not a bearer token", func(s *setup) { s.as.tokenType = "mac" }, "not a Bearer token", 1, 1},
		{"huge token response", func(s *setup) {
			s.as.onToken = func(url.Values) (int, any) { return 200, map[string]any{"access_token": huge, "token_type": "Bearer"} }
		}, "exchanging the authorization code", 1, 1},
		{"malformed token response", func(s *setup) {
			s.as.onToken = func(url.Values) (int, any) { return 200, []any{"access_token", "at-" + secretMark} }
		}, "cannot parse json", 1, 1},
		{"token response without an access token", func(s *setup) {
			s.as.onToken = func(url.Values) (int, any) { return 200, map[string]any{"token_type": "Bearer", "expires_in": 60} }
		}, "missing access_token", 1, 1},
		{"endless redirects at the token endpoint", func(s *setup) {
			s.as.onToken = func(url.Values) (int, any) { return 0, nil }
			s.as.meta["token_endpoint"] = s.as.url() + "/loop"
			s.as.srv.Config.Handler.(*http.ServeMux).HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/loop?"+r.URL.RawQuery+"x", http.StatusTemporaryRedirect)
			})
		}, "more than 3 redirects", 1, 0},
		{"token endpoint that echoes what it was sent", func(s *setup) {
			s.as.onToken = func(f url.Values) (int, any) {
				return 400, map[string]any{"error": "invalid_request", "error_description": "you sent " + f.Encode() + " " + secretMark}
			}
		}, "invalid_request", 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSetup(t, nil)
			c.mod(s)
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			err := call(ctx, s.h, s.rs.url())
			if c.want == "" {
				if err != nil || s.rs.okays != 1 {
					t.Fatalf("honest servers: error %v, %d requests served; want the call to go through", err, s.rs.okays)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one that says %q", err, c.want)
			}
			_, tokens, _, _ := s.as.counts()
			if s.opened > c.opens || tokens > c.tokens {
				t.Errorf("the user agent was sent %d times and the token endpoint asked %d times; want at most %d and %d", s.opened, tokens, c.opens, c.tokens)
			}
			if strings.Contains(err.Error(), "evil.example to fix") {
				t.Errorf("the error shows the description of a response from another issuer: %v", err)
			}
			if s.rs.okays != 0 {
				t.Errorf("the protected resource served %d requests", s.rs.okays)
			}
			s.noLeak(t, err)
		})
	}
}

// jwtFor returns an unsigned JWT-shaped token whose audience is aud.
func jwtFor(aud string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(fmt.Sprintf(`{"aud":%q,"sub":"u","n":%q}`, aud, secretMark))) + ".sig"
}

func TestTokenForTheResourceIsAccepted(t *testing.T) {
	s := newSetup(t, nil)
	s.as.accessToken = func() string { return jwtFor(s.rs.url()) }
	if err := call(ctxTimeout(t), s.h, s.rs.url()); err != nil {
		t.Fatal(err)
	}
}

// TestLoopbackIgnoresStrayRequests: a page that hits the redirect URI
// with a forged code and state before the real response does not
// complete the authorization, and nothing the Loopback answers redirects.
func TestLoopbackIgnoresStrayRequests(t *testing.T) {
	s := newSetup(t, nil)
	var forged *http.Response
	s.as.onAuthorize = func(q url.Values, _ *url.URL) {
		forged, _ = http.Get(q.Get("redirect_uri") + "?code=forged&state=guess&next=https://evil.example")
		if forged != nil {
			forged.Body.Close()
		}
	}
	if err := call(ctxTimeout(t), s.h, s.rs.url()); err != nil {
		t.Fatal(err)
	}
	if forged == nil || forged.StatusCode != http.StatusBadRequest || forged.Header.Get("Location") != "" {
		t.Errorf("forged redirect answered %+v, want 400 without a Location", forged)
	}
	if f := s.as.tokenReqs[0]; f.Get("code") == "forged" {
		t.Error("the forged code was exchanged")
	}
}

func TestLoopbackListensOnLoopbackOnly(t *testing.T) {
	lb := &oauth.Loopback{}
	defer lb.Close()
	uri, err := lb.RedirectURI(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(uri)
	if u.Hostname() != "127.0.0.1" || u.Path != "/callback" {
		t.Errorf("redirect URI %s: want http://127.0.0.1:PORT/callback", uri)
	}
}

func TestOpenBrowserRefusesOtherSchemes(t *testing.T) {
	var out strings.Builder
	open := oauth.OpenBrowser(&out)
	for _, u := range []string{"file:///etc/passwd", "javascript:alert(1)", "http://evil.example/", "ms-settings:x"} {
		if err := open(t.Context(), u); err == nil {
			t.Errorf("OpenBrowser(%q) accepted it", u)
		}
	}
	if out.Len() != 0 {
		t.Errorf("OpenBrowser printed %q", out.String())
	}
}

func TestPreregisteredClient(t *testing.T) {
	for _, c := range []struct {
		name, secret string
		methods      []string
		want         string // how the secret travels: basic, post or none
	}{
		{"public", "", []string{"none"}, "none"},
		{"basic", "sec-" + secretMark, []string{"client_secret_basic"}, "basic"},
		{"post", "sec-" + secretMark, []string{"client_secret_post"}, "post"},
		{"unlisted means basic", "sec-" + secretMark, nil, "basic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSetup(t, nil)
			h, err := oauth.New(oauth.Config{Server: s.rs.url(), Authorizer: s.lb, Logger: s.logs.logger(),
				ClientID: "pre", ClientSecret: c.secret, Issuer: s.as.url()})
			if err != nil {
				t.Fatal(err)
			}
			s.h = h
			s.as.meta["registration_endpoint"] = nil
			s.as.meta["token_endpoint_auth_methods_supported"] = c.methods
			if c.methods == nil {
				s.as.meta["token_endpoint_auth_methods_supported"] = nil
			}
			err = call(ctxTimeout(t), s.h, s.rs.url())
			if err != nil {
				t.Fatal(err)
			}
			f := s.as.tokenReqs[0]
			got := "none"
			switch {
			case f.Get("basic_client_secret") == c.secret && c.secret != "":
				got = "basic"
			case f.Get("client_secret") == c.secret && c.secret != "":
				got = "post"
			}
			if got != c.want || s.as.authReqs[0].Get("client_id") != "pre" {
				t.Errorf("client authentication %s (form %v), want %s with client pre", got, f, c.want)
			}
			s.noLeak(t, err)
		})
	}
}

func TestIssuerPinned(t *testing.T) {
	s := newSetup(t, func(cfg *oauth.Config) { cfg.Issuer = "https://as.example" })
	err := call(ctxTimeout(t), s.h, s.rs.url())
	if err == nil || !strings.Contains(err.Error(), "configured issuer") {
		t.Fatalf("error %v, want a refusal of the unconfigured issuer", err)
	}
}

func TestClientIDMetadataDocument(t *testing.T) {
	const doc = "https://client.example/clawtool.json"
	s := newSetup(t, func(cfg *oauth.Config) { cfg.ClientMetadataURL = doc })
	s.as.meta["client_id_metadata_document_supported"] = true
	if err := call(ctxTimeout(t), s.h, s.rs.url()); err != nil {
		t.Fatal(err)
	}
	if _, _, reg, _ := s.as.counts(); reg != 0 || s.as.authReqs[0].Get("client_id") != doc {
		t.Errorf("%d registrations and client_id %q; want none and the document's URL", reg, s.as.authReqs[0].Get("client_id"))
	}
}

func TestScopes(t *testing.T) {
	cases := []struct {
		name      string
		challenge string   // the challenge's scope
		supported []string // the resource's scopes_supported
		asScopes  []string // the authorization server's scopes_supported
		config    []string
		want      string
	}{
		{"from the challenge", "mcp:read", []string{"mcp:all"}, nil, nil, "mcp:read"},
		{"from scopes_supported", "", []string{"mcp:a", "mcp:b"}, nil, nil, "mcp:a mcp:b"},
		{"none", "", nil, nil, nil, ""},
		{"offline_access when offered", "mcp:read", nil, []string{"mcp:read", "offline_access"}, nil, "mcp:read offline_access"},
		{"configured with the challenge", "mcp:read", []string{"mcp:all"}, nil, []string{"extra"}, "mcp:read extra"},
		{"configured instead of scopes_supported", "", []string{"mcp:all"}, nil, []string{"extra"}, "extra"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSetup(t, func(cfg *oauth.Config) { cfg.Scopes = c.config })
			s.rs.prm = func(base string) any {
				return map[string]any{"resource": base + "/mcp", "authorization_servers": []string{s.as.url()}, "scopes_supported": c.supported}
			}
			if c.challenge != "" {
				s.rs.challenge = func(base string) string {
					return fmt.Sprintf(`Bearer scope=%q, resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, c.challenge, base)
				}
			}
			if c.asScopes != nil {
				s.as.meta["scopes_supported"] = c.asScopes
			}
			if err := call(ctxTimeout(t), s.h, s.rs.url()); err != nil {
				t.Fatal(err)
			}
			if got := s.as.authReqs[0].Get("scope"); got != c.want {
				t.Errorf("scope %q, want %q", got, c.want)
			}
		})
	}
}

// TestStepUp: a 403 insufficient_scope for a scope the token lacks gets
// a second authorization for the union; one for a scope the token has
// is refused at once (re-asking would loop).
func TestStepUp(t *testing.T) {
	s := newSetup(t, nil)
	s.rs.challenge = func(base string) string {
		return fmt.Sprintf(`Bearer scope="mcp:read", resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, base)
	}
	granted := map[string]string{}
	var mu sync.Mutex
	s.as.onToken = func(f url.Values) (int, any) { return 0, nil }
	s.rs.need = func(tok string) string {
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(granted[tok], "mcp:write") {
			return ""
		}
		return "mcp:write"
	}
	s.as.accessToken = func() string {
		mu.Lock()
		defer mu.Unlock()
		tok := "at-" + secretMark + "-" + fmt.Sprint(len(granted))
		q := s.as.authReqs[len(s.as.authReqs)-1]
		granted[tok] = q.Get("scope")
		return tok
	}
	ctx := ctxTimeout(t)
	// First: 401 → authorization for mcp:read; the retry gets 403 for mcp:write.
	if err := call(ctx, s.h, s.rs.url()); err == nil {
		t.Fatal("the first call passed without mcp:write")
	}
	// Second: 403 → step-up for mcp:read mcp:write; the retry passes.
	if err := call(ctx, s.h, s.rs.url()); err != nil {
		t.Fatal(err)
	}
	if n := len(s.as.authReqs); n != 2 || !sameSet(s.as.authReqs[1].Get("scope"), "mcp:read mcp:write") {
		t.Fatalf("%d authorizations, the last for %q; want 2, the last for the union", n, s.as.authReqs[len(s.as.authReqs)-1].Get("scope"))
	}

	// A server that wants a scope the token has is refused without asking.
	s.rs.need = func(string) string { return "mcp:write" }
	err := call(ctx, s.h, s.rs.url())
	if err == nil || !strings.Contains(err.Error(), "giving up") || len(s.as.authReqs) != 2 {
		t.Fatalf("error %v after %d authorizations; want giving up after 2", err, len(s.as.authReqs))
	}
	s.noLeak(t, err)
}

// TestChangingChallenge: a server that asks for another scope on every
// request gets a bounded number of authorizations, then a clear error.
func TestChangingChallenge(t *testing.T) {
	s := newSetup(t, nil)
	n := 0
	s.rs.challenge = func(base string) string {
		n++
		return fmt.Sprintf(`Bearer scope="mcp:s%d", resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, n, base)
	}
	s.rs.need = func(string) string { n++; return fmt.Sprintf("mcp:s%d", n) }
	ctx := ctxTimeout(t)
	var err error
	for range 20 {
		if err = call(ctx, s.h, s.rs.url()); err != nil && strings.Contains(err.Error(), "giving up") {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "giving up") {
		t.Fatalf("after 20 calls: %v, want giving up", err)
	}
	if auth, _, _, _ := s.as.counts(); auth > 5 {
		t.Errorf("%d authorizations, want at most 5", auth)
	}
}

// TestAuthorizationServerMigration: when the resource names another
// authorization server, the client registers again there and never
// sends the first server's client ID or tokens to it.
func TestAuthorizationServerMigration(t *testing.T) {
	s := newSetup(t, nil)
	ctx := ctxTimeout(t)
	if err := call(ctx, s.h, s.rs.url()); err != nil {
		t.Fatal(err)
	}
	as2 := newFakeAS(t)
	as2.onRegister = func(body map[string]any) (int, any) {
		return 201, map[string]any{"client_id": "as2-client", "redirect_uris": body["redirect_uris"], "token_endpoint_auth_method": "none"}
	}
	s.rs.as = as2
	s.rs.prm = func(base string) any {
		return map[string]any{"resource": base + "/mcp", "authorization_servers": []string{as2.url()}}
	}
	if err := call(ctx, s.h, s.rs.url()); err != nil {
		t.Fatal(err)
	}
	if _, _, reg, _ := as2.counts(); reg != 1 {
		t.Errorf("%d registrations at the new server, want 1", reg)
	}
	for _, q := range append(as2.authReqs, as2.tokenReqs...) {
		if q.Get("client_id") == "client-1" || strings.Contains(q.Get("refresh_token"), secretMark) {
			t.Errorf("the new server was sent the old client or token: %v", q)
		}
	}
}

func TestNonInteractive(t *testing.T) {
	s := newSetup(t, func(cfg *oauth.Config) { cfg.Authorizer = nil })
	err := call(ctxTimeout(t), s.h, s.rs.url())
	if !errors.Is(err, oauth.ErrLoginRequired) || !strings.Contains(err.Error(), "log in") {
		t.Fatalf("error %v, want ErrLoginRequired asking to log in", err)
	}
	if auth, _, _, _ := s.as.counts(); auth != 0 || s.opened != 0 {
		t.Errorf("a non-interactive handler started %d authorizations", auth)
	}
}

func TestConstructorRefusesPlainHTTP(t *testing.T) {
	for _, u := range []string{"http://mcp.example/mcp", "ftp://x/y", "not a url"} {
		if _, err := oauth.New(oauth.Config{Server: u}); err == nil {
			t.Errorf("New(%q) accepted it", u)
		}
	}
	for _, u := range []string{"https://mcp.example/mcp", "http://127.0.0.1:8080/mcp", "http://localhost/mcp", "http://[::1]:9/mcp"} {
		if _, err := oauth.New(oauth.Config{Server: u}); err != nil {
			t.Errorf("New(%q): %v", u, err)
		}
	}
}

// sameSet reports whether two scope strings name the same scopes.
func sameSet(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
