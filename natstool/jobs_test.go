package natstool_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/nats-io/nats.go"
)

func openJobs(t *testing.T, nc *nats.Conn, opts ...natstool.JobsOption) *natstool.Jobs {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	jobs, err := natstool.OpenJobs(ctx, nc, append([]natstool.JobsOption{natstool.WithJobsLogger(quiet)}, opts...)...)
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
	serve(t, wnc, worker, natstool.WithJobs(openJobs(t, wnc)))
	jobs := openJobs(t, connect(t, s))
	ctx := context.Background()

	id, err := jobs.Submit(ctx, "add", json.RawMessage(`{"a":40,"b":2}`))
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
	id, _ = jobs.Submit(ctx, "add", json.RawMessage(`{"a":1,"b":1000}`))
	if res := waitJob(t, jobs, ctx, id); res.Kind != tool.KindInvalidArguments {
		t.Fatalf("invalid job: %+v", res)
	}

	// Progress reaches the caller that waits.
	id, _ = jobs.Submit(ctx, "steps", nil)
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
	opts := []natstool.JobsOption{natstool.WithAckWait(500*time.Millisecond, 5)}
	anc := connect(t, s)
	serve(t, anc, workerReg("a"), natstool.WithServiceName("a"), natstool.WithJobs(openJobs(t, anc, opts...)))
	jobs := openJobs(t, connect(t, s), opts...)
	ctx := context.Background()
	id, err := jobs.Submit(ctx, "render", nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := <-started; w != "a" {
		t.Fatalf("the job started on %s", w)
	}
	bnc := connect(t, s)
	serve(t, bnc, workerReg("b"), natstool.WithServiceName("b"), natstool.WithJobs(openJobs(t, bnc, opts...)))
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
	serve(t, wnc, counting(t, &n), natstool.WithJobs(openJobs(t, wnc)))
	jobs := openJobs(t, connect(t, s))
	ctx := context.Background()

	first, err := jobs.Submit(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), natstool.WithIdempotencyKey("order-17"))
	if err != nil {
		t.Fatal(err)
	}
	// Resubmitted at once and after it finished: the same job each time.
	again, err := jobs.Submit(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), natstool.WithIdempotencyKey("order-17"))
	if err != nil || again != first {
		t.Fatalf("resubmit: %s, %v; want %s", again, err, first)
	}
	if res := waitJob(t, jobs, ctx, first); res.Output != "3" {
		t.Fatalf("result: %+v", res)
	}
	again, err = jobs.Submit(ctx, "add", json.RawMessage(`{"a":5,"b":5}`), natstool.WithIdempotencyKey("order-17"))
	if err != nil || again != first {
		t.Fatalf("resubmit after the result: %s, %v; want %s", again, err, first)
	}
	if res := waitJob(t, jobs, ctx, again); res.Output != "3" {
		t.Fatalf("the resubmitted job's result: %+v, want the first (3)", res)
	}
	// Another key is another job.
	other, _ := jobs.Submit(ctx, "add", json.RawMessage(`{"a":5,"b":5}`), natstool.WithIdempotencyKey("order-18"))
	if res := waitJob(t, jobs, ctx, other); other == first || res.Output != "10" {
		t.Fatalf("order-18: %s %+v", other, res)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("the tool ran %d times, want 2", got)
	}
	if _, err := jobs.Submit(ctx, "add", nil, natstool.WithIdempotencyKey(strings.Repeat("k", 2000))); err == nil {
		t.Error("an oversized idempotency key was accepted")
	}
}
