package mcptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
)

// streamHostile serves a real server's tools, except that it answers each
// tools/call with an event stream written by stream, which gets the
// call's JSON-RPC id and, for a resumption (a GET with Last-Event-ID), the
// ID it resumes after ("" for the POST).
func streamHostile(t *testing.T, stream func(w io.Writer, id json.RawMessage, after string)) (url string, calls *atomic.Int32) {
	t.Helper()
	reg := tool.NewRegistry()
	tl, err := tool.New("t", "a tool", func(context.Context, struct{}) (string, error) { return "real", nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(tl); err != nil {
		t.Fatal(err)
	}
	srv := mcptool.NewServer(reg)
	calls = new(atomic.Int32)
	var callID atomic.Value
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sse := func(after string) {
			calls.Add(1)
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			stream(w, callID.Load().(json.RawMessage), after)
		}
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
			sse(r.Header.Get("Last-Event-ID"))
			return
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
				callID.Store(m.ID)
				sse("")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL, calls
}

// logEvent is one small notification, as a server sends while a call runs.
func logEvent(id string, pad int) string {
	var b strings.Builder
	if id != "" {
		fmt.Fprintf(&b, "id: %s\nretry: 1\n", id)
	}
	fmt.Fprintf(&b, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":%q}}\n\n", strings.Repeat("x", pad))
	return b.String()
}

func doneEvent(id json.RawMessage) string {
	return `data: {"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"done"}]}}` + "\n\n"
}

// TestHostileEndlessEventStream: a server answers a call with an event
// stream that goes on and on: many small events (each well within the
// bound of one event), a stream of many bytes, or a stream it ends after
// every event so that the client resumes it (GET with Last-Event-ID), one
// event each time, at the 1 ms reconnection delay the server sets. In
// earnest the response never comes, and the client works for the whole
// of the call's time limit, or for ever when the call has none. The
// client bounds the whole of one request's stream, resumptions included:
// past the bound the call fails saying so. Each control reads the same
// stream to its end, and the response, under bounds it does not reach.
func TestHostileEndlessEventStream(t *testing.T) {
	const (
		events  = 400
		resumes = 30
	)
	for _, tt := range []struct {
		name   string
		stream func(w io.Writer, id json.RawMessage, after string)
		// bounds that the stream passes, and that it does not.
		tight, loose [3]int64 // events, bytes, resumptions
		want         string
	}{
		{"many events", func(w io.Writer, id json.RawMessage, _ string) {
			for range events {
				io.WriteString(w, logEvent("", 1))
			}
			io.WriteString(w, doneEvent(id))
		}, [3]int64{100, 1 << 30, 100}, [3]int64{events + 1, 1 << 30, 100}, "events"},
		{"many bytes", func(w io.Writer, id json.RawMessage, _ string) {
			for range events {
				io.WriteString(w, logEvent("", 1<<10))
			}
			io.WriteString(w, doneEvent(id))
		}, [3]int64{1 << 20, 64 << 10, 100}, [3]int64{1 << 20, 1 << 20, 100}, "bytes"},
		{"resumed without end", func(w io.Writer, id json.RawMessage, after string) {
			n := 0
			if after != "" {
				n, _ = strconv.Atoi(after)
				n++
			}
			if n == resumes {
				io.WriteString(w, doneEvent(id))
				return
			}
			io.WriteString(w, logEvent(strconv.Itoa(n), 1))
		}, [3]int64{1 << 20, 1 << 30, 5}, [3]int64{1 << 20, 1 << 30, resumes + 1}, "resum"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			call := func(b [3]int64) (tool.Result, int32) {
				url, calls := streamHostile(t, tt.stream)
				ctx, cancel := context.WithTimeout(t.Context(), wait)
				defer cancel()
				c, err := mcptool.Connect(ctx, mcptool.BoundedURL(url, b[0], b[1], b[2]), mcptool.WithProtocolVersion("2025-11-25"))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				reg := tool.NewRegistry()
				if err := c.Import(ctx, reg); err != nil {
					t.Fatal(err)
				}
				res := reg.Execute(ctx, "t", []byte(`{}`))
				if again := reg.Execute(ctx, "t", []byte(`{}`)); again.IsError != res.IsError || again.Output != res.Output {
					// The bound ends the call, not the connection.
					t.Errorf("a second call on the same connection: %+v, want as the first, %+v", again, res)
				}
				return res, calls.Load()
			}
			// Control: under bounds the stream does not reach, the
			// client reads all of it.
			if res, _ := call(tt.loose); res.IsError || res.Output != "done" {
				t.Fatalf("control: %+v, want the hostile stream read to its response", res)
			}
			res, n := call(tt.tight)
			if msg := res.Error; !res.IsError || !strings.Contains(msg, "event stream") || !strings.Contains(msg, tt.want) {
				t.Fatalf("call: %+v, want it failed at the stream's bound of %s", res, tt.want)
			}
			if tt.tight[2] < resumes && n > 2*int32(tt.tight[2]+1) {
				t.Errorf("the server served %d streams for two calls, want at most %d", n, 2*(tt.tight[2]+1))
			}
		})
	}
}

// TestHostileStandaloneStreamStorm: a server ends the session's
// standalone stream (the GET that carries its notifications) right after
// one event with a new ID, asking to be reconnected at once (retry: 1).
// go-sdk counts each new ID as progress and reconnects for as long as the
// session lasts: thousands of GETs a second, with no call's time limit to
// end them. The client resumes a standalone stream at most once per gap
// (DefaultStandaloneResumeGap, 1 s). Control: with no gap, the server
// gets its reconnections as fast as the loop goes.
func TestHostileStandaloneStreamStorm(t *testing.T) {
	run := func(t *testing.T, gap time.Duration, gets int) []time.Time {
		reg := tool.NewRegistry()
		srv := mcptool.NewServer(reg)
		var mu sync.Mutex
		var seen []time.Time
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet {
				srv.ServeHTTP(w, r)
				return
			}
			mu.Lock()
			seen = append(seen, time.Now())
			n := len(seen)
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: %d\nretry: 1\n\n", n)
		}))
		defer hs.Close()
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		defer cancel()
		c, err := mcptool.Connect(ctx, mcptool.GappedURL(hs.URL, gap), mcptool.WithProtocolVersion("2025-11-25"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for {
			mu.Lock()
			n := len(seen)
			mu.Unlock()
			if n >= gets {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("the server got %d GETs of the standalone stream, want %d", n, gets)
			case <-time.After(5 * time.Millisecond):
			}
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen[:gets])
	}
	t.Run("control: no gap", func(t *testing.T) {
		run(t, 0, 50) // fails only if the reconnections do not come
	})
	t.Run("gap", func(t *testing.T) {
		const gap = 150 * time.Millisecond
		seen := run(t, gap, 5)
		// The gaps are kept by the client and seen here when each GET
		// is handled, so a first GET handled late makes the span look
		// shorter by its delay (599.6 ms once, at load 10): half a gap
		// is left for that, against the control's milliseconds.
		if d := seen[4].Sub(seen[0]); d < 4*gap-gap/2 {
			t.Errorf("5 GETs of the standalone stream in %v, want at least %v apart in all", d, 4*gap-gap/2)
		}
	})
}
