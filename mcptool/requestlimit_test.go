package mcptool_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/policy"
)

// TestHTTPCallFlood: one caller (a principal) sends 600 tools/call POSTs
// at once over HTTP for a tool that takes its time. Each ran at once,
// holding its goroutine and the tool: one credential could start as many
// calls as it could open connections. The server now serves at most
// DefaultMaxRequestsInFlight POSTs of one caller at once and answers the
// others at once with 429 and a JSON-RPC error naming the bound; nothing
// of them runs. Control: without the bound every call runs at once.
func TestHTTPCallFlood(t *testing.T) {
	const flood = 600
	run := func(t *testing.T, opts ...mcptool.ServerOption) (int64, int64) {
		var refused atomic.Int64
		h := newHeldTool(t)
		srv := mcptool.NewServer(h.reg, opts...)
		defer srv.Close()
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			srv.ServeHTTP(w, r.WithContext(policy.WithPrincipal(r.Context(), policy.Principal{ID: "mallory"})))
		}))
		defer hs.Close()
		client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: flood}}
		ctx, cancel := context.WithTimeout(t.Context(), 3*wait)
		defer cancel()
		var wg sync.WaitGroup
		var answered atomic.Int64
		for i := range flood {
			wg.Go(func() {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`, i+1)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("MCP-Protocol-Version", "2026-07-28")
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "slow")
				resp, err := client.Do(req)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				answered.Add(1)
				if resp.StatusCode == http.StatusTooManyRequests && strings.Contains(string(b), "requests of this caller at once") {
					refused.Add(1)
				}
			})
		}
		// Every call either runs or was refused; then let them end.
		for h.running.Load()+refused.Load() < flood {
			select {
			case <-ctx.Done():
				t.Fatalf("%d calls running, %d refused, of %d", h.running.Load(), refused.Load(), flood)
			case <-time.After(10 * time.Millisecond):
			}
		}
		close(h.release)
		wg.Wait()
		return h.peak.Load(), refused.Load()
	}
	most, refused := run(t, mcptool.WithRequestLimits(mcptool.RequestLimits{PerCaller: -1, Total: -1}))
	t.Logf("control: %d calls at once, %d refused", most, refused)
	if most < flood {
		t.Fatalf("control: %d calls ran at once, want %d", most, flood)
	}
	most, refused = run(t)
	t.Logf("defended: %d calls at once, %d refused", most, refused)
	if most > mcptool.DefaultMaxRequestsInFlight || refused != flood-most {
		t.Errorf("%d calls ran at once and %d were refused, want at most %d and the rest refused", most, refused, mcptool.DefaultMaxRequestsInFlight)
	}
}
