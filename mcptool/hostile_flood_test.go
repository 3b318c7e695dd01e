package mcptool_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
)

// floodCall is a tools/call handler of a pipeServer that sends n
// progress notifications for the call's token, then answers only when the
// client cancels the call.
func floodCall(n int) func(s *pipeServer, id json.RawMessage, line []byte) {
	return func(s *pipeServer, id json.RawMessage, line []byte) {
		var req struct {
			Params struct {
				Meta struct {
					Token json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		json.Unmarshal(line, &req)
		if strings.Contains(string(req.Params.Meta.Token), "-2") { // the second call: answered at once
			s.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"after"}]}}`)
			return
		}
		go func() {
			for i := range n {
				if s.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d}}`, req.Params.Meta.Token, i+1)) != nil {
					return
				}
			}
		}()
	}
}

// TestHostileCallNotificationFlood: during one call over stdio, the server
// sends 30,000 small progress notifications for the call's token and never
// answers. Bounded per message and by the call's time limit only, every
// one reached the caller's progress function (a relay to a remote caller,
// the inspector's stream) until the time limit. Now the call takes at most
// DefaultMaxCallProgress of them; the next one fails the call naming the
// bound (ErrNotificationFlood), the server is told to cancel, and the
// connection goes on: the next call works.
func TestHostileCallNotificationFlood(t *testing.T) {
	const flood = 30_000
	// run makes the call with limit; stopAfter, when positive, cancels it
	// once that many reports reached the caller (the control's, which
	// needs no more, however slowly a loaded machine delivers them).
	run := func(t *testing.T, limit time.Duration, stopAfter int64, opts ...mcptool.ClientOption) (tool.Result, int64, *tool.Registry) {
		_, cr, cw := newPipeServerPipes(func(*pipeServer) {}, floodCall(flood))
		tr := mcptool.ClientPipe(cr, cw)
		if len(opts) > 0 { // the control: no connection bounds either
			tr = mcptool.BoundedClientPipe(cr, cw, mcptool.FloodBounds{})
		}
		ctx, cancel := context.WithTimeout(t.Context(), 8*wait)
		defer cancel()
		c, err := mcptool.Connect(ctx, tr, append(opts, mcptool.WithProtocolVersion("2025-11-25"))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		reg := tool.NewRegistry()
		if err := c.Import(ctx, reg); err != nil {
			t.Fatal(err)
		}
		var seen atomic.Int64
		cctx, ccancel := context.WithTimeout(ctx, limit)
		defer ccancel()
		cctx = tool.WithProgress(cctx, func(float64, float64, string) {
			if n := seen.Add(1); stopAfter > 0 && n >= stopAfter {
				ccancel()
			}
		})
		res := reg.Execute(cctx, "t", []byte(`{}`))
		return res, seen.Load(), reg
	}
	// Control: without the call's bounds, the flood reaches the caller
	// past the bound, and only the caller ends the call.
	res, n, _ := run(t, 6*wait, mcptool.DefaultMaxCallProgress+1000, mcptool.WithCallProgressBounds(0, 0))
	t.Logf("control: %d progress reports, %v", n, res.Error)
	if n <= mcptool.DefaultMaxCallProgress || !res.IsError {
		t.Fatalf("control: %d progress reports reached the caller (want more than %d) and the call gave %+v", n, mcptool.DefaultMaxCallProgress, res)
	}
	res, n, reg := run(t, 6*wait, 0)
	t.Logf("defended: %d progress reports, %v", n, res.Error)
	if n > mcptool.DefaultMaxCallProgress {
		t.Errorf("%d progress reports reached the caller, want at most %d", n, mcptool.DefaultMaxCallProgress)
	}
	if !res.IsError || !strings.Contains(res.Error, "more than 10000 progress notifications") {
		t.Errorf("call: %+v, want an error naming the bound", res)
	}
	if res := reg.Execute(t.Context(), "t", []byte(`{}`)); res.IsError || res.Output != "after" {
		t.Errorf("the next call: %+v, want the server's answer (the connection goes on)", res)
	}
}

// TestHostileServerRequestFlood: during a call, a server sends 3,000 ping
// requests and stops reading its input. go-sdk answers each request on a
// goroutine of its own that lives until its answer is written, and
// writing waits for a server that does not read: the goroutines piled up,
// one per request, for as long as the call lasted. Now a connection holds
// at most DefaultMaxRequestsInFlight of the server's requests unanswered
// and drops the rest (logged).
func TestHostileServerRequestFlood(t *testing.T) {
	const flood = 3000
	run := func(t *testing.T, bounded bool) int {
		sent := make(chan struct{})
		_, cr, cw := newPipeServerPipes(func(*pipeServer) {}, func(s *pipeServer, id json.RawMessage, _ []byte) {
			// Runs on the server's reading goroutine: it reads nothing
			// more until the client hangs up.
			for i := range flood {
				if s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"p%d","method":"ping"}`, i)) != nil {
					break
				}
			}
			close(sent)
		})
		tr := mcptool.ClientPipe(cr, cw)
		if !bounded {
			tr = mcptool.BoundedClientPipe(cr, cw, mcptool.FloodBounds{})
		}
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		defer cancel()
		c, err := mcptool.Connect(ctx, tr, mcptool.WithProtocolVersion("2025-11-25"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		reg := tool.NewRegistry()
		if err := c.Import(ctx, reg); err != nil {
			t.Fatal(err)
		}
		before := runtime.NumGoroutine()
		cctx, ccancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { reg.Execute(cctx, "t", []byte(`{}`)); close(done) }()
		defer func() { ccancel(); <-done }()
		select {
		case <-sent:
		case <-ctx.Done():
			t.Fatal("the client did not read the server's requests")
		}
		most := 0
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			most = max(most, runtime.NumGoroutine()-before)
		}
		return most
	}
	n := run(t, false)
	t.Logf("control: %d more goroutines", n)
	if n < flood/2 {
		t.Fatalf("control: %d more goroutines while %d requests wait for their answers to be written, want about one each", n, flood)
	}
	n = run(t, true)
	t.Logf("defended: %d more goroutines", n)
	if most := mcptool.DefaultMaxRequestsInFlight + 50; n > most {
		t.Errorf("%d more goroutines, want at most %d (the requests in flight and the call's own)", n, most)
	}
}

// TestHostileClientCallFlood: a client of a served registry (stdio) sends
// 2,000 tools/call requests at once for a tool that takes its time. Each
// ran at once, on a goroutine of its own: a client could start as many
// calls as it could write lines. Now a connection runs at most
// DefaultMaxRequestsInFlight of its client's requests at once and answers
// each one past it with an error at once; the session goes on.
func TestHostileClientCallFlood(t *testing.T) {
	const flood = 2000
	run := func(t *testing.T, bounded bool) (int64, int) {
		refused := 0
		h := newHeldTool(t)
		running := &h.running
		srv := mcptool.NewServer(h.reg)
		defer srv.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 3*wait)
		defer cancel()
		inW, outR, served := serveStdio(ctx, srv, defaultOrNone(bounded))
		answers := make(chan string, flood+16)
		go func() {
			sc := bufio.NewScanner(outR)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				answers <- sc.Text()
			}
			close(answers)
		}()
		write := func(s string) {
			if _, err := io.WriteString(inW, s+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		write(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flood","version":"0"}}}`)
		<-answers
		write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		go func() {
			for i := 1; i <= flood; i++ {
				if _, err := io.WriteString(inW, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow","arguments":{}}}`+"\n", i)); err != nil {
					return
				}
			}
		}()
		got := 0
		for got < flood {
			select {
			case a := <-answers:
				got++
				if strings.Contains(a, "in flight") {
					refused++
				}
			case <-time.After(time.Second):
				if running.Load()+int64(refused) >= flood {
					got = flood // every call runs or was refused
				}
			case <-ctx.Done():
				t.Fatalf("%d answers, %d calls running", got, running.Load())
			}
		}
		close(h.release)
		inW.Close()
		if err := <-served; err != nil {
			t.Fatal(err)
		}
		return h.peak.Load(), refused
	}
	most, refused := run(t, false)
	t.Logf("control: %d calls at once, %d refused", most, refused)
	if most < flood/2 {
		t.Fatalf("control: %d calls ran at once, want about %d", most, flood)
	}
	most, refused = run(t, true)
	t.Logf("defended: %d calls at once, %d refused", most, refused)
	if most > mcptool.DefaultMaxRequestsInFlight || refused < flood-mcptool.DefaultMaxRequestsInFlight {
		t.Errorf("%d calls ran at once and %d were refused, want at most %d and the rest refused", most, refused, mcptool.DefaultMaxRequestsInFlight)
	}
}

// TestHostileNotificationRate: a server sends 3,000 ping requests one
// after the other, reading the answers. Each was decoded, queued and
// answered: a server could keep a client busy as fast as it can write.
// A connection now passes a server's notifications and requests at
// DefaultNotificationRate after a burst of DefaultNotificationBurst, and
// drops the rest before go-sdk sees them (here at a burst of 100 and
// next to no rate, for a small test).
func TestHostileNotificationRate(t *testing.T) {
	const flood = 3000
	// run returns how many pings were answered, once all were or none
	// came for quiet: the control's is long, since a loaded machine can
	// pause its answers for seconds; the defended run's answers stop at
	// the burst, and quiet is how long that is waited for.
	run := func(t *testing.T, b mcptool.FloodBounds, quiet time.Duration) int {
		s, cr, cw := newPipeServerPipes(func(s *pipeServer) {
			for i := range flood {
				if s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"p%d","method":"ping"}`, i)) != nil {
					return
				}
			}
			s.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
		}, nil)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		c, err := mcptool.Connect(ctx, mcptool.BoundedClientPipe(cr, cw, b), mcptool.WithProtocolVersion("2025-11-25"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		answers := 0
		for answers < flood { // or until they stop coming for quiet
			select {
			case <-s.replies:
				answers++
				continue
			case <-time.After(quiet):
			}
			break
		}
		return answers
	}
	n := run(t, mcptool.FloodBounds{}, 15*time.Second)
	t.Logf("control: %d answers", n)
	// The test server keeps 64 answers unread at most and drops the rest
	// (a loaded machine lagged this loop into dropping 66 once): half of
	// the flood answered is far past the defended burst of 100.
	if n < flood/2 {
		t.Fatalf("control: %d pings answered, want %d", n, flood)
	}
	n = run(t, mcptool.FloodBounds{Rate: 1e-9, Burst: 100, InFlight: mcptool.DefaultMaxRequestsInFlight}, 2*time.Second)
	t.Logf("defended: %d answers", n)
	if n > 100 {
		t.Errorf("%d pings answered, want at most the burst of 100", n)
	}
}

// TestHostileStandaloneFlood: over HTTP, a server sends 3,000 ping
// requests on the session's standalone stream (the GET that lasts the
// session, which no call's bound covers), as fast as it can write them.
// Each was read and answered with a POST of its own. The client now
// passes that stream's events within the connection's flood gate
// (DefaultNotificationRate after DefaultNotificationBurst; here a burst of
// 100 and next to no rate) and drops the rest unread by go-sdk.
func TestHostileStandaloneFlood(t *testing.T) {
	const flood = 3000
	// run returns how many pings were answered: once all were, or, with
	// stall set, once none more came for 2 s (a loaded machine can pause
	// the control's answers that long, so the control waits for all, up
	// to a minute).
	run := func(t *testing.T, b mcptool.FloodBounds, stall bool) int64 {
		srv := mcptool.NewServer(tool.NewRegistry())
		defer srv.Close()
		var answers atomic.Int64
		var once sync.Once
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				first := false
				once.Do(func() { first = true })
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				if !first {
					return
				}
				for i := range flood {
					fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"p%d\",\"method\":\"ping\"}\n\n", i)
				}
				w.(http.Flusher).Flush()
				<-r.Context().Done()
				return
			}
			if r.Method == http.MethodPost {
				body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
				if strings.Contains(string(body), `"id":"p`) && strings.Contains(string(body), `"result"`) {
					answers.Add(1)
					w.WriteHeader(http.StatusAccepted)
					return
				}
				r.Body = io.NopCloser(strings.NewReader(string(body)))
			}
			srv.ServeHTTP(w, r)
		}))
		defer hs.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		c, err := mcptool.Connect(ctx, mcptool.GatedURL(hs.URL, b), mcptool.WithProtocolVersion("2025-11-25"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for last := int64(-1); ; { // until all came, or none for 2 s
			select {
			case <-ctx.Done():
				return answers.Load()
			case <-time.After(2 * time.Second):
			}
			if n := answers.Load(); n == last && stall || n >= flood {
				return n
			} else {
				last = n
			}
		}
	}
	n := run(t, mcptool.FloodBounds{}, false)
	t.Logf("control: %d answers", n)
	if n < flood {
		t.Fatalf("control: %d pings of the standalone stream answered, want %d", n, flood)
	}
	n = run(t, mcptool.FloodBounds{Rate: 1e-9, Burst: 100}, true)
	t.Logf("defended: %d answers", n)
	if n > 100 {
		t.Errorf("%d pings answered, want at most the burst of 100", n)
	}
}

// TestHostileClientNotificationFlood: a client of a served registry
// (stdio) sends 30,000 notifications/roots/list_changed as fast as it can
// write. go-sdk queued and handled every one. A connection now passes a
// client's notifications at DefaultNotificationRate after
// DefaultNotificationBurst and drops the rest, logged, and the session
// goes on: a ping after the flood is answered.
func TestHostileClientNotificationFlood(t *testing.T) {
	const flood = 30_000
	run := func(t *testing.T, b *mcptool.FloodBounds) (dropped int64) {
		var logs syncBuffer
		srv := mcptool.NewServer(tool.NewRegistry(), mcptool.WithServerLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
		defer srv.Close()
		var in strings.Builder
		in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flood","version":"0"}}}` + "\n")
		in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
		for range flood {
			in.WriteString(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}` + "\n")
		}
		in.WriteString(`{"jsonrpc":"2.0","id":"last","method":"ping"}` + "\n")
		var out syncBuffer
		ctx, cancel := context.WithTimeout(t.Context(), 3*wait)
		defer cancel()
		var err error
		if b == nil {
			err = srv.ServeIO(ctx, strings.NewReader(in.String()), &out)
		} else {
			err = srv.ServeIOBounded(ctx, strings.NewReader(in.String()), &out, *b)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), `"id":"last","result":{}`) {
			t.Fatalf("the ping after the flood was not answered: %s", shortOut(out.String()))
		}
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec struct {
				Msg     string `json:"msg"`
				Dropped int64  `json:"dropped"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && strings.Contains(rec.Msg, "dropped notifications of a client") {
				dropped = max(dropped, rec.Dropped)
			}
		}
		return dropped
	}
	n := run(t, &mcptool.FloodBounds{})
	if n != 0 {
		t.Fatalf("control: %d notifications dropped without bounds", n)
	}
	n = run(t, nil)
	t.Logf("defended: at least %d notifications dropped", n)
	if n < (flood-mcptool.DefaultNotificationBurst)/2 {
		t.Errorf("%d notifications dropped, want most of the %d past the burst of %d", n, flood-mcptool.DefaultNotificationBurst, mcptool.DefaultNotificationBurst)
	}
}

func shortOut(s string) string {
	if len(s) > 500 {
		return s[len(s)-500:]
	}
	return s
}

// TestHostileCallStreamRequests: over HTTP, a server answers a call with
// an event stream of 3,000 ping requests, and holds every POST that
// answers one. go-sdk answers each request on a goroutine of its own
// that waits for its POST: they piled up, one per request, bounded only
// by the call's stream (100,000 events). A connection now holds at most
// DefaultMaxRequestsInFlight of the server's requests unanswered over
// HTTP too, and passes a call stream's requests and notifications within
// the flood gate, as the standalone stream's; the rest are dropped. And
// Client.Close waited for every answer still being sent (go-sdk's Close
// waits for the handlers): a server that held them held Close for ever
// (this test hung at its time limit); Close now ends them.
func TestHostileCallStreamRequests(t *testing.T) {
	const flood = 3000
	run := func(t *testing.T, b mcptool.FloodBounds) int {
		hold := make(chan struct{})
		var held atomic.Int64
		var callID atomic.Value
		reg := tool.NewRegistry()
		tl, _ := tool.New("t", "a tool", func(context.Context, struct{}) (string, error) { return "real", nil })
		reg.Register(tl)
		real := mcptool.NewServer(reg)
		defer real.Close()
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				json.Unmarshal(body, &m)
				switch {
				case m.Method == "tools/call":
					callID.Store(m.ID)
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(http.StatusOK)
					for i := range flood {
						fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"p%d\",\"method\":\"ping\"}\n\n", i)
					}
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
					case <-hold:
					}
					return
				case m.Method == "" && strings.HasPrefix(string(m.ID), `"p`):
					held.Add(1)
					select { // the answer to a ping: held
					case <-r.Context().Done():
					case <-hold:
					}
					return
				}
				r.Body = io.NopCloser(strings.NewReader(string(body)))
			}
			real.ServeHTTP(w, r)
		}))
		defer hs.Close()
		defer close(hold)             // before Close, which waits for the held requests
		closed := make(chan struct{}) // the client's Close returned, the answers held still
		ctx, cancel := context.WithTimeout(t.Context(), 6*wait)
		defer cancel()
		c, err := mcptool.Connect(ctx, mcptool.GatedURL(hs.URL, b), mcptool.WithProtocolVersion("2025-11-25"))
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			go func() { c.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(wait):
				t.Errorf("Client.Close waited %v for the answers the server holds", wait)
			}
		}()
		imported := tool.NewRegistry()
		if err := c.Import(ctx, imported); err != nil {
			t.Fatal(err)
		}
		cctx, ccancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { imported.Execute(cctx, "t", []byte(`{}`)); close(done) }()
		defer func() { ccancel(); <-done }()
		// Wait until the answers held stop growing: until all came, or
		// none for 2 s; unbounded (the control), until half came, however
		// slowly a loaded machine sends them.
		for last := int64(-1); ; {
			select {
			case <-ctx.Done():
				t.Fatalf("%d answers held", held.Load())
			case <-time.After(2 * time.Second):
			}
			n := held.Load()
			if n >= flood || b.InFlight == 0 && n >= flood/2 || b.InFlight > 0 && n == last {
				return int(n)
			}
			last = n
		}
	}
	n := run(t, mcptool.FloodBounds{})
	t.Logf("control: %d answers waiting at once", n)
	if n < flood/2 {
		t.Fatalf("control: %d answers to the server's requests waited at once, want about %d", n, flood)
	}
	n = run(t, mcptool.FloodBounds{Rate: mcptool.DefaultNotificationRate, Burst: mcptool.DefaultNotificationBurst, InFlight: mcptool.DefaultMaxRequestsInFlight})
	t.Logf("defended: %d answers waiting at once", n)
	if n > mcptool.DefaultMaxRequestsInFlight {
		t.Errorf("%d answers waited at once, want at most %d", n, mcptool.DefaultMaxRequestsInFlight)
	}
}

