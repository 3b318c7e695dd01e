package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"golang.org/x/tools/txtar"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/golden"
)

// scriptTool is a hand-written tool whose behaviour the arguments choose:
//
//	ms          wait this long (at least 1ms), honouring ctx (unless ignore_ctx)
//	ignore_ctx  wait without looking at ctx
//	transient   fail this many times (counted per key) with a transient error
//	fail        fail with this message
//	value       return this JSON value as structured output
//	text        return this text (default "ok")
//
// A tool whose behaviour is "echo" returns its arguments as its output,
// after 1ms. Every call takes some fake time so that calls started at the
// same instant overlap and the peak counts in scenarios are exact.
type scriptTool struct {
	name     string
	behavior string

	mu       sync.Mutex
	failures map[string]int
}

func (t *scriptTool) Name() string        { return t.name }
func (t *scriptTool) Description() string { return "A scripted tool for tests." }
func (t *scriptTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object"}`)
}

func (t *scriptTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if t.behavior == "echo" {
		time.Sleep(time.Millisecond)
		return tool.Result{Output: string(args)}, nil
	}
	var a struct {
		MS        int             `json:"ms"`
		IgnoreCtx bool            `json:"ignore_ctx"`
		Transient int             `json:"transient"`
		Key       string          `json:"key"`
		Fail      string          `json:"fail"`
		Value     json.RawMessage `json:"value"`
		Text      string          `json:"text"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return tool.Result{}, err
	}
	{
		d := max(time.Duration(a.MS)*time.Millisecond, time.Millisecond)
		if a.IgnoreCtx {
			time.Sleep(d)
		} else {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return tool.Result{}, context.Cause(ctx)
			}
		}
	}
	if a.Transient > 0 {
		t.mu.Lock()
		if t.failures == nil {
			t.failures = make(map[string]int)
		}
		n := t.failures[a.Key]
		t.failures[a.Key]++
		t.mu.Unlock()
		if n < a.Transient {
			return tool.Result{}, tool.Transient(fmt.Errorf("backend busy (attempt %d)", n+1))
		}
	}
	if a.Fail != "" {
		return tool.Result{}, errors.New(a.Fail)
	}
	if a.Value != nil {
		return tool.Result{Output: string(a.Value), Structured: a.Value}, nil
	}
	if a.Text == "" {
		a.Text = "ok"
	}
	return tool.Result{Output: a.Text}, nil
}

// scriptSpec describes a scenario's tool.
type scriptSpec struct {
	Name        string `json:"name"`
	Behavior    string `json:"behavior"`
	MaxInFlight int    `json:"max_in_flight"`
	Sequential  bool   `json:"sequential"`
	Timeout     string `json:"timeout"`
	ReadOnly    bool   `json:"read_only"`
	Destructive bool   `json:"destructive"`
	Idempotent  bool   `json:"idempotent"`
	Retry       *struct {
		MaxAttempts int    `json:"max_attempts"`
		Backoff     string `json:"backoff"`
	} `json:"retry"`
}

func (s scriptSpec) tool(t *testing.T) tool.Tool {
	opts := []tool.Option{
		tool.WithMaxInFlight(s.MaxInFlight),
		tool.WithAnnotations(tool.Annotations{ReadOnly: s.ReadOnly, Destructive: s.Destructive, Idempotent: s.Idempotent}),
	}
	if s.Sequential {
		opts = append(opts, tool.WithSequential())
	}
	if s.Timeout != "" {
		opts = append(opts, tool.WithTimeout(mustDuration(t, s.Timeout)))
	}
	if s.Retry != nil {
		p := tool.RetryPolicy{MaxAttempts: s.Retry.MaxAttempts}
		if s.Retry.Backoff != "" {
			p.Backoff = mustDuration(t, s.Retry.Backoff)
		}
		opts = append(opts, tool.WithRetry(p))
	}
	return tool.With(&scriptTool{name: s.Name, behavior: s.Behavior}, opts...)
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// scenarioOptions are a scenario's executor and registry settings.
type scenarioOptions struct {
	MaxParallel int    `json:"max_parallel"`
	CancelAfter string `json:"cancel_after"`
	Grace       string `json:"grace"`
	// HideTimes leaves times out of the timeline, for scenarios whose
	// times depend on random jitter.
	HideTimes bool `json:"hide_times"`
}

// callRecorder is an outermost middleware that records when each call ran,
// what it waited for, and how many calls ran at once.
type callRecorder struct {
	t0    time.Time
	known map[string]bool // tools whose calls count in the peaks; calls to unknown tools take no time

	mu      sync.Mutex
	spans   map[string]callSpan
	running int
	peak    int
	perTool map[string]int
	peaks   map[string]int
}

type callSpan struct {
	start, end time.Duration
	after      []string
}

func newCallRecorder() *callRecorder {
	return &callRecorder{t0: time.Now(), known: map[string]bool{}, spans: map[string]callSpan{}, perTool: map[string]int{}, peaks: map[string]int{}}
}

func (r *callRecorder) middleware(next tool.Step) tool.Step {
	return func(ctx context.Context, c tool.Call) (tool.Result, error) {
		r.mu.Lock()
		r.spans[c.ID] = callSpan{start: time.Since(r.t0), after: c.DependsOn}
		counted := r.known[c.Name]
		if counted {
			r.running++
			r.peak = max(r.peak, r.running)
			r.perTool[c.Name]++
			r.peaks[c.Name] = max(r.peaks[c.Name], r.perTool[c.Name])
		}
		r.mu.Unlock()
		res, err := next(ctx, c)
		r.mu.Lock()
		s := r.spans[c.ID]
		s.end = time.Since(r.t0)
		r.spans[c.ID] = s
		if counted {
			r.running--
			r.perTool[c.Name]--
		}
		r.mu.Unlock()
		return res, err
	}
}

// TestExecutorScenarios runs testdata/executor/*.txtar. Each file has a
// header saying what it pins, then sections:
//
//	-- tools --    JSON array of scriptSpec
//	-- options --  optional scenarioOptions
//	-- calls --    JSON array of tool.Call
//	-- want --     the outcomes, a timeline and counters (rewritten by -update)
//
// Every scenario runs in a synctest bubble, so the times in the timeline
// are exact and the test does not depend on the machine's speed.
func TestExecutorScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/executor/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sections := map[string][]byte{}
			for _, f := range ar.Files {
				sections[f.Name] = f.Data
			}
			var got string
			synctest.Test(t, func(t *testing.T) { got = runScenario(t, sections) })
			if golden.Updating() {
				for i := range ar.Files {
					if ar.Files[i].Name == "want" {
						ar.Files = ar.Files[:i]
						break
					}
				}
				ar.Files = append(ar.Files, txtar.File{Name: "want", Data: []byte(got)})
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(string(sections["want"]), got); diff != "" {
				t.Errorf("%s (-want +got):\n%s\n(run with -update to accept)", file, diff)
			}
		})
	}
}

func runScenario(t *testing.T, sections map[string][]byte) string {
	var specs []scriptSpec
	if err := json.Unmarshal(sections["tools"], &specs); err != nil {
		t.Fatalf("tools: %v", err)
	}
	var so scenarioOptions
	if b := bytes.TrimSpace(sections["options"]); len(b) > 0 {
		if err := json.Unmarshal(b, &so); err != nil {
			t.Fatalf("options: %v", err)
		}
	}
	var calls []tool.Call
	if err := json.Unmarshal(sections["calls"], &calls); err != nil {
		t.Fatalf("calls: %v", err)
	}
	var ropts []tool.RegistryOption
	if so.Grace != "" {
		ropts = append(ropts, tool.WithGracePeriod(mustDuration(t, so.Grace)))
	}
	reg := tool.NewRegistry(ropts...)
	for _, s := range specs {
		if err := reg.Register(s.tool(t)); err != nil {
			t.Fatal(err)
		}
	}
	rec := newCallRecorder()
	for _, s := range specs {
		rec.known[s.Name] = true
	}
	ex := tool.NewExecutor(reg, tool.WithMaxParallel(so.MaxParallel), tool.WithMiddleware(rec.middleware))
	ctx := t.Context()
	if so.CancelAfter != "" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, mustDuration(t, so.CancelAfter))
		defer cancel()
	}
	outs, runErr := ex.Run(ctx, calls)
	returned := time.Since(rec.t0)

	var b strings.Builder
	if so.HideTimes {
		fmt.Fprintf(&b, "run: error: %v\n", runErr)
	} else {
		fmt.Fprintf(&b, "run: returned at %s, error: %v\n", fakeMS(returned), runErr)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	names := slices.Sorted(maps.Keys(rec.peaks))
	fmt.Fprintf(&b, "peak in flight: %d", rec.peak)
	for _, n := range names {
		fmt.Fprintf(&b, ", %s %d", n, rec.peaks[n])
	}
	st := reg.Stats()
	fmt.Fprintf(&b, "\nstats: ignored_context=%d still_running=%d\n", st.IgnoredContext, st.StillRunning)
	for i, o := range outs {
		if o.ID != calls[i].ID {
			t.Errorf("outcome %d has ID %q, want %q", i, o.ID, calls[i].ID)
		}
		if s, ok := rec.spans[o.ID]; ok && o.ID != "" {
			if so.HideTimes {
				fmt.Fprintf(&b, "\n%s: ran", o.ID)
			} else {
				fmt.Fprintf(&b, "\n%s: ran %s → %s", o.ID, fakeMS(s.start), fakeMS(s.end))
			}
			if len(s.after) > 0 {
				fmt.Fprintf(&b, " after %s", strings.Join(s.after, ","))
			}
		} else {
			fmt.Fprintf(&b, "\n%s: not run", o.ID)
		}
		var res bytes.Buffer
		enc := json.NewEncoder(&res)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(o.Result); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "\n  result: %s", res.Bytes())
		if o.Err != nil {
			fmt.Fprintf(&b, "  err: %v\n", o.Err)
		}
	}
	drainAbandoned(reg)
	return b.String()
}

// drainAbandoned waits, in a synctest bubble, until the registry has no abandoned
// calls left, so that the bubble ends with no goroutine running.
func drainAbandoned(reg *tool.Registry) {
	for reg.Stats().StillRunning > 0 {
		time.Sleep(time.Second)
	}
	synctest.Wait()
}

func fakeMS(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

func newScriptRegistry(t *testing.T, specs ...scriptSpec) *tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	for _, s := range specs {
		if err := reg.Register(s.tool(t)); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func TestRunEmpty(t *testing.T) {
	ex := tool.NewExecutor(tool.NewRegistry())
	outs, err := ex.Run(t.Context(), nil)
	if err != nil || len(outs) != 0 {
		t.Fatalf("Run(nil) = %v, %v; want no outcomes, no error", outs, err)
	}
}

// TestRunInvalidBatch checks that graph problems are reported before
// anything runs, with an error naming the problem and an outcome per call.
func TestRunInvalidBatch(t *testing.T) {
	for _, tt := range []struct {
		name  string
		calls []tool.Call
		want  string
	}{
		{"duplicate ID", []tool.Call{{ID: "a", Name: "work"}, {ID: "a", Name: "work"}},
			`invalid batch: duplicate call ID "a" (calls #0 and #1)`},
		{"unknown dependency", []tool.Call{{ID: "a", Name: "work", DependsOn: []string{"b"}}},
			`invalid batch: "a" depends on "b", which is not in the batch`},
		{"unknown reference", []tool.Call{{ID: "a", Name: "work", Args: json.RawMessage(`{"x":{"$output":"nope"}}`)}},
			`invalid batch: "a" depends on "nope", which is not in the batch`},
		{"empty ID", []tool.Call{{Name: "work"}, {ID: "b", Name: "work", DependsOn: []string{""}}},
			`invalid batch: "b" depends on a call with an empty ID; a call that others depend on needs a unique ID`},
		{"cycle through a reference", []tool.Call{
			{ID: "a", Name: "work", DependsOn: []string{"b"}},
			{ID: "b", Name: "work", Args: json.RawMessage(`{"x":{"$output":"a"}}`)},
		}, `invalid batch: dependency cycle: "a" → "b" → "a" (each call depends on the next)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ran atomic.Int32
			reg := newScriptRegistry(t, scriptSpec{Name: "work"})
			ex := tool.NewExecutor(reg, tool.WithMiddleware(func(next tool.Step) tool.Step {
				return func(ctx context.Context, c tool.Call) (tool.Result, error) {
					ran.Add(1)
					return next(ctx, c)
				}
			}))
			outs, err := ex.Run(t.Context(), tt.calls)
			if err == nil || err.Error() != tt.want || !errors.Is(err, tool.ErrInvalidBatch) {
				t.Errorf("Run error = %v, want %q wrapping ErrInvalidBatch", err, tt.want)
			}
			if ran.Load() != 0 {
				t.Errorf("%d calls ran; want none", ran.Load())
			}
			if len(outs) != len(tt.calls) {
				t.Fatalf("got %d outcomes, want %d", len(outs), len(tt.calls))
			}
			for i, o := range outs {
				if !o.Result.IsError || o.Result.Kind != tool.KindInvalidArguments || !errors.Is(o.Err, tool.ErrInvalidBatch) {
					t.Errorf("outcome %d = %+v, want an invalid_arguments result wrapping ErrInvalidBatch", i, o)
				}
			}
		})
	}
}

// TestHooks checks that Before can refuse a call, that After sees every
// call that was started, and the order of middleware, hooks and retries.
func TestHooks(t *testing.T) {
	reg := newScriptRegistry(t, scriptSpec{Name: "work", Idempotent: true,
		Retry: &struct {
			MaxAttempts int    `json:"max_attempts"`
			Backoff     string `json:"backoff"`
		}{MaxAttempts: 3, Backoff: "1ms"}})
	var mu sync.Mutex
	var log []string
	note := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	mw := func(name string) tool.Middleware {
		return func(next tool.Step) tool.Step {
			return func(ctx context.Context, c tool.Call) (tool.Result, error) {
				note(name + " " + c.ID)
				return next(ctx, c)
			}
		}
	}
	errNo := errors.New("not on Sundays")
	ex := tool.NewExecutor(reg,
		tool.WithMiddleware(mw("outer"), mw("inner")),
		tool.WithHooks(tool.Hooks{
			Before: func(ctx context.Context, c tool.Call) error {
				note("before " + c.ID)
				if c.ID == "denied" {
					return errNo
				}
				return nil
			},
			After: func(ctx context.Context, c tool.Call, o tool.Outcome) {
				note(fmt.Sprintf("after %s kind=%q attempts=%v", c.ID, o.Result.Kind, o.Result.Metadata["attempts"]))
			},
		}),
		tool.WithMaxParallel(1),
	)
	outs, err := ex.Run(t.Context(), []tool.Call{
		{ID: "denied", Name: "work"},
		{ID: "flaky", Name: "work", Args: json.RawMessage(`{"transient":1}`)},
		{ID: "skipped", Name: "work", DependsOn: []string{"denied"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"outer denied", "inner denied", "before denied", `after denied kind="denied" attempts=<nil>`,
		"outer flaky", "inner flaky", "before flaky", `after flaky kind="" attempts=2`,
	}
	if diff := cmp.Diff(want, log); diff != "" {
		t.Errorf("call log (-want +got):\n%s", diff)
	}
	if o := outs[0]; !errors.Is(o.Err, tool.ErrDenied) || !errors.Is(o.Err, errNo) || o.Result.Kind != tool.KindDenied {
		t.Errorf("denied outcome = %+v; want kind denied, Err wrapping ErrDenied and the hook's error", o)
	}
	if o := outs[2]; !errors.Is(o.Err, tool.ErrSkipped) || o.Result.Kind != tool.KindSkipped {
		t.Errorf("skipped outcome = %+v; want kind skipped, Err wrapping ErrSkipped", o)
	}
}

// TestBatchMiddleware checks that batch middleware wraps Run and that its
// context reaches every call.
func TestBatchMiddleware(t *testing.T) {
	type key struct{}
	reg := newScriptRegistry(t, scriptSpec{Name: "work"})
	var seen atomic.Int32
	ex := tool.NewExecutor(reg,
		tool.WithBatchMiddleware(func(next tool.BatchStep) tool.BatchStep {
			return func(ctx context.Context, calls []tool.Call) ([]tool.Outcome, error) {
				return next(context.WithValue(ctx, key{}, "batch"), calls)
			}
		}),
		tool.WithMiddleware(func(next tool.Step) tool.Step {
			return func(ctx context.Context, c tool.Call) (tool.Result, error) {
				if ctx.Value(key{}) == "batch" {
					seen.Add(1)
				}
				return next(ctx, c)
			}
		}))
	if _, err := ex.Run(t.Context(), []tool.Call{{ID: "a", Name: "work"}, {ID: "b", Name: "work"}}); err != nil {
		t.Fatal(err)
	}
	if seen.Load() != 2 {
		t.Errorf("%d calls saw the batch context; want 2", seen.Load())
	}
}

// TestMiddlewarePanic checks that a panicking middleware gives a panic
// outcome instead of crashing or hanging Run.
func TestMiddlewarePanic(t *testing.T) {
	reg := newScriptRegistry(t, scriptSpec{Name: "work"})
	ex := tool.NewExecutor(reg, tool.WithMiddleware(func(next tool.Step) tool.Step {
		return func(ctx context.Context, c tool.Call) (tool.Result, error) { panic("boom") }
	}))
	outs, err := ex.Run(t.Context(), []tool.Call{{ID: "a", Name: "work"}})
	var pe *tool.PanicError
	if err != nil || outs[0].Result.Kind != tool.KindPanic || !errors.As(outs[0].Err, &pe) {
		t.Fatalf("Run = %+v, %v; want a panic outcome", outs, err)
	}
}

// TestStepNormalized checks that a middleware returning a bare error, or
// an error Result without an error, still gives a well-formed outcome.
func TestStepNormalized(t *testing.T) {
	reg := newScriptRegistry(t, scriptSpec{Name: "work"})
	errBare := errors.New("bare")
	ex := tool.NewExecutor(reg, tool.WithMiddleware(func(next tool.Step) tool.Step {
		return func(ctx context.Context, c tool.Call) (tool.Result, error) {
			if c.ID == "a" {
				return tool.Result{}, errBare
			}
			return tool.Result{IsError: true}, nil
		}
	}))
	outs, _ := ex.Run(t.Context(), []tool.Call{{ID: "a", Name: "work"}, {ID: "b", Name: "work"}})
	if o := outs[0]; o.Result.Error != "bare" || o.Result.Kind != tool.KindToolError || !errors.Is(o.Err, errBare) {
		t.Errorf("outcome a = %+v", o)
	}
	if o := outs[1]; o.Result.Error == "" || o.Result.Kind != tool.KindToolError || o.Err == nil {
		t.Errorf("outcome b = %+v", o)
	}
}

// TestRetryBackoff checks the waits between attempts: jittered between
// half and all of a doubling backoff, capped by MaxBackoff.
func TestRetryBackoff(t *testing.T) {
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			reg := tool.NewRegistry()
			st := &scriptTool{name: "fetch"}
			err := reg.Register(tool.With(st, tool.WithAnnotations(tool.Annotations{Idempotent: true}),
				tool.WithRetry(tool.RetryPolicy{MaxAttempts: 4, Backoff: 100 * time.Millisecond, MaxBackoff: 150 * time.Millisecond})))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			outs, _ := tool.NewExecutor(reg).Run(t.Context(), []tool.Call{{ID: "a", Name: "fetch", Args: json.RawMessage(`{"transient":3}`)}})
			took := time.Since(start)
			// Four 1ms attempts; waits in [50,100], [75,150], [75,150] ms.
			if lo, hi := 204*time.Millisecond, 404*time.Millisecond; took < lo || took > hi {
				t.Errorf("retries took %v of fake time, want %v to %v", took, lo, hi)
			}
			if o := outs[0]; o.Err != nil || o.Result.Metadata["attempts"] != 4 {
				t.Errorf("outcome = %+v, want success after 4 attempts", o)
			}
		})
	}
}

func TestTransient(t *testing.T) {
	base := errors.New("rate limited")
	err := tool.Transient(fmt.Errorf("search: %w", base))
	if !errors.Is(err, tool.ErrTransient) || !errors.Is(err, base) || err.Error() != "search: rate limited" {
		t.Errorf("Transient(...) = %v; want it to match ErrTransient and its cause, with the same message", err)
	}
	if tool.Transient(nil) != nil {
		t.Error("Transient(nil) != nil")
	}
}

// TestMaxParallelNoWaitingGoroutines checks that calls waiting for a slot
// or for a dependency hold no goroutine: with a limit of 2, a batch of 1000
// calls adds only a few goroutines while it runs.
func TestMaxParallelNoWaitingGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := newScriptRegistry(t, scriptSpec{Name: "work"})
		calls := make([]tool.Call, 1000)
		for i := range calls {
			calls[i] = tool.Call{ID: fmt.Sprint(i), Name: "work", Args: json.RawMessage(`{"ms":10}`)}
			if i%2 == 1 {
				calls[i].DependsOn = []string{fmt.Sprint(i - 1)}
			}
		}
		var peak, running, goroutines atomic.Int64
		base := int64(runtime.NumGoroutine())
		ex := tool.NewExecutor(reg, tool.WithMaxParallel(2), tool.WithMiddleware(func(next tool.Step) tool.Step {
			return func(ctx context.Context, c tool.Call) (tool.Result, error) {
				if g := int64(runtime.NumGoroutine()) - base; g > goroutines.Load() {
					goroutines.Store(g) // only an estimate under races; the bound below is loose
				}
				n := running.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				defer running.Add(-1)
				return next(ctx, c)
			}
		}))
		start := time.Now()
		if _, err := ex.Run(t.Context(), calls); err != nil {
			t.Fatal(err)
		}
		if peak.Load() != 2 {
			t.Errorf("peak concurrency %d, want 2", peak.Load())
		}
		// Two running calls hold a worker each and the registry's goroutine
		// each; the 998 waiting calls hold none.
		if g := goroutines.Load(); g > 20 {
			t.Errorf("up to %d more goroutines while the batch ran, want a handful", g)
		}
		// 1000 calls of 10ms, two at a time.
		if got, want := time.Since(start), 5000*time.Millisecond; got != want {
			t.Errorf("batch took %v of fake time, want %v", got, want)
		}
	})
}

// TestRunNoLeak runs a batch of 10,000 calls on the real clock and checks
// with goleak that no goroutine outlives Run.
func TestRunNoLeak(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	reg := newScriptRegistry(t, scriptSpec{Name: "work"}, scriptSpec{Name: "echo", Behavior: "echo"})
	calls := make([]tool.Call, 10000)
	for i := range calls {
		calls[i] = tool.Call{ID: fmt.Sprint(i), Name: "work"}
		if i%10 == 9 {
			calls[i] = tool.Call{ID: fmt.Sprint(i), Name: "echo",
				Args: json.RawMessage(fmt.Sprintf(`{"prev":{"$output":"%d"}}`, i-1))}
		}
	}
	outs, err := tool.NewExecutor(reg).Run(t.Context(), calls)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outs {
		if o.Err != nil {
			t.Fatalf("outcome %d: %v", i, o.Err)
		}
	}
	if got := outs[9].Result.Output; got != `{"prev":"ok"}` {
		t.Errorf("outcome 9 output = %s, want the substituted output", got)
	}
}

// TestCancelReturnsPromptly cancels a batch whose tool ignores its context
// and checks that Run returns after the grace period, not after the tool.
func TestCancelReturnsPromptly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := tool.NewRegistry(tool.WithGracePeriod(time.Second))
		if err := reg.Register(scriptSpec{Name: "stubborn"}.tool(t)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		outs, err := tool.NewExecutor(reg).Run(ctx, []tool.Call{
			{ID: "a", Name: "stubborn", Args: json.RawMessage(`{"ms":60000,"ignore_ctx":true}`)},
			{ID: "b", Name: "stubborn", DependsOn: []string{"a"}},
		})
		if got := time.Since(start); got != 1100*time.Millisecond {
			t.Errorf("Run returned after %v, want 1.1s (cancel + grace)", got)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run error = %v, want context.Canceled", err)
		}
		if !errors.Is(outs[0].Err, tool.ErrIgnoredContext) || outs[1].Result.Kind != tool.KindCanceled {
			t.Errorf("outcomes = %+v", outs)
		}
		if st := reg.Stats(); st.IgnoredContext != 1 || st.StillRunning != 1 {
			t.Errorf("Stats = %+v, want one abandoned call", st)
		}
		drainAbandoned(reg)
	})
}

// FuzzRunReferences feeds arbitrary arguments, which may hold references
// to other calls' outputs, through Run. Run must not panic, must return one
// outcome per call, and a tool must only ever receive arguments that are
// one JSON object.
func FuzzRunReferences(f *testing.F) {
	for _, seed := range []string{
		`{"x":{"$output":"data"}}`,
		`{"x":{"$output":"data","pointer":"/items/0/id"}}`,
		`{"x":{"$output":"text","pointer":""}}`,
		`{"x":[{"$output":"data","pointer":"/a~1b/~0k"},{"$output":"text"}]}`,
		`{"x":{"$output":"data","pointer":"/items/-"}}`,
		`{"x":{"$output":"data","pointer":"items"}}`,
		`{"x":{"$output":5}}`,
		`{"x":{"$output":"data","extra":1}}`,
		`{"$output":"data"}`,
		`{"x":{"$output":"nope"}}`,
		`{"x":{"$output":"self"}}`,
		`{"x":{"$output":"data"}`,
		`[{"$output":"data"}]`,
		`{"x":{"\u0024output":"data"}}`,
		`{"a":{"b":{"c":{"$output":"text"}}},"d":"$output"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, args string) {
		reg := tool.NewRegistry()
		var got atomic.Value
		echo := &scriptTool{name: "echo", behavior: "echo"}
		if err := reg.Register(echo); err != nil {
			t.Fatal(err)
		}
		check := tool.Middleware(func(next tool.Step) tool.Step {
			return func(ctx context.Context, c tool.Call) (tool.Result, error) {
				if c.ID == "self" {
					got.Store(string(c.Args))
				}
				return next(ctx, c)
			}
		})
		calls := []tool.Call{
			{ID: "text", Name: "echo", Args: json.RawMessage(`{"t":"Oslo"}`)},
			{ID: "data", Name: "echo", Args: json.RawMessage(`{"items":[{"id":"x-1"}],"a/b":{"~k":true}}`)},
			{ID: "self", Name: "echo", Args: json.RawMessage(args)},
		}
		outs, err := tool.NewExecutor(reg, tool.WithMiddleware(check)).Run(context.Background(), calls)
		if len(outs) != len(calls) {
			t.Fatalf("%d outcomes for %d calls", len(outs), len(calls))
		}
		if err != nil {
			if !errors.Is(err, tool.ErrInvalidBatch) {
				t.Fatalf("Run error %v does not wrap ErrInvalidBatch", err)
			}
			return
		}
		if o := outs[2]; o.Err == nil {
			sent, _ := got.Load().(string)
			var v map[string]any
			if json.Unmarshal([]byte(sent), &v) != nil && strings.TrimSpace(sent) != "" {
				t.Fatalf("the tool received %q, which is not a JSON object", sent)
			}
		}
		for i, o := range outs {
			if o.Result.IsError && (o.Result.Kind == "" || o.Result.Error == "") {
				t.Fatalf("outcome %d has an incomplete error result: %+v", i, o.Result)
			}
		}
	})
}
