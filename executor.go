package tool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/miniopenclaw/tool/internal/dag"
)

// DefaultMaxParallel is how many calls an [Executor] made without
// [WithMaxParallel] runs at once.
const DefaultMaxParallel = 16

// KindSkipped: the call did not run because a call it depends on failed.
const KindSkipped ErrorKind = "skipped"

var (
	// ErrSkipped is the cause of a call that did not run because a call
	// it depends on failed.
	ErrSkipped = errors.New("skipped")

	// ErrInvalidBatch is wrapped by the error [Executor.Run] returns when
	// the batch's dependency graph is unusable: a duplicate ID, a
	// dependency on an empty or unknown ID, or a cycle.
	ErrInvalidBatch = errors.New("invalid batch")
)

// An Executor runs batches of calls against a [Registry]: concurrently,
// with bounded parallelism, in the order their dependencies allow, with
// per-tool limits and retries, through a chain of [Middleware]. It is safe
// for concurrent use; each [Executor.Run] is independent of the others,
// except that per-tool limits count calls of one Run only.
type Executor struct {
	reg         *Registry
	maxParallel int // 0: no limit
	step        Step
	batch       BatchStep
}

type executorConfig struct {
	maxParallel int
	middleware  []Middleware
	batch       []BatchMiddleware
	hooks       []Hooks
}

// An ExecutorOption configures an [Executor] made by [NewExecutor].
type ExecutorOption func(*executorConfig)

// WithMaxParallel sets how many calls of a batch run at once. Zero keeps
// [DefaultMaxParallel]; a negative n means no limit.
func WithMaxParallel(n int) ExecutorOption {
	return func(c *executorConfig) { c.maxParallel = n }
}

// WithMiddleware adds middleware around every call. The first middleware
// given, across all WithMiddleware options, is the outermost; see
// [Middleware] for where the executor's own steps sit.
func WithMiddleware(mw ...Middleware) ExecutorOption {
	return func(c *executorConfig) { c.middleware = append(c.middleware, mw...) }
}

// WithBatchMiddleware adds middleware around every [Executor.Run]. The
// first one given is the outermost.
func WithBatchMiddleware(mw ...BatchMiddleware) ExecutorOption {
	return func(c *executorConfig) { c.batch = append(c.batch, mw...) }
}

// WithHooks adds hooks called around every call. Hooks given in several
// options run in the order given, each inside the previous one; they sit
// inside the middleware and outside retries.
func WithHooks(h Hooks) ExecutorOption {
	return func(c *executorConfig) { c.hooks = append(c.hooks, h) }
}

// NewExecutor returns an Executor that runs calls against r, configured by
// opts. NewExecutor(r) alone gives the defaults: [DefaultMaxParallel]
// calls at once, no middleware, no hooks. r must not be nil.
func NewExecutor(r *Registry, opts ...ExecutorOption) *Executor {
	var cfg executorConfig
	for _, opt := range opts {
		opt(&cfg)
	}
	e := &Executor{reg: r}
	switch {
	case cfg.maxParallel == 0:
		e.maxParallel = DefaultMaxParallel
	case cfg.maxParallel > 0:
		e.maxParallel = cfg.maxParallel
	}
	step := Step(e.callRetrying)
	for i := len(cfg.hooks) - 1; i >= 0; i-- {
		step = hooksMiddleware(cfg.hooks[i])(step)
	}
	for i := len(cfg.middleware) - 1; i >= 0; i-- {
		step = cfg.middleware[i](step)
	}
	e.step = step
	batch := BatchStep(e.run)
	for i := len(cfg.batch) - 1; i >= 0; i-- {
		batch = cfg.batch[i](batch)
	}
	e.batch = batch
	return e
}

// call0 adapts Registry.call to a Step.
func (r *Registry) call0(ctx context.Context, c Call) (Result, error) {
	return r.call(ctx, c.Name, c.Args)
}

