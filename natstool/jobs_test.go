package natstool_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/nats-io/nats.go"
)

// openJobs opens the jobs with opts (at most one), quiet unless it names a
// logger.
func openJobs(t *testing.T, nc *nats.Conn, opts ...natstool.JobsOptions) *natstool.Jobs {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o := firstOf(opts)
	if o.Logger == nil {
		o.Logger = quiet
	}
	jobs, err := natstool.OpenJobs(ctx, nc, &o)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func waitJob(t *testing.T, jobs *natstool.Jobs, ctx context.Context, id string) tool.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := jobs.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait(%s): %v", id, err)
	}
	return res
}

func TestJobSubmitAndWait(t *testing.T) {
	s := startServer(t, true)
	var n atomic.Int64
	worker := counting(t, &n)
	release := make(chan struct{})
	worker.Register(tool.Must(tool.New("steps", "Reports progress until released.", func(ctx context.Context, in struct{}) (string, error) {
		for i := 1; ; i++ {
			tool.ReportProgress(ctx, float64(i), 0, "step")
			select {
			case <-release:
				return "finished", nil
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	})))
	wnc := connect(t, s)
	serve(t, wnc, worker, natstool.ServeOptions{Jobs: openJobs(t, wnc)})
	jobs := openJobs(t, connect(t, s))
	ctx := context.Background()

	id, err := jobs.Submit(ctx, "add", json.RawMessage(`{"a":40,"b":2}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := waitJob(t, jobs, ctx, id); res.IsError || res.Output != "42" {
		t.Fatalf("add job: %+v", res)
	}
	job, err := jobs.Job(ctx, id)
	if err != nil || job.State != natstool.JobDone || job.Attempts != 1 || job.Tool != "add" || !strings.HasPrefix(job.Worker, "clawtool/") {
		t.Fatalf("record: %+v, %v", job, err)
	}

	// Invalid arguments are the job's result, from the worker's registry.
	id, _ = jobs.Submit(ctx, "add", json.RawMessage(`{"a":1,"b":1000}`), nil)
	if res := waitJob(t, jobs, ctx, id); res.Kind != tool.KindInvalidArguments {
		t.Fatalf("invalid job: %+v", res)
	}

	// Progress reaches the caller that waits.
	id, _ = jobs.Submit(ctx, "steps", nil, nil)
	var reports atomic.Int64
	pctx := tool.WithProgress(ctx, func(p, total float64, msg string) {
		if reports.Add(1) == 1 {
			close(release)
		}
	})
	if res := waitJob(t, jobs, pctx, id); res.Output != "finished" {
		t.Fatalf("steps job: %+v", res)
	}
	if reports.Load() == 0 {
		t.Fatal("no progress report reached Wait")
	}
}

// The worker holding a job dies: the job goes to another worker after the
// ack wait, and is completed once.
func TestJobRedeliveredWhenWorkerDies(t *testing.T) {
	s := startServer(t, true)
	started := make(chan string, 4)
	var finished atomic.Int64
	workerReg := func(id string) *tool.Registry {
		reg := tool.NewRegistry(tool.WithLogger(quiet))
		reg.Register(tool.Must(tool.New("render", "Renders slowly on a, at once on b.", func(ctx context.Context, in struct{}) (string, error) {
			started <- id
			if id == "a" {
				<-ctx.Done() // a hangs until it dies
				return "", ctx.Err()
			}
			finished.Add(1)
			return "rendered by " + id, nil
		})))
		return reg
	}
	opts := natstool.JobsOptions{AckWait: 500 * time.Millisecond, MaxDeliver: 5}
	anc := connect(t, s)
	serve(t, anc, workerReg("a"), natstool.ServeOptions{Name: "a", Jobs: openJobs(t, anc, opts)})
	jobs := openJobs(t, connect(t, s), opts)
	ctx := context.Background()
	id, err := jobs.Submit(ctx, "render", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := <-started; w != "a" {
		t.Fatalf("the job started on %s", w)
	}
	bnc := connect(t, s)
	serve(t, bnc, workerReg("b"), natstool.ServeOptions{Name: "b", Jobs: openJobs(t, bnc, opts)})
	anc.Close() // a dies holding the job, before acknowledging it

	if res := waitJob(t, jobs, ctx, id); res.Output != "rendered by b" {
		t.Fatalf("result: %+v", res)
	}
	job, err := jobs.Job(ctx, id)
	if err != nil || job.Attempts != 2 || !strings.HasPrefix(job.Worker, "b/") {
		t.Fatalf("record: %+v, %v; want 2 attempts, done by b", job, err)
	}
	if n := finished.Load(); n != 1 {
		t.Fatalf("the job was completed %d times", n)
	}
}

func TestJobIdempotencyKey(t *testing.T) {
	s := startServer(t, true)
	var n atomic.Int64
	wnc := connect(t, s)
	serve(t, wnc, counting(t, &n), natstool.ServeOptions{Jobs: openJobs(t, wnc)})
	jobs := openJobs(t, connect(t, s))
	ctx := context.Background()

	first, err := jobs.Submit(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), &natstool.SubmitOptions{IdempotencyKey: "order-17"})
	if err != nil {
		t.Fatal(err)
	}
	// Resubmitted at once and after it finished: the same job each time.
	again, err := jobs.Submit(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), &natstool.SubmitOptions{IdempotencyKey: "order-17"})
	if err != nil || again != first {
		t.Fatalf("resubmit: %s, %v; want %s", again, err, first)
	}
	if res := waitJob(t, jobs, ctx, first); res.Output != "3" {
		t.Fatalf("result: %+v", res)
	}
	again, err = jobs.Submit(ctx, "add", json.RawMessage(`{"a":5,"b":5}`), &natstool.SubmitOptions{IdempotencyKey: "order-17"})
	if err != nil || again != first {
		t.Fatalf("resubmit after the result: %s, %v; want %s", again, err, first)
	}
	if res := waitJob(t, jobs, ctx, again); res.Output != "3" {
		t.Fatalf("the resubmitted job's result: %+v, want the first (3)", res)
	}
	// Another key is another job.
	other, _ := jobs.Submit(ctx, "add", json.RawMessage(`{"a":5,"b":5}`), &natstool.SubmitOptions{IdempotencyKey: "order-18"})
	if res := waitJob(t, jobs, ctx, other); other == first || res.Output != "10" {
		t.Fatalf("order-18: %s %+v", other, res)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("the tool ran %d times, want 2", got)
	}
	if _, err := jobs.Submit(ctx, "add", nil, &natstool.SubmitOptions{IdempotencyKey: strings.Repeat("k", 2000)}); err == nil {
		t.Error("an oversized idempotency key was accepted")
	}
}

// aliceOnlyWorker returns a worker's registry with counting's add tool
// (its runs counted in n) under a policy that permits alice alone.
func aliceOnlyWorker(t *testing.T, n *atomic.Int64) *tool.Registry {
	t.Helper()
	a, err := policy.New("jobs.cedar", []byte(`permit (principal == User::"alice", action == Action::"call", resource == Tool::"add");`))
	if err != nil {
		t.Fatal(err)
	}
	add, _ := counting(t, n).Get("add")
	worker := tool.NewRegistry(tool.WithLogger(quiet), tool.WithAuthorizer(a))
	worker.Register(add)
	return worker
}

// A job runs on the worker for the principal that submitted it: the
// worker's policy permits only alice, so her job runs and the others'
// are recorded as denied. The principal travels in the job message's
// policy header, set by WithJobHeaders and restored either by the
// service's WithCallContext or by the queue's own WithJobContext.
func TestJobRunsForItsPrincipal(t *testing.T) {
	restore := func(ctx context.Context, h nats.Header) (context.Context, error) {
		return policy.FromHeaders(ctx, h)
	}
	for _, how := range []string{"service call context", "job context"} {
		t.Run(how, func(t *testing.T) {
			s := startServer(t, true)
			var n atomic.Int64
			worker := aliceOnlyWorker(t, &n)
			wnc := connect(t, s)
			if how == "service call context" {
				serve(t, wnc, worker, natstool.ServeOptions{CallContext: restore, Jobs: openJobs(t, wnc)})
			} else {
				w, err := openJobs(t, wnc, natstool.JobsOptions{Context: restore}).Work(worker, "w", 4)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(w.Stop)
			}
			jobs := openJobs(t, connect(t, s), natstool.JobsOptions{Headers: func(ctx context.Context) nats.Header {
				return policy.Headers(ctx)
			}})

			submit := func(ctx context.Context) (string, tool.Result) {
				t.Helper()
				id, err := jobs.Submit(ctx, "add", json.RawMessage(`{"a":40,"b":2}`), nil)
				if err != nil {
					t.Fatal(err)
				}
				return id, waitJob(t, jobs, ctx, id)
			}
			alice := policy.WithPrincipal(context.Background(), policy.Principal{ID: "alice"})
			if _, res := submit(alice); res.IsError || res.Output != "42" {
				t.Fatalf("alice's job: %+v", res)
			}
			mallory := policy.WithPrincipal(context.Background(), policy.Principal{ID: "mallory", Roles: []string{"admin"}})
			for name, ctx := range map[string]context.Context{"mallory": mallory, "nobody": context.Background()} {
				id, res := submit(ctx)
				if res.Kind != tool.KindDenied {
					t.Fatalf("%s's job: %+v, want denied", name, res)
				}
				job, err := jobs.Job(ctx, id) // the submitter reads its own job
				if err != nil || job.State != natstool.JobDone || job.Result == nil || job.Result.Kind != tool.KindDenied {
					t.Fatalf("%s's job record: %+v, %v; want done and denied", name, job, err)
				}
			}
			if got := n.Load(); got != 1 {
				t.Fatalf("the tool ran %d times, want once (alice's job)", got)
			}
		})
	}
}

// A job for a tool that no worker serves is offered a bounded number of
// times, then recorded as unavailable.
func TestJobForAToolNoWorkerServes(t *testing.T) {
	s := startServer(t, true)
	opts := natstool.JobsOptions{AckWait: 200 * time.Millisecond, MaxDeliver: 3}
	var n atomic.Int64
	wnc := connect(t, s)
	serve(t, wnc, counting(t, &n), natstool.ServeOptions{Jobs: openJobs(t, wnc, opts)})
	jobs := openJobs(t, connect(t, s), opts)
	ctx := context.Background()
	id, err := jobs.Submit(ctx, "render", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := waitJob(t, jobs, ctx, id)
	if res.Kind != tool.KindUnavailable || !strings.Contains(res.Error, `serves tool "render"`) || !strings.Contains(res.Error, "offered 3 times") {
		t.Fatalf("result: %+v", res)
	}
	job, err := jobs.Job(ctx, id)
	if err != nil || job.State != natstool.JobDone || job.Attempts != 1 || job.Result == nil || job.Result.Kind != tool.KindUnavailable {
		t.Fatalf("record: %+v, %v", job, err)
	}
}

// A worker that lacks a job's tool hands the job back, and a worker that
// serves the tool runs it.
func TestJobHandedToAWorkerThatServesItsTool(t *testing.T) {
	s := startServer(t, true)
	declined := make(chan struct{}, 1)
	logger := slog.New(signalHandler{msg: "handing the job back", ch: declined})
	opts := natstool.JobsOptions{AckWait: time.Second, MaxDeliver: 50}
	logged := opts
	logged.Logger = logger
	var n atomic.Int64
	anc := connect(t, s)
	serve(t, anc, counting(t, &n), natstool.ServeOptions{Name: "a", Jobs: openJobs(t, anc, logged)})
	jobs := openJobs(t, connect(t, s), opts)
	ctx := context.Background()
	id, err := jobs.Submit(ctx, "render", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	bound, cancel := context.WithTimeout(ctx, 20*time.Second) // ok-wallclock
	defer cancel()
	select {
	case <-declined:
	case <-bound.Done():
		t.Fatal("worker a never handed the job back")
	}
	b := tool.NewRegistry(tool.WithLogger(quiet))
	b.Register(tool.Must(tool.New("render", "Renders.", func(ctx context.Context, in struct{}) (string, error) {
		return "rendered by b", nil
	})))
	bnc := connect(t, s)
	serve(t, bnc, b, natstool.ServeOptions{Name: "b", Jobs: openJobs(t, bnc, opts)})
	if res := waitJob(t, jobs, ctx, id); res.Output != "rendered by b" {
		t.Fatalf("result: %+v", res)
	}
	job, err := jobs.Job(ctx, id)
	if err != nil || !strings.HasPrefix(job.Worker, "b/") || job.Attempts != 1 {
		t.Fatalf("record: %+v, %v; want one attempt, by b", job, err)
	}
}

// signalHandler is a slog handler that signals ch when a record whose
// message contains msg is logged, at any level.
type signalHandler struct {
	msg string
	ch  chan struct{}
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.msg) {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h signalHandler) WithGroup(string) slog.Handler      { return h }

// Jobs are their submitter's: an idempotency key names a job of the
// principal that submitted it, and another principal's Submit with the
// same key is a job of its own, decided for it; another principal's
// Wait and Job do not find the job (not found, not forbidden: whether it
// exists is the owner's to know). The worker's policy permits only
// alice, and the tool's own counter shows that nothing ran for mallory.
// The owner is what WithJobHeaders sends by default, or WithJobOwner's.
func TestJobsAreTheirSubmitters(t *testing.T) {
	for _, how := range []string{"headers", "owner"} {
		t.Run(how, func(t *testing.T) {
			s := startServer(t, true)
			var n atomic.Int64
			worker := aliceOnlyWorker(t, &n)
			wnc := connect(t, s)
			serve(t, wnc, worker, natstool.ServeOptions{CallContext: func(ctx context.Context, h nats.Header) (context.Context, error) {
				return policy.FromHeaders(ctx, h)
			}, Jobs: openJobs(t, wnc)})
			opts := natstool.JobsOptions{Headers: func(ctx context.Context) nats.Header { return policy.Headers(ctx) }}
			if how == "owner" {
				opts.Owner = func(ctx context.Context) string {
					p, _ := policy.PrincipalFrom(ctx)
					return p.ID
				}
			}
			jobs := openJobs(t, connect(t, s), opts)
			alice := policy.WithPrincipal(context.Background(), policy.Principal{ID: "alice"})
			mallory := policy.WithPrincipal(context.Background(), policy.Principal{ID: "mallory"})
			anonymous := context.Background()

			first, err := jobs.Submit(alice, "add", json.RawMessage(`{"a":40,"b":2}`), &natstool.SubmitOptions{IdempotencyKey: "order-17"})
			if err != nil {
				t.Fatal(err)
			}
			if res := waitJob(t, jobs, alice, first); res.IsError || res.Output != "42" {
				t.Fatalf("control: alice's job: %+v", res)
			}
			for name, ctx := range map[string]context.Context{"mallory": mallory, "anonymous": anonymous} {
				id, err := jobs.Submit(ctx, "add", json.RawMessage(`{"a":1,"b":1}`), &natstool.SubmitOptions{IdempotencyKey: "order-17"})
				if err != nil {
					t.Fatal(err)
				}
				if id == first {
					t.Errorf("%s's key order-17 names alice's job", name)
				}
				if res := waitJob(t, jobs, ctx, id); res.Kind != tool.KindDenied || strings.Contains(res.Output, "42") {
					t.Errorf("%s's job with alice's key: %+v, want denied", name, res)
				}
				wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				res, err := jobs.Wait(wctx, first)
				cancel()
				if !errors.Is(err, natstool.ErrJobNotFound) || res.Output != "" {
					t.Errorf("%s waits for alice's job: %+v, %v; want ErrJobNotFound", name, res, err)
				}
				if job, err := jobs.Job(ctx, first); !errors.Is(err, natstool.ErrJobNotFound) || job.Result != nil {
					t.Errorf("%s reads alice's job: %+v, %v; want ErrJobNotFound", name, job, err)
				}
			}
			// Alice still finds her job, under her key, and it ran once.
			if again, err := jobs.Submit(alice, "add", nil, &natstool.SubmitOptions{IdempotencyKey: "order-17"}); err != nil || again != first {
				t.Errorf("alice resubmits order-17: %s, %v; want %s", again, err, first)
			}
			if job, err := jobs.Job(alice, first); err != nil || job.Result == nil || job.Result.Output != "42" {
				t.Errorf("alice reads her job: %+v, %v", job, err)
			}
			if got := n.Load(); got != 1 {
				t.Errorf("the tool ran %d times, want once (alice's job)", got)
			}
			if _, err := jobs.Job(alice, "jnosuchjob"); !errors.Is(err, natstool.ErrJobNotFound) {
				t.Errorf("a job that does not exist: %v, want ErrJobNotFound", err)
			}
		})
	}
}
