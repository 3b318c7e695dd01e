package plugins

import (
	"strings"
	"testing"
)

// TestHeadersNotSentInClear: a URL server's "headers" (a bearer token,
// an API key: they hold secrets as often as not) go with every request
// to its URL. Over plain http to another machine they would cross the
// network in clear, so such an entry is refused when the file is read,
// before any request; https, plain http to this machine, and plain http
// without headers are accepted (the controls).
func TestHeadersNotSentInClear(t *testing.T) {
	vars := lookup(map[string]string{"TOKEN": "hunter2-very-secret", "HOST": "203.0.113.7"})
	for _, tc := range []struct {
		name, url, headers string
		refused            bool
	}{
		{"remote over http", "http://203.0.113.7/mcp", `{"Authorization": "Bearer ${TOKEN}"}`, true},
		{"host from the environment", "http://${HOST}:8080/mcp", `{"X-Api-Key": "${TOKEN}"}`, true},
		{"a name that only starts like localhost", "http://localhost.example.com/mcp", `{"Authorization": "Bearer ${TOKEN}"}`, true},
		{"any header", "http://mcp.example.com/mcp", `{"X-Tenant": "acme"}`, true},
		{"remote over https", "https://mcp.example.com/mcp", `{"Authorization": "Bearer ${TOKEN}"}`, false},
		{"loopback over http", "http://127.0.0.1:8080/mcp", `{"Authorization": "Bearer ${TOKEN}"}`, false},
		{"localhost over http", "http://localhost:8080/mcp", `{"Authorization": "Bearer ${TOKEN}"}`, false},
		{"IPv6 loopback over http", "http://[::1]:8080/mcp", `{"Authorization": "Bearer ${TOKEN}"}`, false},
		{"remote over http without headers", "http://mcp.example.com/mcp", `{}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := `{"mcpServers": {"a": {"url": "` + tc.url + `", "headers": ` + tc.headers + `}}}`
			_, err := Parse([]byte(config), vars)
			switch {
			case tc.refused && err == nil:
				t.Fatal("accepted: the headers would go over plain http to another machine")
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
}