// Run runs calls and returns their outcomes in input order: outcomes[i] is
// what became of calls[i]. A failed call's Result always has IsError set, a
// Kind and a message for the model, and its Err is not nil. Every call goes
// through [Registry.Execute]'s safe path (parsing, validation, defaults,
// time limit, panic guard, result budget); a failed call is an Outcome,
// never a reason to stop its siblings.
//
// Scheduling:
//   - At most the executor's parallelism limit of calls run at once (see
//     [WithMaxParallel]), and each tool's [Options.MaxInFlight] and
//     [Options.Sequential] are honoured. Among calls ready at the same
//     time, earlier calls start first.
//   - A call starts only after every call in its DependsOn, and every call
//     whose output its arguments refer to, has finished. No goroutine
//     exists for a call that is waiting.
//   - A call whose dependency failed does not run; its Result is a
//     [KindSkipped] error ("skipped: dependency "x" failed: …", or, when x
//     was itself skipped, "skipped: dependency "x" did not run because "a"
//     failed: …", naming the call whose failure started it, with the first
//     300 bytes of its message) and its Err wraps [ErrSkipped]. When
//     several dependencies failed, the first in DependsOn order is named.
//
// Output passing: wherever a call's Args hold an object with the key
// "$output", such as
//
//	{"$output": "call_1"}
//	{"$output": "call_1", "pointer": "/items/0/id"}
//
// that object is replaced, before the arguments are validated, by the
// output of the call with that ID: its structured content
// (Result.Structured) as JSON when it has some, else its text output as a
// JSON string. A pointer (RFC 6901) selects a part of the output; it needs
// structured content, or text output that is JSON ("pointer": "" takes a
// whole text output such as 42 or [1,2] as JSON). A reference adds the
// referred call to the call's dependencies (it need not be listed in
// DependsOn). "$output" is reserved: an object with that key and anything
// but a non-empty string ID and an optional string "pointer" gives the
// call a [KindInvalidArguments] result, as does a pointer that selects
// nothing. Substitution is bounded by the registry's argument limit (see
// [WithArgumentLimits]): it stops, with a [KindInvalidArguments] result
// naming the call and the limit, as soon as the arguments would grow past
// the limit, or once the call's references have read more than 32 times
// the limit of other calls' outputs (a reference reads an output from its
// start to the end of the value its pointer selects). Arguments already
// over the limit are not searched for references; the call is refused as
// too large.
//
// Errors: Run checks the dependency graph before anything runs, in time
// linear in the size of the batch. A duplicate ID, a dependency on an
// empty or unknown ID, or a cycle makes Run return an error wrapping
// [ErrInvalidBatch] that names the problem (the first one found, in call
// order; for a cycle, its IDs; IDs longer than 64 bytes are shortened); no
// call runs, and every outcome carries that error as a
// [KindInvalidArguments] result, so that each call can still be answered.
//
// Cancellation: when ctx ends, running calls see their context end, calls
// not yet started get a [KindCanceled] result without running, and Run
// returns the outcomes with context.Cause(ctx) as soon as the running
// calls have returned. A tool that ignores its context is abandoned after
// the registry's grace period (see [WithGracePeriod]) and counted in
// [Registry.Stats], so Run returns within that period even then. Middleware
// and hooks must honour ctx for this to hold.
func (e *Executor) Run(ctx context.Context, calls []Call) ([]Outcome, error) {
	return e.batch(ctx, calls)
}

// limits are a call's per-tool scheduling constraints.
type limits struct {
	max        int // 0: none of the tool's own
	sequential bool
}

// plan is what Run derives from a batch before anything runs.
type plan struct {
	calls  []Call
	refs   [][]ref   // references per call; nil for most calls
	refErr []error   // a malformed reference, per call; nil for most calls
	graph  dag.Graph // dependencies and dependents per call; no edges without dependencies
	lims   []limits  // per call
	// maxDepth is the registry's argument depth limit, to which
	// arguments are read for references.
	maxDepth int
}

func (e *Executor) run(ctx context.Context, calls []Call) ([]Outcome, error) {
	n := len(calls)
	out := make([]Outcome, n)
	for i := range calls {
		out[i].ID = calls[i].ID
	}
	if n == 0 {
		return out, nil
	}
	if n == 1 && len(calls[0].DependsOn) == 0 && !mayHoldRef(calls[0].Args) && ctx.Err() == nil {
		// A lone call needs no graph and no scheduler: run it here.
		e.exec(ctx, &plan{calls: calls}, 0, out)
		return out, nil
	}
	// The batch's state, its plan and, for a batch of up to smallBatch
	// calls, the scheduler's lists, in one allocation.
	s := new(scheduler)
	p := &s.plan
	err := e.planInto(p, calls, s.small.lims[:], s.small.ids[:])
	if err != nil {
		err = fmt.Errorf("%w: %v", ErrInvalidBatch, err)
		res := errorResult(KindInvalidArguments, "not run: the batch of tool calls was refused: "+err.Error())
		for i := range out {
			out[i].Result, out[i].Err = res, err
		}
		return out, err
	}
	s.e, s.p, s.out = e, p, out
	return out, s.run(ctx)
}

