package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
)

// Benchmarks of the executor. Each reports its goal as a ratio against a
// baseline measured in the same run (b.ReportMetric), so the figures do not
// depend on the machine:
//
//	go test -run '^$' -bench 'Executor' -benchtime 20x .
//
// Wall-clock figures are measured here and only here; the tests use
// synctest's fake clock.

// waitTool waits d, honouring ctx, then succeeds.
type waitTool struct {
	name string
	d    time.Duration
}

func (t waitTool) Name() string                { return t.name }
func (t waitTool) Description() string         { return "Waits, then succeeds." }
func (t waitTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (t waitTool) Execute(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	if t.d > 0 {
		tm := time.NewTimer(t.d)
		defer tm.Stop()
		select {
		case <-tm.C:
		case <-ctx.Done():
			return tool.Result{}, ctx.Err()
		}
	}
	return tool.Result{Output: "ok"}, nil
}

func benchRegistry(b *testing.B, tools ...tool.Tool) *tool.Registry {
	b.Helper()
	reg := tool.NewRegistry()
	for _, t := range tools {
		if err := reg.Register(t); err != nil {
			b.Fatal(err)
		}
	}
	return reg
}

// oneCall measures one Registry.Execute of name, as the median of n runs.
func oneCall(b *testing.B, reg *tool.Registry, name string, n int) time.Duration {
	b.Helper()
	ds := make([]time.Duration, n)
	for i := range ds {
		start := time.Now()
		if res := reg.Execute(context.Background(), name, nil); res.IsError {
			b.Fatal(res.Error)
		}
		ds[i] = time.Since(start)
	}
	for i := range ds { // insertion sort; n is small
		for j := i; j > 0 && ds[j] < ds[j-1]; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
	return ds[n/2]
}

func runBatch(b *testing.B, ex *tool.Executor, calls []tool.Call) {
	outs, err := ex.Run(context.Background(), calls)
	if err != nil {
		b.Fatal(err)
	}
	for _, o := range outs {
		if o.Err != nil {
			b.Fatal(o.Err)
		}
	}
}

// BenchmarkExecutorParallel16: 16 independent calls to a tool that waits
// 50ms. Goal: wall ≤ 1.1× one call (x_one_call).
func BenchmarkExecutorParallel16(b *testing.B) {
	reg := benchRegistry(b, waitTool{"wait", 50 * time.Millisecond})
	one := oneCall(b, reg, "wait", 5)
	calls := make([]tool.Call, 16)
	for i := range calls {
		calls[i] = tool.Call{ID: fmt.Sprint(i), Name: "wait"}
	}
	ex := tool.NewExecutor(reg)
	var total time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		runBatch(b, ex, calls)
		total += time.Since(start)
		n++
	}
	b.ReportMetric(float64(total)/float64(n)/float64(one), "x_one_call")
	b.ReportMetric(float64(one)/1e6, "ms_one_call")
}

// graph12 is 12 calls in three layers of four; each call of a layer
// depends on two calls of the layer before, so the critical path is three
// calls long.
func graph12(name string) []tool.Call {
	calls := make([]tool.Call, 0, 12)
	for layer := range 3 {
		for k := range 4 {
			c := tool.Call{ID: fmt.Sprintf("L%d_%d", layer, k), Name: name}
			if layer > 0 {
				c.DependsOn = []string{fmt.Sprintf("L%d_%d", layer-1, k), fmt.Sprintf("L%d_%d", layer-1, (k+1)%4)}
			}
			calls = append(calls, c)
		}
	}
	return calls
}

// BenchmarkExecutorGraph12: a 12-call graph whose critical path is 3 calls
// of 50ms. Goal: wall ≤ 1.1× the critical path (x_critical_path), measured
// as three single calls.
func BenchmarkExecutorGraph12(b *testing.B) {
	reg := benchRegistry(b, waitTool{"wait", 50 * time.Millisecond})
	path := 3 * oneCall(b, reg, "wait", 5)
	calls := graph12("wait")
	ex := tool.NewExecutor(reg)
	var total time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		runBatch(b, ex, calls)
		total += time.Since(start)
		n++
	}
	b.ReportMetric(float64(total)/float64(n)/float64(path), "x_critical_path")
}

