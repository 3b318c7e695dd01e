package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/miniopenclaw/tool/mcptool/oauth"
)

// inMemory is an http.RoundTripper that serves requests with h in the
// calling goroutine: no sockets, so a synctest bubble's clock can move.
type inMemory struct{ h http.Handler }

func (t inMemory) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// refreshSetup is a Handler whose store holds a token issued at the
// bubble's now, expiring in lifetime, with a refresh token the fake
// authorization server knows.
func refreshSetup(t *testing.T, as *fakeAS, lifetime time.Duration, interactive bool) (*oauth.Handler, *oauth.MemoryStore, *logBuffer) {
	const server = "https://mcp.example/mcp"
	store := &oauth.MemoryStore{}
	now := time.Now()
	rt := "rt-" + secretMark + "-first"
	as.refresh[rt] = true
	store.Save(t.Context(), oauth.Key{Server: server}, &oauth.Record{
		Server: server, Resource: server, Issuer: as.url(), TokenEndpoint: as.url() + "/token",
		Registration: "dynamic", ClientID: "client-1", AuthMethod: "none",
		AccessToken: "at-" + secretMark + "-first", RefreshToken: oauth.Secret(rt),
		Obtained: now, Expiry: now.Add(lifetime),
	})
	logs := &logBuffer{}
	cfg := oauth.Config{Server: server, Store: store, Logger: logs.logger(),
		HTTPClient: &http.Client{Transport: inMemory{as.srv.Config.Handler}}}
	if interactive {
		cfg.Authorizer = &oauth.Loopback{Open: func(context.Context, string) error { return errors.New("no user here") }}
	}
	h, err := oauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h, store, logs
}

func token(t *testing.T, h *oauth.Handler) string {
	t.Helper()
	ts, _ := h.TokenSource(t.Context())
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	if tok == nil {
		return ""
	}
	return tok.AccessToken
}

// TestRefreshBeforeExpiry: the token is used as it is until 30 s before
// it expires, then refreshed (with the resource parameter) and saved.
func TestRefreshBeforeExpiry(t *testing.T) {
	as := newFakeAS(t)
	synctest.Test(t, func(t *testing.T) {
		h, store, logs := refreshSetup(t, as, 2*time.Minute, false)
		first := token(t, h)
		time.Sleep(85 * time.Second) // 35 s left
		if got := token(t, h); got != first {
			t.Fatal("refreshed 35 s before expiry")
		}
		if _, _, _, r := as.counts(); r != 0 {
			t.Fatalf("%d refreshes, want none yet", r)
		}
		time.Sleep(10 * time.Second) // 25 s left
		second := token(t, h)
		if second == first || second == "" {
			t.Fatalf("not refreshed 25 s before expiry")
		}
		if _, _, _, r := as.counts(); r != 1 {
			t.Fatalf("%d refreshes, want 1", r)
		}
		f := as.tokenReqs[0]
		if f.Get("grant_type") != "refresh_token" || f.Get("resource") != "https://mcp.example/mcp" || f.Get("client_id") != "client-1" {
			t.Errorf("refresh request %v: want the refresh_token grant with the resource and the client ID", f)
		}
		rec, _ := store.Load(t.Context(), h.Key())
		if string(rec.AccessToken) != second || rec.Expiry.Before(time.Now().Add(time.Hour)) {
			t.Errorf("the refreshed token was not saved: %v", rec)
		}
		if strings.Contains(logs.String(), secretMark) {
			t.Errorf("a secret reached the log:\n%s", logs)
		}
	})
}

// TestOneRefreshForConcurrentCalls: twenty calls that find the token
// expired at once share one refresh.
func TestOneRefreshForConcurrentCalls(t *testing.T) {
	as := newFakeAS(t)
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{}) // made in the bubble, so waiting on it is durable
		as.onToken = func(url.Values) (int, any) { <-release; return 0, nil }
		h, _, _ := refreshSetup(t, as, time.Minute, false)
		time.Sleep(time.Minute)
		var wg sync.WaitGroup
		got := make([]string, 20)
		for i := range got {
			wg.Go(func() { got[i] = token(t, h) })
		}
		synctest.Wait() // all twenty wait for the one refresh
		close(release)
		wg.Wait()
		if _, _, _, r := as.counts(); r != 1 {
			t.Fatalf("%d refreshes for 20 concurrent calls, want 1", r)
		}
		for _, g := range got {
			if g != got[0] || g == "" {
				t.Fatalf("calls got different tokens: %q", got)
			}
		}
	})
}

// TestRefreshRefused: a refresh token the authorization server refuses
// makes the call fail with ErrLoginRequired and a message that asks for
// a login; the dead tokens are forgotten in the store; nothing leaks.
func TestRefreshRefused(t *testing.T) {
	as := newFakeAS(t)
	as.onToken = func(f url.Values) (int, any) {
		return 400, map[string]any{"error": "invalid_grant", "error_description": "revoked " + f.Get("refresh_token")}
	}
	synctest.Test(t, func(t *testing.T) {
		h, store, logs := refreshSetup(t, as, time.Minute, false)
		time.Sleep(2 * time.Minute)
		ts, _ := h.TokenSource(t.Context())
		tok, err := ts.Token()
		if tok != nil || !errors.Is(err, oauth.ErrLoginRequired) || !strings.Contains(err.Error(), "log in again") {
			t.Fatalf("Token() = %v, %v; want ErrLoginRequired asking to log in again", tok, err)
		}
		if strings.Contains(err.Error(), secretMark) || strings.Contains(logs.String(), secretMark) {
			t.Errorf("a secret leaked: %v\n%s", err, logs)
		}
		rec, _ := store.Load(t.Context(), h.Key())
		if rec == nil || rec.AccessToken != "" || rec.RefreshToken != "" || rec.ClientID != "client-1" {
			t.Errorf("stored record after the refusal: %v; want the registration without tokens", rec)
		}
	})
}

// TestRefreshRefusedInteractive: with an Authorizer, a refused refresh
// sends the request without a token, so the server's challenge starts
// a new authorization.
func TestRefreshRefusedInteractive(t *testing.T) {
	as := newFakeAS(t)
	as.onToken = func(url.Values) (int, any) { return 400, map[string]any{"error": "invalid_grant"} }
	synctest.Test(t, func(t *testing.T) {
		h, _, _ := refreshSetup(t, as, time.Minute, true)
		time.Sleep(2 * time.Minute)
		if got := token(t, h); got != "" {
			t.Fatalf("Token() = %q, want none", got)
		}
	})
}

// TestRefreshNetworkError: a refresh that fails for the network keeps
// a token that is still valid, and says what failed once it is not.
func TestRefreshNetworkError(t *testing.T) {
	as := newFakeAS(t)
	synctest.Test(t, func(t *testing.T) {
		h, _, _ := refreshSetup(t, as, time.Minute, false)
		as.onToken = func(url.Values) (int, any) { return 503, map[string]any{"error": "temporarily_unavailable"} }
		time.Sleep(45 * time.Second)
		if got := token(t, h); !strings.Contains(got, "first") {
			t.Fatalf("Token() = %q, want the old token while it is valid", got)
		}
		time.Sleep(time.Minute)
		ts, _ := h.TokenSource(t.Context())
		if _, err := ts.Token(); err == nil || !strings.Contains(err.Error(), "temporarily_unavailable") {
			t.Fatalf("Token() error %v, want the token endpoint's error", err)
		}
	})
}
