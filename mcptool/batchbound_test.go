package mcptool_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
)

// TestHTTPBatchBounded: a session of protocol 2025-03-26, the last that
// had JSON-RPC batches, may send one; one POST of a few MiB holding
// thousands of tools/call must not start thousands of calls at once.
// A batch of more than mcptool.MaxBatchMessages is refused with 400 and
// a JSON-RPC error before any of its calls runs, and a batch within the
// bound is served. The control sends the same batch to go-sdk's own
// handler, where every call starts at once.
func TestHTTPBatchBounded(t *testing.T) {
	var started, inflight, peak atomic.Int64
	release := make(chan struct{})
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("block", "Waits to be released.", func(ctx context.Context, in struct{}) (string, error) {
		started.Add(1)
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "ok", nil
	})))
	srv := mcptool.NewServer(r)
	t.Cleanup(func() { srv.Close() })
	const n = 2000
	batch := func(count int) string {
		var b strings.Builder
		b.WriteString("[")
		for i := range count {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"block","arguments":{}}}`, i+10)
		}
		return b.String() + "]"
	}
	open := func(url string) string {
		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
		status, msg, h := send(t, url, rawCall{body: init})
		sid := h.Get("Mcp-Session-Id")
		if status != http.StatusOK || sid == "" || !strings.Contains(msg, `"2025-03-26"`) {
			t.Fatalf("initialize: %d %q (session %q)", status, msg, sid)
		}
		send(t, url, rawCall{session: sid, version: "2025-03-26", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`})
		return sid
	}
	post := func(url, sid, body string) (int, string) {
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for b.Len() < 1<<20 {
			k, err := resp.Body.Read(buf)
			b.Write(buf[:k])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	waitFor := func(cond func() bool) bool {
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if cond() {
				return true
			}
		}
		return false
	}

	t.Run("control", func(t *testing.T) {
		hs := httptest.NewServer(srv.SDKSessionsHandler())
		defer hs.Close()
		sid := open(hs.URL)
		go post(hs.URL, sid, batch(n))
		if !waitFor(func() bool { return peak.Load() == n }) {
			t.Fatalf("control: %d of %d calls of the batch ran at once", peak.Load(), n)
		}
		close(release)
		waitFor(func() bool { return inflight.Load() == 0 })
	})
	started.Store(0)

	hs := httptest.NewServer(srv)
	defer hs.Close()
	sid := open(hs.URL)
	status, body := post(hs.URL, sid, batch(n))
	if status != http.StatusBadRequest || !strings.Contains(body, `"code":-32600`) || !strings.Contains(body, fmt.Sprint(mcptool.MaxBatchMessages)) {
		t.Errorf("a batch of %d: %d %.300q, want 400 and a JSON-RPC error naming the bound", n, status, body)
	}
	if got := started.Load(); got != 0 {
		t.Errorf("%d calls of the refused batch ran", got)
	}
	// Within the bound (release is closed: the calls return at once).
	status, body = post(hs.URL, sid, batch(mcptool.MaxBatchMessages))
	if status != http.StatusOK || strings.Count(body, `"text":"ok"`) != mcptool.MaxBatchMessages {
		t.Errorf("a batch of %d: %d %.300q, want every call answered", mcptool.MaxBatchMessages, status, body)
	}
}
