//go:build unix

package policy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

const (
	crashDirEnv  = "CLAWTOOL_CRASH_TEST_DIR"
	crashModeEnv = "CLAWTOOL_CRASH_TEST_MODE"
)

// consumeOnly hides the claims of the store it wraps: an Authorizer on
// it uses answers as before claims existed (Consume).
type consumeOnly struct{ policy.ApprovalStore }

// crashStore is the store of the test and its child processes.
func crashStore(dir, mode string) policy.ApprovalStore {
	s := &policy.FileApprovalStore{Dir: dir}
	if strings.HasSuffix(mode, "-control") {
		return consumeOnly{s}
	}
	return s
}

// crashChild is a child process: it makes otto's delete call once. Its
// kv tool records that it was entered, then, in a "block" mode, waits
// to be killed before it does anything; otherwise it appends a line to
// the file ran (the call's effect in the world).
func crashChild(dir, mode string) {
	a, err := policy.New("approvals.cedar", []byte(approvalPolicies), policy.WithApprovalStore(crashStore(dir, mode)))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	reg.Register(tool.Must(tool.New("kv", "Keeps notes.", func(ctx context.Context, in kvArgs) (string, error) {
		if err := os.WriteFile(filepath.Join(dir, "entered"), nil, 0o600); err != nil {
			return "", err
		}
		if strings.HasPrefix(mode, "block") {
			select {} // killed here, between the use of the answer and the effect
		}
		f, err := os.OpenFile(filepath.Join(dir, "ran"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = f.WriteString("ran\n")
		return "done", err
	})))
	res := reg.Execute(policy.WithPrincipal(context.Background(), otto), "kv", []byte(`{"op":"delete","key":"k"}`))
	fmt.Printf("error=%v text=%s\n", res.IsError, res.Text())
}

// TestCrashBetweenApprovalAndRun: a process killed with SIGKILL after it
// used an approval and before the tool did anything. With claims the
// call does not run again by itself, the approval shows as interrupted,
// a re-approval while the process lives is refused, and a person's new
// answer after it died lets the call run exactly once more. The control
// (a store used as before claims) shows the approval lost: used, not
// run, and no one may approve it again.
func TestCrashBetweenApprovalAndRun(t *testing.T) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashChild(dir, os.Getenv(crashModeEnv))
		return
	}
	for _, control := range []bool{false, true} {
		t.Run(fmt.Sprintf("control=%v", control), func(t *testing.T) {
			suffix := ""
			if control {
				suffix = "-control"
			}
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			child := func(mode string) *exec.Cmd {
				cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashBetweenApprovalAndRun$")
				cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashModeEnv+"="+mode+suffix)
				return cmd
			}
			runs := func() int {
				b, _ := os.ReadFile(filepath.Join(dir, "ran"))
				return bytes.Count(b, []byte("\n"))
			}
			store := crashStore(dir, suffix)
			p := newApprovalProcess(t, approvalPolicies, store)
			req := wantRequest(t, p.call(otto, `{"op":"delete","key":"k"}`))
			asAnn := policy.WithPrincipal(context.Background(), ann)
			if _, err := p.a.Answer(asAnn, req.ID, true, "once"); err != nil {
				t.Fatal(err)
			}

			// The child uses the approval, enters the tool, and is killed.
			blocked := child("block")
			if err := blocked.Start(); err != nil {
				t.Fatal(err)
			}
			for {
				if _, err := os.Stat(filepath.Join(dir, "entered")); err == nil {
					break
				}
				if ctx.Err() != nil {
					t.Fatal("the child never entered the tool")
				}
				time.Sleep(10 * time.Millisecond)
			}
			// While it lives, no one can answer again: it may still run.
			if _, err := p.a.Answer(asAnn, req.ID, true, "again"); !errors.Is(err, policy.ErrApprovalAnswered) {
				t.Errorf("answering again while the claimer lives: %v, want ErrApprovalAnswered", err)
			}
			if err := blocked.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			_ = blocked.Wait()
			if n := runs(); n != 0 {
				t.Fatalf("the call ran %d times before the kill", n)
			}

			// Made again, unchanged, it does not run: nobody decided yet.
			out, err := child("run").Output()
			if err != nil || !strings.Contains(string(out), "error=true") || runs() != 0 {
				t.Fatalf("the call made again after the crash: %q, %v; runs %d", out, err, runs())
			}

			rec, err := store.Get(context.Background(), req.ID, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			_, aerr := p.a.Answered(context.Background(), req.ID)
			_, rerr := p.a.Answer(asAnn, req.ID, true, "checked: it did not run")
			if control {
				// Before claims: the approval is used, the call did not
				// run, and no answer can bring it back.
				if rec.Interrupted() || rec.Used.IsZero() || !errors.Is(rerr, policy.ErrApprovalAnswered) {
					t.Errorf("control: interrupted %v, used %v, answering again: %v", rec.Interrupted(), rec.Used, rerr)
				}
				return
			}
			if !rec.Interrupted() || rec.Claim == nil || rec.Claim.PID != blocked.Process.Pid {
				t.Errorf("after the kill: interrupted %v, claim %+v, want the child's", rec.Interrupted(), rec.Claim)
			}
			if !errors.Is(aerr, policy.ErrApprovalUsed) || !strings.Contains(aerr.Error(), "may or may not have run") {
				t.Errorf("Answered after the kill: %v", aerr)
			}
			if rerr != nil {
				t.Fatalf("answering the interrupted approval again: %v", rerr)
			}
			if r, err := store.Get(context.Background(), req.ID, time.Now()); err != nil || r.Interrupts != 1 || r.Note != "checked: it did not run" || !r.Used.IsZero() {
				t.Errorf("re-armed record: %+v, %v", r, err)
			}
			// The new answer lets the call run exactly once.
			for i := range 2 {
				out, err := child("run").Output()
				if err != nil {
					t.Fatalf("child %d: %v", i, err)
				}
				if runs() != 1 {
					t.Fatalf("after call %d the call ran %d times, want 1: %s", i, runs(), out)
				}
			}
			if r, err := store.Get(context.Background(), req.ID, time.Now()); err != nil || r.Done.IsZero() || r.Interrupted() {
				t.Errorf("after the run: done %v, interrupted %v, %v", r.Done, r.Interrupted(), err)
			}
			if _, err := p.a.Answer(asAnn, req.ID, true, "thrice"); !errors.Is(err, policy.ErrApprovalAnswered) {
				t.Errorf("answering a completed approval again: %v", err)
			}
		})
	}
}
