package inspector

import (
	"net/http"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

// TestApprovalsAnsweredSealed: where approvals are sealed with a key
// (policy.WithApprovalKey: a NATS bucket under --principal-key), an answer
// given in the page is sealed by the inspector's Authorizer, so a worker
// holding the key uses it (clawtool inspect --nats URL --principal-key
// FILE gives its Authorizer the key). The control: an inspector whose
// Authorizer lacks the key answers unsealed, and the worker refuses the
// answer.
func TestApprovalsAnsweredSealed(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	for _, c := range []struct {
		name      string
		inspector []policy.Option
		runs      bool
	}{
		{"the inspector holds the key", []policy.Option{policy.WithApprovalKey(key)}, true},
		{"control: it does not", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newApprovalWorld(t, policy.WithApprovalKey(key)) // the worker's Authorizer
			page, err := policy.New("deploys.cedar", []byte(approvalPolicies), append([]policy.Option{policy.WithApprovalStore(w.store)}, c.inspector...)...)
			if err != nil {
				t.Fatal(err)
			}
			id, _ := w.ask(t, "2.0.0")
			if id == "" {
				t.Fatal("the call did not ask")
			}
			h := New(w.reg, WithToken(testToken), WithApprovals(NewApprovals(w.store, page, policy.Principal{ID: "ann", Roles: []string{"lead"}})))
			if resp := do(h, "POST", "/api/approvals/"+id+"/approve", `{}`, apiHeaders); resp.Code != http.StatusOK {
				t.Fatalf("approve = %d %s", resp.Code, resp.Body)
			}
			_, res := w.ask(t, "2.0.0")
			if c.runs {
				if res.IsError || w.runs.Load() != 1 {
					t.Fatalf("the call after the page's sealed answer: %+v, %d runs", res, w.runs.Load())
				}
				return
			}
			if !res.IsError || w.runs.Load() != 0 || !strings.Contains(res.Error, "seal") {
				t.Fatalf("control: the call after an unsealed answer: %+v, %d runs; want it refused for want of a seal", res, w.runs.Load())
			}
		})
	}
}
