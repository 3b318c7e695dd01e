package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
)

// fixedTool returns the same output, structured or as text, on every call.
type fixedTool struct {
	name       string
	output     string
	structured bool
}

func (t fixedTool) Name() string                { return t.name }
func (t fixedTool) Description() string         { return "Returns a fixed output." }
func (t fixedTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (t fixedTool) Execute(context.Context, json.RawMessage) (tool.Result, error) {
	if t.structured {
		return tool.Result{Output: t.output, Structured: json.RawMessage(t.output)}, nil
	}
	return tool.Result{Output: t.output}, nil
}

// allocated returns the heap bytes allocated while f ran: the least of
// three runs, as the count includes whatever other goroutines of the test
// binary allocated meanwhile.
func allocated(f func()) uint64 {
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// refList returns n references, to the IDs id(0) … id(n-1), as the
// elements of a JSON array.
func refList(n int, ref func(k int) string) string {
	var b strings.Builder
	b.WriteByte('[')
	for k := range n {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(ref(k))
	}
	b.WriteByte(']')
	return b.String()
}

// planShapes are batches whose planning used to be quadratic in n: one
// call that refers to, or depends on, n others.
var planShapes = []struct {
	name  string
	batch func(n int) []tool.Call
}{
	{"references to unknown IDs", func(n int) []tool.Call {
		refs := refList(n, func(k int) string { return fmt.Sprintf(`{"$output":"c%d"}`, k) })
		return []tool.Call{{ID: "sink", Name: "fixed", Args: json.RawMessage(`{"x":` + refs + `}`)}}
	}},
	{"references to calls in the batch", func(n int) []tool.Call {
		calls := make([]tool.Call, n, n+1)
		for k := range calls {
			calls[k] = tool.Call{ID: fmt.Sprintf("c%d", k), Name: "fixed"}
		}
		refs := refList(n, func(k int) string { return fmt.Sprintf(`{"$output":"c%d","pointer":"/v"}`, k) })
		return append(calls, tool.Call{ID: "sink", Name: "fixed", Args: json.RawMessage(`{"x":` + refs + `}`)})
	}},
	{"fan-in through DependsOn", func(n int) []tool.Call {
		calls := make([]tool.Call, n, n+1)
		deps := make([]string, 0, 2*n)
		for k := range calls {
			calls[k] = tool.Call{ID: fmt.Sprintf("c%d", k), Name: "fixed"}
			deps = append(deps, calls[k].ID)
		}
		for k := range calls { // each again, in reverse: repeats count once
			deps = append(deps, calls[n-1-k].ID)
		}
		return append(calls, tool.Call{ID: "sink", Name: "fixed", DependsOn: deps})
	}},
	{"fan-in through DependsOn and references", func(n int) []tool.Call {
		calls := make([]tool.Call, n, n+1)
		deps := make([]string, n)
		for k := range calls {
			calls[k] = tool.Call{ID: fmt.Sprintf("c%d", k), Name: "fixed"}
			deps[k] = calls[k].ID
		}
		refs := refList(n, func(k int) string { return fmt.Sprintf(`{"$output":"c%d"}`, n-1-k) })
		return append(calls, tool.Call{ID: "sink", Name: "fixed", DependsOn: deps, Args: json.RawMessage(`{"x":` + refs + `}`)})
	}},
}

// TestPlanLinear checks that the heap a batch allocates grows linearly
// with the number of references and dependencies of one call: four times
// the references may cost at most six times the bytes (a quadratic plan
// costs sixteen).
func TestPlanLinear(t *testing.T) {
	reg := tool.NewRegistry()
	if err := reg.Register(fixedTool{name: "fixed", output: `{"v":1}`, structured: true}); err != nil {
		t.Fatal(err)
	}
	ex := tool.NewExecutor(reg)
	for _, tt := range planShapes {
		t.Run(tt.name, func(t *testing.T) {
			cost := func(n int) uint64 {
				calls := tt.batch(n)
				return allocated(func() {
					outs, _ := ex.Run(context.Background(), calls)
					if len(outs) != len(calls) {
						t.Fatalf("%d outcomes for %d calls", len(outs), len(calls))
					}
				})
			}
			const n = 500
			small, large := cost(n), cost(4*n)
			t.Logf("%d references: %d bytes; %d: %d bytes (%.1f×)", n, small, 4*n, large, float64(large)/float64(small))
			if large > 6*small {
				t.Errorf("%d references allocated %d bytes, %d allocated %d: %.1f×, want at most 6×",
					n, small, 4*n, large, float64(large)/float64(small))
			}
		})
	}
}

// TestRunFirstUnknownID checks that a refused batch names the first
// unknown ID, in call order and, within a call, DependsOn before
// references, and that planning stops there: the references of later
// calls are not read.
func TestRunFirstUnknownID(t *testing.T) {
	refs := json.RawMessage(`{"x":` + refList(20000, func(k int) string { return fmt.Sprintf(`{"$output":"u%d"}`, k) }) + `}`)
	for _, tt := range []struct {
		name  string
		calls []tool.Call
		want  string
	}{
		{"DependsOn before references", []tool.Call{
			{ID: "a", Name: "fixed"},
			{ID: "b", Name: "fixed", DependsOn: []string{"a", "u-dep"}, Args: refs},
		}, `invalid batch: "b" depends on "u-dep", which is not in the batch`},
		{"references of one call in order", []tool.Call{
			{ID: "a", Name: "fixed"},
			{ID: "b", Name: "fixed", DependsOn: []string{"a"}, Args: refs},
		}, `invalid batch: "b" depends on "u0", which is not in the batch`},
		{"later calls are not read", []tool.Call{
			{ID: "a", Name: "fixed", DependsOn: []string{"u-first"}},
			{ID: "b", Name: "fixed", Args: refs},
			{ID: "c", Name: "fixed", Args: refs},
		}, `invalid batch: "a" depends on "u-first", which is not in the batch`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			got := allocated(func() { _, err = tool.NewExecutor(tool.NewRegistry()).Run(context.Background(), tt.calls) })
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Run error = %v, want %q", err, tt.want)
			}
			// Reading the references of one call allocates about 1.5 MB.
			if tt.name == "later calls are not read" && got > 256<<10 {
				t.Errorf("refusing the batch allocated %d bytes, want at most 256 KiB: later calls were read", got)
			}
		})
	}
}

