package mcptool_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	meta2026        = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	metaElicitation = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
)

// post sends body to h as a 2026-07-28 request for the tool name, with
// headers changed by edit, and returns the status, the Content-Type and
// the JSON-RPC message of the response (from an application/json body or
// the last event of a stream).
func post(t *testing.T, h func(http.ResponseWriter, *http.Request), name, body string, edit func(http.Header)) (int, string, any) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", name)
	if edit != nil {
		edit(r.Header)
	}
	w := httptest.NewRecorder()
	h(w, r)
	ct := w.Header().Get("Content-Type")
	data := w.Body.Bytes()
	if strings.HasPrefix(ct, "text/event-stream") {
		data = nil
		sc := bufio.NewScanner(bytes.NewReader(w.Body.Bytes()))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data = []byte(d)
			}
		}
	}
	var msg any
	if err := json.Unmarshal(data, &msg); err != nil {
		msg = "not JSON: " + w.Body.String()
	}
	return w.Code, ct, msg
}

// TestServerHTTPDirect checks that ServeHTTP answers a 2026-07-28
// tools/call exactly as go-sdk's own handler does, as one application/json
// body where it answers directly, and leaves every request it does not
// handle (progress, unknown tools, mismatched headers, unusual bodies) to
// go-sdk.
func TestServerHTTPDirect(t *testing.T) {
	srv := mcptool.NewServer(newRegistry(echo{}, add{}, words{}, media{}, confirm()), mcptool.WithImplementation("direct-test", "1.2.3"))
	defer srv.Close()
	tests := []struct {
		name   string
		tool   string
		body   string
		edit   func(http.Header)
		direct bool
	}{
		{"text result", "echo", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + meta2026 + `}}`, nil, true},
		{"structured result", "add", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2},` + meta2026 + `}}`, nil, true},
		{"wrapped structured result", "words", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"words","arguments":{"text":"a b"},` + meta2026 + `}}`, nil, true},
		{"parts", "media", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"media",` + meta2026 + `}}`, nil, true},
		{"invalid arguments", "add", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add","arguments":{"a":"x"},` + meta2026 + `}}`, nil, true},
		{"string id, spaces, client info", "echo", ` { "params" : { ` + meta2026 + ` , "arguments":{"text":"x"}, "name":"echo" }, "id" : "a\u0062" , "method":"tools/call","jsonrpc":"2.0"} `,
			nil, true},
		{"input required", "confirm", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"confirm","arguments":{"what":"cache"},` + metaElicitation + `}}`, nil, true},
		{"missing capability", "confirm", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"confirm","arguments":{"what":"cache"},` + meta2026 + `}}`, nil, true},

		{"progress token", "echo", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, nil, false},
		{"log level", "echo", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/logLevel":"debug","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, nil, false},
		{"input responses", "confirm", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"confirm","arguments":{"what":"cache"},"inputResponses":{"ok":{"action":"accept","content":{"sure":true}}},"requestState":"s",` + metaElicitation + `}}`, nil, false},
		{"unknown tool", "nope", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"nope",` + meta2026 + `}}`, nil, false},
		{"name header mismatch", "add", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + meta2026 + `}}`, nil, false},
		{"method header mismatch", "echo", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + meta2026 + `}}`,
			func(h http.Header) { h.Set("Mcp-Method", "tools/list") }, false},
		{"no capabilities", "echo", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, nil, false},
		{"meta version mismatch", "echo", `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}`, nil, false},
		{"key in another case", "echo", `{"jsonrpc":"2.0","id":15,"Method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + meta2026 + `}}`, nil, false},
		{"repeated key", "echo", `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"echo","name":"add","arguments":{"text":"hi"},` + meta2026 + `}}`, nil, false},
		// A fractional id (go-sdk answered 1.5 as 1) is refused on every
		// path now: TestRequestIDsEchoedExactly.
		{"arguments not an object", "echo", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":["hi"],` + meta2026 + `}}`, nil, false},
		{"malformed", "echo", `{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"echo"`, nil, false},
		{"no Accept for streams", "echo", `{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + meta2026 + `}}`,
			func(h http.Header) { h.Set("Accept", "application/json") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, ct, got := post(t, srv.ServeHTTP, tt.tool, tt.body, tt.edit)
			wantStatus, wantCT, want := post(t, srv.ServeHTTPViaSDK, tt.tool, tt.body, tt.edit)
			if status != wantStatus {
				t.Errorf("status %d, go-sdk's %d", status, wantStatus)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("response differs from go-sdk's (-sdk +direct):\n%s", diff)
			}
			if !tt.direct {
				wantCT = ct
			} else {
				wantCT = "application/json" // go-sdk's: an event stream
			}
			if ct != wantCT {
				t.Errorf("Content-Type %q, want %q", ct, wantCT)
			}
		})
	}
}

// TestServerHTTPDirectOutOfRange checks that a number too large for
// float64 in the arguments of a direct call reaches the tool's validation,
// which answers with an error result the model can act on, not a protocol
// error.
func TestServerHTTPDirectOutOfRange(t *testing.T) {
	srv := mcptool.NewServer(newRegistry(add{}))
	defer srv.Close()
	status, _, got := post(t, srv.ServeHTTP, "add", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add","arguments":{"a":1e400,"b":1},`+meta2026+`}}`, nil)
	res, _ := got.(map[string]any)["result"].(map[string]any)
	if status != http.StatusOK || res == nil || res["isError"] != true {
		t.Errorf("status %d, response %v: want an isError result", status, got)
	}
}

