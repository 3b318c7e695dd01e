package inspector

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool"
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
			store := policy.NewMemoryApprovalStore()
			worker, err := policy.New("deploys.cedar", []byte(approvalPolicies), policy.WithApprovalStore(store), policy.WithApprovalKey(key))
			if err != nil {
				t.Fatal(err)
			}
			page, err := policy.New("deploys.cedar", []byte(approvalPolicies), append([]policy.Option{policy.WithApprovalStore(store)}, c.inspector...)...)
			if err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int64
			reg := tool.NewRegistry(tool.WithAuthorizer(worker))
			reg.Register(tool.Must(tool.New("deploy", "Deploys a version.", func(ctx context.Context, in struct {
				Version string `json:"version"`
			}) (string, error) {
				runs.Add(1)
				return "deployed " + in.Version, nil
			})))
			bob := policy.WithPrincipal(context.Background(), policy.Principal{ID: "bob"})
			call := func() tool.Result { return reg.Execute(bob, "deploy", json.RawMessage(`{"version":"2.0.0"}`)) }
			req, ok := call().Metadata["approval_request"].(policy.ApprovalRequest)
			if !ok {
				t.Fatal("the call did not ask")
			}
			h := New(reg, WithToken(testToken), WithApprovals(NewApprovals(store, page, policy.Principal{ID: "ann", Roles: []string{"lead"}})))
			if resp := do(h, "POST", "/api/approvals/"+req.ID+"/approve", `{}`, apiHeaders); resp.Code != http.StatusOK {
				t.Fatalf("approve = %d %s", resp.Code, resp.Body)
			}
			res := call()
			if c.runs {
				if res.IsError || runs.Load() != 1 {
					t.Fatalf("the call after the page's sealed answer: %+v, %d runs", res, runs.Load())
				}
				return
			}
			if !res.IsError || runs.Load() != 0 || !strings.Contains(res.Error, "seal") {
				t.Fatalf("control: the call after an unsealed answer: %+v, %d runs; want it refused for want of a seal", res, runs.Load())
			}
		})
	}
}
