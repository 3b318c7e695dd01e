package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

const approvalPolicies = `
@id("operator-delete") @effect("ask") @reason("deletes need a person")
permit (principal in Role::"operator", action == Action::"call", resource == Tool::"kv")
when { context.args.op == "delete" };

@id("admins-approve")
permit (principal in Role::"admin", action == Action::"approve", resource == Tool::"kv");
`

type kvArgs struct {
	Op  string `json:"op"`
	Key string `json:"key"`
}

var (
	ann  = policy.Principal{ID: "ann", Roles: []string{"admin", "operator"}}
	otto = policy.Principal{ID: "otto", Roles: []string{"operator"}}
)

// approvalProcess is what one process has: an Authorizer on a store, a
// registry with a kv tool, and a count of the tool's runs.
type approvalProcess struct {
	a   *policy.Authorizer
	reg *tool.Registry
	ran *atomic.Int64
}

func newApprovalProcess(t *testing.T, src string, store policy.ApprovalStore, opts ...policy.Option) approvalProcess {
	t.Helper()
	a, err := policy.New("approvals.cedar", []byte(src), append([]policy.Option{policy.WithApprovalStore(store)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ran := new(atomic.Int64)
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	if err := reg.Register(tool.Must(tool.New("kv", "Keeps notes.", func(ctx context.Context, in kvArgs) (string, error) {
		ran.Add(1)
		return "done", nil
	}))); err != nil {
		t.Fatal(err)
	}
	return approvalProcess{a, reg, ran}
}

func (p approvalProcess) call(who policy.Principal, args string) tool.Result {
	return p.reg.Execute(policy.WithPrincipal(context.Background(), who), "kv", json.RawMessage(args))
}

func wantRequest(t *testing.T, res tool.Result) policy.ApprovalRequest {
	t.Helper()
	req, ok := res.Metadata["approval_request"].(policy.ApprovalRequest)
	if res.Kind != tool.KindDenied || !ok {
		t.Fatalf("result = %+v, want an approval request", res)
	}
	return req
}

// TestApprovalAcrossProcesses: a call asks in one process, a person
// answers in another, and the call then runs exactly once in a third
// (the first, restarted); a replay asks again.
func TestApprovalAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	worker := newApprovalProcess(t, approvalPolicies, &policy.FileApprovalStore{Dir: dir})
	cli := newApprovalProcess(t, approvalPolicies, &policy.FileApprovalStore{Dir: dir})
	const del = `{"op":"delete","key":"notes/a"}`

	req := wantRequest(t, worker.call(otto, del))
	// The same call while it waits is the same request.
	if again := wantRequest(t, worker.call(otto, del)); again.ID != req.ID {
		t.Errorf("a second ask made request %s, want %s", again.ID, req.ID)
	}
	pending, err := (&policy.FileApprovalStore{Dir: dir}).Pending(context.Background(), time.Now())
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending = %+v, %v", pending, err)
	}
	if p := pending[0]; p.ID != req.ID || p.Principal != "otto" || p.Tool != "kv" || p.Preview != `{"key":"notes/a","op":"delete"}` ||
		p.Reason != "deletes need a person" || len(p.Policies) != 1 || p.Policies[0] != "operator-delete" || p.Digest != req.Digest {
		t.Errorf("pending record = %+v", p)
	}
	ctx := policy.WithPrincipal(context.Background(), ann)
	if _, err := cli.a.Answer(ctx, req.ID, true, "fine"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.a.Answer(ctx, req.ID, false, "changed my mind"); !errors.Is(err, policy.ErrApprovalAnswered) {
		t.Errorf("second answer = %v, want ErrApprovalAnswered", err)
	}
	// Another call, or the same call by another principal, cannot use it.
	wantRequest(t, worker.call(otto, `{"op":"delete","key":"notes/b"}`))
	restarted := newApprovalProcess(t, approvalPolicies, &policy.FileApprovalStore{Dir: dir})
	if res := restarted.call(otto, del); res.IsError {
		t.Fatalf("approved call: %+v", res)
	}
	if res := worker.call(otto, del); res.Kind != tool.KindDenied {
		t.Errorf("replay in the other process: %+v", res)
	}
	wantRequest(t, restarted.call(otto, del))
	if n := worker.ran.Load() + restarted.ran.Load(); n != 1 {
		t.Errorf("the approved call ran %d times, want 1", n)
	}
}

// TestApprovalDenied: a denied call is told who denied it and why, once;
// the tool does not run.
func TestApprovalDenied(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			p := newApprovalProcess(t, approvalPolicies, mk())
			const del = `{"op":"delete","key":"notes/a"}`
			req := wantRequest(t, p.call(otto, del))
			if _, err := p.a.Answer(policy.WithPrincipal(context.Background(), ann), req.ID, false, "not on weekends"); err != nil {
				t.Fatal(err)
			}
			res := p.call(otto, del)
			if res.Kind != tool.KindDenied || !strings.Contains(res.Error, `call to tool "kv" was denied by ann: not on weekends`) {
				t.Errorf("denied call = %+v", res)
			}
			if next := wantRequest(t, p.call(otto, del)); next.ID == req.ID {
				t.Error("the denial was reported twice")
			}
			if p.ran.Load() != 0 {
				t.Errorf("a denied call ran")
			}
		})
	}
}