// TestServerHTTPDirectRefusesRebinding checks that the direct path keeps
// the DNS rebinding protection: a request to a loopback listener under
// another host name is refused.
func TestServerHTTPDirectRefusesRebinding(t *testing.T) {
	srv := mcptool.NewServer(newRegistry(echo{}))
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},`+meta2026+`}}`))
	req.Host = "evil.example"
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"} {
		req.Header.Set(k, v)
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("status %d, want 403", resp.StatusCode)
	}
}

// TestServerHTTPKeepsConnections checks that a go-sdk client whose calls
// each have a context canceled when the call returns keeps using one
// connection: the answer is a body of known length the client reads whole
// before the call returns.
func TestServerHTTPKeepsConnections(t *testing.T) {
	srv := mcptool.NewServer(newRegistry(echo{}))
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	var dials atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: tr}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	before := dials.Load()
	const calls = 50
	for range calls {
		ctx, cancel := context.WithCancel(t.Context())
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		cancel()
		if err != nil || res.IsError {
			t.Fatalf("CallTool = %+v, %v", res, err)
		}
	}
	if n := dials.Load() - before; n > 1 {
		t.Errorf("%d calls opened %d connections, want at most 1", calls, n)
	}
}

// recordingListener records what the server writes on each connection,
// one entry per write.
type recordingListener struct {
	net.Listener
	mu     sync.Mutex
	writes [][]byte
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, l: l}, nil
}

type recordingConn struct {
	net.Conn
	l *recordingListener
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	c.l.writes = append(c.l.writes, bytes.Clone(p))
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}

// TestServerHTTPEndsStreamsInOneWrite checks the event streams go-sdk
// writes: the event carrying a call's response leaves in the same write as
// the end of the body, so a client that cancels the call's context on
// return has read the whole body and keeps its connection, while a
// progress notification before it is flushed at once, on its own.
func TestServerHTTPEndsStreamsInOneWrite(t *testing.T) {
	sl := newSlow()
	close(sl.release)
	srv := mcptool.NewServer(newRegistry(echo{}, sl))
	defer srv.Close()
	hs := httptest.NewUnstartedServer(srv)
	rl := &recordingListener{Listener: hs.Listener}
	hs.Listener = rl
	hs.Start()
	defer hs.Close()

	for _, tt := range []struct {
		era      string
		tool     string
		progress bool
	}{
		{"2025-11-25", "echo", false},
		{"2025-11-25", "slow", true},
		{"2026-07-28", "slow", true}, // a progress token: served by go-sdk
	} {
		t.Run(tt.era+" "+tt.tool, func(t *testing.T) {
			// A client that can be asked for input: its 2025-11-25
			// calls are answered by go-sdk, with the event streams this
			// test is about, not by the direct session path.
			c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {},
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "decline"}, nil
				},
			})
			cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, &mcp.ClientSessionOptions{ProtocolVersion: tt.era})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			rl.mu.Lock()
			rl.writes = nil
			rl.mu.Unlock()
			params := &mcp.CallToolParams{Name: tt.tool, Arguments: map[string]any{"text": "hi"}}
			if tt.progress {
				params.Arguments = map[string]any{}
				params.SetProgressToken("p")
			}
			if res, err := cs.CallTool(t.Context(), params); err != nil || res.IsError {
				t.Fatalf("CallTool = %+v, %v", res, err)
			}
			if tt.tool == "slow" {
				<-sl.started
				<-sl.stopped
			}
			rl.mu.Lock()
			defer rl.mu.Unlock()
			var sawResult, sawProgress bool
			for _, w := range rl.writes {
				if !bytes.Contains(w, []byte("text/event-stream")) && !bytes.Contains(w, []byte("data: ")) {
					continue
				}
				result := bytes.Contains(w, []byte(`"result":`))
				progress := bytes.Contains(w, []byte(`notifications/progress`))
				switch {
				case result && progress:
					t.Errorf("a progress notification waited for the result: %q", w)
				case result:
					sawResult = true
					// The end of a chunked body, or a body whose length
					// the headers give.
					if !bytes.HasSuffix(w, []byte("\r\n0\r\n\r\n")) && !bytes.Contains(w, []byte("\r\nContent-Length: ")) {
						t.Errorf("the response event and the end of the body left in different writes; the response's write: %q", w)
					}
				case progress:
					sawProgress = true
				}
			}
			if !sawResult || sawProgress != tt.progress {
				t.Errorf("saw a result: %v, progress: %v; want a result and progress %v; writes: %q", sawResult, sawProgress, tt.progress, rl.writes)
			}
		})
	}
}

// contentTypes records the Content-Type of the responses to tools/call
// POSTs that pass through it.
type contentTypes struct {
	mu    sync.Mutex
	types []string
}

func (c *contentTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.GetBody != nil {
		if b, err := r.GetBody(); err == nil {
			body, _ = io.ReadAll(b)
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && bytes.Contains(body, []byte(`"method":"tools/call"`)) {
		c.mu.Lock()
		c.types = append(c.types, resp.Header.Get("Content-Type"))
		c.mu.Unlock()
	}
	return resp, err
}

// TestServerHTTPJSONResponse checks how calls are answered in both eras,
// with and without WithJSONResponse: a 2025-11-25 call of a client that
// may be asked for input with an event stream by default (one of a client
// that cannot be asked is answered by the direct session path, with one
// JSON body), and every call with one JSON body under the option.
func TestServerHTTPJSONResponse(t *testing.T) {
	elicits := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}
	for _, tt := range []struct {
		era    string
		opts   []mcptool.ServerOption
		client *mcp.ClientOptions
		want   string
	}{
		{"2025-11-25", nil, elicits, "text/event-stream"},
		{"2025-11-25", nil, nil, "application/json"},
		{"2026-07-28", nil, nil, "application/json"},
		{"2025-11-25", []mcptool.ServerOption{mcptool.WithJSONResponse()}, elicits, "application/json"},
		{"2026-07-28", []mcptool.ServerOption{mcptool.WithJSONResponse()}, nil, "application/json"},
	} {
		t.Run(fmt.Sprintf("%s %d options elicitation %v", tt.era, len(tt.opts), tt.client != nil), func(t *testing.T) {
			srv := mcptool.NewServer(newRegistry(echo{}), tt.opts...)
			defer srv.Close()
			hs := httptest.NewServer(srv)
			defer hs.Close()
			rec := &contentTypes{}
			c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, tt.client)
			cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: rec}},
				&mcp.ClientSessionOptions{ProtocolVersion: tt.era})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError {
				t.Fatalf("CallTool = %+v, %v", res, err)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.types) != 1 || rec.types[0] != tt.want {
				t.Errorf("tools/call answered as %q, want [%s]", rec.types, tt.want)
			}
		})
	}
}

// TestServerHTTPDirectOffAfterMCP checks that once the go-sdk server has
// been handed out with MCP, whose middleware must see every request,
// ServeHTTP answers no call itself.
func TestServerHTTPDirectOffAfterMCP(t *testing.T) {
	srv := mcptool.NewServer(newRegistry(echo{}))
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + meta2026 + `}}`
	if _, ct, _ := post(t, srv.ServeHTTP, "echo", body, nil); ct != "application/json" {
		t.Fatalf("before MCP: Content-Type %q, want a direct application/json answer", ct)
	}
	srv.MCP()
	if _, ct, _ := post(t, srv.ServeHTTP, "echo", body, nil); ct != "text/event-stream" {
		t.Errorf("after MCP: Content-Type %q, want go-sdk's text/event-stream", ct)
	}
}

// BenchmarkServeHTTPCall measures a 2026-07-28 tools/call through
// ServeHTTP (the direct path) against the same request through go-sdk's
// handler alone, interleaved in chunks so both see the same machine, and
// reports the ratio (direct/sdk).
func BenchmarkServeHTTPCall(b *testing.B) {
	srv := mcptool.NewServer(newRegistry(echo{}))
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + meta2026 + `}}`
	serve := func(h func(http.ResponseWriter, *http.Request)) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		r.Header.Set("Mcp-Method", "tools/call")
		r.Header.Set("Mcp-Name", "echo")
		w := httptest.NewRecorder()
		h(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	const chunk = 64
	var direct, sdk time.Duration
	b.ReportAllocs()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		t0 := time.Now()
		for range n {
			serve(srv.ServeHTTP)
		}
		t1 := time.Now()
		for range n {
			serve(srv.ServeHTTPViaSDK)
		}
		direct += t1.Sub(t0)
		sdk += time.Since(t1)
	}
	b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N), "direct-ns/call")
	b.ReportMetric(float64(sdk.Nanoseconds())/float64(b.N), "sdk-ns/call")
	b.ReportMetric(float64(direct)/float64(sdk), "direct/sdk")
}
