package mcptasks

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/natstest"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/natstool"
)

// TestTaskExpiryFollowsTheStoresClock is an attack on a durable task's
// expiry across clocks: the store sends the time its task expires, on
// its own clock, and the worker ended the run then on the worker's
// clock, so a worker whose clock is behind (here by an hour) ran the
// call on for that long past the TTL, when tasks/* already answered as
// for an unknown task and no client could cancel it. The store's clock
// rules, since it is the store that says a task is gone: at the TTL on
// its clock, it ends the job (recorded cancelled, and the worker told),
// whatever the worker's clock says. The control is
// TestDurableTaskRunEndsAtTTL, the same run with clocks that agree.
func TestTaskExpiryFollowsTheStoresClock(t *testing.T) {
	ns := natstest.Start(t, true)
	nc := natstest.Connect(t, ns)
	ctx := context.Background()
	const ttl = 2 * time.Second
	store, err := Open(ctx, nc, &Options{Limits: mcptool.TaskLimits{TTL: ttl}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	store.workerBehind = time.Hour
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("long", "Works for a minute.", func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			ended <- context.Cause(ctx)
			return "", context.Cause(ctx)
		case <-time.After(time.Minute):
			ended <- nil
			return "worked a minute", nil
		}
	}, tool.WithTask(tool.TaskRequired), tool.WithTimeout(2*time.Minute))))
	w, err := store.Jobs().Work(r, "w", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	rec, err := store.Create(ctx, mcptool.TaskCall{Owner: "alice", Tool: "long", Args: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("no worker ran the task")
	}
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the call ran to its end, past the task's TTL")
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the call still runs 30 s after the task's TTL (%v) passed on the store's clock", ttl)
	}
	job, err := store.jobs.Job(as(ctx, "alice"), rec.TaskID)
	if err != nil || job.State != natstool.JobCancelled {
		t.Errorf("the expired task's job: %+v, %v; want it recorded cancelled", job, err)
	}
}