// planInto fills p for calls: it finds references, checks the graph and
// reads per-tool limits. When the batch fits, the limits go in buf and
// the IDs the graph is built from in idBuf. It runs in time linear in the
// size of the batch, and returns at the first unknown ID.
func (e *Executor) planInto(p *plan, calls []Call, buf []limits, idBuf []string) error {
	n := len(calls)
	p.calls = calls
	if n <= len(buf) {
		p.lims = buf[:n]
	} else {
		p.lims = make([]limits, n)
	}
	maxArgs := e.reg.cfg.limits.maxBytes
	p.maxDepth = e.reg.cfg.limits.maxDepth
	// mayRefer reports whether c's arguments may hold references. Arguments
	// over the limit are refused when the call runs; they are not searched.
	mayRefer := func(c *Call) bool { return len(c.Args) <= maxArgs && mayHoldRef(c.Args) }
	needGraph := n > 32
	for i := 0; i < n && !needGraph; i++ {
		needGraph = len(calls[i].DependsOn) > 0 || mayRefer(&calls[i])
	}
	if !needGraph {
		// Only duplicate IDs can be wrong; small batches need no map.
		for i := 1; i < n; i++ {
			for j := range i {
				if id := calls[i].ID; dag.Same(id, calls[j].ID) {
					return fmt.Errorf("duplicate call ID %s (calls #%d and #%d)", dag.Quote(id), j, i)
				}
			}
		}
	} else {
		var ids []string
		if n <= len(idBuf) {
			ids = idBuf[:n]
		} else {
			ids = make([]string, n)
		}
		edges := 0
		for i := range calls {
			ids[i] = calls[i].ID
			edges += len(calls[i].DependsOn)
		}
		b, err := dag.NewBuilder(ids, edges)
		if err != nil {
			return err
		}
		// Each call's dependencies are checked before the next call is
		// read, so that an unknown ID ends planning at once.
		hasDeps := false
		for i := range calls {
			c := &calls[i]
			for _, id := range c.DependsOn {
				if _, err := b.Add(i, id); err != nil {
					return err
				}
				hasDeps = true
			}
			if !mayRefer(c) {
				continue
			}
			refs, err := findRefs(c.Args, p.maxDepth)
			if err != nil {
				if p.refErr == nil {
					p.refErr = make([]error, n)
				}
				p.refErr[i] = &ArgumentError{Tool: c.Name, Args: shortenArgs(c.Args), Violations: []Violation{err.(refError).v}}
				continue
			}
			if len(refs) == 0 {
				continue
			}
			for k := range refs {
				if refs[k].call, err = b.Add(i, refs[k].id); err != nil {
					return err
				}
			}
			if p.refs == nil {
				p.refs = make([][]ref, n)
			}
			p.refs[i] = refs
			hasDeps = true
		}
		g, err := b.Graph()
		if err != nil {
			return err
		}
		if hasDeps {
			p.graph = g
		}
	}
	r := e.reg
	r.mu.RLock()
	for i := range calls {
		if i > 0 && calls[i].Name == calls[i-1].Name {
			p.lims[i] = p.lims[i-1] // a run of calls to one tool: one lookup
			continue
		}
		if en := r.tools[calls[i].Name]; en != nil {
			p.lims[i] = limitsOf(en.opts)
		}
	}
	r.mu.RUnlock()
	return nil
}

func limitsOf(o Options) limits {
	l := limits{max: o.MaxInFlight, sequential: o.Sequential}
	if l.max == 0 && o.Annotations.Destructive && !o.Annotations.ReadOnly {
		l.max = 1
	}
	l.max = max(l.max, 0)
	return l
}