// BenchmarkExecutorOverhead: the executor's cost per call for a tool that
// does nothing, against Registry.Execute alone, interleaved in the same
// loop so both see the same machine state. Goal: ≤ 1.3× (x_execute).
// "batch1" runs one call per Run; "batch16" runs 16 independent calls per
// Run and reports wall time per call; "batch16_serial" runs them one at a
// time (WithMaxParallel(1)); "chain16" runs 16 calls that each depend on
// the previous one.
func BenchmarkExecutorOverhead(b *testing.B) {
	batch16 := func() []tool.Call {
		calls := make([]tool.Call, 16)
		for i := range calls {
			calls[i] = tool.Call{ID: fmt.Sprint(i), Name: "noop"}
		}
		return calls
	}
	for _, tt := range []struct {
		name        string
		maxParallel int
		calls       func() []tool.Call
	}{
		{"batch1", 0, func() []tool.Call { return []tool.Call{{ID: "a", Name: "noop"}} }},
		{"batch16", 0, batch16},
		{"batch16_serial", 1, batch16},
		{"chain16", 0, func() []tool.Call {
			calls := make([]tool.Call, 16)
			for i := range calls {
				calls[i] = tool.Call{ID: fmt.Sprint(i), Name: "noop"}
				if i > 0 {
					calls[i].DependsOn = []string{fmt.Sprint(i - 1)}
				}
			}
			return calls
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			reg := benchRegistry(b, waitTool{name: "noop"})
			ex := tool.NewExecutor(reg, tool.WithMaxParallel(tt.maxParallel))
			calls := tt.calls()
			ctx := context.Background()
			var tExec, tRun time.Duration
			for b.Loop() {
				t0 := time.Now()
				for range calls {
					if res := reg.Execute(ctx, "noop", nil); res.IsError {
						b.Fatal(res.Error)
					}
				}
				t1 := time.Now()
				runBatch(b, ex, calls)
				t2 := time.Now()
				tExec += t1.Sub(t0)
				tRun += t2.Sub(t1)
			}
			n := float64(b.N * len(calls))
			b.ReportMetric(float64(tRun)/n, "ns/call")
			b.ReportMetric(float64(tExec)/n, "ns/execute")
			b.ReportMetric(float64(tRun)/float64(tExec), "x_execute")
		})
	}
}

// BenchmarkExecutor10k: one batch of 10,000 no-op calls. Reports heap
// bytes allocated per call (B/call, against B/execute for Registry.Execute
// alone), and, from a run where all 10,000 calls are in flight at once, the
// memory each in-flight call holds (B/inflight: heap and goroutine stacks).
func BenchmarkExecutor10k(b *testing.B) {
	const n = 10000
	calls := make([]tool.Call, n)
	for i := range calls {
		calls[i] = tool.Call{ID: fmt.Sprint(i), Name: "noop"}
	}
	b.Run("heap", func(b *testing.B) {
		reg := benchRegistry(b, waitTool{name: "noop"})
		ex := tool.NewExecutor(reg)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		k := 0
		for b.Loop() {
			runBatch(b, ex, calls)
			k++
		}
		runtime.ReadMemStats(&after)
		perCall := float64(after.TotalAlloc-before.TotalAlloc) / float64(k*n)
		b.ReportMetric(perCall, "B/call")
		b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(k*n), "allocs/call")
		// The same calls through Registry.Execute alone, for comparison.
		runtime.ReadMemStats(&before)
		for range n {
			reg.Execute(context.Background(), "noop", nil)
		}
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/execute")
	})
	b.Run("inflight", func(b *testing.B) {
		gate := &gateTool{want: n, release: make(chan struct{}), full: make(chan struct{})}
		reg := benchRegistry(b, gate)
		ex := tool.NewExecutor(reg, tool.WithMaxParallel(-1))
		for b.Loop() {
			gate.reset()
			runtime.GC()
			var before, peak runtime.MemStats
			runtime.ReadMemStats(&before)
			var wg sync.WaitGroup
			wg.Go(func() { runBatchCalls(b, ex, gateCalls(calls)) })
			<-gate.full
			runtime.ReadMemStats(&peak)
			close(gate.release)
			wg.Wait()
			inuse := func(m *runtime.MemStats) float64 { return float64(m.HeapInuse + m.StackInuse) }
			b.ReportMetric((inuse(&peak)-inuse(&before))/n, "B/inflight")
		}
	})
}