// TestRefusedBatchMessageBounded checks that a refused batch of many calls
// costs memory in proportion to the batch, however long the ID that made
// it invalid: the message is built once and names the ID shortened.
func TestRefusedBatchMessageBounded(t *testing.T) {
	const n = 2000
	long := strings.Repeat("x", 100<<10)
	calls := make([]tool.Call, n)
	for k := range calls {
		calls[k] = tool.Call{ID: fmt.Sprint(k), Name: "fixed"}
	}
	calls[n-1].DependsOn = []string{long}
	var outs []tool.Outcome
	var err error
	got := allocated(func() { outs, err = tool.NewExecutor(tool.NewRegistry()).Run(context.Background(), calls) })
	if err == nil || len(err.Error()) > 500 || !strings.Contains(err.Error(), "xxxx…") {
		t.Errorf("Run error = %.300v (%d bytes), want a short message naming the ID shortened", err, len(fmt.Sprint(err)))
	}
	if len(outs) != n || len(outs[0].Result.Error) > 600 {
		t.Fatalf("outcome 0 has a %d-byte error, want at most 600", len(outs[0].Result.Error))
	}
	if got > 2<<20 {
		t.Errorf("refusing %d calls allocated %d bytes, want at most 2 MiB", n, got)
	}
}

// TestSubstitutionCapped checks that substituting references stops at the
// registry's argument limit: the call gets an error result naming it and
// the limit, and the work stays in proportion to the limit, not to what
// the references would have grown to.
func TestSubstitutionCapped(t *testing.T) {
	big := strings.Repeat("a", 60<<10)
	obj := `{"pad":"` + big + `","v":1}`
	for _, tt := range []struct {
		name     string
		limit    int // registry argument limit; 0: the default
		src      tool.Tool
		ref      string
		refs     int
		want     string
		maxAlloc uint64
	}{
		{"text output, default limit", 0, fixedTool{name: "src", output: big}, `{"$output":"src"}`, 3000,
			`/x/17: expected arguments of at most 1048576 bytes once the outputs that call "sink" refers to are substituted`, 8 << 20},
		{"structured output, lower limit", 64 << 10, fixedTool{name: "src", output: obj, structured: true}, `{"$output":"src","pointer":"/pad"}`, 1000,
			`/x/1: expected arguments of at most 65536 bytes once the outputs that call "sink" refers to are substituted`, 4 << 20},
		{"pointers read far into a large output", 64 << 10, fixedTool{name: "src", output: obj, structured: true}, `{"$output":"src","pointer":"/v"}`, 1000,
			`/x/34: expected references of call "sink" that read at most 2097152 bytes of other calls' outputs`, 1 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var opts []tool.RegistryOption
			if tt.limit > 0 {
				opts = append(opts, tool.WithArgumentLimits(tt.limit, 0))
			}
			reg := tool.NewRegistry(opts...)
			for _, x := range []tool.Tool{tt.src, fixedTool{name: "fixed", output: "ok"}} {
				if err := reg.Register(x); err != nil {
					t.Fatal(err)
				}
			}
			calls := []tool.Call{
				{ID: "src", Name: "src"},
				{ID: "sink", Name: "fixed", Args: json.RawMessage(`{"x":` + refList(tt.refs, func(int) string { return tt.ref }) + `}`)},
			}
			var outs []tool.Outcome
			got := allocated(func() { outs, _ = tool.NewExecutor(reg).Run(context.Background(), calls) })
			o := outs[1]
			if !o.Result.IsError || o.Result.Kind != tool.KindInvalidArguments || !strings.Contains(o.Result.Error, tt.want) {
				t.Errorf("sink result = %.300v, want an invalid_arguments error containing %q", o.Result, tt.want)
			}
			if !errors.Is(o.Err, tool.ErrInvalidArguments) {
				t.Errorf("sink Err = %v, want one wrapping ErrInvalidArguments", o.Err)
			}
			if got > tt.maxAlloc {
				t.Errorf("the batch allocated %d bytes, want at most %d", got, tt.maxAlloc)
			}
		})
	}
}

