package natstool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/nats-io/nats.go"
)

// BenchmarkRemoteCall measures a call of an imported tool against its
// baseline, a raw NATS request/reply of the same payload, from the same
// connection, to a responder on a connection of its own (as the worker
// has) that answers at once with the very bytes the worker answers with.
// The variants alternate call by call, with the worker's own
// Registry.Execute of the call in process before them, so that all see
// the same machine; their order rotates from one iteration to the next, so
// that none always goes first. The figures are medians (p50) of the
// per-call times, which a loaded machine disturbs less than means.
// x-direct is a request sent straight to the worker's endpoint as the
// importer sends it (protocol 2: the deadline at the end of the reply
// subject, no headers), but without the importer: the worker's share of
// the overhead; the rest of x-raw is the importer's. allocs-* count the
// allocations of one call in the whole process: caller, server and
// responder or worker.
func BenchmarkRemoteCall(b *testing.B) {
	s := startServer(b, false)
	var n atomic.Int64
	worker := counting(b, &n)
	serve(b, connect(b, s), worker)
	local := tool.NewRegistry(tool.WithLogger(quiet))
	nc := connect(b, s)
	importInto(b, nc, local)

	args := json.RawMessage(`{"a":2,"b":40}`)
	// The responder answers with what the worker answers.
	inbox := nc.NewRespInbox()
	replies, err := nc.SubscribeSync(inbox + ".*")
	if err != nil {
		b.Fatal(err)
	}
	defer replies.Unsubscribe()
	direct := &nats.Msg{Subject: "clawtool.tool.clawtool.add", Data: args, Reply: inbox + ".d" + natstool.ReplyTimeoutMark + "60000"}
	if err := nc.PublishMsg(direct); err != nil {
		b.Fatal(err)
	}
	first, err := replies.NextMsg(5 * time.Second)
	if err != nil {
		b.Fatal(err)
	}
	reply := first.Data
	rnc := connect(b, s)
	sub, err := rnc.Subscribe("bench.raw", func(m *nats.Msg) { m.Respond(reply) })
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	rnc.Flush()
	ctx := context.Background()
	raw := func() {
		if _, err := nc.Request("bench.raw", args, 5*time.Second); err != nil {
			b.Fatal(err)
		}
	}
	remote := func() {
		if res := local.Execute(ctx, "add", args); res.Output != "42" {
			b.Fatalf("%+v", res)
		}
	}
	straight := func() {
		if err := nc.PublishMsg(direct); err != nil {
			b.Fatal(err)
		}
		for {
			m, err := replies.NextMsg(5 * time.Second)
			if err == nil && m.Header.Get(natstool.HeaderKind) != "" {
				continue // a heartbeat: the service beats every call in flight at each tick
			}
			if err != nil || !bytes.Equal(m.Data, reply) {
				b.Fatalf("%v %s", err, m.Data)
			}
			return
		}
	}
	inproc := func() {
		if res := worker.Execute(ctx, "add", args); res.Output != "42" {
			b.Fatalf("%+v", res)
		}
	}
	for range 200 { // warm every path
		raw()
		remote()
		straight()
		inproc()
	}
	allocsRaw := testing.AllocsPerRun(500, raw)
	allocsRemote := testing.AllocsPerRun(500, remote)

	rawT := make([]time.Duration, 0, b.N)
	remoteT := make([]time.Duration, 0, b.N)
	inprocT := make([]time.Duration, 0, b.N)
	directT := make([]time.Duration, 0, b.N)
	variants := [...]struct {
		call  func()
		times *[]time.Duration
	}{{raw, &rawT}, {remote, &remoteT}, {straight, &directT}}
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		inproc()
		inprocT = append(inprocT, time.Since(t0))
		for k := range variants {
			v := variants[(i+k)%len(variants)]
			t := time.Now()
			v.call()
			*v.times = append(*v.times, time.Since(t))
		}
	}
	b.StopTimer()
	var rawSum, remoteSum time.Duration
	for i := range rawT {
		rawSum += rawT[i]
		remoteSum += remoteT[i]
	}
	rawP, remoteP, inprocP := median(rawT), median(remoteT), median(inprocT)
	b.ReportMetric(float64(rawP.Nanoseconds()), "raw-p50-ns")
	b.ReportMetric(float64(remoteP.Nanoseconds()), "remote-p50-ns")
	b.ReportMetric(float64(inprocP.Nanoseconds()), "inproc-p50-ns")
	b.ReportMetric(float64(remoteP)/float64(rawP), "x-raw")
	b.ReportMetric(float64(median(directT))/float64(rawP), "x-direct")
	b.ReportMetric(float64(remoteSum)/float64(rawSum), "x-raw-mean")
	// What is left once the raw round trip and the worker's own
	// Registry.Execute are paid: the local checks, the wire encoding, the
	// call bookkeeping on both sides.
	b.ReportMetric(float64(remoteP)/float64(rawP+inprocP), "x-raw+execute")
	b.ReportMetric(allocsRaw, "allocs-raw")
	b.ReportMetric(allocsRemote, "allocs-remote")
}

// interleaved times each of calls b.N times, taking turns in an order that
// rotates each round (no call always runs first, so a drift of the
// machine falls on all of them alike), between b.ResetTimer and
// b.StopTimer, and returns the times of each.
func interleaved(b *testing.B, calls ...func()) [][]time.Duration {
	times := make([][]time.Duration, len(calls))
	for k := range times {
		times[k] = make([]time.Duration, 0, b.N)
	}
	b.ResetTimer()
	for i := range b.N {
		for k := range calls {
			j := (i + k) % len(calls)
			t := time.Now()
			calls[j]()
			times[j] = append(times[j], time.Since(t))
		}
	}
	b.StopTimer()
	return times
}

