package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

func ExampleAuthorizer_Answer() {
	const policies = `
@effect("ask")
permit (principal, action == Action::"call", resource == Tool::"deploy");

@id("leads-approve")
permit (principal in Role::"lead", action == Action::"approve", resource == Tool::"deploy");
`
	dir, _ := os.MkdirTemp("", "approvals-")
	defer os.RemoveAll(dir)
	// Two processes of one machine: the worker that asks, and the one a
	// person answers from. Each has its Authorizer; they share the store.
	newProcess := func() (*policy.Authorizer, *tool.Registry) {
		a, _ := policy.New("deploy.cedar", []byte(policies), policy.WithApprovalStore(&policy.FileApprovalStore{Dir: dir}))
		reg := tool.NewRegistry(tool.WithAuthorizer(a))
		reg.Register(tool.Must(tool.New("deploy", "Deploys a version.",
			func(ctx context.Context, in struct {
				Version string `json:"version"`
			}) (string, error) {
				return "deployed " + in.Version, nil
			})))
		return a, reg
	}
	_, worker := newProcess()
	answerer, _ := newProcess()
	bob := policy.WithPrincipal(context.Background(), policy.Principal{ID: "bob"})
	args := json.RawMessage(`{"version":"1.2.0"}`)

	req := worker.Execute(bob, "deploy", args).Metadata["approval_request"].(policy.ApprovalRequest)
	// bob cannot approve his own call; ann, a lead, can.
	_, err := answerer.Answer(bob, req.ID, true, "")
	fmt.Println(errors.Is(err, policy.ErrNotApprover))
	ann := policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann", Roles: []string{"lead"}})
	if _, err := answerer.Answer(ann, req.ID, true, "go ahead"); err != nil {
		panic(err)
	}
	fmt.Println(worker.Execute(bob, "deploy", args).Output)
	fmt.Println(worker.Execute(bob, "deploy", args).Kind) // used up: it asks again

	// A denial reaches the model with who and why.
	req = worker.Execute(bob, "deploy", json.RawMessage(`{"version":"2.0.0"}`)).Metadata["approval_request"].(policy.ApprovalRequest)
	answerer.Answer(ann, req.ID, false, "not on a Friday")
	fmt.Println(worker.Execute(bob, "deploy", json.RawMessage(`{"version":"2.0.0"}`)).Error)
	// Output:
	// true
	// deployed 1.2.0
	// denied
	// call to tool "deploy" was denied by ann: not on a Friday; do not retry it unchanged
}