// TestHostileClientListenFlood: a client of a registry served over stdio
// sends 2,000 subscriptions/listen requests. Each stream lasts as long as
// the session and was left out of the requests in flight, so each held
// its goroutines for the whole session. A connection now keeps at most
// DefaultMaxSessionsPerCaller of them at once and answers one past it
// with an error at once.
func TestHostileClientListenFlood(t *testing.T) {
	const flood = 2000
	run := func(t *testing.T, bounded bool) (grew, refused int) {
		srv := mcptool.NewServer(tool.NewRegistry())
		defer srv.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 3*wait)
		defer cancel()
		inW, outR, served := serveStdio(ctx, srv, defaultOrNone(bounded))
		var refusals atomic.Int64
		go func() {
			sc := bufio.NewScanner(outR)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if strings.Contains(sc.Text(), "subscriptions/listen streams") {
					refusals.Add(1)
				}
			}
		}()
		before := runtime.NumGoroutine()
		for i := 1; i <= flood; i++ {
			fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`+"\n", i)
		}
		most := 0
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			most = max(most, runtime.NumGoroutine()-before)
		}
		inW.Close()
		cancel()
		<-served
		return most, int(refusals.Load())
	}
	grew, refused := run(t, false)
	t.Logf("control: %d more goroutines, %d refused", grew, refused)
	if grew < flood/2 {
		t.Fatalf("control: %d more goroutines for %d listen streams, want about one each", grew, flood)
	}
	grew, refused = run(t, true)
	t.Logf("defended: %d more goroutines, %d refused", grew, refused)
	if grew > 4*mcptool.DefaultMaxSessionsPerCaller || refused < flood-mcptool.DefaultMaxSessionsPerCaller {
		t.Errorf("%d more goroutines and %d refused, want the streams bounded by %d and the rest refused", grew, refused, mcptool.DefaultMaxSessionsPerCaller)
	}
}

// TestHostileClientLargeRequests: a client of a registry served over
// stdio sends 20 calls of a tool that takes its time, each with an id of
// 1 MiB. Each request is held whole until its tool returns: within the
// bound of 256 requests in flight, 16 MiB lines could hold 4 GiB. A
// connection now holds at most DefaultMaxRequestBytesInFlight (64 MiB)
// of them and answers one past it with an error at once (here a bound of
// 8 MiB, for a small test).
func TestHostileClientLargeRequests(t *testing.T) {
	const calls, idBytes, bound = 20, 1 << 20, 8 << 20
	run := func(t *testing.T, bounded bool) (ran, refused int64) {
		var refusals atomic.Int64
		h := newHeldTool(t)
		running := &h.running // the calls wait until the count is taken
		srv := mcptool.NewServer(h.reg)
		defer srv.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 3*wait)
		defer cancel()
		b := &mcptool.FloodBounds{}
		if bounded {
			b = &mcptool.FloodBounds{InFlight: mcptool.DefaultMaxRequestsInFlight, InFlightBytes: bound}
		}
		inW, outR, served := serveStdio(ctx, srv, b)
		go func() {
			r := bufio.NewReaderSize(outR, 1<<20)
			for {
				line, err := r.ReadString('\n')
				if strings.Contains(line, "bytes of requests of this connection in flight") {
					refusals.Add(1)
				}
				if err != nil {
					return
				}
			}
		}()
		io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"big","version":"0"}}}`+"\n")
		io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		for i := range calls {
			id := fmt.Sprintf("%d-%s", i, strings.Repeat("i", idBytes))
			fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":"slow","arguments":{}}}`+"\n", id)
		}
		for running.Load()+refusals.Load() < calls {
			select {
			case <-ctx.Done():
				t.Fatalf("%d calls running, %d refused", running.Load(), refusals.Load())
			case <-time.After(10 * time.Millisecond):
			}
		}
		ran, refused = running.Load(), refusals.Load()
		close(h.release)
		inW.Close()
		<-served
		return ran, refused
	}
	ran, refused := run(t, false)
	t.Logf("control: %d calls held (%d MiB of requests), %d refused", ran, ran*idBytes>>20, refused)
	if ran != calls {
		t.Fatalf("control: %d of %d calls held", ran, calls)
	}
	ran, refused = run(t, true)
	t.Logf("defended: %d calls held (%d MiB of requests), %d refused", ran, ran*idBytes>>20, refused)
	if ran*idBytes > bound || ran+refused != calls {
		t.Errorf("%d calls held and %d refused, want at most %d MiB held and the rest refused", ran, refused, bound>>20)
	}
}