// median returns the median of d, which it sorts.
func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// BenchmarkWorkerScaling measures the throughput of a tool that waits
// 10 ms, on workers that run at most 8 calls each, with 1, 2 and 4
// workers; scaling-Nw is the throughput of N workers over N times that of
// one (1 is linear).
func BenchmarkWorkerScaling(b *testing.B) {
	s := startServer(b, false)
	sleeper := func() *tool.Registry {
		reg := tool.NewRegistry(tool.WithLogger(quiet))
		reg.Register(tool.Must(tool.New("nap", "Waits 10 ms.", func(ctx context.Context, in struct{}) (string, error) {
			time.Sleep(10 * time.Millisecond)
			return "ok", nil
		})))
		return reg
	}
	throughput := func(workers int) float64 {
		var svcs []*natstool.Service
		for range workers {
			svc, err := natstool.Serve(connect(b, s), sleeper(), &natstool.ServeOptions{Logger: quiet, MaxInFlight: 8, MaxWaiting: 1024})
			if err != nil {
				b.Fatal(err)
			}
			svcs = append(svcs, svc)
		}
		defer func() {
			for _, svc := range svcs {
				svc.Stop()
			}
		}()
		local := tool.NewRegistry(tool.WithLogger(quiet))
		im := importInto(b, connect(b, s), local)
		defer im.Close()
		// Twice as many callers as slots keep every worker's line full
		// although NATS spreads the calls at random.
		callers := 16 * workers
		calls := int64(b.N * 50 * workers)
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range callers {
			wg.Go(func() {
				for next.Add(1) <= calls {
					if res := local.Execute(context.Background(), "nap", nil); res.IsError {
						b.Errorf("%+v", res)
						return
					}
				}
			})
		}
		wg.Wait()
		return float64(calls) / time.Since(start).Seconds()
	}
	b.ResetTimer()
	one := throughput(1)
	two := throughput(2)
	four := throughput(4)
	b.ReportMetric(one, "calls/s-1w")
	b.ReportMetric(two, "calls/s-2w")
	b.ReportMetric(four, "calls/s-4w")
	b.ReportMetric(two/(2*one), "scaling-2w")
	b.ReportMetric(four/(4*one), "scaling-4w")
}

// BenchmarkWorkerLoss kills one of three workers (its connection drops,
// as with kill -9) while 24 calls are in flight, and measures the time
// from the kill until the lost calls end (with heartbeats every 100 ms and
// a worker timeout of 500 ms), and until every new call succeeds: the time
// from the kill to the sending of the last new call that failed, while a
// caller keeps calling. Figures are the worst of b.N rounds.
func BenchmarkWorkerLoss(b *testing.B) {
	s := startServer(b, false)
	var worstLost, worstNew, lostCalls time.Duration
	var lost int
	for range b.N {
		release := make(chan struct{})
		started := make(chan struct{}, 64)
		reg := func() *tool.Registry {
			reg := tool.NewRegistry(tool.WithLogger(quiet))
			reg.Register(tool.Must(tool.New("hold", "Holds until released.", func(ctx context.Context, in struct{}) (string, error) {
				started <- struct{}{}
				select {
				case <-release:
					return "ok", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			})))
			var n atomic.Int64
			add, _ := counting(b, &n).Get("add")
			reg.Register(add)
			return reg
		}
		var conns []*nats.Conn
		var svcs []*natstool.Service
		for range 3 {
			nc := connect(b, s)
			svc, err := natstool.Serve(nc, reg(), &natstool.ServeOptions{Logger: quiet, Heartbeat: 100 * time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			conns, svcs = append(conns, nc), append(svcs, svc)
		}
		local := tool.NewRegistry(tool.WithLogger(quiet))
		im := importInto(b, connect(b, s), local, natstool.ImportOptions{WorkerTimeout: 500 * time.Millisecond})

		type outcome struct {
			res tool.Result
			at  time.Time
		}
		const inFlight = 24
		outcomes := make(chan outcome, inFlight)
		for range inFlight {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				res := local.Execute(ctx, "hold", nil)
				outcomes <- outcome{res, time.Now()}
			}()
		}
		for range inFlight {
			<-started
		}
		var lastFail atomic.Int64 // when the latest new call that failed was sent, unix nanos
		stop := make(chan struct{})
		var caller sync.WaitGroup
		caller.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				sent := time.Now()
				if res := local.Execute(context.Background(), "add", json.RawMessage(`{"a":1,"b":1}`)); res.IsError {
					lastFail.Store(sent.UnixNano())
				}
			}
		})
		killed := time.Now()
		conns[0].Close()
		close(release) // the calls of the live workers end now
		var lostHere []time.Duration
		for range inFlight {
			o := <-outcomes
			if o.res.IsError {
				lostHere = append(lostHere, o.at.Sub(killed))
			}
		}
		close(stop)
		caller.Wait()
		sort.Slice(lostHere, func(i, j int) bool { return lostHere[i] < lostHere[j] })
		if len(lostHere) > 0 {
			worstLost = max(worstLost, lostHere[len(lostHere)-1])
			lostCalls += lostHere[len(lostHere)/2]
			lost++
		}
		if f := lastFail.Load(); f != 0 {
			worstNew = max(worstNew, time.Unix(0, f).Sub(killed))
		}
		im.Close()
		for _, svc := range svcs {
			svc.Stop()
		}
	}
	b.ReportMetric(float64(worstLost.Milliseconds()), "ms-lost-call-ends-max")
	if lost > 0 {
		b.ReportMetric(float64(lostCalls.Milliseconds())/float64(lost), "ms-lost-call-ends-p50")
	}
	b.ReportMetric(float64(worstNew.Microseconds())/1000, "ms-until-new-calls-succeed")
}
