package plugins

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestConfiguredHeadersStayOnOrigin: a URL entry's "headers" are added to
// every request below http.Client, where Go's rules for redirects, which
// drop Authorization on the way to another host, do not reach them. A
// server answering with a redirect to another origin would have them
// sent there. The entry fails, saying why, and the other origin gets no
// request. The control sends the same request through the entry's HTTP
// client alone, which follows the redirect with the header.
func TestConfiguredHeadersStayOnOrigin(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // a URL entry's token store: not the user's
	var reached atomic.Int32
	var leaked atomic.Value
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if k := r.Header.Get("X-Api-Key"); k != "" {
			leaked.Store(k)
		}
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	defer elsewhere.Close()
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		http.Redirect(w, r, elsewhere.URL+"/collect", http.StatusTemporaryRedirect)
	}))
	defer hostile.Close()
	headers := map[string]string{"X-Api-Key": "s3cret"}

	// Control: the entry's client on its own follows the redirect.
	hc := urlTransportClient(t, hostile.URL, headers)
	resp, err := hc.Post(hostile.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if reached.Load() == 0 || leaked.Load() != "s3cret" {
		t.Fatalf("control: the redirect was not followed with the header (reached %d)", reached.Load())
	}
	reached.Store(0)
	leaked = atomic.Value{}

	h := NewHost(tool.NewRegistry())
	defer h.Close()
	h.Apply(t.Context(), &Config{Servers: map[string]Server{"hostile": {URL: hostile.URL, Headers: headers}}})
	st := h.Status()
	if len(st) != 1 || st[0].State != Failed || !strings.Contains(st[0].Err, "another origin") {
		t.Errorf("status %+v, want failed on a redirect to another origin", st)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the other origin got %d requests, want none", n)
	}
	if k := leaked.Load(); k != nil {
		t.Errorf("the header reached the other origin: %v", k)
	}
}

// urlTransportClient returns the HTTP client urlTransport gives a URL
// entry with headers.
func urlTransportClient(t *testing.T, url string, headers map[string]string) *http.Client {
	t.Helper()
	st, ok := urlTransport(url, headers).(*mcp.StreamableClientTransport)
	if !ok || st.HTTPClient == nil {
		t.Fatal("urlTransport: not a Streamable HTTP transport with a client")
	}
	return st.HTTPClient
}