// scheduler runs one batch. There is no dispatcher goroutine: the
// goroutine that finishes a call updates the shared state under mu, moves
// the calls that may start now to the assigned queue (counting them as
// running) and claims the next assigned call itself. A worker that claims
// a call while others are still unclaimed starts one more worker, unless
// one is already starting; that one does the same. So the workers for a
// wave of calls start one after another within microseconds, while short
// calls are mostly claimed by the workers already running, and no
// goroutine exists for a call that is waiting. Run's own goroutine works
// the same way until it finds nothing to claim.
type scheduler struct {
	e    *Executor
	p    *plan
	out  []Outcome // each element is written by the goroutine running the call, or under mu
	plan plan      // what p points to

	// small holds the per-call lists of a batch of at most smallBatch
	// calls, so that such a batch's state is one allocation.
	small struct {
		lims     [smallBatch]limits
		ids      [smallBatch]string
		started  [smallBatch]bool
		ready    [smallBatch]int
		pending  [smallBatch]int32
		assigned [smallBatch]int
	}

	mu       sync.Mutex
	pending  []int32             // unfinished dependencies per call
	ready    intHeap             // calls whose dependencies are done, by index
	waiting  map[string]*intHeap // ready calls held back by their tool's limit
	inFlight map[string]int      // running calls per limited tool
	started  []bool
	finished int
	running  int
	seq      bool  // a sequential call is running
	assigned []int // calls counted as running, waiting for a worker from head on
	head     int
	starting bool    // a helper worker has been started and has not claimed yet
	stack    []int   // scratch space for finish
	failed   []int32 // for a skipped call, the failed call that caused it; made on the first skip
	canceled bool
	isIdle   bool          // no call runs and none will start
	idle     chan struct{} // made when Run's goroutine waits for isIdle; closed when it becomes true
}

// smallBatch is the largest batch whose per-call lists the scheduler
// holds in itself.
const smallBatch = DefaultMaxParallel

func (s *scheduler) run(ctx context.Context) error {
	p := s.p
	n := len(p.calls)
	if n <= smallBatch {
		s.started = s.small.started[:n]
		s.ready = s.small.ready[:0]
		s.pending = s.small.pending[:n]
		s.assigned = s.small.assigned[:0]
	} else {
		s.started = make([]bool, n)
		s.ready = make(intHeap, 0, n)
	}
	if p.graph.Edges() == 0 {
		s.ready = s.ready[:n]
		for i := range n {
			s.ready[i] = i // sorted, hence a heap
		}
	} else {
		if n > smallBatch {
			s.pending = make([]int32, n)
		}
		for i := range n {
			s.pending[i] = int32(len(p.graph.Deps(i)))
			if s.pending[i] == 0 {
				s.ready = append(s.ready, i)
			}
		}
	}
	s.mu.Lock()
	if ctx.Err() != nil {
		s.cancelLocked(ctx)
	} else {
		s.assign()
	}
	s.mu.Unlock()
	s.work(ctx)
	s.mu.Lock()
	idle := s.isIdle
	if !idle {
		s.idle = make(chan struct{})
	}
	s.mu.Unlock()
	if !idle {
		select {
		case <-s.idle:
		case <-ctx.Done():
			s.mu.Lock()
			if !s.isIdle {
				s.cancelLocked(ctx)
			}
			s.mu.Unlock()
			<-s.idle
		}
	}
	if s.canceled {
		return context.Cause(ctx)
	}
	return nil
}

// work runs assigned calls until none is left for it (see scheduler).
func (s *scheduler) work(ctx context.Context) {
	s.mu.Lock()
	i, helper := s.claimLocked()
	s.mu.Unlock()
	for i >= 0 {
		if helper {
			go s.helper(ctx)
		}
		s.e.exec(ctx, s.p, i, s.out)

		s.mu.Lock()
		if !s.canceled && ctx.Err() != nil {
			s.cancelLocked(ctx) // before complete, so that dependents read as canceled, not skipped
		}
		s.complete(i)
		if !s.canceled {
			s.assign()
		}
		if s.running == 0 && (s.canceled || s.finished == len(s.p.calls)) {
			s.setIdleLocked()
		}
		i, helper = s.claimLocked()
		s.mu.Unlock()
	}
}

// claimLocked takes the next assigned call, or returns -1 when there is
// none. helper reports that the caller must start one more worker for the
// calls still unclaimed.
func (s *scheduler) claimLocked() (i int, helper bool) {
	if s.head == len(s.assigned) {
		return -1, false
	}
	i = s.assigned[s.head]
	s.head++
	if s.head < len(s.assigned) && !s.starting {
		s.starting = true
		helper = true
	}
	return i, helper
}

// helper is a worker started by another.
func (s *scheduler) helper(ctx context.Context) {
	s.mu.Lock()
	s.starting = false
	s.mu.Unlock()
	s.work(ctx)
}

