package natstool

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/natstest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// submitFixture is Jobs on an embedded JetStream, and a registry whose
// "echo" tool logs each text it runs with.
type submitFixture struct {
	jobs *Jobs
	reg  *tool.Registry
	mu   sync.Mutex
	runs []string
}

func newSubmitFixture(t *testing.T) *submitFixture {
	t.Helper()
	nc := natstest.Connect(t, natstest.Start(t, true))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	jobs, err := OpenJobs(ctx, nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &submitFixture{jobs: jobs, reg: tool.NewRegistry()}
	f.reg.Register(tool.Must(tool.New("echo", "Logs its text.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		f.mu.Lock()
		f.runs = append(f.runs, in.Text)
		f.mu.Unlock()
		return in.Text, nil
	})))
	return f
}

func (f *submitFixture) ran(text string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.runs {
		if r == text {
			return true
		}
	}
	return false
}

func (f *submitFixture) work(t *testing.T) {
	t.Helper()
	w, err := f.jobs.Work(f.reg, "w", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}

func echoArgs(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"text": text})
	return b
}

// settle submits a last job and waits for it: the worker (one slot,
// jobs delivered oldest first) has then dealt with every job before it.
func (f *submitFixture) settle(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := f.jobs.Submit(ctx, "echo", echoArgs("sentinel"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.jobs.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
}

var errAckLost = errors.New("test: the publish's acknowledgement was lost")

// TestSubmitAckLostJobTaken is an attack on Submit's failure path: the
// job's message reached the queue but Submit saw an error (the
// acknowledgement lost, or the caller's context ended while it waited),
// and a worker took the job meanwhile. Submit removed the record and
// returned the error, while the worker ran the call: a job its submitter
// was told failed ran a tool. A Submit that fails must leave no job that
// runs; here the job runs, so Submit must say it was submitted.
func TestSubmitAckLostJobTaken(t *testing.T) {
	f := newSubmitFixture(t)
	f.work(t)
	f.jobs.publish = func(ctx context.Context, msg *nats.Msg, id string) error {
		if _, err := f.jobs.js.PublishMsg(ctx, msg, jetstream.WithMsgID(id)); err != nil {
			return err
		}
		for range 1500 { // until the worker took the job
			if e, err := f.jobs.kv.Get(ctx, id); err == nil {
				var job Job
				if json.Unmarshal(e.Value(), &job) == nil && job.State != JobQueued {
					return errAckLost
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Error("no worker took the job")
		return errAckLost
	}
	id, err := f.jobs.Submit(context.Background(), "echo", echoArgs("taken"), nil)
	f.jobs.publish = nil
	f.settle(t)
	if err != nil {
		if f.ran("taken") {
			t.Fatalf("Submit failed (%v), yet its job ran the tool", err)
		}
		return
	}
	if _, err := f.jobs.Job(context.Background(), id); err != nil {
		t.Fatalf("Submit returned job %s, which cannot be read: %v", id, err)
	}
}

// TestSubmitAckLostJobNotTaken is the other side: the message reached
// the queue, Submit saw an error, and no worker had taken the job yet.
// Submit fails, and the job never runs when a worker comes. The control
// is the sentinel job submitted after it, which runs.
func TestSubmitAckLostJobNotTaken(t *testing.T) {
	f := newSubmitFixture(t)
	f.jobs.publish = func(ctx context.Context, msg *nats.Msg, id string) error {
		if _, err := f.jobs.js.PublishMsg(ctx, msg, jetstream.WithMsgID(id)); err != nil {
			return err
		}
		return errAckLost
	}
	_, err := f.jobs.Submit(context.Background(), "echo", echoArgs("lost"), nil)
	f.jobs.publish = nil
	if !errors.Is(err, errAckLost) {
		t.Fatalf("Submit = %v, want the publish's error", err)
	}
	f.work(t)
	f.settle(t)
	if !f.ran("sentinel") {
		t.Fatal("control: the sentinel job did not run")
	}
	if f.ran("lost") {
		t.Fatal("Submit failed, yet its job ran the tool once a worker came")
	}
}
