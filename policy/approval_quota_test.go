package policy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// TestApprovalQuotaPerPrincipal: one principal's asking calls may keep
// at most policy.DefaultMaxPendingApprovals requests waiting, so mallory,
// making calls with ever new arguments, cannot fill the store (a memory
// store keeps 10,000 records, a file or NATS store 512) and leave every
// other principal's call refused with "too many requests are waiting".
// Her calls beyond the quota are refused saying so, and ask nothing; a
// call already waiting still gets its request; otto's call, after hers,
// gets a request of its own. The control turns the quota off
// (WithMaxPendingApprovals(-1)): mallory fills the store and otto's call
// is refused.
func TestApprovalQuotaPerPrincipal(t *testing.T) {
	mallory := policy.Principal{ID: "mallory", Roles: []string{"operator"}}
	flood := func(p approvalProcess, n int) tool.Result {
		var last tool.Result
		for i := range n {
			last = p.call(mallory, fmt.Sprintf(`{"op":"delete","key":"junk/%d"}`, i))
		}
		return last
	}

	t.Run("control: no quota", func(t *testing.T) {
		p := newApprovalProcess(t, approvalPolicies, policy.NewMemoryApprovalStore(), policy.WithMaxPendingApprovals(-1))
		flood(p, 10000) // what a memory store keeps
		res := p.call(otto, `{"op":"delete","key":"notes/a"}`)
		if !res.IsError || !strings.Contains(res.Error, "too many requests are waiting") {
			t.Fatalf("otto's call after the flood: %+v, want the store full", res)
		}
	})

	store := policy.NewMemoryApprovalStore()
	p := newApprovalProcess(t, approvalPolicies, store)
	last := flood(p, 10000)
	if !last.IsError || !strings.Contains(last.Error, fmt.Sprintf("%d requests of mallory", policy.DefaultMaxPendingApprovals)) {
		t.Errorf("mallory's call beyond her quota: %+v, want a refusal naming it", last)
	}
	if _, ok := last.Metadata["approval_request"]; ok {
		t.Errorf("mallory's call beyond her quota made a request: %+v", last.Metadata)
	}
	pending, err := store.Pending(context.Background(), time.Now())
	if err != nil || len(pending) != policy.DefaultMaxPendingApprovals {
		t.Errorf("pending after the flood: %d, %v; want %d", len(pending), err, policy.DefaultMaxPendingApprovals)
	}
	// A call already waiting keeps its request.
	again := wantRequest(t, p.call(mallory, `{"op":"delete","key":"junk/0"}`))
	if again.ID != pending[0].ID && !containsID(pending, again.ID) {
		t.Errorf("mallory's first call again got a new request %s", again.ID)
	}
	req := wantRequest(t, p.call(otto, `{"op":"delete","key":"notes/a"}`))
	if req.Principal != "otto" {
		t.Errorf("otto's request: %+v", req)
	}
}

func containsID(rs []policy.ApprovalRecord, id string) bool {
	for _, r := range rs {
		if r.ID == id {
			return true
		}
	}
	return false
}