func (s *scheduler) setIdleLocked() {
	if !s.isIdle {
		s.isIdle = true
		if s.idle != nil {
			close(s.idle)
		}
	}
}

// assign moves the ready calls that may start now, in index order, to the
// assigned queue and counts them as running.
func (s *scheduler) assign() {
	if s.head == len(s.assigned) {
		s.assigned, s.head = s.assigned[:0], 0
	}
	for !s.seq && len(s.ready) > 0 && (s.e.maxParallel <= 0 || s.running < s.e.maxParallel) {
		i := s.ready[0]
		l := s.p.lims[i]
		if l.sequential {
			if s.running > 0 {
				break // a barrier: later calls do not overtake it
			}
			s.ready.pop()
			s.seq = true
			s.start(i)
			return
		}
		s.ready.pop()
		if l.max > 0 {
			name := s.p.calls[i].Name
			if s.inFlight == nil {
				s.inFlight = make(map[string]int)
				s.waiting = make(map[string]*intHeap)
			}
			if s.inFlight[name] >= l.max {
				w := s.waiting[name]
				if w == nil {
					w = new(intHeap)
					s.waiting[name] = w
				}
				w.push(i)
				continue
			}
			s.inFlight[name]++
		}
		s.start(i)
	}
}

func (s *scheduler) start(i int) {
	s.started[i] = true
	s.running++
	s.assigned = append(s.assigned, i)
}

// complete records that call i returned and readies what it unblocks.
func (s *scheduler) complete(i int) {
	s.running--
	l := s.p.lims[i]
	if l.sequential {
		s.seq = false
	} else if l.max > 0 {
		name := s.p.calls[i].Name
		s.inFlight[name]--
		if w := s.waiting[name]; w != nil && len(*w) > 0 {
			s.ready.push(w.pop())
		}
	}
	if !s.canceled {
		s.finish(i)
	}
}

// finish counts call i as over and readies or skips its dependents.
func (s *scheduler) finish(i int) {
	s.finished++
	if s.p.graph.Edges() == 0 {
		return
	}
	work := append(s.stack[:0], i)
	for len(work) > 0 {
		j := work[len(work)-1]
		work = work[:len(work)-1]
		for _, d := range s.p.graph.Dependents(j) {
			if s.pending[d]--; s.pending[d] > 0 {
				continue
			}
			if s.skip(d) {
				s.finished++
				work = append(work, d)
				continue
			}
			s.ready.push(d)
		}
	}
	s.stack = work
}

// skip gives call d a skipped outcome if one of its dependencies failed.
// A dependency that was itself skipped is named with the call whose
// failure skipped it, not with its own message, so that messages do not
// nest along a chain of dependencies.
func (s *scheduler) skip(d int) bool {
	for _, j := range s.p.graph.Deps(d) {
		dep := &s.out[j]
		if dep.Err == nil {
			continue
		}
		if s.failed == nil {
			s.failed = make([]int32, len(s.p.calls))
		}
		e := &skipError{dep: callName(s.p.calls, j)}
		root := j
		if dep.Result.Kind == KindSkipped {
			root = int(s.failed[j])
			e.failed = callName(s.p.calls, root)
		}
		s.failed[d] = int32(root)
		e.cause = s.out[root].Err
		s.out[d].Result = errorResult(KindSkipped, e.message(shorten(s.out[root].Result.Error, maxSkipCause)))
		s.out[d].Err = e
		return true
	}
	return false
}

// maxSkipCause is how many bytes of a failed call's message the results
// of the calls it skipped repeat.
const maxSkipCause = 300

// A skipError is the Err of a skipped call. It unwraps to [ErrSkipped].
type skipError struct {
	dep    string // the dependency, named for messages
	failed string // the failed call that skipped dep too, or "" when dep failed itself
	cause  error  // the failed call's error
}

func (e *skipError) message(cause string) string {
	if e.failed == "" {
		return "skipped: dependency " + e.dep + " failed: " + cause
	}
	return "skipped: dependency " + e.dep + " did not run because " + e.failed + " failed: " + cause
}

func (e *skipError) Error() string { return e.message(e.cause.Error()) }

func (e *skipError) Unwrap() error { return ErrSkipped }

// callName names calls[i] for messages: its quoted ID, or "call #i".
func callName(calls []Call, i int) string {
	if calls[i].ID == "" {
		return "call #" + strconv.Itoa(i)
	}
	return dag.Quote(calls[i].ID)
}

