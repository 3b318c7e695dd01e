package policy_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

// TestApprovalShownArgumentsAreTheCalls: the person deciding is shown the
// arguments the request record holds, while the answer is bound to the
// call by its digest. Whoever may write the store (a NATS bucket's other
// accounts) rewrote a waiting request to show a harmless call (delete
// notes/scratch) in place of the call made (delete notes/a); the person
// approved what they saw, the seal covered the digest and the answer,
// and the other call ran. An approval is used only when the arguments
// and preview the record shows are the call's own, with or without a key.
func TestApprovalShownArgumentsAreTheCalls(t *testing.T) {
	const del = `{"op":"delete","key":"notes/a"}`
	const shown = `{"key":"notes/scratch","op":"delete"}`
	for _, tc := range []struct {
		name    string
		rewrite func(r map[string]any)
		refused bool
	}{
		{"control: the record as the worker wrote it", nil, false},
		{"attack: other arguments and preview shown", func(r map[string]any) {
			r["args"] = base64.StdEncoding.EncodeToString([]byte(shown))
			r["preview"] = policy.Preview([]byte(shown))
		}, true},
		{"attack: another preview shown", func(r map[string]any) { r["preview"] = policy.Preview([]byte(shown)) }, true},
		{"attack: other arguments shown", func(r map[string]any) {
			r["args"] = base64.StdEncoding.EncodeToString([]byte(shown))
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// No key: a file store, or a NATS bucket whose processes hold
			// none (with one, the request's seal refuses the answer
			// first: TestApprovalRequestSealShowsWhatWasAsked).
			var opts []policy.Option
			worker := newApprovalProcess(t, approvalPolicies, &policy.FileApprovalStore{Dir: dir}, opts...)
			req := wantRequest(t, worker.call(otto, del))
			if tc.rewrite != nil {
				tamper(t, dir, tc.rewrite)
			}
			lead := newApprovalProcess(t, approvalPolicies, &policy.FileApprovalStore{Dir: dir}, opts...)
			if _, err := lead.a.Answer(policy.WithPrincipal(t.Context(), ann), req.ID, true, "fine"); err != nil {
				t.Fatal(err)
			}
			res := worker.call(otto, del)
			if !tc.refused {
				if res.IsError || worker.ran.Load() != 1 {
					t.Fatalf("the call: %+v, ran %d times; want it run once", res, worker.ran.Load())
				}
				return
			}
			if !res.IsError || worker.ran.Load() != 0 || !strings.Contains(res.Error, "not the call's") {
				t.Fatalf("the call: %+v, ran %d times; want it refused saying the arguments shown are not the call's", res, worker.ran.Load())
			}
		})
	}
}