func gateCalls(calls []tool.Call) []tool.Call {
	out := make([]tool.Call, len(calls))
	for i, c := range calls {
		out[i] = tool.Call{ID: c.ID, Name: "gate"}
	}
	return out
}

func runBatchCalls(b *testing.B, ex *tool.Executor, calls []tool.Call) {
	outs, err := ex.Run(context.Background(), calls)
	if err != nil {
		b.Error(err)
		return
	}
	for _, o := range outs {
		if o.Err != nil {
			b.Error(o.Err)
			return
		}
	}
}

// gateTool blocks every call until want calls are in flight and the gate
// is released.
type gateTool struct {
	want    int64
	n       atomic.Int64
	full    chan struct{}
	release chan struct{}
}

func (g *gateTool) reset() {
	g.n.Store(0)
	g.full = make(chan struct{})
	g.release = make(chan struct{})
}

func (*gateTool) Name() string                { return "gate" }
func (*gateTool) Description() string         { return "Waits until released." }
func (*gateTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (g *gateTool) Execute(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	full, release := g.full, g.release
	if g.n.Add(1) == g.want {
		close(full)
	}
	select {
	case <-release:
	case <-ctx.Done():
		return tool.Result{}, ctx.Err()
	}
	return tool.Result{Output: "ok"}, nil
}

// BenchmarkExecutorPlanScaling runs each batch shape of TestPlanLinear
// (one call that refers to, or depends on, n others) at n = 1,000 and
// n = 16,000, and reports the CPU time per reference of each (process CPU
// time, so that time spent waiting for a busy machine does not count;
// wall-clock time where the system cannot tell) and their ratio
// (x_per_ref: 1 when the batch's cost is linear, 16 when quadratic):
//
//	go test -run '^$' -bench 'PlanScaling' -benchtime 10x .
//
// The cost includes running the n calls, each a no-op through
// Registry.Execute.
func BenchmarkExecutorPlanScaling(b *testing.B) {
	reg := benchRegistry(b, fixedTool{name: "fixed", output: `{"v":1}`, structured: true})
	ex := tool.NewExecutor(reg)
	now := func() time.Duration {
		if d, ok := cpuTime(); ok {
			return d
		}
		return time.Duration(time.Now().UnixNano())
	}
	for _, tt := range planShapes {
		b.Run(strings.ReplaceAll(tt.name, " ", "_"), func(b *testing.B) {
			const small, large = 1000, 16000
			batches := [2][]tool.Call{tt.batch(small), tt.batch(large)}
			var spent [2]time.Duration
			for b.Loop() {
				for k, calls := range batches {
					start := now()
					outs, _ := ex.Run(context.Background(), calls)
					spent[k] += now() - start
					if len(outs) != len(calls) {
						b.Fatalf("%d outcomes for %d calls", len(outs), len(calls))
					}
				}
			}
			perRef := [2]float64{float64(spent[0]) / float64(b.N*small), float64(spent[1]) / float64(b.N*large)}
			b.ReportMetric(perRef[0], "cpu-ns/ref_1k")
			b.ReportMetric(perRef[1], "cpu-ns/ref_16k")
			b.ReportMetric(perRef[1]/perRef[0], "x_per_ref")
		})
	}
}
