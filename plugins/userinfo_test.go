package plugins

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestURLUserinfoNotSentInClear: a URL server's "url" may carry a user
// and password (http://bob:secret@host/mcp), which Go's HTTP client sends
// with every request as Basic authorization. Only "headers" were checked,
// so over plain http to another machine the password crossed the network
// in clear. Such an entry is now refused when the file is read, before
// any request; https and plain http to this machine are accepted. The
// control: the client does send a URL's user and password, as an
// Authorization header, to a loopback server.
func TestURLUserinfoNotSentInClear(t *testing.T) {
	got := make(chan string, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Get("Authorization") }))
	defer hs.Close()
	resp, err := http.Get(strings.Replace(hs.URL, "http://", "http://bob:hunter2@", 1))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if auth := <-got; !strings.HasPrefix(auth, "Basic ") {
		t.Fatalf("control: the URL's user and password were not sent (Authorization %q); the attack does not work", auth)
	}

	vars := lookup(map[string]string{"PASS": "hunter2-very-secret", "HOST": "203.0.113.7"})
	for _, tc := range []struct {
		name, url string
		refused   bool
	}{
		{"user and password over http", "http://bob:${PASS}@203.0.113.7/mcp", true},
		{"host from the environment", "http://bob:${PASS}@${HOST}:8080/mcp", true},
		{"user alone over http", "http://bob@mcp.example.com/mcp", true},
		{"over https", "https://bob:${PASS}@mcp.example.com/mcp", false},
		{"loopback over http", "http://bob:${PASS}@127.0.0.1:8080/mcp", false},
		{"no user over http", "http://mcp.example.com/mcp", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(`{"mcpServers": {"a": {"url": "`+tc.url+`"}}}`), vars)
			switch {
			case tc.refused && err == nil:
				t.Fatal("accepted: the URL's user and password would go over plain http to another machine")
			case tc.refused && !strings.Contains(err.Error(), "in clear"):
				t.Fatalf("error %q does not say why", err)
			case !tc.refused && err != nil:
				t.Fatalf("refused: %v", err)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
	// A URL that does not parse is refused without quoting it: it may
	// hold a password that is not a reference, so not redacted.
	_, err = Parse([]byte(`{"mcpServers": {"a": {"url": "http://bob:hunter2@mcp.example.com:port/mcp"}}}`), vars)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("unparsable URL: %v, want it refused without the password", err)
	}
}
