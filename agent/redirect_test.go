package agent

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
)

// TestModelRedirectKeepsKeyOnOrigin: the model endpoint (a proxy, a
// compromised gateway, a mistyped base URL) answers with a redirect to
// another origin. Go's client follows it and replays the POST, the
// conversation in its body, with every header but Authorization and
// Cookie: Anthropic's x-api-key goes to whoever the redirect names (and
// Authorization too, to the same host on another port or over plain
// http). The model's default client follows a redirect only within the
// endpoint's origin; a redirect elsewhere fails the request, naming both
// origins. Control: a same-origin redirect is followed.
func TestModelRedirectKeepsKeyOnOrigin(t *testing.T) {
	var leaked atomic.Value
	var reached atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		io.Copy(io.Discard, r.Body)
		if k := r.Header.Get("x-api-key") + r.Header.Get("Authorization"); k != "" {
			leaked.Store(k)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"m","type":"message","role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"hi"}],"choices":[{"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}]}`)
	}))
	defer elsewhere.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/moved/", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"m","type":"message","role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"same origin"}],"choices":[{"finish_reason":"stop","message":{"role":"assistant","content":"same origin"}}]}`)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		target := elsewhere.URL + r.URL.Path
		if strings.HasPrefix(r.URL.Path, "/local") {
			target = "/moved" + strings.TrimPrefix(r.URL.Path, "/local")
		}
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	})
	hostile := httptest.NewServer(mux)
	defer hostile.Close()

	for _, tc := range []struct {
		name string
		m    *Model
	}{
		{"anthropic", Anthropic("secret-key", "m", WithBaseURL(hostile.URL))},
		{"openai", OpenAI(hostile.URL+"/v1", "secret-key", "m")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.m, tool.NewRegistry()).Run(context.Background(), "hello")
			if err == nil || !strings.Contains(err.Error(), "another origin") {
				t.Errorf("Run: %v, want a refused redirect to another origin", err)
			}
			if n := reached.Load(); n != 0 {
				t.Errorf("the other origin got %d requests, want none", n)
			}
			if k := leaked.Load(); k != nil {
				t.Errorf("the API key reached the other origin: %v", k)
			}
		})
	}
	t.Run("control: same origin", func(t *testing.T) {
		answer, err := New(OpenAI(hostile.URL+"/local/v1", "secret-key", "m"), tool.NewRegistry()).Run(context.Background(), "hello")
		if err != nil || answer != "same origin" {
			t.Fatalf("Run through a same-origin redirect: %q, %v", answer, err)
		}
	})
}

// TestModelKeyNotSentInClear: a base URL of plain http to another machine
// (a typo, an OPENAI_BASE_URL copied from a LAN setup) would carry the
// API key across the network in clear. The request is refused before it
// is sent, saying why; a loopback address (a local server) and a request
// without a key are sent. Controls: the same base on loopback reaches the
// server with the key.
func TestModelKeyNotSentInClear(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got.Store(r.Header.Get("x-api-key") + r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"m","type":"message","role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"hi"}],"choices":[{"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}]}`)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		m    *Model
		ok   bool
	}{
		{"control: openai on loopback", OpenAI(srv.URL+"/v1", "secret-key", "m"), true},
		{"control: anthropic on loopback", Anthropic("secret-key", "m", WithBaseURL(strings.Replace(srv.URL, "127.0.0.1", "localhost", 1))), true},
		{"openai over http elsewhere", OpenAI("http://192.0.2.1:9/v1", "secret-key", "m"), false},
		{"anthropic over http elsewhere", Anthropic("secret-key", "m", WithBaseURL("http://models.example:80")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := New(tc.m, tool.NewRegistry()).Run(ctx, "hello")
			if tc.ok {
				if err != nil || got.Load() == nil {
					t.Fatalf("Run: %v, want the request sent with its key", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "in clear") {
				t.Fatalf("Run: %v, want the key refused over plain http", err)
			}
		})
	}
	// No key: nothing to leak, so a LAN server without one is reached.
	if err := keyInClear("http://192.0.2.1:9/v1", ""); err != nil {
		t.Errorf("no key over plain http: %v, want it sent", err)
	}
}
