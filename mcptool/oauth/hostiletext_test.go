package oauth_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/mcptool/oauth"
)

// TestServerTextNotStoredRaw: the client ID a dynamic registration
// answers and the scopes a token response grants are text the
// authorization server wrote, kept in the record and shown by `clawtool
// auth status` and `auth login`. Before, they were kept as sent: a
// client_id or scope holding an escape sequence (ESC ] to retitle the
// terminal, ESC [ 2J to clear it, so a fake "logged in at ..." could
// replace the real line) reached the user's terminal. RFC 6749 bounds
// both (client-id is VSCHAR, %x20-7E; scope-token %x21, %x23-5B,
// %x5D-7E), so such a response is malformed: the registration or token
// response is refused, saying which, and nothing is stored. The control
// is the same flow with plain values, which logs in and stores them.
func TestServerTextNotStoredRaw(t *testing.T) {
	const esc = "\x1b]0;pwned\x07\x1b[2J"
	for _, c := range []struct {
		name               string
		clientID, scope    string
		want               string // "" logs in
		wantID, wantScopes string
	}{
		{"control", "client-plain", "read write", "", "client-plain", "read write"},
		{"client_id with an escape", "client" + esc, "", "client_id", "", ""},
		{"client_id with a newline", "client\nlogged in at https://trusted.example", "", "client_id", "", ""},
		{"granted scope with an escape", "client-plain", "read" + esc, "scope", "", ""},
		{"granted scope with a quote", "client-plain", `read "write"`, "scope", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := &oauth.MemoryStore{}
			s := newSetup(t, func(cfg *oauth.Config) { cfg.Store = store })
			s.as.onRegister = func(body map[string]any) (int, any) {
				return http.StatusCreated, map[string]any{"client_id": c.clientID, "redirect_uris": body["redirect_uris"], "token_endpoint_auth_method": "none"}
			}
			s.as.grantScope = c.scope
			ctx := ctxTimeout(t)
			err := call(ctx, s.h, s.rs.url())
			rec, lerr := store.Load(ctx, oauth.Key{Server: s.rs.url()})
			if lerr != nil {
				t.Fatal(lerr)
			}
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if rec == nil || rec.ClientID != c.wantID || strings.Join(rec.Scopes, " ") != c.wantScopes {
					t.Fatalf("control: stored %+v", rec)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error naming %s", err, c.want)
			}
			if err != nil && strings.ContainsAny(err.Error(), "\x1b\x07\n") {
				t.Errorf("the error carries the server's control characters raw: %q", err)
			}
			if rec != nil && (strings.ContainsAny(rec.ClientID, "\x1b\x07\n") || strings.ContainsAny(strings.Join(rec.Scopes, " "), "\x1b\x07\"")) {
				t.Errorf("stored the server's text raw: client %q, scopes %q", rec.ClientID, rec.Scopes)
			}
			if rec != nil && rec.AccessToken != "" {
				t.Errorf("a token was stored")
			}
		})
	}
}