// TestSubstitutionNoLimit checks that references still work when the
// registry's argument limit is as large as an int allows.
func TestSubstitutionNoLimit(t *testing.T) {
	reg := tool.NewRegistry(tool.WithArgumentLimits(math.MaxInt, 0))
	if err := reg.Register(fixedTool{name: "fixed", output: `{"v":1}`, structured: true}); err != nil {
		t.Fatal(err)
	}
	outs, err := tool.NewExecutor(reg).Run(t.Context(), []tool.Call{
		{ID: "a", Name: "fixed"},
		{ID: "b", Name: "fixed", Args: json.RawMessage(`{"x":{"$output":"a","pointer":"/v"}}`)},
	})
	if err != nil || outs[1].Err != nil {
		t.Fatalf("Run = %v, outcome %+v; want success", err, outs[1])
	}
}

// TestLongPointersBounded checks that following a long pointer costs no
// memory per step: 60 references, each a pointer of 5,000 steps into a
// deeply nested output.
func TestLongPointersBounded(t *testing.T) {
	const depth = 5000
	deep := strings.Repeat(`{"a":`, depth) + "7" + strings.Repeat("}", depth)
	reg := tool.NewRegistry()
	for _, x := range []tool.Tool{fixedTool{name: "src", output: deep, structured: true}, fixedTool{name: "fixed", output: "ok"}} {
		if err := reg.Register(x); err != nil {
			t.Fatal(err)
		}
	}
	ref := `{"$output":"src","pointer":"` + strings.Repeat("/a", depth) + `"}`
	calls := []tool.Call{
		{ID: "src", Name: "src"},
		{ID: "sink", Name: "fixed", Args: json.RawMessage(`{"x":` + refList(60, func(int) string { return ref }) + `}`)},
	}
	var outs []tool.Outcome
	got := allocated(func() { outs, _ = tool.NewExecutor(reg).Run(context.Background(), calls) })
	if o := outs[1]; o.Err != nil {
		t.Fatalf("sink = %+v, want success", o.Result)
	}
	if got > 8<<20 {
		t.Errorf("the batch allocated %d bytes, want at most 8 MiB", got)
	}
}

