package agent

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

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
