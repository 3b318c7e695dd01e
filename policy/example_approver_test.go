package policy_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// slackApprover is a host's own approval UI, such as a Slack channel or
// a web page: it posts each request where people see it and lets the
// call wait ([policy.ErrApprovalUnavailable]), so the request is kept in
// the store; whoever answers in the UI answers through the store, with
// [policy.Authorizer.Answer], which asks the policies whether they may.
type slackApprover struct {
	posted chan policy.ApprovalRequest // the channel's messages
}

func (s slackApprover) Approve(ctx context.Context, req policy.ApprovalRequest) (bool, error) {
	select {
	case s.posted <- req:
	default: // the UI is behind: the request still waits in the store
	}
	return false, fmt.Errorf("%w: posted to #approvals", policy.ErrApprovalUnavailable)
}

// An Approver for a host with its own UI: the request reaches the UI,
// a person answers it there, and the call made again runs once.
func ExampleApprover_hostUI() {
	const policies = `
@effect("ask") @reason("payments need a second pair of eyes")
permit (principal, action == Action::"call", resource == Tool::"pay");
permit (principal in Role::"finance", action == Action::"approve", resource == Tool::"pay");`
	ui := slackApprover{posted: make(chan policy.ApprovalRequest, 16)}
	a, err := policy.New("pay.cedar", []byte(policies),
		policy.WithApprover(ui), policy.WithApprovalStore(policy.NewMemoryApprovalStore()))
	if err != nil {
		panic(err)
	}
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	reg.Register(tool.Must(tool.New("pay", "Pays an invoice.", func(ctx context.Context, in struct {
		Invoice string `json:"invoice"`
	}) (string, error) {
		return "paid " + in.Invoice, nil
	})))
	bob := policy.WithPrincipal(context.Background(), policy.Principal{ID: "bob"})
	args := json.RawMessage(`{"invoice":"INV-7"}`)

	fmt.Println(reg.Execute(bob, "pay", args).Kind)
	req := <-ui.posted
	fmt.Printf("#approvals: %s asks to call %s with %s\n", req.Principal, req.Tool, req.Args)

	// Eve, in finance, clicks Approve: the UI's handler answers as her.
	eve := policy.WithPrincipal(context.Background(), policy.Principal{ID: "eve", Roles: []string{"finance"}})
	rec, err := a.Answer(eve, req.ID, true, "checked the invoice")
	if err != nil {
		panic(err)
	}
	fmt.Println(rec.State, "by", rec.AnsweredBy)
	fmt.Println(reg.Execute(bob, "pay", args).Output)
	// Output:
	// denied
	// #approvals: bob asks to call pay with {"invoice":"INV-7"}
	// approved by eve
	// paid INV-7
}