// heldTool is a registry with one tool, "slow", whose calls wait until
// release is closed or their context ends, counting the calls running
// and the most that ran at once.
type heldTool struct {
	reg           *tool.Registry
	release       chan struct{}
	running, peak atomic.Int64
}

func newHeldTool(t *testing.T) *heldTool {
	t.Helper()
	h := &heldTool{reg: tool.NewRegistry(), release: make(chan struct{})}
	slow := tool.Must(tool.New("slow", "waits", func(ctx context.Context, _ struct{}) (string, error) {
		n := h.running.Add(1)
		defer h.running.Add(-1)
		for m := h.peak.Load(); n > m && !h.peak.CompareAndSwap(m, n); m = h.peak.Load() {
		}
		select {
		case <-h.release:
		case <-ctx.Done():
		}
		return "ok", nil
	}))
	if err := h.reg.Register(slow); err != nil {
		t.Fatal(err)
	}
	return h
}

// defaultOrNone is the flood bounds of a defended run (nil: ServeIO's
// defaults) or of a control (none).
func defaultOrNone(defended bool) *mcptool.FloodBounds {
	if defended {
		return nil
	}
	return &mcptool.FloodBounds{}
}

// serveStdio serves srv over a pair of pipes until ctx ends or the
// client's end (in) is closed: with its default flood bounds when b is
// nil, else with *b. out is what the server writes; served gets
// ServeIO's error once it returns.
func serveStdio(ctx context.Context, srv *mcptool.Server, b *mcptool.FloodBounds) (in *io.PipeWriter, out *io.PipeReader, served chan error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served = make(chan error, 1)
	go func() {
		if b == nil {
			served <- srv.ServeIO(ctx, inR, outW)
		} else {
			served <- srv.ServeIOBounded(ctx, inR, outW, *b)
		}
		outW.Close()
	}()
	return inW, outR, served
}
