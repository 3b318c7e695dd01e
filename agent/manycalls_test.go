package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/providercall"
)

// counter is a tool that counts its calls.
type counter struct{ n *atomic.Int64 }

func (counter) Name() string                { return "count" }
func (counter) Description() string         { return "Counts." }
func (counter) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (c counter) Execute(context.Context, json.RawMessage) (tool.Result, error) {
	c.n.Add(1)
	return tool.Result{Output: "ok"}, nil
}

// manyCallsModel answers the first request with one turn of n calls of
// tool name, and the next with text, in the API's format.
func manyCallsModel(t *testing.T, api API, name string, n int) *httptest.Server {
	var turn atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		var b strings.Builder
		first := turn.Add(1) == 1
		switch {
		case api == Messages && first:
			b.WriteString(`{"id":"m","type":"message","role":"assistant","stop_reason":"tool_use","content":[`)
			for i := range n {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"type":"tool_use","id":"t%d","name":%q,"input":{}}`, i, name)
			}
			b.WriteString(`]}`)
		case api == Messages:
			b.WriteString(`{"id":"m","type":"message","role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"done"}]}`)
		case first:
			b.WriteString(`{"choices":[{"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[`)
			for i := range n {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"id":"c%d","type":"function","function":{"name":%q,"arguments":"{}"}}`, i, name)
			}
			b.WriteString(`]}}]}`)
		default:
			b.WriteString(`{"choices":[{"finish_reason":"stop","message":{"role":"assistant","content":"done"}}]}`)
		}
		io.WriteString(w, b.String())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestModelTurnOfManyCalls: the model (led by text it read in a tool's
// result) answers one turn with tens of thousands of tool calls, within
// the bound of a response's bytes. Each would run, concurrently, and
// each result go back in the next request; a turn of searches also cost
// the loop time in the square of their number. A turn of more than
// MaxStepCalls calls ends the run with an error saying so, before any
// call runs. Control: a turn of MaxStepCalls calls runs them all.
func TestModelTurnOfManyCalls(t *testing.T) {
	for _, api := range []API{ChatCompletions, Messages} {
		for _, tc := range []struct {
			n       int
			allowed bool
		}{{MaxStepCalls, true}, {MaxStepCalls + 1, false}, {20 * MaxStepCalls, false}} {
			t.Run(fmt.Sprintf("%v/%d", api, tc.n), func(t *testing.T) {
				var ran atomic.Int64
				reg := tool.NewRegistry()
				if err := reg.Register(counter{&ran}); err != nil {
					t.Fatal(err)
				}
				a := New(model(t, api, manyCallsModel(t, api, "count", tc.n)), reg)
				answer, err := a.Run(context.Background(), "count")
				if tc.allowed {
					if err != nil || answer != "done" || ran.Load() != int64(tc.n) {
						t.Fatalf("control: %q, %v after %d calls, want done after %d", answer, err, ran.Load(), tc.n)
					}
					return
				}
				// Past providercall.MaxElements the parser refuses the
				// response before the loop counts calls.
				if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d", MaxStepCalls)) &&
					!strings.Contains(err.Error(), fmt.Sprintf("more than %d elements", providercall.MaxElements)) {
					t.Fatalf("Run: %q, %v; want the turn refused for more than %d calls", answer, err, MaxStepCalls)
				}
				if n := ran.Load(); n != 0 {
					t.Errorf("%d calls ran, want none", n)
				}
			})
		}
	}
}

// TestStreamOfManyCallsBounded is an attack: a streamed reply whose
// deltas each start a call at a new index (or a content block at a new
// index), a dozen bytes each, so that the 32 MiB bound of a stream
// gathered millions of calls, each with its builders, before the reply
// was parsed and its calls counted. Gathering stops with an error past
// providercall.MaxElements calls or blocks. Control: MaxElements are
// gathered.
func TestStreamOfManyCallsBounded(t *testing.T) {
	const many = 100_000
	chunk := func(from, to int) []byte {
		var b strings.Builder
		b.WriteString(`{"choices":[{"index":0,"delta":{"tool_calls":[`)
		for i := from; i < to; i++ {
			if i > from {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"index":%d}`, i)
		}
		b.WriteString(`]}}]}`)
		return []byte(b.String())
	}
	t.Run("chat", func(t *testing.T) {
		var c chatStream
		if _, err := c.event("", chunk(0, providercall.MaxElements)); err != nil || len(c.calls) != providercall.MaxElements {
			t.Fatalf("control: %d calls gathered, %v", len(c.calls), err)
		}
		var err error
		for i := providercall.MaxElements; i < many && err == nil; i += 1000 {
			_, err = c.event("", chunk(i, i+1000))
		}
		if err == nil || !strings.Contains(err.Error(), "more than") {
			t.Errorf("%d streamed calls gathered, error %v; want the stream refused past %d", len(c.calls), err, providercall.MaxElements)
		}
		if len(c.calls) > providercall.MaxElements {
			t.Errorf("%d calls gathered, want at most %d", len(c.calls), providercall.MaxElements)
		}
	})
	t.Run("messages", func(t *testing.T) {
		var m messagesStream
		var err error
		for i := 0; i < many && err == nil; i++ {
			_, err = m.event("", []byte(fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use"}}`, i)))
			if i == providercall.MaxElements-1 && (err != nil || len(m.blocks) != providercall.MaxElements) {
				t.Fatalf("control: %d blocks gathered, %v", len(m.blocks), err)
			}
		}
		if err == nil || !strings.Contains(err.Error(), "more than") {
			t.Errorf("%d streamed blocks gathered, error %v; want the stream refused past %d", len(m.blocks), err, providercall.MaxElements)
		}
		if len(m.blocks) > providercall.MaxElements {
			t.Errorf("%d blocks gathered, want at most %d", len(m.blocks), providercall.MaxElements)
		}
	})
}
