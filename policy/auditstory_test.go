package policy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

// storyLine is what a test compares of one record of a story.
func storyLine(r policy.AuditRecord) string {
	s := r.Event + " " + r.Principal + " " + string(r.Effect) + r.Outcome
	if r.Approved {
		s += " approved"
	}
	if r.AnsweredBy != "" {
		s += fmt.Sprintf(" by %s (%s) at %v", r.AnsweredBy, r.Note, !r.Answered.IsZero())
	}
	return s
}

// TestAuditStory: the chain links an approval's request, its answer (who,
// when, the note) and the call it let run, and AuditStory tells that
// story by the approval's id or by the call's digest; the other calls
// in the log are not in it.
func TestAuditStory(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	worker := newApprovalProcess(t, approvalPolicies, &policy.FileApprovalStore{Dir: dir}, policy.WithAudit(policy.NewAuditLog(&log)))
	cli := newApprovalProcess(t, approvalPolicies, &policy.FileApprovalStore{Dir: dir})
	const del, other = `{"op":"delete","key":"notes/a"}`, `{"op":"delete","key":"notes/b"}`
	ctx := policy.WithPrincipal(context.Background(), ann)

	req := wantRequest(t, worker.call(otto, del))
	denied := wantRequest(t, worker.call(otto, other))
	worker.call(otto, `{"op":"get","key":"notes/a"}`) // denied by default: in neither story
	if _, err := cli.a.Answer(ctx, req.ID, true, "fine once"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.a.Answer(ctx, denied.ID, false, "not on weekends"); err != nil {
		t.Fatal(err)
	}
	if res := worker.call(otto, del); res.IsError {
		t.Fatalf("approved call: %+v", res)
	}
	worker.call(otto, other)
	wantRequest(t, worker.call(otto, del)) // asks again: a new request, not in the first story

	tests := []struct {
		name, id string
		want     []string
	}{
		{"approved, by approval id", req.ID, []string{
			"decision otto ask",
			"decision otto allow approved by ann (fine once) at true",
			"outcome otto ok",
		}},
		{"denied, by approval id", denied.ID, []string{
			"decision otto ask",
			"decision otto deny by ann (not on weekends) at true",
		}},
		{"by call digest: every decision of the call", req.Digest, []string{
			"decision otto ask",
			"decision otto allow approved by ann (fine once) at true",
			"outcome otto ok",
			"decision otto ask",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			story, err := policy.AuditStory(bytes.NewReader(log.Bytes()), tt.id)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range story {
				got = append(got, storyLine(r))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("story:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if tt.id != req.Digest {
				for _, r := range story[:len(story)-1] {
					if r.Approval != tt.id {
						t.Errorf("record %d names approval %q", r.Seq, r.Approval)
					}
				}
			}
		})
	}

	// A story is not told from a broken chain.
	tampered := bytes.Replace(log.Bytes(), []byte(`"answered_by":"ann"`), []byte(`"answered_by":"eve"`), 1)
	if _, err := policy.AuditStory(bytes.NewReader(tampered), req.ID); !errors.Is(err, policy.ErrAuditBroken) {
		t.Errorf("tampered log: %v, want ErrAuditBroken", err)
	}
	for _, bad := range []string{"", "x", strings.Repeat("A", 24), req.ID + "0"} {
		if _, err := policy.AuditStory(bytes.NewReader(log.Bytes()), bad); err == nil {
			t.Errorf("id %q accepted", bad)
		}
	}
}
