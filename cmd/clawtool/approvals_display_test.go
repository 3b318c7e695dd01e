package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/policy"
)

// A principal's ID is the sub claim of a token the server did not mint,
// and a record of a shared (NATS) store may have been written by another
// machine: what a person reads before approving must not be rewritten by
// either. forgedPrincipal moves the cursor up, clears the line and
// writes a line of its own that makes mallory's request look like
// alice's harmless one; forgedTool does the same with a tool name a
// record of a shared store may hold.
const (
	forgedPrincipal = "mallory\r\x1b[1A\x1b[2K000000000000000000000009  alice calls kv, expires 2026-03-07T09:09:00Z\n    arguments: {}\u202e"
	forgedTool      = "kv\x1b]0;approved\x07\nclawtool: alice asks to call echo"
)

// forged reports whether out holds what a terminal acts on (escape,
// carriage return, a bidirectional override) or a line forged by the
// attack's newline.
func forged(out string) bool {
	return strings.ContainsAny(out, "\x1b\r\x07\u202e") ||
		strings.Contains(out, "\n000000000000000000000009") || strings.Contains(out, "\n    arguments: {}") ||
		strings.Contains(out, "\nclawtool: alice asks")
}

// TestApprovalDisplaysEscapeStrangers: clawtool approvals list, show,
// approve and the terminal prompt of --approve print a principal and a
// tool name that carry control characters escaped, on the lines they
// belong to. The control prints the same records as the commands did
// before (the fields as they are), which the attack rewrites.
func TestApprovalDisplaysEscapeStrangers(t *testing.T) {
	s := seedApprovals(t)
	now := approvalsNow()
	// Request aa is mallory's call of kv, which cid may approve; ab is
	// a call of a tool whose name a shared store's record made up.
	const id, idTool = "0000000000000000000000aa", "0000000000000000000000ab"
	for i, tl := range []string{"kv", forgedTool} {
		if _, err := s.Put(context.Background(), policy.ApprovalRecord{
			ID: []string{id, idTool}[i], Principal: forgedPrincipal, Tool: tl, Digest: fmt.Sprintf("%064x", 0xaa+i),
			Preview: `{"path":"/etc/shadow"}`, Reason: "reading needs approval", Created: now.Add(-time.Minute),
			Expires: now.Add(9 * time.Minute), TTL: 10 * time.Minute,
		}, now); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := s.Get(context.Background(), idTool, now)
	if err != nil {
		t.Fatal(err)
	}

	// The control: the fields as the commands printed them.
	var raw bytes.Buffer
	fmt.Fprintf(&raw, "%s  %s calls %s, expires %s\n", rec.ID, orAnonymous(rec.Principal), rec.Tool, rec.Expires.UTC().Format(time.RFC3339))
	fmt.Fprintf(&raw, "clawtool: %s asks to call %s with %s\n", orAnonymous(rec.Principal), rec.Tool, visibleText(rec.Preview, 2000))
	if !forged(raw.String()) {
		t.Fatalf("control: the raw fields do not rewrite the display:\n%q", raw.String())
	}

	for _, args := range [][]string{
		{"approvals", "list"},
		{"approvals", "show", idTool},
		{"approvals", "approve", id, "--policy", "testdata/policy/approvals.cedar", "--as", "cid:admin"},
		{"approvals", "show", id},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if code != exitOK {
			t.Errorf("clawtool %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		if forged(out) || !strings.Contains(out, `mallory\r\x1b[1A`) {
			t.Errorf("clawtool %s printed the attack's characters, or not the principal escaped:\n%q", strings.Join(args, " "), out)
		}
	}

	// The terminal prompt of --approve.
	old := openTerminal
	defer func() { openTerminal = old }()
	shown := &bytes.Buffer{}
	openTerminal = func() (io.ReadWriteCloser, error) { return fakeTerminal{strings.NewReader("n\n"), shown}, nil }
	if ok, err := (terminalApprover{}).Approve(context.Background(), policy.ApprovalRequest{
		ID: id, Principal: forgedPrincipal, Tool: forgedTool, Args: []byte(`{"path":"/etc/shadow"}`),
	}); ok || err != nil {
		t.Fatalf("Approve = %v, %v; want a refusal from the answer n", ok, err)
	}
	if forged(shown.String()) || !strings.Contains(shown.String(), `mallory\r`) || strings.Count(shown.String(), "\n") != 1 {
		t.Errorf("the prompt printed the attack's characters, or not the principal escaped:\n%q", shown.String())
	}
}

// TestTerminalPromptShowsWholeArguments: the --approve prompt showed the
// first 2,000 bytes of the call's canonical arguments, whose keys are
// sorted: write_file's "content" (2,400 harmless bytes) put its "path"
// (.ssh/authorized_keys) out of sight, and the person approved a call
// they could not read. The prompt now shows the arguments whole, or, when
// they are longer than mcptool.MaxApprovalArgsShown, asks nothing: the
// call waits for an answer given where they are shown whole (clawtool
// approvals show --args). The first case is the control's too: the
// padded call with its path.
func TestTerminalPromptShowsWholeArguments(t *testing.T) {
	old := openTerminal
	defer func() { openTerminal = old }()
	for _, tc := range []struct {
		name    string
		content int
		asked   bool
	}{
		{"padded past the old cut", 2400, true},
		{"longer than any prompt shows", mcptool.MaxApprovalArgsShown + 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shown := &bytes.Buffer{}
			openTerminal = func() (io.ReadWriteCloser, error) { return fakeTerminal{strings.NewReader("y\n"), shown}, nil }
			args := fmt.Sprintf(`{"content":%q,"path":".ssh/authorized_keys"}`, strings.Repeat("a", tc.content))
			ok, err := (terminalApprover{}).Approve(context.Background(), policy.ApprovalRequest{
				ID: "apr-1", Principal: "alice", Tool: "write_file", Args: []byte(args),
			})
			if !tc.asked {
				if ok || !errors.Is(err, policy.ErrApprovalUnavailable) {
					t.Fatalf("Approve = %v, %v; want no question (ErrApprovalUnavailable)", ok, err)
				}
				if strings.Contains(shown.String(), "[y/N]") || !strings.Contains(shown.String(), "clawtool approvals show --args apr-1") {
					t.Errorf("the terminal showed %q; want no question and where to see the call whole", shortForLog(shown.String()))
				}
				return
			}
			if !ok || err != nil {
				t.Fatalf("Approve = %v, %v; want the answer y", ok, err)
			}
			if !strings.Contains(shown.String(), `.ssh/authorized_keys`) {
				t.Errorf("the prompt hid the path the call writes: %q", shortForLog(shown.String()))
			}
		})
	}
}

// shortForLog is s cut for an error message: its start and end.
func shortForLog(s string) string {
	if len(s) <= 300 {
		return s
	}
	return s[:150] + " … " + s[len(s)-150:]
}

// TestApprovalShowEscapesEveryField: clawtool approvals show printed a
// record's policy ids and digest as the store held them, and a record of
// a shared (NATS) store is written by whoever may write the bucket: a
// digest or policy id carrying control characters rewrote the lines the
// person deciding reads (here, the principal's and arguments' lines
// forged below a cleared screen). Every field is now shown escaped. The
// control prints the fields as show printed them.
func TestApprovalShowEscapesEveryField(t *testing.T) {
	s := seedApprovals(t)
	now := approvalsNow()
	const id = "0000000000000000000000ac"
	rec := policy.ApprovalRecord{
		ID: id, Principal: "mallory", Tool: "kv", Digest: "d\x1b[2J\x1b[H" + forgedPrincipal,
		Policies: []string{"ask\r\x1b[1A\x1b[2Kprincipal: alice\u202e"}, Preview: `{"path":"/etc/shadow"}`,
		Reason: "reading needs approval", Created: now.Add(-time.Minute), Expires: now.Add(9 * time.Minute), TTL: 10 * time.Minute,
	}
	if _, err := s.Put(context.Background(), rec, now); err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	fmt.Fprintf(&raw, "%-10s %s\n%-10s %s\n", "digest:", rec.Digest, "policies:", strings.Join(rec.Policies, ", "))
	if !forged(raw.String()) {
		t.Fatalf("control: the raw fields do not rewrite the display:\n%q", raw.String())
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"approvals", "show", id}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("approvals show: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if out := stdout.String(); forged(out) || !strings.Contains(out, `d\x1b[2J`) || !strings.Contains(out, `ask\r\x1b[1A`) {
		t.Errorf("approvals show printed the attack's characters, or not the fields escaped:\n%q", out)
	}
}