// failTool fails every call with a fixed message.
type failTool struct{ msg string }

func (failTool) Name() string                { return "fail" }
func (failTool) Description() string         { return "Always fails." }
func (failTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (t failTool) Execute(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, errors.New(t.msg)
}

// TestSkipChainBounded checks that when the first call of a long chain
// fails, each skipped call's message names its own dependency and the
// call that failed, without the messages of the calls between: the
// outcomes' size grows linearly with the chain, not quadratically.
func TestSkipChainBounded(t *testing.T) {
	reg := tool.NewRegistry()
	for _, x := range []tool.Tool{failTool{msg: "database unreachable " + strings.Repeat("!", 2000)}, fixedTool{name: "fixed", output: "ok"}} {
		if err := reg.Register(x); err != nil {
			t.Fatal(err)
		}
	}
	const n = 2000
	calls := make([]tool.Call, n)
	calls[0] = tool.Call{ID: "c0", Name: "fail"}
	for k := 1; k < n; k++ {
		calls[k] = tool.Call{ID: fmt.Sprintf("c%d", k), Name: "fixed", DependsOn: []string{fmt.Sprintf("c%d", k-1)}}
	}
	outs, err := tool.NewExecutor(reg).Run(t.Context(), calls)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for i, o := range outs {
		total += len(o.Result.Error)
		if len(o.Err.Error()) > len(outs[0].Err.Error())+200 {
			t.Fatalf("outcome %d: Err has %d bytes, more than the failed call's error and a line", i, len(o.Err.Error()))
		}
	}
	if total > n*500 {
		t.Errorf("the results' messages take %d bytes, want at most %d", total, n*500)
	}
	last := outs[n-1]
	if want := `skipped: dependency "c1998" did not run because "c0" failed: database unreachable !!!`; !strings.HasPrefix(last.Result.Error, want) ||
		last.Result.Kind != tool.KindSkipped || !errors.Is(last.Err, tool.ErrSkipped) {
		t.Errorf("last outcome = %.200q (%.200v), want a skipped result starting %q, wrapping ErrSkipped", last.Result.Error, last.Err, want)
	}
}

// TestSubstitutionLargeTextNotEncoded checks that a text output too large
// for the argument limit is refused without being encoded as JSON.
func TestSubstitutionLargeTextNotEncoded(t *testing.T) {
	reg := tool.NewRegistry(tool.WithDefaultMaxOutput(-1))
	for _, x := range []tool.Tool{fixedTool{name: "src", output: strings.Repeat("\x01", 2<<20)}, fixedTool{name: "fixed", output: "ok"}} {
		if err := reg.Register(x); err != nil {
			t.Fatal(err)
		}
	}
	calls := []tool.Call{{ID: "src", Name: "src"}, {ID: "sink", Name: "fixed", Args: json.RawMessage(`{"x":{"$output":"src"}}`)}}
	var outs []tool.Outcome
	got := allocated(func() { outs, _ = tool.NewExecutor(reg).Run(context.Background(), calls) })
	if want := "/x: expected arguments of at most 1048576 bytes"; !strings.Contains(outs[1].Result.Error, want) {
		t.Errorf("sink result = %.300q, want it to contain %q", outs[1].Result.Error, want)
	}
	// Encoding would take 12 MiB: each control byte becomes \u0001.
	if got > 4<<20 {
		t.Errorf("the batch allocated %d bytes, want at most 4 MiB", got)
	}
}
