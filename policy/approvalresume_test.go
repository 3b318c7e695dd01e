package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// Answered follows a request through its life: pending (false), answered
// (true), used by its call (ErrApprovalUsed), and a forged id is unknown;
// the refused call's error names the request through PendingApproval.
func TestAnsweredFollowsTheRequest(t *testing.T) {
	const src = `
@effect("ask")
permit (principal, action == Action::"call", resource == Tool::"deploy");
permit (principal in Role::"lead", action == Action::"approve", resource == Tool::"deploy");
`
	a, err := policy.New("p.cedar", []byte(src), policy.WithApprovalStore(&policy.FileApprovalStore{Dir: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	reg.Register(tool.Must(tool.New("deploy", "Deploys.", func(context.Context, struct{}) (string, error) { return "ok", nil })))
	bob := policy.WithPrincipal(context.Background(), policy.Principal{ID: "bob"})
	ann := policy.WithPrincipal(context.Background(), policy.Principal{ID: "ann", Roles: []string{"lead"}})

	out, _ := tool.NewExecutor(reg).Run(bob, []tool.Call{{ID: "1", Name: "deploy", Args: json.RawMessage(`{}`)}})
	var p interface{ PendingApproval() string }
	if !errors.As(out[0].Err, &p) || p.PendingApproval() == "" {
		t.Fatalf("the ask's error names no request: %v", out[0].Err)
	}
	id := p.PendingApproval()
	if ok, err := a.Answered(bob, id); ok || err != nil {
		t.Errorf("pending: Answered = %v, %v; want false, nil", ok, err)
	}
	if _, err := a.Answer(ann, id, true, ""); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Answered(bob, id); !ok || err != nil {
		t.Errorf("approved: Answered = %v, %v; want true, nil", ok, err)
	}
	if res := reg.Execute(bob, "deploy", json.RawMessage(`{}`)); res.IsError {
		t.Fatalf("the approved call was refused: %s", res.Error)
	}
	if _, err := a.Answered(bob, id); !errors.Is(err, policy.ErrApprovalUsed) {
		t.Errorf("used: Answered error = %v, want ErrApprovalUsed", err)
	}
	if _, err := a.Answered(bob, "0123456789abcdef01234567"); !errors.Is(err, policy.ErrUnknownApproval) {
		t.Errorf("forged: Answered error = %v, want ErrUnknownApproval", err)
	}
	// Any other refusal names no request.
	deny := &policy.DeniedError{}
	if deny.PendingApproval() != "" {
		t.Error("a plain refusal names a request")
	}
}
