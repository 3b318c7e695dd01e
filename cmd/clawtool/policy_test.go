package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestPolicyServeLists(t *testing.T) {
	roles := filepath.Join("testdata", "policy", "roles.cedar")
	session := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"calc","arguments":{"expression":"1+1"}}}
`
	for _, tt := range []struct {
		as     []string
		listed bool
	}{
		{[]string{"--as", "bob:analyst"}, true},
		{nil, false},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"serve", "--policy", roles}, tt.as...)
		if code := run(context.Background(), args, strings.NewReader(session), &stdout, &stderr); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		out := stdout.String()
		if got := strings.Contains(out, `"name":"calc"`); got != tt.listed {
			t.Errorf("%v: calc listed = %v:\n%s", args, got, out)
		}
		if denied := strings.Contains(out, "no permission covers this call"); denied == tt.listed {
			t.Errorf("%v: call denied = %v:\n%s", args, denied, out)
		}
	}
}

func TestPolicyCommands(t *testing.T) {
	roles := filepath.Join("testdata", "policy", "roles.cedar")
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	as := func(who string) []string {
		return []string{"--policy", roles, "--roles-in", "operator:analyst", "--as", who, "--audit", audit}
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string // substrings of stdout
	}{
		{"check ok", []string{"policy", "check", roles}, exitOK, []string{"ok (5 tools)"}},
		{"check typo", []string{"policy", "check", filepath.Join("testdata", "policy", "typo.cedar")}, exitToolError, []string{"attribute `operation`", "not found"}},
		{"explain ask", append([]string{"policy", "explain", "kv", `{"op":"delete","key":"draft"}`}, as("ann:operator")[:6]...), exitOK,
			[]string{"decision:  ask", "operator-notes-delete"}},
		{"explain forbid", append([]string{"policy", "explain", "kv", `{"op":"set","key":"admin/x","value":"v"}`}, as("ann:operator")[:6]...), exitOK,
			[]string{"decision:  deny", "no-admin-keys", "keys under admin/ are reserved"}},
		{"explain inherited", append([]string{"policy", "explain", "calc", `{"expression":"1"}`}, as("ann:operator")[:6]...), exitOK,
			[]string{"decision:  allow", "analyst-read"}},
		{"explain anonymous", []string{"policy", "explain", "--policy", roles, "calc", `{"expression":"1"}`}, exitOK,
			[]string{"decision:  deny", "denied by default"}},
		{"call allowed", append([]string{"call", "calc", `{"expression":"1+2"}`}, as("bob:analyst")...), exitOK, []string{`"output": "3"`}},
		{"call denied", append([]string{"call", "kv", `{"op":"set","key":"a","value":"v"}`}, as("bob:analyst")...), exitToolError, []string{`"kind": "denied"`}},
		{"call ask", append([]string{"call", "kv", `{"op":"delete","key":"a"}`}, as("ann:operator")...), exitToolError, []string{`"approval_request"`, `"effect": "ask"`}},
		{"as without policy", []string{"call", "calc", `{"expression":"1"}`, "--as", "bob"}, exitToolError, nil},
		{"audit verify", []string{"audit", "verify", audit}, exitOK, []string{"ok, 4 records"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout.String(), stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
		})
	}
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(audit, bytes.Replace(data, []byte(`"principal":"bob"`), []byte(`"principal":"eve"`), 1), 0o600)
	var stdout bytes.Buffer
	if code := run(context.Background(), []string{"audit", "verify", audit}, strings.NewReader(""), &stdout, &stdout); code != exitToolError || !strings.Contains(stdout.String(), "line 1") {
		t.Errorf("tampered log: exit %d: %s", code, stdout.String())
	}
}

// fakeTerminal answers approval prompts and keeps what was shown.
type fakeTerminal struct {
	in    *strings.Reader
	shown *bytes.Buffer
}

func (f fakeTerminal) Read(p []byte) (int, error)  { return f.in.Read(p) }
func (f fakeTerminal) Write(p []byte) (int, error) { return f.shown.Write(p) }
func (f fakeTerminal) Close() error                { return nil }

func TestCallApprove(t *testing.T) {
	roles := filepath.Join("testdata", "policy", "roles.cedar")
	old := openTerminal
	defer func() { openTerminal = old }()
	for _, tt := range []struct {
		answer string
		code   int
	}{
		{"y\n", exitOK},
		{"n\n", exitToolError},
		{"", exitToolError},
	} {
		shown := &bytes.Buffer{}
		openTerminal = func() (io.ReadWriteCloser, error) {
			return fakeTerminal{strings.NewReader(tt.answer), shown}, nil
		}
		var stdout, stderr bytes.Buffer
		args := []string{"call", "--policy", roles, "--roles-in", "operator:analyst", "--as", "ann:operator", "--approve",
			"kv", `{"op":"delete","key":"a\u001b[2J"}`}
		if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != tt.code {
			t.Errorf("answer %q: exit %d, want %d: %s %s", tt.answer, code, tt.code, stdout.String(), stderr.String())
		}
		if !strings.Contains(shown.String(), "ann asks to call kv") || strings.Contains(shown.String(), "\x1b") {
			t.Errorf("prompt = %q", shown.String())
		}
	}
}

func TestPolicyReload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.cedar")
	os.WriteFile(file, []byte(`permit (principal, action, resource == Tool::"calc");`), 0o600)
	pf := &policyFlags{file: file}
	r, err := (&mcpFlags{}).base(pf)
	if err != nil {
		t.Fatal(err)
	}
	call := func() bool { return !r.Execute(context.Background(), "calc", []byte(`{"expression":"1"}`)).IsError }
	if !call() {
		t.Fatal("calc denied before the reload")
	}
	var out bytes.Buffer
	os.WriteFile(file, []byte(`permit (principal, action, resource == Tool::"kv");`), 0o600)
	pf.reload(&out)
	if call() || !strings.Contains(out.String(), "reloaded") {
		t.Errorf("after reload: calc allowed %v; %s", call(), out.String())
	}
	out.Reset()
	os.WriteFile(file, []byte(`permit (principal,`), 0o600)
	pf.reload(&out)
	if call() || !strings.Contains(out.String(), "previous policies stay") {
		t.Errorf("after a bad reload: calc allowed %v; %s", call(), out.String())
	}
}

// TestPolicyWorkspaceSymlink: with --workspace, a path condition sees
// where a link in the workspace leads, and a link out of it is refused.
func TestPolicyWorkspaceSymlink(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(ws, "docs"), 0o755)
	os.MkdirAll(filepath.Join(ws, "secrets"), 0o755)
	os.WriteFile(filepath.Join(ws, "docs", "a"), []byte("doc a"), 0o600)
	os.WriteFile(filepath.Join(ws, "secrets", "k"), []byte("secret k"), 0o600)
	os.WriteFile(filepath.Join(dir, "outside"), []byte("outside"), 0o600)
	if err := os.Symlink("../secrets", filepath.Join(ws, "docs", "x")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside", filepath.Join(ws, "docs", "out")); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(dir, "docs.cedar")
	os.WriteFile(pol, []byte(`permit (principal, action, resource == Tool::"read_file") when { context.args.path like "docs/*" };`), 0o600)
	for _, tt := range []struct {
		path, want string
	}{
		{"docs/a", "doc a"},
		{"docs/x/k", "no permission covers this call"},
		{"docs/out", "escapes the workspace through the symbolic link docs/out"},
	} {
		var stdout, stderr bytes.Buffer
		run(context.Background(), []string{"call", "--workspace", ws, "--policy", pol, "read_file", `{"path":"` + tt.path + `"}`}, nil, &stdout, &stderr)
		if out := stdout.String() + stderr.String(); !strings.Contains(out, tt.want) {
			t.Errorf("read_file %s: %q, want %q", tt.path, out, tt.want)
		}
	}
	var stdout, stderr bytes.Buffer
	run(context.Background(), []string{"policy", "explain", "--workspace", ws, "--policy", pol, "read_file", `{"path":"docs/x/k"}`}, nil, &stdout, &stderr)
	if out := stdout.String(); !strings.Contains(out, `seen as:   {"path":"secrets/k"}`) || !strings.Contains(out, "decision:  deny") {
		t.Errorf("explain: %s%s", out, stderr.String())
	}
}

// TestAuditVerifyHead: a log written with --audit-head publishes its
// head; cutting the log's last records still verifies on its own (the
// control: a chain cannot show it) and is reported as cut against the
// published head (--head-file) or a head printed before (--head); the
// next command that writes the log refuses to continue it.
func TestAuditVerifyHead(t *testing.T) {
	dir := t.TempDir()
	roles := filepath.Join("testdata", "policy", "roles.cedar")
	log, head := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "audit.head")
	do := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &out)
		return code, out.String()
	}
	write := func() (int, string) {
		return do("call", "calc", `{"expression":"1+2"}`, "--policy", roles, "--as", "bob:analyst", "--audit", log, "--audit-head", head)
	}
	for range 3 {
		if code, out := write(); code != exitOK {
			t.Fatalf("call: exit %d: %s", code, out)
		}
	}
	code, out := do("audit", "verify", "--head-file", head, log)
	if code != exitOK || !strings.Contains(out, "ok, 6 records") || !strings.Contains(out, "holds the head of "+head) {
		t.Fatalf("verify the whole log: exit %d: %s", code, out)
	}
	printed := regexp.MustCompile(`head ([0-9a-f]{64})`).FindStringSubmatch(out)[1]

	data, _ := os.ReadFile(log)
	lines := strings.SplitAfter(string(data), "\n")
	os.WriteFile(log, []byte(strings.Join(lines[:4], "")), 0o600) // the last call's two records cut
	if code, out := do("audit", "verify", log); code != exitOK || !strings.Contains(out, "ok, 4 records") {
		t.Fatalf("control: the cut log without a head: exit %d: %s", code, out)
	}
	for _, flags := range [][]string{{"--head-file", head}, {"--head", printed}, {log, "--head", printed}} {
		args := append([]string{"audit", "verify"}, flags...)
		if len(flags) == 2 {
			args = append(args, log)
		}
		code, out := do(args...)
		if code != exitToolError || !strings.Contains(out, "BROKEN after 4 good records: audit log chain broken: records cut from its end: the kept head "+printed) {
			t.Errorf("%v on the cut log: exit %d: %s", flags, code, out)
		}
	}
	if code, out := write(); code != exitToolError || !strings.Contains(out, "records cut from its end") {
		t.Errorf("a call continued the cut log: exit %d: %s", code, out)
	}
	if got, _ := os.ReadFile(log); len(got) != len(strings.Join(lines[:4], "")) {
		t.Error("the refused call wrote to the cut log")
	}
	if code, out := do("call", "calc", `{"expression":"1"}`, "--policy", roles, "--audit-head", head); code != exitToolError || !strings.Contains(out, "--audit-head needs --audit") {
		t.Errorf("--audit-head without --audit: exit %d: %s", code, out)
	}
}
