package mcptool_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEndpointUserinfoNotSentInClear: an endpoint URL may carry a user
// and password (http://bob:secret@host/mcp, as "clawtool tasks --mcp-url"
// takes it), which Go's HTTP client sends with every request as Basic
// authorization. Over plain http to another machine that crossed the
// network in clear. Connect now refuses such an endpoint before any
// request, naming why; https and loopback endpoints are not refused. The
// control: through mcptool.URL, a loopback server does receive the
// endpoint's user and password.
func TestEndpointUserinfoNotSentInClear(t *testing.T) {
	reg := tool.NewRegistry()
	srv := mcptool.NewServer(reg)
	t.Cleanup(func() { srv.Close() })
	var sawBasic bool
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Authorization"), "Basic ") {
			sawBasic = true
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	c, err := mcptool.Connect(ctx, mcptool.URL(strings.Replace(hs.URL, "http://", "http://bob:hunter2@", 1)))
	if err != nil {
		t.Fatalf("control: loopback endpoint with a user: %v", err)
	}
	c.Close()
	if !sawBasic {
		t.Fatal("control: the endpoint's user and password did not reach the server; the attack does not work")
	}

	// The test sends nothing off this machine: a request that gets past
	// Connect meets a transport that refuses it.
	offMachine := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return nil, fmt.Errorf("test transport: a request to %s was sent, Authorization %q", r.URL.Host, r.Header.Get("Authorization"))
	})
	for _, endpoint := range []string{"http://bob:hunter2@203.0.113.7:9/mcp", "http://bob@mcp.example.com/mcp"} {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		_, err := mcptool.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: offMachine}})
		cancel()
		if err == nil || !strings.Contains(err.Error(), "in clear") {
			t.Errorf("Connect(%s): %v, want it refused as sending the password in clear", strings.Replace(endpoint, "hunter2", "…", 1), err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error %q shows the password", err)
		}
	}
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