// TestMayAnswer: who may answer a request is what the policies say of
// the approve (or approveOwn) action, and only a permit naming it
// permits.
func TestMayAnswer(t *testing.T) {
	const ask = `@id("ask") @effect("ask") permit (principal, action == Action::"call", resource == Tool::"kv");` + "\n"
	rec := policy.ApprovalRecord{ID: "000000000000000000000001", Principal: "otto", Tool: "kv", Digest: "d"}
	for _, tt := range []struct {
		name, src string
		who       *policy.Principal
		own       bool // the request is who's own
		want      string
	}{
		{"admin approves", ask + `permit (principal in Role::"admin", action == Action::"approve", resource == Tool::"kv");`, &ann, false, ""},
		{"in a list", ask + `permit (principal in Role::"admin", action in [Action::"approve", Action::"approveOwn"], resource);`, &ann, false, ""},
		{"no approve policy", ask, &ann, false, "no permit names"},
		{"another role", ask + `permit (principal in Role::"admin", action == Action::"approve", resource);`, &otto, false, "no permit names"},
		{"own call refused", ask + `permit (principal in Role::"admin", action == Action::"approve", resource);`, &ann, true, "no permit names Action::\"approveOwn\""},
		{"own call permitted", ask + `permit (principal == User::"ann", action == Action::"approveOwn", resource);`, &ann, true, ""},
		{"any action is not approve", ask + `permit (principal, action, resource);`, &ann, false, "no permit names"},
		{"asking permit is not approve", ask + `@effect("ask") permit (principal, action == Action::"approve", resource);`, &ann, false, "no permit names"},
		{"forbid wins", ask + `permit (principal in Role::"admin", action == Action::"approve", resource);
			@id("not-kv") @reason("kv needs two people") forbid (principal, action == Action::"approve", resource == Tool::"kv") when { context.requester == "otto" };`, &ann, false, "forbidden by policy not-kv: kv needs two people"},
		{"a failing policy refuses", ask + `permit (principal in Role::"admin", action == Action::"approve", resource);
			@id("reads-args") forbid (principal, action == Action::"approve", resource) when { context.args.key == "x" };`, &ann, false, "policy reads-args could not be evaluated"},
		{"a policy for any action does not decide", ask + `permit (principal in Role::"admin", action == Action::"approve", resource);
			forbid (principal, action, resource) when { context.args.key == "x" };`, &ann, false, ""},
		{"anonymous", ask + `permit (principal, action == Action::"approve", resource);`, nil, false, "anonymous"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := policy.New("p.cedar", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			r := rec
			if tt.who != nil {
				ctx = policy.WithPrincipal(ctx, *tt.who)
				if tt.own {
					r.Principal = tt.who.ID
				}
			}
			err = a.MayAnswer(ctx, r)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (!errors.Is(err, policy.ErrNotApprover) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("MayAnswer = %v, want ErrNotApprover saying %q", err, tt.want)
			}
		})
	}
}

