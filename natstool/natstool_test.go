package natstool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/natstest"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The registry's watcher of ExecuteHere's calls ends on its own,
	// half a grace period after the last call (the core's synctest tests
	// check that it ends); the workers' registries may just have made one.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/miniopenclaw/tool.(*Registry).sweep"))
}

// The test's NATS servers and connections (see natstest).
var (
	startServer = natstest.Start
	runServer   = natstest.Run
	connect     = natstest.Connect
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// importOpts are fast settings for tests, on top of opts (at most one):
// short discovery and no periodic scans unless a test asks for them.
func importOpts(opts ...natstool.ImportOptions) *natstool.ImportOptions {
	o := firstOf(opts)
	if o.DiscoveryWait == 0 {
		o.DiscoveryWait, o.DiscoveryQuiet = 5*time.Second, 300*time.Millisecond
	}
	if o.Resync == 0 {
		o.Resync = -1
	}
	if o.Logger == nil {
		o.Logger = quiet
	}
	return &o
}

func importInto(t testing.TB, nc *nats.Conn, reg *tool.Registry, opts ...natstool.ImportOptions) *natstool.Importer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	im, err := natstool.Import(ctx, nc, reg, importOpts(opts...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Close() })
	return im
}

// firstOf returns the first of opts, or the zero value: the test helpers
// take their options as an optional last argument.
func firstOf[T any](opts []T) T {
	var o T
	if len(opts) > 0 {
		o = opts[0]
	}
	return o
}

// serve serves reg on nc with opts (at most one), quiet unless it names a
// logger.
func serve(t testing.TB, nc *nats.Conn, reg *tool.Registry, opts ...natstool.ServeOptions) *natstool.Service {
	t.Helper()
	o := firstOf(opts)
	if o.Logger == nil {
		o.Logger = quiet
	}
	svc, err := natstool.Serve(nc, reg, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop() })
	return svc
}

type AddArgs struct {
	A int `json:"a" description:"first term"`
	B int `json:"b" description:"second term" maximum:"100"`
}

// counting returns a worker registry with an "add" tool that counts its
// calls in n.
func counting(t testing.TB, n *atomic.Int64, opts ...tool.Option) *tool.Registry {
	t.Helper()
	add := tool.Must(tool.New("add", "Adds two integers.", func(ctx context.Context, in AddArgs) (int, error) {
		n.Add(1)
		return in.A + in.B, nil
	}, append([]tool.Option{tool.WithAnnotations(tool.Annotations{ReadOnly: true, Idempotent: true})}, opts...)...))
	reg := tool.NewRegistry(tool.WithLogger(quiet))
	if err := reg.Register(add); err != nil {
		t.Fatal(err)
	}
	return reg
}

// waitFor polls cond until it holds or the test's bound (a failure, not
// a timing assertion) runs out.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestServeAndImport(t *testing.T) {
	s := startServer(t, false)
	var calls atomic.Int64
	worker := counting(t, &calls)
	serve(t, connect(t, s), worker)

	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local, natstool.ImportOptions{Prefix: "w_"})

	got, ok := local.Get("w_add")
	if !ok {
		t.Fatalf("w_add not imported; registry has %d tools", local.Len())
	}
	want, _ := worker.Get("add")
	if got.Description() != want.Description() || string(got.Parameters()) != string(want.Parameters()) {
		t.Errorf("imported definition differs:\n got %s %s\nwant %s %s", got.Description(), got.Parameters(), want.Description(), want.Parameters())
	}
	if a := tool.OptionsOf(got).Annotations; !a.ReadOnly || !a.Idempotent || a.Destructive {
		t.Errorf("annotations = %+v, want read-only and idempotent", a)
	}

	res := local.Execute(context.Background(), "w_add", json.RawMessage(`{"a":2,"b":40}`))
	if res.IsError || res.Output != "42" {
		t.Fatalf("call: %+v", res)
	}
	// Invalid arguments are refused by the local registry: the worker's
	// tool never runs.
	res = local.Execute(context.Background(), "w_add", json.RawMessage(`{"a":2,"b":400}`))
	if res.Kind != tool.KindInvalidArguments || !strings.Contains(res.Error, "/b") {
		t.Fatalf("invalid call: %+v", res)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("worker ran %d calls, want 1", n)
	}
}

