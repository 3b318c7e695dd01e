//go:build unix

package approvaltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// The environment a child process of [TestCrash] finds its run in.
const (
	crashDirEnv  = "CLAWTOOL_APPROVAL_CRASH_DIR"
	crashModeEnv = "CLAWTOOL_APPROVAL_CRASH_MODE"
)

// crashPolicy asks a person about every kv call, whom a lead answers.
const crashPolicy = `
@id("ask") @reason("deletes need a person") @effect("ask")
permit (principal, action == Action::"call", resource == Tool::"kv");
@id("leads-approve")
permit (principal in Role::"lead", action == Action::"approve", resource == Tool::"kv");`

// crashCall is the call of the sequence: bob's delete.
const crashCall = `{"op":"delete","key":"k"}`

var (
	crashBob = policy.Principal{ID: "bob"}
	crashAnn = policy.Principal{ID: "ann", Roles: []string{"lead"}}
)

// Crash is a store under [TestCrash]: how the test process and its
// child processes open one store.
type Crash struct {
	// Test names the test function that calls TestCrash. Its child
	// processes run the test binary again with only that test, whose
	// call of TestCrash then acts as the child.
	Test string
	// Open opens a new, empty store for one run of the sequence, in
	// the test process; dir is the run's own folder. env is what the
	// child processes need besides dir to open the same store with
	// Reopen ("KEY=value" items; nil when dir is enough).
	Open func(t *testing.T, dir string) (s policy.ApprovalStore, env []string)
	// Reopen opens, in a child process, the store Open opened, from dir
	// and the environment Open gave; it fails the child's test if it
	// cannot.
	Reopen func(t *testing.T, dir string) policy.ApprovalStore
}

// consumeOnly hides the claims of the store it wraps: an Authorizer on
// it uses answers as before claims existed (Consume).
type consumeOnly struct{ policy.ApprovalStore }

// crashAuthorizer returns the Authorizer of a process of the sequence
// on s, through Consume only for a control run.
func crashAuthorizer(s policy.ApprovalStore, control bool) (*policy.Authorizer, error) {
	if control {
		s = consumeOnly{s}
	}
	return policy.New("ask.cedar", []byte(crashPolicy), policy.WithApprovalStore(s))
}

// crashRegistry returns a registry deciding by a whose kv tool is run.
func crashRegistry(a *policy.Authorizer, run func(ctx context.Context) (string, error)) *tool.Registry {
	type kvArgs struct {
		Op  string `json:"op"`
		Key string `json:"key"`
	}
	reg := tool.NewRegistry(tool.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), tool.WithAuthorizer(a))
	reg.Register(tool.Must(tool.New("kv", "Keeps notes.", func(ctx context.Context, in kvArgs) (string, error) { return run(ctx) })))
	return reg
}

// TestCrash checks that a store keeps an approval whose call a process
// was killed in, the process having used the answer (with SIGKILL,
// after the use and before the tool did anything); it needs a Unix
// machine. The store must be a [policy.ApprovalClaimer]. With claims the
// call does not run again by itself, the approval shows as interrupted
// and claimed by the killed process, a re-approval while the process
// lives is refused, and a person's new answer after it died lets the
// call run exactly once more, after which nothing is claimed and no
// answer is taken. The control run (the store used through Consume
// only) shows the approval lost: used, not run, and no one may approve
// it again.
//
// The test named c.Test must call TestCrash first thing: in the child
// processes it starts, TestCrash makes the call once and returns.
func TestCrash(t *testing.T, c Crash) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashChild(t, c, dir, os.Getenv(crashModeEnv))
		return
	}
	for _, control := range []bool{false, true} {
		t.Run(fmt.Sprintf("control=%v", control), func(t *testing.T) { crash(t, c, control) })
	}
}

