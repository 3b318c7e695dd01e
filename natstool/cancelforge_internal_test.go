package natstool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/natstest"
)

// TestForgedJobCancelIgnored: a job's cancel subject is a plain NATS
// subject: Jobs.Cancel, which finds only the owner's job, records the
// job cancelled and then announces it there, and the worker ended the
// run on any message there. Anyone who may publish on the jobs' subjects
// and has seen a job's id (in its progress subject, its queue message)
// ended another principal's run, which was then recorded as done with a
// cancelled result: a signed claim kept them from submitting as the
// owner, but not from ending the owner's work. The control is the same
// attack on the code before the fix, where the forged message ended the
// run; and, here, the owner's Jobs.Cancel, which still ends it. Now the
// worker ends a run only when the job's record says it is cancelled.
func TestForgedJobCancelIgnored(t *testing.T) {
	s := natstest.Start(t, true)
	nc := natstest.Connect(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	jobs, err := OpenJobs(ctx, nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	checked := make(chan bool, 4)
	jobs.cancelChecked = func(_ string, honored bool) { checked <- honored }
	started := make(chan struct{}, 2)
	ended := make(chan error, 2)
	release := make(chan struct{})
	reg := tool.NewRegistry()
	reg.Register(tool.Must(tool.New("hold", "Holds until released or cancelled.", func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-release:
			ended <- nil
			return "held", nil
		case <-ctx.Done():
			ended <- ctx.Err()
			return "", ctx.Err()
		}
	})))
	w, err := jobs.Work(reg, "w", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// The attack: a raw publish on the running job's cancel subject.
	id, err := jobs.Submit(ctx, "hold", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	attacker := natstest.Connect(t, s)
	if err := attacker.Publish(jobs.CancelSubject(id), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		t.Fatalf("the forged cancel ended the owner's run: %v", err)
	case honored := <-checked:
		if honored {
			t.Fatal("the forged cancel was honored")
		}
	case <-ctx.Done():
		t.Fatal("the worker neither ended the run nor checked the cancel")
	}
	close(release)
	res, err := jobs.Wait(ctx, id)
	if err != nil || res.IsError || res.Output != "held" {
		t.Fatalf("the run's result: %+v, %v", res, err)
	}
	if err := <-ended; err != nil {
		t.Fatal(err)
	}

	// The control: the owner's Cancel ends a run.
	release = make(chan struct{})
	id, err = jobs.Submit(ctx, "hold", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := jobs.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the owner's cancel did not end the run: %v", err)
	}
	if honored := <-checked; !honored {
		t.Errorf("the owner's cancel was not honored")
	}
	job, err := jobs.Job(ctx, id)
	if err != nil || job.State != JobCancelled {
		t.Errorf("the cancelled job: %+v, %v", job, err)
	}
}