func TestCallsShareWorkers(t *testing.T) {
	s := startServer(t, false)
	var counts [3]atomic.Int64
	for i := range counts {
		serve(t, connect(t, s), counting(t, &counts[i]))
	}
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local)
	const calls = 300
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			res := local.Execute(context.Background(), "add", json.RawMessage(fmt.Sprintf(`{"a":%d,"b":1}`, i)))
			if res.IsError || res.Output != fmt.Sprint(i+1) {
				t.Errorf("call %d: %+v", i, res)
			}
		})
	}
	wg.Wait()
	var total int64
	for i := range counts {
		n := counts[i].Load()
		total += n
		// NATS picks a queue member at random: each of 3 gets about 100 of
		// 300; fewer than 30 is many standard deviations away.
		if n < 30 {
			t.Errorf("worker %d served %d of %d calls", i, n, calls)
		}
	}
	if total != calls {
		t.Errorf("workers ran %d calls, want %d", total, calls)
	}
}

func TestResyncFollowsChanges(t *testing.T) {
	s := startServer(t, false)
	var n atomic.Int64
	worker := counting(t, &n)
	svc := serve(t, connect(t, s), worker)
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local)
	if _, ok := local.Get("add"); !ok {
		t.Fatal("add not imported")
	}

	echo := tool.Must(tool.New("echo", "Echoes its text.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	}))
	if err := worker.Register(echo); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "echo to be imported", func() bool { _, ok := local.Get("echo"); return ok })
	if res := local.Execute(context.Background(), "echo", json.RawMessage(`{"text":"hi"}`)); res.Output != "hi" {
		t.Fatalf("echo: %+v", res)
	}

	// A changed description reaches the importer.
	echo2 := tool.Must(tool.New("echo", "Echoes its text back, unchanged.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	}))
	worker.Register(echo2)
	waitFor(t, "the new description", func() bool {
		t, ok := local.Get("echo")
		return ok && t.Description() == "Echoes its text back, unchanged."
	})

	worker.Remove("add")
	waitFor(t, "add to be removed", func() bool { _, ok := local.Get("add"); return !ok })

	svc.Stop()
	waitFor(t, "every tool to be removed", func() bool { return local.Len() == 0 })
}

// A tool the importer did not register is never replaced.
func TestImportNeverDisplaces(t *testing.T) {
	s := startServer(t, false)
	var n atomic.Int64
	serve(t, connect(t, s), counting(t, &n))
	local := tool.NewRegistry(tool.WithLogger(quiet))
	mine := tool.Must(tool.New("add", "Mine.", func(ctx context.Context, in AddArgs) (int, error) { return -1, nil }))
	local.Register(mine)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	im, err := natstool.Import(ctx, connect(t, s), local, importOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	if err := im.Sync(ctx); !errors.Is(err, tool.ErrDuplicate) {
		t.Fatalf("Sync = %v, want ErrDuplicate", err)
	}
	if got, _ := local.Get("add"); got.Description() != "Mine." {
		t.Fatal("the local tool was replaced")
	}
	im.Close()
	if _, ok := local.Get("add"); !ok {
		t.Fatal("Close removed a tool the importer did not register")
	}
}

// servedAlone serves tl alone, with no default timeout on either side,
// and returns the registry it is imported into.
func servedAlone(t *testing.T, s *server.Server, tl tool.Tool) *tool.Registry {
	t.Helper()
	worker := tool.NewRegistry(tool.WithLogger(quiet), tool.WithDefaultTimeout(-1))
	worker.Register(tl)
	serve(t, connect(t, s), worker)
	local := tool.NewRegistry(tool.WithLogger(quiet), tool.WithDefaultTimeout(-1))
	importInto(t, connect(t, s), local)
	return local
}

func TestDeadlineTravels(t *testing.T) {
	s := startServer(t, false)
	left := make(chan time.Duration, 1)
	see := tool.Must(tool.New("deadline", "Says how long its context has left.", func(ctx context.Context, in struct{}) (string, error) {
		dl, ok := ctx.Deadline()
		if !ok {
			left <- -1
		} else {
			left <- time.Until(dl)
		}
		return "seen", nil
	}, tool.WithTimeout(-1)))
	local := servedAlone(t, s, see)

	// The worker's deadline comes from the caller's: it can only be
	// later than now and no later than the caller's whole budget, however
	// slow the machine (a bound on the header, not a speed check).
	const budget = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	if res := local.Execute(ctx, "deadline", nil); res.IsError {
		t.Fatalf("call: %+v", res)
	}
	if d := <-left; d <= 0 || d > budget { // ok-wallclock: an upper bound on the header, see above
		t.Fatalf("worker's deadline was %v away, want within the caller's %v", d, budget)
	}
}

// TestDeadlineEndsTheWorkersCall: when the caller's time runs out, the
// tool on the worker sees its context end as a context with a deadline
// ends (context.DeadlineExceeded), with a cause wrapping tool.ErrTimeout.
// The request is sent by hand, with 300 ms at the end of its reply
// subject, so that no importer cancels the call when its own time runs
// out (which would race the worker's deadline on a busy machine).
func TestDeadlineEndsTheWorkersCall(t *testing.T) {
	s := startServer(t, false)
	seen := make(chan [2]error, 1)
	wait := tool.Must(tool.New("wait", "Waits for its context to end.", func(ctx context.Context, in struct{}) (string, error) {
		<-ctx.Done()
		seen <- [2]error{ctx.Err(), context.Cause(ctx)}
		return "", ctx.Err()
	}, tool.WithTimeout(-1)))
	worker := tool.NewRegistry(tool.WithLogger(quiet), tool.WithDefaultTimeout(-1))
	worker.Register(wait)
	serve(t, connect(t, s), worker)

	nc := connect(t, s)
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	msg := &nats.Msg{Subject: natstool.DefaultSubjectPrefix + ".clawtool.wait", Reply: inbox + natstool.ReplyTimeoutMark + "300", Data: []byte(`{}`)}
	sub.Unsubscribe()
	if sub, err = nc.SubscribeSync(msg.Reply); err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishMsg(msg); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.NextMsg(20 * time.Second); err != nil { // ok-wallclock: only a broken worker waits this long
		t.Fatalf("no answer: %v", err)
	}
	select {
	case got := <-seen:
		if got[0] != context.DeadlineExceeded || !errors.Is(got[1], tool.ErrTimeout) {
			t.Errorf("the worker's context ended with %v, cause %v; want DeadlineExceeded, a cause wrapping ErrTimeout", got[0], got[1])
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the worker's call never ended")
	}
}

func TestNoWorkerIsUnavailable(t *testing.T) {
	s := startServer(t, false)
	var n atomic.Int64
	wnc := connect(t, s)
	serve(t, wnc, counting(t, &n))
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local)
	wnc.Close() // the worker vanishes without an announcement
	// Wait until the server has seen the worker go.
	probe := connect(t, s)
	waitFor(t, "the worker's subscriptions to go", func() bool {
		_, err := probe.Request("clawtool.tool.clawtool.add", nil, time.Second)
		return errors.Is(err, nats.ErrNoResponders)
	})
	res := local.Execute(context.Background(), "add", json.RawMessage(`{"a":1,"b":2}`))
	if res.Kind != tool.KindUnavailable || !strings.Contains(res.Error, "no worker") {
		t.Fatalf("got %+v, want unavailable", res)
	}
}

func TestLargeResults(t *testing.T) {
	s := startServer(t, true)
	big := strings.Repeat("x", 3<<20) // the server's max payload is 1 MiB
	blob := tool.Must(tool.New("blob", "Returns 3 MiB of text.", func(ctx context.Context, in struct{}) (string, error) {
		return big, nil
	}, tool.WithMaxOutput(-1)))
	worker := tool.NewRegistry(tool.WithLogger(quiet))
	worker.Register(blob)

	wnc := connect(t, s)
	js, err := jetstream.New(wnc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	store, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "results", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("object store", func(t *testing.T) {
		svc := serve(t, wnc, worker, natstool.ServeOptions{Name: "withstore", ObjectStore: store})
		defer svc.Stop()
		local := tool.NewRegistry(tool.WithLogger(quiet), tool.WithDefaultMaxOutput(-1))
		importInto(t, connect(t, s), local, natstool.ImportOptions{Filter: func(service, _ string) bool { return service == "withstore" }})
		res := local.Execute(ctx, "blob", nil)
		if res.IsError || len(res.Output) != len(big) {
			t.Fatalf("got %d bytes, error %q; want %d bytes", len(res.Output), res.Error, len(big))
		}
		// The importer deleted the object after reading it.
		n := 0
		lister, err := store.List(ctx)
		if err == nil {
			n = len(lister)
		} else if !errors.Is(err, jetstream.ErrNoObjectsFound) {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%d objects left in the store", n)
		}
	})
	t.Run("object store, signed", func(t *testing.T) {
		// The pointer's signature covers the object's bytes.
		svc := serve(t, wnc, worker, natstool.ServeOptions{Name: "signedstore", ObjectStore: store, ReplyKey: testReplyKey(t)})
		defer svc.Stop()
		local := tool.NewRegistry(tool.WithLogger(quiet), tool.WithDefaultMaxOutput(-1))
		importInto(t, connect(t, s), local, natstool.ImportOptions{ReplyKey: testReplyKey(t), Filter: func(service, _ string) bool { return service == "signedstore" }})
		res := local.Execute(ctx, "blob", nil)
		if res.IsError || len(res.Output) != len(big) {
			t.Fatalf("got %d bytes, error %q; want %d bytes", len(res.Output), res.Error, len(big))
		}
	})
	t.Run("no object store", func(t *testing.T) {
		svc := serve(t, wnc, worker, natstool.ServeOptions{Name: "nostore"})
		defer svc.Stop()
		local := tool.NewRegistry(tool.WithLogger(quiet), tool.WithDefaultMaxOutput(-1))
		importInto(t, connect(t, s), local, natstool.ImportOptions{Filter: func(service, _ string) bool { return service == "nostore" }})
		res := local.Execute(ctx, "blob", nil)
		if !res.IsError || !strings.Contains(res.Error, "no object store") || !strings.Contains(res.Error, "bytes") {
			t.Fatalf("got %+v, want an error naming the size and the missing store", res.Error)
		}
	})
}

// blocking returns a registry whose "hold" tool signals started and then
// waits for its context.
func blocking(started chan<- string, id string) *tool.Registry {
	hold := tool.Must(tool.New("hold", "Holds until canceled.", func(ctx context.Context, in struct{}) (string, error) {
		started <- id
		<-ctx.Done()
		return "", ctx.Err()
	}, tool.WithAnnotations(tool.Annotations{Idempotent: true, ReadOnly: true}),
		tool.WithRetry(tool.RetryPolicy{MaxAttempts: 3, Backoff: time.Millisecond})))
	reg := tool.NewRegistry(tool.WithLogger(quiet))
	reg.Register(hold)
	return reg
}

// heartbeatWorker serves blocking(started, name) on a connection of its
// own to s, with heartbeats every 50ms, and returns the connection
// (closing it kills the worker).
func heartbeatWorker(t *testing.T, s *server.Server, started chan string, name string) *nats.Conn {
	t.Helper()
	nc := connect(t, s)
	serve(t, nc, blocking(started, name), natstool.ServeOptions{Heartbeat: 50 * time.Millisecond})
	return nc
}

// impatientImport imports the tools served on s into a new registry that
// gives a worker 300ms without a heartbeat.
func impatientImport(t *testing.T, s *server.Server) *tool.Registry {
	t.Helper()
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local, natstool.ImportOptions{WorkerTimeout: 300 * time.Millisecond})
	return local
}

// A worker that dies during a call: the call fails as unavailable once
// the heartbeats stop, long before its own time limit.
func TestWorkerDiesMidCall(t *testing.T) {
	s := startServer(t, false)
	started := make(chan string, 4)
	wnc := heartbeatWorker(t, s, started, "a")
	local := impatientImport(t, s)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan tool.Result, 1)
	go func() { done <- local.Execute(ctx, "hold", nil) }()
	<-started
	wnc.Close()
	res := <-done
	if res.Kind != tool.KindUnavailable || !strings.Contains(res.Error, "stopped answering") {
		t.Fatalf("got %+v, want unavailable", res)
	}
	if ctx.Err() != nil {
		t.Fatal("the call ran to its own time limit")
	}
}

// An idempotent call whose worker dies is retried by the Executor on
// another worker.
func TestExecutorRetriesOnAnotherWorker(t *testing.T) {
	s := startServer(t, false)
	started := make(chan string, 4)
	anc := heartbeatWorker(t, s, started, "a")
	local := impatientImport(t, s)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex := tool.NewExecutor(local)
	done := make(chan []tool.Outcome, 1)
	go func() {
		outs, _ := ex.Run(ctx, []tool.Call{{ID: "1", Name: "hold"}})
		done <- outs
	}()
	if id := <-started; id != "a" {
		t.Fatalf("first attempt ran on %s", id)
	}
	// Worker b joins, then a dies: the retry can only reach b.
	heartbeatWorker(t, s, started, "b")
	anc.Close()
	select {
	case id := <-started:
		if id != "b" {
			t.Fatalf("retry ran on %s, want b", id)
		}
	case outs := <-done:
		t.Fatalf("no retry: %+v", outs[0].Result)
	}
	cancel()
	outs := <-done
	if a := outs[0].Result.Metadata["attempts"]; fmt.Sprint(a) != "2" {
		t.Errorf("attempts = %v, want 2 (outcome %+v)", a, outs[0].Result)
	}
}

type principalKey struct{}

func TestHeadersCarryThePrincipal(t *testing.T) {
	s := startServer(t, false)
	whoami := tool.Must(tool.New("whoami", "Says who the call is for.", func(ctx context.Context, in struct{}) (string, error) {
		who, _ := ctx.Value(principalKey{}).(string)
		return who, nil
	}))
	worker := tool.NewRegistry(tool.WithLogger(quiet))
	worker.Register(whoami)
	serve(t, connect(t, s), worker, natstool.ServeOptions{CallContext: func(ctx context.Context, h nats.Header) (context.Context, error) {
		who := h.Get("Principal")
		if who == "mallory" {
			return nil, errors.New("mallory may not call tools here")
		}
		return context.WithValue(ctx, principalKey{}, who), nil
	}})
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local, natstool.ImportOptions{CallHeaders: func(ctx context.Context) nats.Header {
		who, _ := ctx.Value(principalKey{}).(string)
		return nats.Header{"Principal": []string{who}}
	}})
	ctx := context.WithValue(context.Background(), principalKey{}, "alice")
	if res := local.Execute(ctx, "whoami", nil); res.Output != "alice" {
		t.Fatalf("got %+v, want alice", res)
	}
	ctx = context.WithValue(context.Background(), principalKey{}, "mallory")
	if res := local.Execute(ctx, "whoami", nil); res.Kind != tool.KindDenied || !strings.Contains(res.Error, "may not") {
		t.Fatalf("got %+v, want denied", res)
	}
}

func TestResultsKeepTheirShape(t *testing.T) {
	s := startServer(t, false)
	worker := tool.NewRegistry(tool.WithLogger(quiet))
	worker.Register(tool.Must(tool.New("fail", "Fails.", func(ctx context.Context, in struct{}) (string, error) {
		return "", errors.New("disk full")
	})))
	worker.Register(tool.Must(tool.New("boom", "Panics.", func(ctx context.Context, in struct{}) (string, error) {
		panic("boom")
	})))
	worker.Register(tool.Must(tool.New("chart", "Draws.", func(ctx context.Context, in struct{}) (tool.Result, error) {
		tool.ReportProgress(ctx, 1, 2, "half")
		return tool.Result{Output: "a chart", Parts: []tool.Part{tool.Image("image/png", []byte{0x89, 'P', 'N', 'G'})}}, nil
	})))
	serve(t, connect(t, s), worker)
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local)

	ctx := context.Background()
	if res := local.Execute(ctx, "fail", nil); res.Kind != tool.KindToolError || res.Error != "disk full" {
		t.Errorf("fail: %+v", res)
	}
	if res := local.Execute(ctx, "boom", nil); res.Kind != tool.KindPanic {
		t.Errorf("boom: %+v", res)
	}
	var reports []string
	var mu sync.Mutex
	pctx := tool.WithProgress(ctx, func(p, total float64, msg string) {
		mu.Lock()
		reports = append(reports, fmt.Sprint(p, "/", total, " ", msg))
		mu.Unlock()
	})
	res := local.Execute(pctx, "chart", nil)
	if res.IsError || res.Output != "a chart" || len(res.Parts) != 1 || res.Parts[0].MIMEType != "image/png" || string(res.Parts[0].Data) != "\x89PNG" {
		t.Errorf("chart: %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 1 || reports[0] != "1/2 half" {
		t.Errorf("progress reports = %q", reports)
	}
}

// A caller held up in its progress callback for several worker timeouts
// still gets the result its worker sent meanwhile: the importer's
// watchdog routes the replies no caller takes, so the call hears its
// worker and is not taken for silent. Several calls, since a call taken
// for silent would be one of a random pick between the result and that
// verdict.
func TestSlowProgressCallbackKeepsResult(t *testing.T) {
	s := startServer(t, false)
	worker := tool.NewRegistry(tool.WithLogger(quiet))
	worker.Register(tool.Must(tool.New("quick", "Reports, then ends.", func(ctx context.Context, in struct{}) (string, error) {
		tool.ReportProgress(ctx, 1, 2, "half")
		return "done", nil
	})))
	serve(t, connect(t, s), worker)
	local := tool.NewRegistry(tool.WithLogger(quiet))
	const timeout = 50 * time.Millisecond
	importInto(t, connect(t, s), local, natstool.ImportOptions{WorkerTimeout: timeout})
	for i := range 6 {
		var reports atomic.Int64
		ctx := tool.WithProgress(context.Background(), func(p, total float64, msg string) {
			reports.Add(1)
			time.Sleep(4 * timeout) // the result arrives meanwhile
		})
		if res := local.Execute(ctx, "quick", nil); res.IsError || res.Output != "done" {
			t.Fatalf("call %d: %+v", i, res)
		}
		if n := reports.Load(); n != 1 {
			t.Fatalf("call %d: %d progress reports, want 1", i, n)
		}
	}
}

// A worker whose waiting line is full answers at once as busy.
func TestBusyWorker(t *testing.T) {
	s := startServer(t, false)
	started := make(chan string, 4)
	serve(t, connect(t, s), blocking(started, "a"), natstool.ServeOptions{MaxInFlight: 1, MaxWaiting: -1})
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tool.Result, 1)
	go func() { done <- local.Execute(ctx, "hold", nil) }()
	select {
	case <-started:
	case res := <-done:
		t.Fatalf("first call: %+v", res)
	}
	res := local.Execute(context.Background(), "hold", nil)
	if res.Kind != tool.KindUnavailable || !strings.Contains(res.Error, "busy") {
		t.Errorf("second call: %+v, want unavailable (busy)", res)
	}
	cancel()
	<-done
}