// cancelLocked gives every call not yet started a canceled outcome; no
// call starts after it.
func (s *scheduler) cancelLocked(ctx context.Context) {
	s.canceled = true
	cause := context.Cause(ctx)
	for _, i := range s.assigned[s.head:] { // assigned, but no worker has it yet
		s.started[i] = false
		s.running--
	}
	s.assigned, s.head = s.assigned[:0], 0
	for i := range s.p.calls {
		if s.started[i] || s.out[i].Result.IsError {
			continue
		}
		c := s.p.calls[i]
		s.out[i].Result = errorResult(KindCanceled, fmt.Sprintf("call to tool %q was not started: the batch was canceled: %v", c.Name, cause))
		s.out[i].Err = cause
	}
	if s.running == 0 {
		s.setIdleLocked()
	}
}

// exec runs call i through the middleware chain and records its outcome.
func (e *Executor) exec(ctx context.Context, p *plan, i int, out []Outcome) {
	c := p.calls[i]
	// The call's duration is only logged: it is not measured otherwise.
	l := e.reg.logger()
	var start time.Time
	logged := l.Enabled(ctx, slog.LevelDebug)
	if logged {
		start = time.Now()
	}
	// The outcome is written in place: a Result is large, and copying it
	// into out costs a write barrier per pointer while the GC runs.
	o := &out[i]
	defer func() {
		if v := recover(); v != nil {
			name := shorten(c.Name, 80)
			pe := &PanicError{Tool: name, Value: v, Stack: debug.Stack(), CorrelationID: correlationID()}
			e.reg.logger().LogAttrs(context.WithoutCancel(ctx), slog.LevelError, "executor middleware panicked",
				slog.String("tool", name), slog.String("call_id", shorten(c.ID, 80)), slog.String("correlation_id", pe.CorrelationID),
				slog.Any("panic", v), slog.String("stack", string(pe.Stack)))
			o.Result = errorResult(KindPanic, fmt.Sprintf("call to tool %q failed with an internal error (correlation id %s); the details were logged", name, pe.CorrelationID))
			o.Result.Metadata = map[string]any{"correlation_id": pe.CorrelationID}
			o.Err = pe
		}
	}()
	if p.refErr != nil && p.refErr[i] != nil {
		o.Result, o.Err = errorResult(KindInvalidArguments, p.refErr[i].Error()), p.refErr[i]
		return
	}
	if p.refs != nil && p.refs[i] != nil {
		args, aerr := substitute(i, p, out, e.reg.cfg.limits.maxBytes)
		if aerr != nil {
			o.Result, o.Err = errorResult(KindInvalidArguments, aerr.Error()), aerr
			return
		}
		c.Args = args
	}
	if g := &p.graph; g.Edges() > 0 && len(g.Deps(i)) > len(c.DependsOn) {
		c.DependsOn = make([]string, len(g.Deps(i)))
		for k, j := range g.Deps(i) {
			c.DependsOn[k] = p.calls[j].ID
		}
	}
	o.Result, o.Err = e.step(ctx, c)
	normalizeIn(c.Name, &o.Result, &o.Err)
	if logged {
		l.LogAttrs(ctx, slog.LevelDebug, "tool call finished", slog.String("tool", shorten(c.Name, 80)), slog.String("call_id", shorten(c.ID, 80)),
			slog.Duration("duration", time.Since(start)), slog.String("kind", string(o.Result.Kind)))
	}
}

// intHeap is a min-heap of call indices.
type intHeap []int

func (h *intHeap) push(v int) {
	*h = append(*h, v)
	a := *h
	for k := len(a) - 1; k > 0; {
		parent := (k - 1) / 2
		if a[parent] <= a[k] {
			break
		}
		a[parent], a[k] = a[k], a[parent]
		k = parent
	}
}

func (h *intHeap) pop() int {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for k := 0; ; {
		l := 2*k + 1
		if l >= len(a) {
			break
		}
		m := l
		if r := l + 1; r < len(a) && a[r] < a[l] {
			m = r
		}
		if a[k] <= a[m] {
			break
		}
		a[k], a[m] = a[m], a[k]
		k = m
	}
	*h = a
	return top
}

// timeoutOf returns the time limit of a call to a tool with opts; zero
// means none.
func (r *Registry) timeoutOf(opts Options) time.Duration {
	t := opts.Timeout
	if t == 0 {
		t = r.cfg.timeout
	}
	return max(t, 0)
}
