package policy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/policy"
	"github.com/miniopenclaw/tool/policy/approvaltest"
)

// The record, id and time of approvaltest, which checks every store's
// contract (TestApprovalStores); the tests here check what is the file
// store's own.
var (
	t0     = approvaltest.T0
	record = approvaltest.Record
	id     = approvaltest.ID
)

// stores returns each kind of store, fresh.
func stores(t *testing.T) map[string]func() policy.ApprovalStore {
	return map[string]func() policy.ApprovalStore{
		"memory": func() policy.ApprovalStore { return policy.NewMemoryApprovalStore() },
		"file":   func() policy.ApprovalStore { return &policy.FileApprovalStore{Dir: t.TempDir()} },
	}
}

// TestApprovalStoreBounds: a full store and an oversized record or note
// are refused; expired records make room.
func TestApprovalStoreBounds(t *testing.T) {
	ctx := context.Background()
	s := &policy.FileApprovalStore{Dir: t.TempDir(), Max: 2}
	for i := range 2 {
		if _, err := s.Put(ctx, record(id(i), fmt.Sprint("d", i)), t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Put(ctx, record(id(9), "d9"), t0); !errors.Is(err, policy.ErrApprovalStoreFull) {
		t.Errorf("Put into a full store = %v, want ErrApprovalStoreFull", err)
	}
	later := record(id(9), "d9")
	later.Expires = t0.Add(2 * time.Minute)
	if _, err := s.Put(ctx, later, t0.Add(time.Minute)); err != nil {
		t.Errorf("Put once the others expired = %v", err)
	}
	// Used records make room; answered, unused ones do not.
	if _, err := s.Answer(ctx, id(9), policy.ApprovalAnswer{Approved: true, By: "ann"}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Consume(ctx, "d9", t0.Add(time.Minute)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	for i := 11; i < 13; i++ {
		r := record(id(i), fmt.Sprint("d", i))
		r.Expires = t0.Add(2 * time.Minute)
		if _, err := s.Put(ctx, r, t0.Add(time.Minute)); err != nil {
			t.Fatalf("Put %d with a used record in the store: %v", i, err)
		}
	}
	r := record(id(13), "d13")
	r.Expires = t0.Add(2 * time.Minute)
	if _, err := s.Put(ctx, r, t0.Add(time.Minute)); !errors.Is(err, policy.ErrApprovalStoreFull) {
		t.Errorf("Put into a store full of pending requests = %v", err)
	}
	big := record(id(10), "d10")
	big.Reason = strings.Repeat("x", policy.MaxApprovalRecord)
	if _, err := s.Put(ctx, big, t0.Add(time.Minute)); !errors.Is(err, policy.ErrApprovalTooLarge) {
		t.Errorf("Put of a large record = %v, want ErrApprovalTooLarge", err)
	}
	long := policy.ApprovalAnswer{By: "ann", Note: strings.Repeat("n", policy.MaxApprovalNote+1)}
	if _, err := s.Answer(ctx, id(11), long, t0.Add(time.Minute)); !errors.Is(err, policy.ErrApprovalTooLarge) {
		t.Errorf("Answer with a long note = %v, want ErrApprovalTooLarge", err)
	}
	if r, err := s.Get(ctx, id(11), t0.Add(time.Minute)); err != nil || r.State != policy.ApprovalPending {
		t.Errorf("after the refused answer: %+v, %v; want it still pending", r, err)
	}
}

// TestFileApprovalStoreCorrupt: a store file that cannot be read as one
// makes every method fail with ErrApprovalStoreCorrupt.
func TestFileApprovalStoreCorrupt(t *testing.T) {
	ctx := context.Background()
	for name, content := range map[string]string{
		"not json":      `{"version":1,"records":[`,
		"other version": `{"version":2,"records":[]}`,
		"bad id":        `{"version":1,"records":[{"id":"../x","state":"pending","digest":"d","expires":"2030-01-01T00:00:00Z"}]}`,
		"same id twice": `{"version":1,"records":[{"id":"000000000000000000000001","state":"pending","digest":"d","expires":"2030-01-01T00:00:00Z"},{"id":"000000000000000000000001","state":"approved","digest":"e","expires":"2030-01-01T00:00:00Z"}]}`,
		"bad state":     `{"version":1,"records":[{"id":"000000000000000000000001","state":"used-up","digest":"d","expires":"2030-01-01T00:00:00Z"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := &policy.FileApprovalStore{Dir: t.TempDir()}
			if err := os.WriteFile(s.File(), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err1 := s.Put(ctx, record(id(1), "d1"), t0)
			_, err2 := s.Get(ctx, id(1), t0)
			_, err3 := s.Pending(ctx, t0)
			_, err4 := s.Answer(ctx, id(1), policy.ApprovalAnswer{Approved: true, By: "ann"}, t0)
			_, _, err5 := s.Consume(ctx, "d", t0)
			for i, err := range []error{err1, err2, err3, err4, err5} {
				if !errors.Is(err, policy.ErrApprovalStoreCorrupt) || !strings.Contains(err.Error(), s.File()) {
					t.Errorf("method %d: %v, want ErrApprovalStoreCorrupt naming the file", i, err)
				}
			}
		})
	}
}

// TestFileApprovalStoreSharedOnce: two stores on one directory, as two
// processes have: an answer given through one is used through the
// other, once.
func TestFileApprovalStoreSharedOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := &policy.FileApprovalStore{Dir: dir}, &policy.FileApprovalStore{Dir: dir}
	if _, err := a.Put(ctx, record(id(1), "d1"), t0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Answer(ctx, id(1), policy.ApprovalAnswer{Approved: true, By: "ann"}, t0); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.Consume(ctx, "d1", t0); !ok || err != nil {
		t.Fatalf("Consume through the other store = %v, %v", ok, err)
	}
	if _, ok, _ := b.Consume(ctx, "d1", t0); ok {
		t.Error("the answer was used twice, once through each store")
	}
	// A used record still tells who answered.
	if r, err := b.Get(ctx, id(1), t0); err != nil || r.AnsweredBy != "ann" || r.Used.IsZero() {
		t.Errorf("Get of the used record = %+v, %v", r, err)
	}
}

const childEnv = "POLICY_APPROVAL_CHILD_DIR"

// TestFileApprovalStoreProcesses: processes racing to use one answer use
// it once. Each child process consumes the digest once and prints what
// it got.
func TestFileApprovalStoreProcesses(t *testing.T) {
	if dir := os.Getenv(childEnv); dir != "" {
		_, ok, err := (&policy.FileApprovalStore{Dir: dir}).Consume(context.Background(), "d1", t0)
		fmt.Printf("consumed=%v err=%v\n", ok, err)
		return
	}
	ctx := context.Background()
	dir := t.TempDir()
	s := &policy.FileApprovalStore{Dir: dir}
	if _, err := s.Put(ctx, record(id(1), "d1"), t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Answer(ctx, id(1), policy.ApprovalAnswer{Approved: true, By: "ann"}, t0); err != nil {
		t.Fatal(err)
	}
	const n = 4
	outs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestFileApprovalStoreProcesses$")
			cmd.Env = append(os.Environ(), childEnv+"="+dir)
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("child %d: %v", i, err)
			}
			outs[i] = string(out)
		})
	}
	wg.Wait()
	got := 0
	for i, out := range outs {
		switch {
		case strings.Contains(out, "consumed=true err=<nil>"):
			got++
		case !strings.Contains(out, "consumed=false err=<nil>"):
			t.Errorf("child %d printed %q", i, out)
		}
	}
	if got != 1 {
		t.Errorf("%d processes used the answer, want 1: %q", got, outs)
	}
	if _, err := os.Stat(filepath.Join(dir, "approvals.lock")); err != nil {
		t.Errorf("no lock file: %v", err)
	}
}

// TestDefaultApprovalDir: the store lives under $XDG_STATE_HOME.
func TestDefaultApprovalDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	if d, err := policy.DefaultApprovalDir(); err != nil || d != filepath.Join("/state", "clawtool", "approvals") {
		t.Errorf("DefaultApprovalDir = %q, %v", d, err)
	}
}

// TestFileApprovalStoreRefusesSharedDir: a directory other users may
// write, or a store file that is a link, is refused rather than used.
func TestFileApprovalStoreRefusesSharedDir(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := &policy.FileApprovalStore{Dir: dir}
	if _, err := s.Put(ctx, record(id(1), "d1"), t0); err != nil {
		t.Fatalf("control: %v", err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pending(ctx, t0); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Errorf("a directory others may write: %v", err)
	}
	os.Chmod(dir, 0o700)
	elsewhere := filepath.Join(t.TempDir(), "approvals.json")
	if err := os.Rename(s.File(), elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, s.File()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pending(ctx, t0); !errors.Is(err, policy.ErrApprovalStoreCorrupt) {
		t.Errorf("a store file that is a link: %v", err)
	}
}
