//go:build unix

package natstool_test

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
	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/nats-io/nats.go"
)

const (
	crashDirEnv  = "CLAWTOOL_NATS_CRASH_DIR"
	crashModeEnv = "CLAWTOOL_NATS_CRASH_MODE"
	crashURLEnv  = "CLAWTOOL_NATS_CRASH_URL"
	crashBucket  = "approvals_crash"
	crashPolicy  = `
@id("ask") @reason("deletes need a person") @effect("ask")
permit (principal, action == Action::"call", resource == Tool::"kv");
permit (principal in Role::"lead", action == Action::"approve", resource == Tool::"kv");`
)

// consumeOnly hides the claims of the store it wraps: an Authorizer on
// it uses answers as before the NATS store claimed them (Consume).
type consumeOnly struct{ policy.ApprovalStore }

// crashStore is the NATS store of the test and its child processes, on
// its own connection.
func crashStore(t *testing.T, nc *nats.Conn, mode string) policy.ApprovalStore {
	s := openApprovals(t, nc, crashBucket, 0)
	if strings.HasSuffix(mode, "-control") {
		return consumeOnly{s}
	}
	return s
}

type crashArgs struct {
	Op  string `json:"op"`
	Key string `json:"key"`
}

var (
	crashBob = policy.WithPrincipal(context.Background(), policy.Principal{ID: "bob"})
	crashAnn = policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann", Roles: []string{"lead"}})
)

// crashChild is a child process: it makes bob's delete call once, with
// the approvals on the NATS server at url. Its kv tool records that it
// was entered, then, in a "block" mode, waits to be killed before it
// does anything; otherwise it appends a line to the file ran (the
// call's effect in the world).
func crashChild(t *testing.T, dir, mode, url string) {
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer nc.Close()
	a, err := policy.New("ask.cedar", []byte(crashPolicy), policy.WithApprovalStore(crashStore(t, nc, mode)))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	reg := tool.NewRegistry(tool.WithLogger(quiet), tool.WithAuthorizer(a))
	reg.Register(tool.Must(tool.New("kv", "Keeps notes.", func(ctx context.Context, in crashArgs) (string, error) {
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
	res := reg.Execute(crashBob, "kv", []byte(`{"op":"delete","key":"k"}`))
	fmt.Printf("error=%v text=%s\n", res.IsError, res.Text())
}

// TestCrashBetweenApprovalAndRunNATS is policy's
// TestCrashBetweenApprovalAndRun on the NATS store: a worker killed with
// SIGKILL after it used an approval and before the tool did anything.
// With claims the call does not run again by itself, the approval shows
// as interrupted, a re-approval while the worker lives is refused, and a
// person's new answer after it died lets the call run exactly once more.
// The control (the store used through Consume only) shows the approval
// lost: used, not run, and no one may approve it again.
func TestCrashBetweenApprovalAndRunNATS(t *testing.T) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashChild(t, dir, os.Getenv(crashModeEnv), os.Getenv(crashURLEnv))
		return
	}
	for _, control := range []bool{false, true} {
		t.Run(fmt.Sprintf("control=%v", control), func(t *testing.T) {
			suffix := ""
			if control {
				suffix = "-control"
			}
			srv := startServer(t, true)
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			child := func(mode string) *exec.Cmd {
				cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashBetweenApprovalAndRunNATS$")
				cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashModeEnv+"="+mode+suffix, crashURLEnv+"="+srv.ClientURL())
				return cmd
			}
			runs := func() int {
				b, _ := os.ReadFile(filepath.Join(dir, "ran"))
				return bytes.Count(b, []byte("\n"))
			}
			store := crashStore(t, connect(t, srv), suffix)
			a, err := policy.New("ask.cedar", []byte(crashPolicy), policy.WithApprovalStore(store))
			if err != nil {
				t.Fatal(err)
			}
			reg := tool.NewRegistry(tool.WithLogger(quiet), tool.WithAuthorizer(a))
			reg.Register(tool.Must(tool.New("kv", "Keeps notes.", func(ctx context.Context, in crashArgs) (string, error) {
				t.Error("the parent's tool ran")
				return "", nil
			})))
			if res := reg.Execute(crashBob, "kv", []byte(`{"op":"delete","key":"k"}`)); res.Kind != tool.KindDenied {
				t.Fatalf("first call: %+v, want asked", res)
			}
			pending, err := store.Pending(ctx, time.Now())
			if err != nil || len(pending) != 1 {
				t.Fatalf("pending: %+v, %v", pending, err)
			}
			id := pending[0].ID
			if _, err := a.Answer(crashAnn, id, true, "once"); err != nil {
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
			if _, err := a.Answer(crashAnn, id, true, "again"); !errors.Is(err, policy.ErrApprovalAnswered) {
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

			rec, err := store.Get(ctx, id, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			var claimed []policy.ApprovalRecord
			if c, ok := store.(policy.ApprovalClaimer); ok {
				claimed, err = c.Claimed(ctx, time.Now())
				if err != nil {
					t.Fatal(err)
				}
			}
			_, aerr := a.Answered(ctx, id)
			_, rerr := a.Answer(crashAnn, id, true, "checked: it did not run")
			if control {
				// Without claims: the approval is used, the call did not
				// run, and no answer can bring it back.
				if rec.Interrupted() || rec.Used.IsZero() || !errors.Is(rerr, policy.ErrApprovalAnswered) {
					t.Errorf("control: interrupted %v, used %v, answering again: %v", rec.Interrupted(), rec.Used, rerr)
				}
				return
			}
			if len(claimed) != 1 || claimed[0].ID != id {
				t.Errorf("Claimed after the kill: %+v", claimed)
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
			if r, err := store.Get(ctx, id, time.Now()); err != nil || r.Interrupts != 1 || r.Note != "checked: it did not run" || !r.Used.IsZero() {
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
			if r, err := store.Get(ctx, id, time.Now()); err != nil || r.Done.IsZero() || r.Interrupted() {
				t.Errorf("after the run: done %v, interrupted %v, %v", r.Done, r.Interrupted(), err)
			}
			if claimed, err := store.(policy.ApprovalClaimer).Claimed(ctx, time.Now()); err != nil || len(claimed) != 0 {
				t.Errorf("Claimed after the run: %+v, %v", claimed, err)
			}
			if _, err := a.Answer(crashAnn, id, true, "thrice"); !errors.Is(err, policy.ErrApprovalAnswered) {
				t.Errorf("answering a completed approval again: %v", err)
			}
		})
	}
}

var _ policy.ApprovalClaimer = (*natstool.Approvals)(nil)
