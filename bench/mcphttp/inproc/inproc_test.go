// Package inproc compares, in one process and one run, one tools/call
// over HTTP handlers called directly (no network): clawtool's ServeHTTP in
// both protocol eras against mcp-go's Streamable HTTP handler (in its
// session mode and its stateless mode) and go-sdk's stateless handler.
// It lives in this module so that mcp-go stays out of the main module.
package inproc

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// add evaluates "A+B" for integers A and B, the work of the trivial tool
// every server serves.
func add(expr string) string {
	a, b, _ := strings.Cut(expr, "+")
	x, _ := strconv.Atoi(strings.TrimSpace(a))
	y, _ := strconv.Atoi(strings.TrimSpace(b))
	return strconv.Itoa(x + y)
}

func registry() *tool.Registry {
	r := tool.NewRegistry()
	if err := r.Register(tool.Must(tool.New("calc", "Adds two integers written as A+B.", func(_ context.Context, in struct {
		Expression string `json:"expression"`
	}) (string, error) {
		return add(in.Expression), nil
	}))); err != nil {
		panic(err)
	}
	return r
}

func mcpGoHandler(opts ...mcpgoserver.StreamableHTTPOption) http.Handler {
	s := mcpgoserver.NewMCPServer("mcpgo-bench", "1", mcpgoserver.WithToolCapabilities(true))
	s.AddTool(mcpgo.NewTool("calc",
		mcpgo.WithDescription("Adds two integers written as A+B."),
		mcpgo.WithString("expression", mcpgo.Required()),
	), func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		expr, err := req.RequireString("expression")
		if err != nil {
			return mcpgo.NewToolResultError(err.Error()), nil
		}
		return mcpgo.NewToolResultText(add(expr)), nil
	})
	return mcpgoserver.NewStreamableHTTPServer(s, opts...)
}

const (
	args     = `"arguments":{"expression":"2+3"}`
	call2025 = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"calc",` + args + `}}`
	call2026 = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"calc",` + args +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"bench","version":"1"}}}`
)

// request is one POST to a handler.
type request struct {
	body    string
	headers map[string]string
}

// serve posts q to h and returns the response. The request's context is
// canceled when h returns, as net/http's server does.
func serve(h http.Handler, q request) *httptest.ResponseRecorder {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", strings.NewReader(q.body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range q.headers {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// session opens a 2025-11-25 session of h and returns the request that
// calls calc in it.
func session(tb testing.TB, h http.Handler) request {
	w := serve(h, request{body: initialize})
	id := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || id == "" {
		tb.Fatalf("initialize: %d, session %q: %s", w.Code, id, w.Body)
	}
	hd := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-11-25"}
	if w := serve(h, request{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, hd}); w.Code != http.StatusAccepted {
		tb.Fatalf("notifications/initialized: %d: %s", w.Code, w.Body)
	}
	return request{call2025, hd}
}

// A contender is one handler and the request it is measured with.
type contender struct {
	name string
	h    http.Handler
	q    request
}

func contenders(tb testing.TB) []contender {
	direct := mcptool.NewServer(registry())
	tb.Cleanup(func() { direct.Close() })
	viaSDK := mcptool.NewServer(registry())
	tb.Cleanup(func() { viaSDK.Close() })
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return viaSDK.MCP() },
		&mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
	headers2026 := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "calc"}
	mcpgoSession := mcpGoHandler()
	mcpgoStateless := mcpGoHandler(mcpgoserver.WithStateLess(true))
	cs := []contender{
		{"clawtool-2026", direct, request{call2026, headers2026}},
		{"clawtool-2025", direct, session(tb, direct)},
		{"mcpgo-session", mcpgoSession, session(tb, mcpgoSession)},
		{"mcpgo-stateless", mcpgoStateless, request{call2025, map[string]string{"Mcp-Protocol-Version": "2025-11-25"}}},
		{"gosdk-2026", sdk, request{call2026, headers2026}},
	}
	for _, c := range cs {
		w := serve(c.h, c.q)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"text":"5"`) {
			tb.Fatalf("%s: %d %q: %s", c.name, w.Code, w.Header().Get("Content-Type"), w.Body)
		}
	}
	return cs
}

// TestContenders checks that every contender answers the call with 5.
func TestContenders(t *testing.T) { contenders(t) }

// BenchmarkInProcess calls each contender in turn, in chunks of 64 calls,
// so all see the same machine, and reports each one's time per call and
// clawtool's ratios to mcp-go's two modes and to go-sdk.
func BenchmarkInProcess(b *testing.B) {
	cs := contenders(b)
	spent := make([]time.Duration, len(cs))
	const chunk = 64
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		for i, c := range cs {
			t0 := time.Now()
			for range n {
				serve(c.h, c.q)
			}
			spent[i] += time.Since(t0)
		}
	}
	per := map[string]float64{}
	for i, c := range cs {
		per[c.name] = float64(spent[i].Nanoseconds()) / float64(b.N)
		b.ReportMetric(per[c.name], c.name+"-ns/call")
	}
	for _, r := range [][2]string{
		{"clawtool-2026", "mcpgo-stateless"}, {"clawtool-2026", "mcpgo-session"},
		{"clawtool-2025", "mcpgo-session"}, {"clawtool-2025", "mcpgo-stateless"},
		{"clawtool-2026", "gosdk-2026"},
	} {
		b.ReportMetric(per[r[0]]/per[r[1]], fmt.Sprintf("%s/%s", r[0], r[1]))
	}
}
