package policy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/policy"
)

// TestApprovalWholeArguments: a call asks for approval with a long
// argument whose middle holds what matters. The person reads the preview,
// which cuts the value (control: the hidden part is not in it), and the
// file store kept nothing else, so no one could read what the approval
// lets run. Every store now keeps the whole arguments, read back by
// another process's handle; a call whose arguments pass
// policy.MaxApprovalArgs is not put to a person: it is denied saying so,
// and no request is kept.
func TestApprovalWholeArguments(t *testing.T) {
	hidden := "/../../../etc/sudoers.d/mallory"
	key := strings.Repeat("notes/", 100) + hidden + strings.Repeat("/x", 300)
	args := `{"op":"delete","key":"` + key + `"}`
	mem := policy.NewMemoryApprovalStore()
	dir := t.TempDir()
	for _, tt := range []struct {
		name       string
		one, other policy.ApprovalStore
	}{
		{"memory", mem, mem},
		{"file", &policy.FileApprovalStore{Dir: dir}, &policy.FileApprovalStore{Dir: dir}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newApprovalProcess(t, approvalPolicies, tt.one)
			req := wantRequest(t, p.call(otto, args))
			rec, err := tt.other.Get(context.Background(), req.ID, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(rec.Preview, hidden) {
				t.Fatalf("control: the preview shows the hidden part: %s", rec.Preview)
			}
			var got, want any
			if json.Unmarshal(rec.Args, &got) != nil || json.Unmarshal([]byte(args), &want) != nil || !strings.Contains(string(rec.Args), hidden) {
				t.Errorf("kept args = %.100q (%d bytes), want the whole call", rec.Args, len(rec.Args))
			}
			if pr, ok := p.a.Pending(req.ID); !ok || string(pr.Args) != string(rec.Args) {
				t.Errorf("Authorizer.Pending args = %d bytes, %v; want the whole arguments", len(pr.Args), ok)
			}

			huge := `{"op":"delete","key":"` + strings.Repeat("k", policy.MaxApprovalArgs) + `"}`
			res := p.call(otto, huge)
			if !res.IsError || !strings.Contains(res.Error, "MaxApprovalArgs") || !strings.Contains(res.Error, "make it with smaller arguments") {
				t.Errorf("a call with %d bytes of arguments: %+v, want a denial naming MaxApprovalArgs", len(huge), res)
			}
			if _, ok := res.Metadata["approval_request"]; ok {
				t.Errorf("the call past MaxApprovalArgs made a request: %+v", res.Metadata)
			}
			if pending, err := tt.other.Pending(context.Background(), time.Now()); err != nil || len(pending) != 1 {
				t.Errorf("pending after the large call: %d, %v; want the first request only", len(pending), err)
			}
			if p.ran.Load() != 0 {
				t.Errorf("%d calls ran", p.ran.Load())
			}
		})
	}
}

// TestApprovalFileOldRecords: a store file written before stores kept
// the whole arguments (its records have a preview and no args) still
// works: its requests are listed and answered, with no arguments beyond
// the preview, and a new request beside them keeps its own.
func TestApprovalFileOldRecords(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC().Truncate(time.Second)
	old := `{"version":1,"records":[{"id":"0123456789abcdef01234567","state":"pending","principal":"otto","tool":"kv",` +
		`"annotations":{},"digest":"sha256:old","preview":"{\"key\":\"notes/a\",\"op\":\"delete\"}","policies":["operator-delete"],` +
		`"reason":"deletes need a person","created":"` + now.Format(time.RFC3339) + `","expires":"` + now.Add(time.Hour).Format(time.RFC3339) + `","ttl":3600000000000}]}`
	if err := os.WriteFile(filepath.Join(dir, "approvals.json"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	store := &policy.FileApprovalStore{Dir: dir}
	ctx := context.Background()
	pending, err := store.Pending(ctx, now)
	if err != nil || len(pending) != 1 || pending[0].Args != nil || pending[0].Preview == "" {
		t.Fatalf("old record: %+v, %v; want it pending with its preview and no args", pending, err)
	}
	p := newApprovalProcess(t, approvalPolicies, store)
	req := wantRequest(t, p.call(otto, `{"op":"delete","key":"notes/b"}`))
	if r, err := store.Get(ctx, req.ID, time.Now()); err != nil || !strings.Contains(string(r.Args), "notes/b") {
		t.Errorf("new record beside the old: %d bytes of args, %v", len(r.Args), err)
	}
	if r, err := store.Answer(ctx, "0123456789abcdef01234567", policy.ApprovalAnswer{Approved: false, By: "carol"}, now); err != nil || r.State != policy.ApprovalDenied {
		t.Errorf("answering the old record: %+v, %v", r, err)
	}
}
