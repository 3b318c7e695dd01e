//go:build unix

package agent_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/policy"
)

// A process that died after it claimed the approval and before the call
// was recorded as run: resuming the saved run is refused, saying the
// call may or may not have run; once a lead answers again, resuming
// runs the call exactly once and the run finishes.
func TestResumeAfterAnInterruptedRun(t *testing.T) {
	srv := deployModel(t)
	dir := t.TempDir()
	var deploys atomic.Int32
	p := newProcess(t, dir, &deploys)
	saved, id := pauseOnce(t, p.agent(srv))
	if _, err := p.authz.Answer(ann, id, true, ""); err != nil {
		t.Fatal(err)
	}
	// The dead process: one that ran and ended, its claim left open.
	dead := exec.Command(os.Args[0], "-test.run=^$")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	store := &policy.FileApprovalStore{Dir: dir}
	rec, err := store.Get(context.Background(), id, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := store.Claim(context.Background(), rec.Digest, policy.ApprovalClaim{Host: host, PID: dead.Process.Pid}, time.Now()); !ok || err != nil {
		t.Fatalf("Claim: %v, %v", ok, err)
	}

	_, err = restore(t, newProcess(t, dir, &deploys).agent(srv), saved).Resume(bob)
	if !errors.Is(err, policy.ErrApprovalUsed) || !strings.Contains(err.Error(), "may or may not have run") {
		t.Errorf("Resume after the crash: %v, want ErrApprovalUsed saying it was interrupted", err)
	}
	if _, err := p.authz.Answer(ann, id, true, "checked: not deployed"); err != nil {
		t.Fatalf("answering the interrupted approval again: %v", err)
	}
	answer, err := restore(t, newProcess(t, dir, &deploys).agent(srv), saved).Resume(bob)
	if want := "model saw: deployed 1.2.0 | 12:00"; err != nil || answer != want {
		t.Errorf("Resume after the new answer: %q, %v; want %q", answer, err, want)
	}
	if _, err := restore(t, newProcess(t, dir, &deploys).agent(srv), saved).Resume(bob); !errors.Is(err, policy.ErrApprovalUsed) {
		t.Errorf("a second Resume: %v, want ErrApprovalUsed", err)
	}
	if n := deploys.Load(); n != 1 {
		t.Errorf("deploy ran %d times, want 1", n)
	}
}
