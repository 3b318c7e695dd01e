package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// noteModel is a stand-in for a Chat Completions server that keeps no
// state, so that every process can talk to it: to a conversation ending
// with the user's prompt, a key, it answers with a call deleting that
// key from kv; to one ending with a tool result, "model saw: RESULT".
func noteModel(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			answer, _ := json.Marshal("model saw: " + last.Content)
			fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":%s},"finish_reason":"stop"}]}`, answer)
			return
		}
		args, _ := json.Marshal(fmt.Sprintf(`{"op":"delete","key":%q}`, last.Content))
		fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"kv","arguments":%s}}]},"finish_reason":"tool_calls"}]}`, args)
	}))
	t.Cleanup(srv.Close)
	return srv
}

var (
	savedLine   = regexp.MustCompile(`the run is saved as ([0-9a-f]{24})`)
	resumeLine  = regexp.MustCompile(`clawtool chat --resume ([0-9a-f]{24}) --policy (\S+) --as otto:operator`)
	kvOutcomeRE = regexp.MustCompile(`"event":"outcome"[^\n]*"tool":"kv"`)
)

// TestChatPausesAndResumesAcrossProcesses: chat meets a call that asks,
// prints the request and the approve command, saves the run and waits;
// it is killed (SIGKILL) while waiting; clawtool approvals approves from
// a second process; chat --resume in a third runs the call once and the
// model sees its result and finishes; the audit log tells the story ask
// → answer → execution. A copy of the saved run resumed again is refused
// and runs nothing. A denied call's refusal reaches the model.
func TestChatPausesAndResumesAcrossProcesses(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := noteModel(t)
	const pol = "testdata/policy/approvals.cedar"
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	env := []string{"OPENAI_BASE_URL=" + srv.URL, "OPENAI_MODEL=local", "OPENAI_API_KEY=sk-test-secret"}
	command := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Env = append(append(os.Environ(), asCLIEnv+"=1"), env...)
		cmd.Stdin = strings.NewReader("")
		return cmd
	}
	clawtool := func(args ...string) (int, string, string) {
		t.Helper()
		r := cli(t, env, args...)
		return r.code, r.stdout, r.stderr
	}
	chatFlags := []string{"--policy", pol, "--as", "otto:operator", "--audit", log, "-stream=false"}

	// 1. chat pauses, saves and waits; it is killed while it waits.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := command(ctx, append([]string{"chat", "--wait-approval", "10m"}, append(chatFlags, "notes/a")...)...)
	stderrPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var printed strings.Builder
	lines := bufio.NewScanner(stderrPipe)
	for lines.Scan() {
		printed.WriteString(lines.Text() + "\n")
		if strings.Contains(lines.Text(), "waiting up to 10m0s") {
			break
		}
	}
	cmd.Process.Signal(os.Kill)
	go io.Copy(io.Discard, stderrPipe)
	cmd.Wait()
	m, saved := approveLine.FindStringSubmatch(printed.String()), savedLine.FindStringSubmatch(printed.String())
	if m == nil || saved == nil || !resumeLine.MatchString(printed.String()) {
		t.Fatalf("chat did not print the approve command, the run id and the resume command:\n%s", printed.String())
	}
	id, run := m[1], saved[1]
	runFile := filepath.Join(state, "clawtool", "runs", run+".json")
	doc, err := os.ReadFile(runFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(runFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("the saved run has mode %v, want 0600", fi.Mode().Perm())
	}
	if bytes.Contains(doc, []byte("sk-test-secret")) || bytes.Contains(doc, []byte(srv.URL)) {
		t.Errorf("the saved run carries the API key or the endpoint")
	}

	// 2. Resumed before the answer, it pauses again, runs nothing.
	if code, _, stderr := clawtool(append([]string{"chat", "--resume", run}, chatFlags...)...); code != exitPaused || !strings.Contains(stderr, id) {
		t.Fatalf("resume before the answer: exit %d, want %d naming %s:\n%s", code, exitPaused, id, stderr)
	}

	// 3. Another process approves; a third resumes and finishes.
	if code, stdout, stderr := clawtool("approvals", "approve", id, "--policy", pol, "--as", "cid:admin"); code != exitOK {
		t.Fatalf("approve: exit %d: %s %s", code, stdout, stderr)
	}
	code, stdout, stderr := clawtool(append([]string{"chat", "--resume", run}, chatFlags...)...)
	if want := "model saw: no key \"notes/a\"; nothing to delete\n"; code != exitOK || stdout != want {
		t.Fatalf("resume: exit %d, stdout %q, want %q\nstderr:\n%s", code, stdout, want, stderr)
	}
	if _, err := os.Stat(runFile); !os.IsNotExist(err) {
		t.Errorf("the finished run is still saved: %v", err)
	}
	audit, _ := os.ReadFile(log)
	if n := len(kvOutcomeRE.FindAll(audit, -1)); n != 1 {
		t.Errorf("kv ran %d times, want 1:\n%s", n, audit)
	}
	code, stdout, stderr = clawtool("audit", "story", log, id)
	for _, want := range []string{"otto calls kv: ask, approval " + id, "otto calls kv: allow (approved), approval " + id + ", answered by cid", "outcome: otto calls kv: ok"} {
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("audit story lacks %q: exit %d\n%s%s", want, code, stdout, stderr)
		}
	}

	// 4. The saved run, copied before and resumed again, is refused.
	if err := os.WriteFile(runFile, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = clawtool(append([]string{"chat", "--resume", run}, chatFlags...)...)
	if code != exitToolError || !strings.Contains(stderr, "approval already used") || stdout != "" {
		t.Errorf("second resume: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	audit, _ = os.ReadFile(log)
	if n := len(kvOutcomeRE.FindAll(audit, -1)); n != 1 {
		t.Errorf("after a second resume kv ran %d times, want 1", n)
	}

	// 5. A denied call: chat saves and exits at once; the refusal, with
	// who and why, reaches the model.
	code, _, stderr = clawtool(append([]string{"chat"}, append(chatFlags, "notes/b")...)...)
	m, saved = approveLine.FindStringSubmatch(stderr), savedLine.FindStringSubmatch(stderr)
	if code != exitPaused || m == nil || saved == nil {
		t.Fatalf("chat: exit %d, want %d with the request and the run:\n%s", code, exitPaused, stderr)
	}
	if code, stdout, stderr := clawtool("approvals", "deny", m[1], "--policy", pol, "--as", "ann:admin", "--note", "not on weekends"); code != exitOK {
		t.Fatalf("deny: exit %d: %s %s", code, stdout, stderr)
	}
	code, stdout, stderr = clawtool(append([]string{"chat", "--resume", saved[1]}, chatFlags...)...)
	if code != exitOK || !strings.Contains(stdout, "model saw: ") || !strings.Contains(stdout, "denied by ann: not on weekends") {
		t.Errorf("resume of the denied call: exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	// 6. chat --wait-approval goes on by itself once another process
	// approved, and finishes in the same process.
	cmd = command(ctx, append([]string{"chat", "--wait-approval", "1m"}, append(chatFlags, "notes/c")...)...)
	stderrPipe, err = cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var waited bytes.Buffer
	cmd.Stdout = &waited
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	printed.Reset()
	lines = bufio.NewScanner(stderrPipe)
	for lines.Scan() {
		printed.WriteString(lines.Text() + "\n")
		if strings.Contains(lines.Text(), "waiting up to 1m0s") {
			break
		}
	}
	go io.Copy(io.Discard, stderrPipe)
	m = approveLine.FindStringSubmatch(printed.String())
	if m == nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no approve command:\n%s", printed.String())
	}
	if code, stdout, stderr := clawtool("approvals", "approve", m[1], "--policy", pol, "--as", "cid:admin"); code != exitOK {
		t.Fatalf("approve: exit %d: %s %s", code, stdout, stderr)
	}
	if err := cmd.Wait(); err != nil || waited.String() != "model saw: no key \"notes/c\"; nothing to delete\n" {
		t.Errorf("chat --wait-approval: %v, stdout %q", err, waited.String())
	}
}

// A saved run that is damaged is refused, saying why.
func TestChatResumeRefusesADamagedRun(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	dir := filepath.Join(state, "clawtool", "runs")
	os.MkdirAll(dir, 0o700)
	const run = "0123456789abcdef01234567"
	os.WriteFile(filepath.Join(dir, run+".json"), []byte(`{"format":"clawtool.agent.run","version":1,`), 0o600)
	getenv := localModelEnv("http://127.0.0.1:1")
	for _, tc := range []struct {
		id, want string
	}{
		{run, "truncated or not JSON"},
		{"fedcba9876543210fedcba98", "no saved run"},
		{"../../etc/passwd", "not a run id"},
	} {
		var stdout, stderr bytes.Buffer
		e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
		code := chat(context.Background(), e, []string{"--resume", tc.id, "--policy", "testdata/policy/approvals.cedar"}, getenv)
		if code != exitToolError || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("--resume %s: exit %d, stderr %q, want %q", tc.id, code, stderr.String(), tc.want)
		}
	}
}
