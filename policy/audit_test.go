package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

// auditedCalls makes four decisions recorded in an audit log and returns
// the log's bytes.
func auditedCalls(t *testing.T, extra ...policy.Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	a := newTestAuthorizer(t, append([]policy.Option{policy.WithAudit(policy.NewAuditLog(&buf))}, extra...)...)
	reg, _ := testRegistry(t, a)
	ctx := policy.WithPrincipal(context.Background(), bob)
	reg.Execute(ctx, "read_file", json.RawMessage(`{"path":"docs/a"}`))
	reg.Execute(ctx, "read_file", json.RawMessage(`{"path":"secrets/a"}`))
	reg.Execute(ctx, "delete_file", json.RawMessage(`{"path":"docs/a"}`))
	reg.Execute(context.Background(), "report", nil)
	return buf.Bytes()
}

func TestAuditRecordsEveryDecision(t *testing.T) {
	var logs bytes.Buffer
	log := auditedCalls(t, policy.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	lines := strings.Split(strings.TrimSuffix(string(log), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d records:\n%s", len(lines), log)
	}
	want := []string{"decision allow", "outcome ok", "decision deny", "decision ask", "decision deny"}
	var digests []string
	for i, line := range lines {
		var rec policy.AuditRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		got := rec.Event + " " + string(rec.Effect) + rec.Outcome
		if got != want[i] || rec.Seq != uint64(i+1) || len(rec.ArgsDigest) != 64 || len(rec.CallDigest) != 64 {
			t.Errorf("record %d = %+v, want %s", i, rec, want[i])
		}
		digests = append(digests, rec.CallDigest)
		if strings.Contains(line, "docs/a") {
			t.Errorf("record %d holds the arguments: %s", i, line)
		}
	}
	if digests[0] != digests[1] || digests[0] == digests[2] {
		t.Errorf("an outcome must share its decision's digest, and only it: %v", digests)
	}
	sum, err := policy.VerifyAudit(bytes.NewReader(log))
	if err != nil || sum.Records != 5 {
		t.Errorf("verify = %+v, %v", sum, err)
	}
	if n := strings.Count(logs.String(), "tool call decision"); n != 4 || strings.Count(logs.String(), "tool call outcome") != 1 {
		t.Errorf("%d decisions logged:\n%s", n, logs.String())
	}
}

func TestAuditTampering(t *testing.T) {
	log := auditedCalls(t)
	lines := strings.SplitAfter(string(log), "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	join := func(ls ...string) string { return strings.Join(ls, "") }
	tests := []struct {
		name, log, want string
	}{
		{"edited effect", strings.Replace(string(log), `"effect":"deny"`, `"effect":"allow"`, 1), "line 3: audit log chain broken: the record does not match its hash"},
		{"edited principal", strings.Replace(string(log), `"principal":"bob"`, `"principal":"eve"`, 1), "line 1: audit log chain broken: the record does not match its hash"},
		{"added field", strings.Replace(string(log), `{"seq":3,`, `{"seq":3,"note":"x",`, 1), "line 3: audit log chain broken: not a record"},
		{"removed record", join(lines[0], lines[2], lines[3], lines[4]), "line 2: audit log chain broken: it does not follow"},
		{"reordered records", join(lines[0], lines[2], lines[1], lines[3], lines[4]), "line 2: audit log chain broken: it does not follow"},
		{"cut mid-line", string(log[:len(log)-10]), "line 5: audit log chain broken: last line has no newline"},
		{"garbage", "not json\n", "line 1: audit log chain broken: not a record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.VerifyAudit(strings.NewReader(tt.log))
			if !errors.Is(err, policy.ErrAuditBroken) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestAuditFileContinuesChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for range 2 {
		l, err := policy.OpenAuditFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a := newTestAuthorizer(t, policy.WithAudit(l))
		reg, _ := testRegistry(t, a)
		reg.Execute(policy.WithPrincipal(context.Background(), carol), "read_file", json.RawMessage(`{"path":"docs/a"}`))
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if sum, err := policy.VerifyAudit(f); err != nil || sum.Records != 4 { // two decisions and their outcomes
		t.Errorf("verify = %+v, %v", sum, err)
	}
	// A file that does not verify is not appended to.
	data, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(data, []byte("carol"), []byte("carl_"), 1), 0o600)
	if _, err := policy.OpenAuditFile(path); !errors.Is(err, policy.ErrAuditBroken) {
		t.Errorf("open tampered: %v", err)
	}
}

func TestAuditArgumentsRedacted(t *testing.T) {
	var buf bytes.Buffer
	a := newTestAuthorizer(t, policy.WithAudit(policy.NewAuditLog(&buf)), policy.WithAuditArguments("content"))
	reg, _ := testRegistry(t, a)
	ctx := policy.WithPrincipal(context.Background(), bob)
	reg.Execute(ctx, "write_file", json.RawMessage(`{"path":"docs/a","content":"hunter2"}`))
	if strings.Contains(buf.String(), "hunter2") {
		t.Errorf("the secret is in the audit log:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), `"args":{"content":"[redacted]","path":"docs/a"}`) {
		t.Errorf("the arguments are not recorded:\n%s", buf.String())
	}
	if _, err := policy.VerifyAudit(bytes.NewReader(buf.Bytes())); err != nil {
		t.Error(err)
	}
}