// TestAnswerRefusals: a forged, malformed, expired or unpermitted answer
// is refused and nothing runs.
func TestAnswerRefusals(t *testing.T) {
	now := t0
	p := newApprovalProcess(t, approvalPolicies, &policy.FileApprovalStore{Dir: t.TempDir()},
		policy.WithClock(func() time.Time { return now }), policy.WithApprovalTTL(time.Minute))
	const del = `{"op":"delete","key":"notes/a"}`
	req := wantRequest(t, p.call(otto, del))
	asAnn := policy.WithPrincipal(context.Background(), ann)
	for _, bad := range []string{"000000000000000000000000", "../approvals.json", req.ID + " "} {
		if _, err := p.a.Answer(asAnn, bad, true, ""); !errors.Is(err, policy.ErrUnknownApproval) {
			t.Errorf("Answer(%q) = %v, want ErrUnknownApproval", bad, err)
		}
	}
	// The requester answers its own call: refused.
	if _, err := p.a.Answer(policy.WithPrincipal(context.Background(), otto), req.ID, true, ""); !errors.Is(err, policy.ErrNotApprover) {
		t.Errorf("self-approval = %v, want ErrNotApprover", err)
	}
	if p.ran.Load() != 0 {
		t.Fatal("ran without an approval")
	}
	now = now.Add(time.Minute)
	if _, err := p.a.Answer(asAnn, req.ID, true, ""); !errors.Is(err, policy.ErrExpiredApproval) && !errors.Is(err, policy.ErrUnknownApproval) {
		t.Errorf("late answer = %v, want it refused as expired", err)
	}
	// An approval used after it expired: the call asks again.
	req = wantRequest(t, p.call(otto, del))
	if _, err := p.a.Answer(asAnn, req.ID, true, ""); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	wantRequest(t, p.call(otto, del))
	if p.ran.Load() != 0 {
		t.Errorf("an expired approval ran the call")
	}
}

// TestAskFailsClosedOnStore: a full or corrupt store refuses the call
// that needs it, saying why; the control, a sound store, makes a
// request.
func TestAskFailsClosedOnStore(t *testing.T) {
	const del = `{"op":"delete","key":"notes/a"}`
	sound := newApprovalProcess(t, approvalPolicies, &policy.FileApprovalStore{Dir: t.TempDir()})
	wantRequest(t, sound.call(otto, del))

	corrupt := &policy.FileApprovalStore{Dir: t.TempDir()}
	if err := os.WriteFile(corrupt.File(), []byte("{oops"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := record(id(1), "other")
	r.Expires = time.Now().Add(time.Hour)
	full := &policy.FileApprovalStore{Dir: t.TempDir(), Max: 1}
	if _, err := full.Put(context.Background(), r, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		store policy.ApprovalStore
		want  string
	}{
		{"corrupt", corrupt, "approval store failed, so the call was refused: approvals: " + corrupt.File() + ": approval store is corrupt"},
		{"full", full, "too many requests are waiting"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newApprovalProcess(t, approvalPolicies, tt.store)
			res := p.call(otto, del)
			if res.Kind != tool.KindDenied || !strings.Contains(res.Error, tt.want) || res.Metadata["approval_request"] != nil {
				t.Errorf("result = %+v, want a refusal saying %q", res, tt.want)
			}
			if p.ran.Load() != 0 {
				t.Error("the call ran")
			}
		})
	}
}