// crashChild is a child process: it makes bob's delete call once. Its
// kv tool records that it was entered, then, in a "block" mode, waits
// to be killed before it does anything; otherwise it appends a line to
// the file ran (the call's effect in the world).
func crashChild(t *testing.T, c Crash, dir, mode string) {
	a, err := crashAuthorizer(c.Reopen(t, dir), strings.HasSuffix(mode, "-control"))
	if err != nil {
		t.Fatal(err)
	}
	reg := crashRegistry(a, func(context.Context) (string, error) {
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
	})
	res := reg.Execute(policy.WithPrincipal(context.Background(), crashBob), "kv", []byte(crashCall))
	fmt.Printf("error=%v text=%s\n", res.IsError, res.Text())
}

// crash is one run of the sequence, the control's or the claims'.
func crash(t *testing.T, c Crash, control bool) {
	suffix := ""
	if control {
		suffix = "-control"
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, env := c.Open(t, dir)
	child := func(mode string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+c.Test+"$")
		cmd.Env = append(append(os.Environ(), env...), crashDirEnv+"="+dir, crashModeEnv+"="+mode+suffix)
		return cmd
	}
	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "ran"))
		return bytes.Count(b, []byte("\n"))
	}
	a, err := crashAuthorizer(store, control)
	if err != nil {
		t.Fatal(err)
	}
	reg := crashRegistry(a, func(context.Context) (string, error) {
		t.Error("the test process's tool ran")
		return "", nil
	})
	asAnn := policy.WithPrincipal(ctx, crashAnn)

	// The call asks; the request is the one pending; ann approves it.
	res := reg.Execute(policy.WithPrincipal(ctx, crashBob), "kv", []byte(crashCall))
	req, ok := res.Metadata["approval_request"].(policy.ApprovalRequest)
	if res.Kind != tool.KindDenied || !ok {
		t.Fatalf("first call: %+v, want an approval request", res)
	}
	id := req.ID
	if p, err := store.Pending(ctx, time.Now()); err != nil || len(p) != 1 || p[0].ID != id {
		t.Fatalf("pending: %+v, %v; want %s alone", p, err, id)
	}
	if _, err := a.Answer(asAnn, id, true, "once"); err != nil {
		t.Fatal(err)
	}

	// The child uses the approval, enters the tool, and is killed.
	blocked := child("block")
	var blockedOut bytes.Buffer
	blocked.Stdout, blocked.Stderr = &blockedOut, &blockedOut
	if err := blocked.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- blocked.Wait() }()
	for {
		if _, err := os.Stat(filepath.Join(dir, "entered")); err == nil {
			break
		}
		select {
		case err := <-ended:
			t.Fatalf("the child ended before it entered the tool: %v\n%s", err, blockedOut.Bytes())
		case <-ctx.Done():
			t.Fatal("the child never entered the tool")
		case <-time.After(10 * time.Millisecond):
		}
	}
	// While it lives, no one can answer again: it may still run.
	if _, err := a.Answer(asAnn, id, true, "again"); !errors.Is(err, policy.ErrApprovalAnswered) {
		t.Errorf("answering again while the claimer lives: %v, want ErrApprovalAnswered", err)
	}
	if err := blocked.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-ended
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
	claimer, ok := store.(policy.ApprovalClaimer)
	if !ok {
		t.Fatalf("%T is not a policy.ApprovalClaimer", store)
	}
	claimed, err := claimer.Claimed(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, aerr := a.Answered(ctx, id)
	_, rerr := a.Answer(asAnn, id, true, "checked: it did not run")
	if control {
		// Without claims: the approval is used, the call did not run,
		// and no answer can bring it back.
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
	if claimed, err := claimer.Claimed(ctx, time.Now()); err != nil || len(claimed) != 0 {
		t.Errorf("Claimed after the run: %+v, %v", claimed, err)
	}
	if _, err := a.Answer(asAnn, id, true, "thrice"); !errors.Is(err, policy.ErrApprovalAnswered) {
		t.Errorf("answering a completed approval again: %v", err)
	}
}
