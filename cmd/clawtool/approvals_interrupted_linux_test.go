package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

// TestApprovalsInterrupted: an approval used by a process that died
// before its call was recorded as run is listed and shown as
// interrupted, and a person the policies let approve may answer it
// again, once. (The claim names this process's id with another start
// time: a process that ended, its id given to this one.)
func TestApprovalsInterrupted(t *testing.T) {
	s := seedApprovals(t)
	const otto1, pol = "000000000000000000000001", "testdata/policy/approvals.cedar"
	clawtool := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	if code, out := clawtool("approvals", "approve", otto1, "--policy", pol, "--as", "cid:admin"); code != exitOK {
		t.Fatalf("approve: %d %s", code, out)
	}
	rec, err := s.Get(context.Background(), otto1, approvalsNow())
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if _, ok, err := s.Claim(context.Background(), rec.Digest, policy.ApprovalClaim{Host: host, PID: os.Getpid(), Start: "an earlier process"}, approvalsNow()); !ok || err != nil {
		t.Fatalf("Claim: %v %v", ok, err)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"approvals", "list"}, exitOK, otto1 + "  otto calls kv, INTERRUPTED: approved by cid"},
		{[]string{"approvals", "list", "--json"}, exitOK, `"interrupted": true`},
		{[]string{"approvals", "show", otto1}, exitOK, "INTERRUPTED: the process died before recording that the call ran"},
		{[]string{"approvals", "approve", otto1, "--policy", pol, "--as", "bob:operator"}, exitToolError, "not permitted"},
		{[]string{"approvals", "approve", otto1, "--policy", pol, "--as", "ann:admin", "--note", "checked the notes"}, exitOK, "approved " + otto1},
		{[]string{"approvals", "show", otto1}, exitOK, "approved by ann at 2026-03-07T09:00:00Z (answered again after 1 interrupted run(s))"},
		{[]string{"approvals", "approve", otto1, "--policy", pol, "--as", "cid:admin"}, exitToolError, "already answered"},
	} {
		code, out := clawtool(tt.args...)
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("clawtool %s: exit %d, want %d and %q in:\n%s", strings.Join(tt.args, " "), code, tt.code, tt.want, out)
		}
	}
}
