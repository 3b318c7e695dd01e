package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/internal/golden"
	"github.com/miniopenclaw/tool/policy"
)

// seedApprovals writes a store with two pending requests, of otto and
// of ann, into a fresh state directory, and fixes the command's clock.
func seedApprovals(t *testing.T) *policy.FileApprovalStore {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	now := time.Date(2026, 3, 7, 9, 0, 0, 0, time.UTC) // a Saturday
	old := approvalsNow
	approvalsNow = func() time.Time { return now }
	t.Cleanup(func() { approvalsNow = old })
	dir, err := policy.DefaultApprovalDir()
	if err != nil {
		t.Fatal(err)
	}
	s := &policy.FileApprovalStore{Dir: dir}
	for i, who := range []string{"otto", "ann"} {
		key := fmt.Sprintf("notes/%c", 'a'+i)
		_, err := s.Put(context.Background(), policy.ApprovalRecord{
			ID: fmt.Sprintf("%024x", i+1), Principal: who, Tool: "kv", Digest: fmt.Sprintf("%064x", i+1),
			Preview: `{"key":"` + key + `","op":"delete"}`, Policies: []string{"operator-notes-delete"},
			Reason: "deleting a note needs a person's approval", Created: now.Add(-time.Minute),
			Expires: now.Add(9 * time.Minute), TTL: 10 * time.Minute,
		}, now)
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestApprovalsCLI runs clawtool approvals, in order, on one store and
// compares what it prints, and its exit status, with golden files in
// testdata/cli (go test -update rewrites them).
func TestApprovalsCLI(t *testing.T) {
	s := seedApprovals(t)
	const (
		otto1 = "000000000000000000000001"
		ann2  = "000000000000000000000002"
		pol   = "testdata/policy/approvals.cedar"
	)
	for _, tt := range []struct {
		name string
		args []string
		code int
	}{
		{"approvals_help", []string{"approvals", "-h"}, exitOK},
		{"approvals_no_args", []string{"approvals"}, exitUsage},
		{"approvals_unknown", []string{"approvals", "grant"}, exitUsage},
		{"approvals_approve_help", []string{"approvals", "approve", "-h"}, exitOK},
		{"approvals_list", []string{"approvals", "list"}, exitOK},
		{"approvals_list_json", []string{"approvals", "list", "--json"}, exitOK},
		{"approvals_show", []string{"approvals", "show", otto1}, exitOK},
		{"approvals_show_forged", []string{"approvals", "show", "0000000000000000000000ff"}, exitToolError},
		{"approvals_show_malformed", []string{"approvals", "show", "../approvals.json"}, exitToolError},
		{"approvals_approve_no_policy", []string{"approvals", "approve", otto1}, exitUsage},
		{"approvals_approve_own_refused", []string{"approvals", "approve", otto1, "--policy", pol, "--as", "otto:operator,admin"}, exitToolError},
		{"approvals_approve_not_admin", []string{"approvals", "approve", otto1, "--policy", pol, "--as", "bob:operator"}, exitToolError},
		{"approvals_approve", []string{"approvals", "approve", otto1, "--policy", pol, "--as", "cid:admin", "--note", "fine"}, exitOK},
		{"approvals_approve_again", []string{"approvals", "deny", otto1, "--policy", pol, "--as", "cid:admin"}, exitToolError},
		{"approvals_show_approved", []string{"approvals", "show", otto1}, exitOK},
		{"approvals_show_approved_json", []string{"approvals", "show", otto1, "--json"}, exitOK},
		{"approvals_deny_own_json", []string{"approvals", "deny", ann2, "--policy", pol, "--as", "ann", "--note", "not on weekends", "--json"}, exitOK},
		{"approvals_list_empty", []string{"approvals", "list"}, exitOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("clawtool %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(tt.args, " "), code, tt.code, &stdout, &stderr)
			}
			out := strings.ReplaceAll(fmt.Sprintf("$ clawtool %s\n-- exit %d --\n-- stdout --\n%s-- stderr --\n%s", strings.Join(tt.args, " "), code, &stdout, &stderr), s.Dir, "$STATE")
			golden.File(t, filepath.Join("testdata", "cli", tt.name+".golden"), []byte(out))
		})
	}
}

// TestApprovalsCorruptStore: every subcommand fails on a corrupt store,
// naming the file and how to recover.
func TestApprovalsCorruptStore(t *testing.T) {
	s := seedApprovals(t)
	if err := os.WriteFile(s.File(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"approvals", "list"},
		{"approvals", "show", "000000000000000000000001"},
		{"approvals", "approve", "000000000000000000000001", "--policy", "testdata/policy/approvals.cedar", "--as", "cid:admin"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		if code != exitToolError || !strings.Contains(stderr.String(), "approval store is corrupt") || !strings.Contains(stderr.String(), s.File()) {
			t.Errorf("%s: exit %d, stderr %q", args, code, &stderr)
		}
	}
}

var approveLine = regexp.MustCompile(`clawtool approvals approve ([0-9a-f]{24}) --policy (\S+) --as USER\[:ROLE,\.\.\.\]`)

// TestApprovalEndToEnd: clawtool call asks and says how to approve, a
// clawtool approvals in another process approves, and the next call, in
// a third process, runs once; the one after asks again. A denial reaches
// the caller with who and why.
func TestApprovalEndToEnd(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	clawtool := func(args ...string) (int, string, string) {
		t.Helper()
		r := cli(t, nil, args...)
		return r.code, r.stdout, r.stderr
	}
	const pol = "testdata/policy/approvals.cedar"
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	call := func(key string) (int, string, string) {
		return clawtool("call", "kv", `{"op":"delete","key":"`+key+`"}`, "--policy", pol, "--as", "otto:operator", "--audit", log)
	}
	ask := func(key string) string {
		t.Helper()
		code, stdout, stderr := call(key)
		m := approveLine.FindStringSubmatch(stderr)
		if code != exitToolError || !strings.Contains(stdout, `"approval_request"`) || m == nil || m[2] != pol || !strings.Contains(stdout, m[1]) {
			t.Fatalf("call: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		return m[1]
	}
	id := ask("notes/a")
	if code, stdout, stderr := clawtool("approvals", "list", "--json"); code != exitOK || !strings.Contains(stdout, id) {
		t.Fatalf("list: exit %d: %s %s", code, stdout, stderr)
	}
	if code, stdout, stderr := clawtool("approvals", "approve", id, "--policy", pol, "--as", "cid:admin"); code != exitOK {
		t.Fatalf("approve: exit %d: %s %s", code, stdout, stderr)
	}
	code, stdout, stderr := call("notes/a")
	var res struct {
		IsError bool   `json:"is_error"`
		Kind    string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != exitOK && res.Kind == "denied" {
		t.Fatalf("approved call was refused: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if again := ask("notes/a"); again == id {
		t.Errorf("the replay was given the used request %s", id)
	}
	// The audit log tells the story: the request, cid's answer, the run.
	code, stdout, stderr = clawtool("audit", "story", log, id)
	story := regexp.MustCompile(`(?m)^#\d+ \S+ (.*)$`).FindAllStringSubmatch(stdout, -1)
	var got []string
	for _, m := range story {
		got = append(got, regexp.MustCompile(`at \S+Z|in \S+$`).ReplaceAllString(m[1], "at T"))
	}
	want := []string{
		"decision: otto calls kv: ask, approval " + id + "; reason: deleting a note needs a person's approval",
		"decision: otto calls kv: allow (approved), approval " + id + ", answered by cid at T",
		"outcome: otto calls kv: ok at T",
	}
	if code != exitOK || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit story: exit %d\n%s\nwant:\n%s\nstderr: %s", code, strings.Join(got, "\n"), strings.Join(want, "\n"), stderr)
	}

	id = ask("notes/b")
	if code, stdout, stderr := clawtool("approvals", "deny", id, "--policy", pol, "--as", "ann:admin", "--note", "not on weekends"); code != exitOK {
		t.Fatalf("deny: exit %d: %s %s", code, stdout, stderr)
	}
	if code, stdout, _ := call("notes/b"); code != exitToolError || !strings.Contains(stdout, `was denied by ann: not on weekends`) {
		t.Errorf("denied call: exit %d: %s", code, stdout)
	}
}

// TestShownText: a preview cannot rewrite the terminal of the person
// deciding, and is cut to its bound.
func TestShownText(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"key":"a"}`, `{"key":"a"}`},
		{"{\"key\":\"a\x1b[2J\"}", `{"key":"a\x1b[2J"}`},
		{"a\\b\u202e", `a\\b\u202e`},
		{"ééé", "é…"},
	} {
		if got := shownText(tt.in, 3); tt.in == "ééé" && got != tt.want || tt.in != "ééé" && shownText(tt.in, 100) != tt.want {
			t.Errorf("shownText(%q) = %q, want %q", tt.in, shownText(tt.in, 100), tt.want)
		}
	}
}
