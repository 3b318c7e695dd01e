package oauth_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/mcptool/oauth"
)

// TestLogoutRevocation: Logout asks the revocation endpoint to revoke
// the refresh token, then the access token, and forgets the record
// whatever it answers; what it answers decides whether the result says
// the tokens were revoked. An authorization server that revokes the
// grant but not its self-contained (JWT) access tokens answers the
// second request unsupported_token_type (RFC 7009 §2.2.1), as
// oidc-provider does: that is a revoked grant, not a failure (the
// end-to-end test, cmd/clawtool's TestOAuthE2E, found it).
func TestLogoutRevocation(t *testing.T) {
	const server = "https://mcp.example/mcp"
	unsupported := func(w http.ResponseWriter) {
		writeJSON(w, 400, map[string]any{"error": "unsupported_token_type", "error_description": "echoing at-" + secretMark})
	}
	cases := []struct {
		name    string
		refresh bool // the record has a refresh token
		answer  func(w http.ResponseWriter, hint string)
		revoked bool
		errHas  string
	}{
		{"both revoked", true, func(w http.ResponseWriter, _ string) {}, true, ""},
		{"access token not revocable, refresh token revoked", true, func(w http.ResponseWriter, hint string) {
			if hint == "access_token" {
				unsupported(w)
			}
		}, true, ""},
		{"no refresh token and the access token not revocable", false, func(w http.ResponseWriter, _ string) { unsupported(w) },
			false, "stays valid until it expires"},
		{"refresh token not revocable", true, func(w http.ResponseWriter, hint string) {
			if hint == "refresh_token" {
				unsupported(w)
			}
		}, false, "revoking the refresh_token"},
		{"server error", true, func(w http.ResponseWriter, _ string) {
			writeJSON(w, 503, map[string]any{"error": "temporarily_unavailable rt-" + secretMark})
		}, false, "503"},
		{"garbage", true, func(w http.ResponseWriter, _ string) {
			w.WriteHeader(400)
			w.Write([]byte("<html>at-" + secretMark + strings.Repeat("x", 2<<20)))
		}, false, "400"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var hints []string
			rev := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.ParseForm()
				mu.Lock()
				hints = append(hints, r.PostForm.Get("token_type_hint"))
				mu.Unlock()
				c.answer(w, r.PostForm.Get("token_type_hint"))
			}))
			defer rev.Close()
			store := &oauth.MemoryStore{}
			rec := &oauth.Record{
				Server: server, Resource: server, Issuer: rev.URL, TokenEndpoint: rev.URL + "/token", RevocationEndpoint: rev.URL,
				Registration: "dynamic", ClientID: "client-1", AuthMethod: "none",
				AccessToken: "at-" + secretMark, Expiry: time.Now().Add(time.Hour),
			}
			if c.refresh {
				rec.RefreshToken = "rt-" + secretMark
			}
			store.Save(t.Context(), oauth.Key{Server: server}, rec)
			logs := &logBuffer{}
			h, err := oauth.New(oauth.Config{Server: server, Store: store, Logger: logs.logger()})
			if err != nil {
				t.Fatal(err)
			}
			res, err := h.Logout(t.Context())
			if err != nil || !res.Removed {
				t.Fatalf("Logout = %+v, %v; want the record removed", res, err)
			}
			if got, _ := store.Load(t.Context(), oauth.Key{Server: server}); got != nil {
				t.Error("the record is still stored")
			}
			if res.Revoked != c.revoked {
				t.Errorf("Revoked = %v (%v), want %v", res.Revoked, res.RevokeErr, c.revoked)
			}
			if c.errHas != "" && (res.RevokeErr == nil || !strings.Contains(res.RevokeErr.Error(), c.errHas)) {
				t.Errorf("RevokeErr = %v, want it to say %q", res.RevokeErr, c.errHas)
			}
			if res.RevokeErr != nil && strings.Contains(res.RevokeErr.Error(), secretMark) {
				t.Errorf("RevokeErr quotes a token: %v", res.RevokeErr)
			}
			if strings.Contains(logs.String(), secretMark) {
				t.Errorf("the log quotes a token: %s", logs.String())
			}
			if c.refresh && (len(hints) == 0 || hints[0] != "refresh_token") {
				t.Errorf("revocation requests %v; want the refresh token first (it revokes the grant)", hints)
			}
		})
	}
}
