package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

// failingWriter accepts ok writes and fails every later one, as a full
// disk or a closed file does.
type failingWriter struct {
	ok  int
	buf bytes.Buffer
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.ok == 0 {
		return 0, errors.New("no space left on device")
	}
	w.ok--
	return w.buf.Write(p)
}

// A call whose decision the audit log cannot record does not run: the
// log is the proof of what ran, so an unrecorded call is refused (fail
// closed). The control: the same call runs when the log accepts the
// record.
func TestAuditFailureRefusesTheCall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ok      int // writes the log accepts
		wantRan bool
	}{
		{"control: the log records", 100, true},
		{"the log fails", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &failingWriter{ok: tc.ok}
			a := newTestAuthorizer(t, policy.WithAudit(policy.NewAuditLog(w)))
			reg, ran := testRegistry(t, a)
			res := reg.Execute(policy.WithPrincipal(context.Background(), bob), "read_file", json.RawMessage(`{"path":"docs/a"}`))
			v, _ := ran.Load("read_file")
			didRun := v != nil && v.(*atomic.Int64).Load() > 0
			if didRun != tc.wantRan {
				t.Fatalf("ran = %v, want %v; result %+v", didRun, tc.wantRan, res)
			}
			if !tc.wantRan {
				if !res.IsError || !strings.Contains(res.Error, "audit log could not record") {
					t.Errorf("result = %+v, want a refusal that names the audit log", res)
				}
				if strings.Contains(res.Error, "no space") {
					t.Errorf("the model reads the host's error: %q", res.Error)
				}
			}
		})
	}
}

// flakyWriter fails its first write, having written half of it, and
// accepts the others.
type flakyWriter struct {
	failed bool
	buf    bytes.Buffer
}

func (w *flakyWriter) Write(p []byte) (int, error) {
	if !w.failed {
		w.failed = true
		w.buf.Write(p[:len(p)/2])
		return len(p) / 2, errors.New("i/o error")
	}
	return w.buf.Write(p)
}

// A log whose write failed may hold part of a line: it takes no more
// records, so every later call is refused too, and what it holds stops
// at the cut (which VerifyAudit reports).
func TestAuditFailureIsSticky(t *testing.T) {
	w := &flakyWriter{}
	a := newTestAuthorizer(t, policy.WithAudit(policy.NewAuditLog(w)))
	reg, _ := testRegistry(t, a)
	ctx := policy.WithPrincipal(context.Background(), bob)
	for i := range 3 {
		res := reg.Execute(ctx, "read_file", json.RawMessage(`{"path":"docs/a"}`))
		if !res.IsError || !strings.Contains(res.Error, "audit log could not record") {
			t.Fatalf("call %d: %+v, want refused", i, res)
		}
	}
	if _, err := policy.VerifyAudit(bytes.NewReader(w.buf.Bytes())); !errors.Is(err, policy.ErrAuditBroken) {
		t.Errorf("a log cut mid-line verifies: %v (%q)", err, w.buf.String())
	}
}
