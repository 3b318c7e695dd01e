package loopback

import (
	"net/url"
	"testing"
)

func TestCleartext(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"http://example.com/mcp", true},
		{"HTTP://example.com/mcp", true},
		{"http://10.0.0.1:8080/", true},
		{"http://[2001:db8::1]/", true},
		{"http://localhost.example.com/", true},
		{"http://127.0.0.1.nip.io/", true},
		{"http://0.0.0.0/", true}, // any address, not this machine's loopback
		{"https://example.com/mcp", false},
		{"http://localhost:8080/", false},
		{"http://LOCALHOST./", false},
		{"http://127.0.0.1/", false},
		{"http://127.8.9.10/", false},
		{"http://[::1]:3000/", false},
		{"http://[::ffff:127.0.0.1]/", false},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := Cleartext(u); got != tc.want {
			t.Errorf("Cleartext(%s) = %v, want %v", tc.url, got, tc.want)
		}
	}
}
