package mcptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// endSignal is a reader that closes ended when its input is used up.
type endSignal struct {
	r     io.Reader
	ended chan struct{}
	once  bool
}

func (e *endSignal) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF && !e.once {
		e.once = true
		close(e.ended)
	}
	return n, err
}

// lagging is a tool that answers only after the server's input has
// ended, the case where go-sdk used to drop the response.
type lagging struct{ ended <-chan struct{} }

func (lagging) Name() string                { return "lagging" }
func (lagging) Description() string         { return "Answers after the input has ended." }
func (lagging) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (l lagging) Execute(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	select {
	case <-l.ended:
		return tool.Result{Output: "late"}, nil
	case <-ctx.Done():
		return tool.Result{}, ctx.Err()
	}
}

// TestServeIOAnswersEveryRequest closes the input right after the last
// request, while calls are still running: every request read gets its
// response, and malformed lines get JSON-RPC errors without ending the
// session.
func TestServeIOAnswersEveryRequest(t *testing.T) {
	ended := make(chan struct{})
	reg := tool.NewRegistry()
	if err := reg.Register(lagging{ended}); err != nil {
		t.Fatal(err)
	}
	srv := mcptool.NewServer(reg)
	defer srv.Close()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`this line is not JSON`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"x","oops":true}`,
		`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lagging","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"lagging","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"lagging","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"lagging","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
	}, "\n") // no newline after the last request
	var out bytes.Buffer
	if err := srv.ServeIO(t.Context(), &endSignal{r: strings.NewReader(in), ended: ended}, &out); err != nil {
		t.Fatalf("ServeIO: %v", err)
	}
	type answer struct {
		ID     any
		Result bool
		Code   float64
	}
	var got []answer
	for line := range strings.Lines(out.String()) {
		var m struct {
			ID     any             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code float64 `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("server wrote a line that is not JSON: %q", line)
		}
		a := answer{ID: m.ID, Result: m.Result != nil}
		if m.Error != nil {
			a.Code = m.Error.Code
		}
		if a.ID == 3.0 || a.ID == 4.0 || a.ID == 5.0 || a.ID == 6.0 {
			if !strings.Contains(string(m.Result), `"late"`) {
				t.Errorf("call %v: %s, want the tool's output", a.ID, line)
			}
		}
		got = append(got, a)
	}
	want := []answer{
		{ID: 1.0, Result: true},
		{ID: nil, Code: -32700},
		{ID: 2.0, Result: true},
		{ID: "x", Code: -32600},
		{ID: nil, Code: -32600},
		{ID: 7.0, Result: true},
		{ID: 3.0, Result: true}, {ID: 4.0, Result: true}, {ID: 5.0, Result: true}, {ID: 6.0, Result: true},
	}
	order := func(a answer) string { b, _ := json.Marshal(a); return string(b) }
	sortAnswers := func(as []answer) []string {
		var s []string
		for _, a := range as {
			s = append(s, order(a))
		}
		// Calls finish in any order; compare as sets.
		slices.Sort(s)
		return s
	}
	if diff := cmp.Diff(sortAnswers(want), sortAnswers(got)); diff != "" {
		t.Errorf("responses (-want +got):\n%s\noutput:\n%s", diff, out.String())
	}
}

// TestServeIOEndsWithListen closes the input of a 2026-07-28 session
// whose client listens for notifications: the listen stream, which lasts
// as long as the session, does not hold ServeIO up, and the requests
// before the end are answered.
func TestServeIOEndsWithListen(t *testing.T) {
	srv := mcptool.NewServer(newRegistry(echo{}))
	defer srv.Close()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`,
		`{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + meta + `}}`,
	}, "\n")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	if err := srv.ServeIO(ctx, strings.NewReader(in), &out); err != nil {
		t.Fatalf("ServeIO: %v\noutput:\n%s", err, out.String())
	}
	for _, want := range []string{`"id":1,"result"`, `"id":3,"result"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %s in the output:\n%s", want, out.String())
		}
	}
}

// sampler asks its client for a completion once the server's input has
// ended, when no answer can come.
type sampler struct{ ended <-chan struct{} }

func (sampler) Name() string                { return "sampler" }
func (sampler) Description() string         { return "Asks the client's model." }
func (sampler) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (s sampler) Execute(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	<-s.ended
	_, err := mcptool.Session(ctx).CreateMessage(ctx, &mcp.CreateMessageParams{
		MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}},
	})
	return tool.Result{Output: fmt.Sprintf("asked: %v", err)}, nil
}

// TestServeIOAnswersForGoneClient closes the input while a call is about
// to ask the client for something: the request is answered with an error
// in the client's stead, and the call ends without waiting for its time
// limit.
func TestServeIOAnswersForGoneClient(t *testing.T) {
	ended := make(chan struct{})
	srv := mcptool.NewServer(newRegistry(sampler{ended}))
	defer srv.Close()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"raw","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sampler","arguments":{}}}`,
	}, "\n")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), wait) // well under the call's 60 s limit
	defer cancel()
	if err := srv.ServeIO(ctx, &endSignal{r: strings.NewReader(in), ended: ended}, &out); err != nil {
		t.Fatalf("ServeIO: %v\noutput:\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `"id":2,"result"`) || !strings.Contains(out.String(), "the client closed its input") {
		t.Errorf("the call's answer does not say the client is gone:\n%s", out.String())
	}
}

// TestServeIOLeavesNoGoroutine checks that nothing ServeIO started
// outlives it once its input has ended.
func TestServeIOLeavesNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := mcptool.NewServer(newRegistry(echo{}))
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
	var out bytes.Buffer
	if err := srv.ServeIO(t.Context(), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	srv.Close()
}