// A caller that gives up stops the call on the worker too.
func TestCancelReachesWorker(t *testing.T) {
	s := startServer(t, false)
	started := make(chan string, 1)
	stopped := make(chan error, 1)
	hold := tool.Must(tool.New("hold", "Holds until canceled.", func(ctx context.Context, in struct{}) (string, error) {
		started <- "a"
		<-ctx.Done()
		stopped <- context.Cause(ctx)
		return "", ctx.Err()
	}))
	worker := tool.NewRegistry(tool.WithLogger(quiet))
	worker.Register(hold)
	serve(t, connect(t, s), worker)
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tool.Result, 1)
	go func() { done <- local.Execute(ctx, "hold", nil) }()
	select {
	case <-started:
	case res := <-done:
		t.Fatalf("call: %+v", res)
	}
	cancel()
	if res := <-done; res.Kind != tool.KindCanceled {
		t.Errorf("caller got %+v, want canceled", res)
	}
	bound, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	select {
	case err := <-stopped:
		if err == nil || !strings.Contains(err.Error(), "caller canceled") {
			t.Errorf("the worker's context ended with %v", err)
		}
	case <-bound.Done():
		t.Fatal("the worker's call went on after the caller gave up")
	}
}

// A call that runs for many worker timeouts succeeds: the service's
// heartbeats keep it alive, one per interval, and none follows its
// result. A monitor on the reply subjects counts them; the tool returns
// only once the caller has been sent more heartbeats than fit in one
// worker timeout.
func TestHeartbeatsKeepALongCallAlive(t *testing.T) {
	s := startServer(t, false)
	const beat, workerTimeout = 20 * time.Millisecond, 100 * time.Millisecond
	const beats = int(2*workerTimeout/beat) + 1 // more than two worker timeouts of them

	type event struct{ subject, kind string }
	events := make(chan event, 1024)
	mon := connect(t, s)
	if _, err := mon.Subscribe("_INBOX.>", func(m *nats.Msg) {
		kind := m.Header.Get(natstool.HeaderKind)
		if kind == "" {
			kind = "result"
		}
		if string(m.Data) == "marker" {
			kind = "marker"
		}
		events <- event{m.Subject, kind}
	}); err != nil {
		t.Fatal(err)
	}
	mon.Flush()

	release := make(chan struct{})
	worker := tool.NewRegistry(tool.WithLogger(quiet))
	worker.Register(tool.Must(tool.New("long", "Runs until released.", func(ctx context.Context, in struct{}) (string, error) {
		select {
		case <-release:
			return "done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})))
	wnc := connect(t, s)
	serve(t, wnc, worker, natstool.ServeOptions{Heartbeat: beat})
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local, natstool.ImportOptions{WorkerTimeout: workerTimeout})

	done := make(chan tool.Result, 1)
	go func() { done <- local.Execute(context.Background(), "long", nil) }()
	var releaseOnce sync.Once
	releaseTool := func() { releaseOnce.Do(func() { close(release) }) }
	defer releaseTool() // a failed test does not wait for the call's time limit
	// The call's reply subject is the one of the first heartbeat; other
	// messages on inboxes (discovery) are not the call's.
	var reply string
	for n := 0; n < beats; {
		select {
		case e := <-events:
			if reply == "" && e.kind == "heartbeat" {
				reply = e.subject
			}
			if e.subject != reply {
				continue
			}
			if e.kind != "heartbeat" {
				t.Fatalf("before the tool returned: %+v", e)
			}
			n++
		case res := <-done:
			t.Fatalf("the call ended before its tool returned: %+v", res)
		}
	}
	releaseTool()
	if res := <-done; res.IsError || res.Output != "done" {
		t.Fatalf("result: %+v", res)
	}
	// A marker from the worker's connection arrives after everything the
	// worker sent before it: no heartbeat may come between the result and
	// the marker.
	if err := wnc.Publish(reply, []byte("marker")); err != nil {
		t.Fatal(err)
	}
	sawResult := false
	for e := range events {
		if e.subject != reply {
			continue
		}
		switch e.kind {
		case "result":
			sawResult = true
		case "heartbeat":
			if sawResult {
				t.Fatal("a heartbeat followed the result")
			}
		case "marker":
			if !sawResult {
				t.Fatal("the monitor saw no result")
			}
			return
		}
	}
}

// A tool that ignores its context holds the goroutine it runs on (the
// worker runs tools on its pool's goroutines, tool.Registry.ExecuteHere),
// but not the call: the worker answers at the end of the grace period,
// gives back the running slot, and serves the next call on another
// goroutine; Stop does not wait for the stuck tool.
func TestStubbornToolIsAbandoned(t *testing.T) {
	s := startServer(t, false)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	worker := tool.NewRegistry(tool.WithLogger(quiet), tool.WithGracePeriod(100*time.Millisecond))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(worker.Register(tool.Must(tool.New("stubborn", "Ignores its context.", func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		<-release
		return "late", nil
	}, tool.WithTimeout(200*time.Millisecond)))))
	var n atomic.Int64
	add, _ := counting(t, &n).Get("add")
	must(worker.Register(add))
	svc := serve(t, connect(t, s), worker, natstool.ServeOptions{MaxInFlight: 1, MaxWaiting: -1})
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local)
	defer close(release)

	res := local.Execute(context.Background(), "stubborn", nil)
	if res.Kind != tool.KindTimeout || !strings.Contains(res.Error, "did not stop") {
		t.Fatalf("stubborn = %+v, want the worker's timeout saying the tool did not stop", res)
	}
	<-started
	if st := worker.Stats(); st.IgnoredContext != 1 || st.StillRunning != 1 {
		t.Errorf("worker Stats = %+v, want 1 ignored, 1 still running", st)
	}
	// The only running slot is free again, on a new goroutine.
	if res := local.Execute(context.Background(), "add", json.RawMessage(`{"a":1,"b":2}`)); res.IsError || res.Output != "3" {
		t.Errorf("add after the abandoned call = %+v, want 3", res)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- svc.Stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Stop: %v", err)
		}
	case <-time.After(20 * time.Second): // ok-wallclock
		t.Fatal("Stop waited for a tool the registry abandoned")
	}
}

// TestCallAgainAtOnce calls a worker that runs one call at a time and
// keeps none waiting, each call as soon as the previous one's result is
// in: the worker gives the call's place back before it sends the result,
// so no call finds the worker busy.
func TestCallAgainAtOnce(t *testing.T) {
	s := startServer(t, false)
	var n atomic.Int64
	serve(t, connect(t, s), counting(t, &n), natstool.ServeOptions{MaxInFlight: 1, MaxWaiting: -1})
	local := tool.NewRegistry(tool.WithLogger(quiet))
	importInto(t, connect(t, s), local)
	for i := range 300 {
		if res := local.Execute(context.Background(), "add", json.RawMessage(`{"a":1,"b":2}`)); res.IsError || res.Output != "3" {
			t.Fatalf("call %d = %+v, want 3", i, res)
		}
	}
}
