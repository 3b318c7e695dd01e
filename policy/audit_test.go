package policy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
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
		{"added field", strings.Replace(string(log), `{"seq":3,`, `{"seq":3,"extra":"x",`, 1), "line 3: audit log chain broken: not a record"},
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

// TestAuditRecordBound: one audited call with a 200 KiB argument of "<"
// (six bytes each once escaped) must not break the log. The record keeps
// a bounded prefix of the arguments and says so, with the length and
// SHA-256 of the whole; the log verifies and reopens. Control: the same
// call with a small argument keeps the whole arguments, untruncated.
func TestAuditRecordBound(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		cut     bool
	}{
		{"control: small", "<<<", false},
		{"200 KiB of <", strings.Repeat("<", 200<<10), true},
		{"1 MiB minus a bit of &", strings.Repeat("&", 1<<20-64), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			l, err := policy.OpenAuditFile(path)
			if err != nil {
				t.Fatal(err)
			}
			a := newTestAuthorizer(t, policy.WithAudit(l), policy.WithAuditArguments())
			reg, ran := testRegistry(t, a)
			// Sent as they come, unescaped: the canonical form escapes them.
			args := json.RawMessage(`{"path":"docs/a","content":"` + tc.content + `"}`)
			res := reg.Execute(policy.WithPrincipal(context.Background(), bob), "write_file", args)
			if res.IsError {
				t.Fatalf("write_file: %s", res.Error)
			}
			if _, ok := ran.Load("write_file"); !ok {
				t.Fatal("write_file did not run")
			}
			l.Close()
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sum, err := policy.VerifyAudit(bytes.NewReader(data))
			if err != nil || sum.Records != 2 {
				t.Fatalf("verify: %+v, %v", sum, err)
			}
			l, err = policy.OpenAuditFile(path)
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			l.Close()
			line, _, _ := strings.Cut(string(data), "\n")
			if len(line) >= policy.MaxAuditRecord {
				t.Errorf("a record of %d bytes", len(line))
			}
			var rec policy.AuditRecord
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			canon, _ := json.Marshal(map[string]string{"content": tc.content, "path": "docs/a"}) // the canonical form: keys sorted
			whole := sha256.Sum256(canon)
			if !tc.cut {
				if len(rec.Truncated) != 0 || rec.ArgsPrefix != "" || !bytes.Equal(rec.Args, canon) {
					t.Errorf("a small record was cut: %s", line)
				}
				return
			}
			if len(rec.Args) != 0 || len(rec.Truncated) != 1 {
				t.Fatalf("record: %.300s", line)
			}
			tr := rec.Truncated[0]
			if tr.Field != "args" || tr.Bytes != len(canon) || tr.SHA256 != hex.EncodeToString(whole[:]) {
				t.Errorf("truncation = %+v, want args, %d bytes, sha256 %x", tr, len(canon), whole)
			}
			if !strings.HasPrefix(string(canon), rec.ArgsPrefix) || len(rec.ArgsPrefix) < 1000 {
				t.Errorf("the prefix (%d bytes) is not the start of the arguments: %.100q", len(rec.ArgsPrefix), rec.ArgsPrefix)
			}
			if len(line) > policy.MaxAuditArgs+4<<10 {
				t.Errorf("a cut record of %d bytes, more than the arguments' bound allows", len(line))
			}
		})
	}
}

// TestAuditRecordBoundEveryField: a decision whose every text is huge
// (a principal from a token, a tool name a client made up, a reason
// quoting a value, thousands of roles) still makes one record within the
// bound, which verifies; each cut field is listed with the digest of its
// whole value.
func TestAuditRecordBoundEveryField(t *testing.T) {
	huge := strings.Repeat("<\u2028\"", 300<<10)
	many := make([]string, 20000)
	for i := range many {
		many[i] = fmt.Sprintf("role-%d", i)
	}
	var buf bytes.Buffer
	l := policy.NewAuditLog(&buf)
	d := policy.Decision{Principal: policy.Principal{ID: huge, Roles: many}, Tool: huge, Effect: policy.Deny, Policies: []string{huge, "p"}, Reason: huge}
	if err := l.Record(d, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordOutcome(d, tool.Result{IsError: true, Kind: tool.ErrorKind(huge)}, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Control: a plain decision is kept whole.
	plain := policy.Decision{Principal: policy.Principal{ID: "ann", Roles: []string{"a", "b"}}, Tool: "t", Effect: policy.Deny, Policies: []string{"p"}, Reason: "no"}
	if err := l.Record(plain, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if sum, err := policy.VerifyAudit(bytes.NewReader(buf.Bytes())); err != nil || sum.Records != 3 {
		t.Fatalf("verify: %+v, %v", sum, err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	wantCut := [][]string{{"principal", "roles", "tool", "policies", "reason"}, {"principal", "roles", "tool", "outcome"}, nil}
	for i, line := range lines {
		if len(line) >= policy.MaxAuditRecord/4 {
			t.Errorf("record %d: %d bytes", i+1, len(line))
		}
		var rec policy.AuditRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		var fields []string
		for _, tr := range rec.Truncated {
			fields = append(fields, tr.Field)
			whole := []byte(huge)
			if tr.Field == "roles" {
				whole, _ = json.Marshal(many)
			}
			if tr.Field == "policies" {
				whole, _ = json.Marshal([]string{huge, "p"})
			}
			sum := sha256.Sum256(whole)
			if tr.Bytes != len(whole) || tr.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("record %d: %s: %d bytes, sha256 %s; want %d, %x", i+1, tr.Field, tr.Bytes, tr.SHA256, len(whole), sum)
			}
		}
		if !slices.Equal(fields, wantCut[i]) {
			t.Errorf("record %d: cut %v, want %v", i+1, fields, wantCut[i])
		}
		if i == 0 && (!strings.HasPrefix(huge, rec.Principal) || rec.Principal == "" || len(rec.Roles) == 0 || !strings.HasPrefix(many[0], rec.Roles[0])) {
			t.Errorf("record 1 keeps no prefix: principal %.20q, roles %.40v", rec.Principal, rec.Roles)
		}
		if i == 2 && (rec.Principal != "ann" || !slices.Equal(rec.Roles, []string{"a", "b"}) || rec.Reason != "no") {
			t.Errorf("the plain record was changed: %s", line)
		}
	}
}

// TestAuditReadBounded: a line longer than the bound is refused while it
// is read, not after: a log of one 64 MiB line costs the reader at most
// the bound.
func TestAuditReadBounded(t *testing.T) {
	var read countingReader
	read.r = io.LimitReader(zeros{}, 64<<20)
	_, err := policy.VerifyAudit(&read)
	if !errors.Is(err, policy.ErrAuditBroken) || !strings.Contains(err.Error(), "line longer than") {
		t.Fatalf("err = %v", err)
	}
	if read.n > policy.MaxAuditRecord+128<<10 {
		t.Errorf("read %d bytes of one overlong line", read.n)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// FuzzAuditRecordBound: whatever a decision holds (principal, roles,
// tool, policies, reason, arguments, outcome), the record written fits
// the bound, verifies, and its chain continues; the records of plain
// values are kept whole.
func FuzzAuditRecordBound(f *testing.F) {
	f.Add("ann", "writer", "write_file", "p", "no", `{"content":"<<<"}`, "ok", 1)
	f.Add(strings.Repeat("<", 5000), strings.Repeat("\u2028", 2000), "\xff\xfe", "\"\\", strings.Repeat("&", 70000), `{"a":"`+strings.Repeat("<", 70000)+`"}`, "x", 3)
	// A record forged in a principal, tool or reason (a newline, then a
	// line of its own) stays inside its field: still two records.
	f.Add("ann\n{\"seq\":2,\"event\":\"decision\",\"principal\":\"root\",\"effect\":\"allow\"}\r\x1b[2K", "admin\n", "kv\u2028x", "p\x00", "ok\n\n", `{"k":"\n"}`, "ok\n", 1)
	f.Fuzz(func(t *testing.T, principal, role, toolName, pol, reason, args, outcome string, n int) {
		n = max(0, min(n, 500))
		roles := make([]string, n)
		for i := range roles {
			roles[i] = role
		}
		var buf bytes.Buffer
		l := policy.NewAuditLog(&buf)
		d := policy.Decision{Principal: policy.Principal{ID: principal, Roles: roles}, Tool: toolName, Effect: policy.Deny, Policies: []string{pol}, Reason: reason}
		if json.Valid([]byte(args)) {
			d.Args = json.RawMessage(args)
		}
		if err := l.Record(d, 0); err != nil {
			t.Fatal(err)
		}
		if err := l.RecordOutcome(d, tool.Result{IsError: true, Kind: tool.ErrorKind(outcome)}, 0); err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(strings.TrimSuffix(buf.String(), "\n"), "\n") {
			if len(line) >= policy.MaxAuditRecord {
				t.Fatalf("a line of %d bytes", len(line))
			}
		}
		if sum, err := policy.VerifyAudit(bytes.NewReader(buf.Bytes())); err != nil || sum.Records != 2 {
			t.Fatalf("verify: %+v, %v", sum, err)
		}
	})
}

// TestAuditInvalidUTF8: a record whose texts hold bytes that are not
// UTF-8 (a principal named on the command line, a tool name a client made
// up) verifies; before, it was written with escaped U+FFFD that read back
// as another line, and the log never verified again. Control: the same
// record with valid text.
func TestAuditInvalidUTF8(t *testing.T) {
	for _, bad := range []string{"", "\xff", "\xc3", "\xfe\xff"} { // "": the control
		var buf bytes.Buffer
		l := policy.NewAuditLog(&buf)
		d := policy.Decision{Principal: policy.Principal{ID: "ann" + bad, Roles: []string{"r" + bad}}, Tool: "t" + bad, Effect: policy.Deny, Reason: "no" + bad, Policies: []string{"p" + bad}}
		if err := l.Record(d, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := policy.VerifyAudit(bytes.NewReader(buf.Bytes())); err != nil {
			t.Errorf("texts ending in %q: %v", bad, err)
		}
		if bad == "" && !strings.Contains(buf.String(), `"principal":"ann","roles":["r"],"tool":"t"`) {
			t.Errorf("the control's record was changed: %s", buf.String())
		}
	}
}

// FuzzAuditArguments: whatever string argument a call carries, its
// decision record (arguments kept, WithAuditArguments) verifies and fits
// the bound, and a cut is stated.
func FuzzAuditArguments(f *testing.F) {
	f.Add("plain")
	f.Add(strings.Repeat("<", 20000))
	f.Add("\u2028\u00e9\\\"\x00")
	f.Fuzz(func(t *testing.T, content string) {
		var buf bytes.Buffer
		a := newTestAuthorizer(t, policy.WithAudit(policy.NewAuditLog(&buf)), policy.WithAuditArguments())
		reg, _ := testRegistry(t, a)
		args, _ := json.Marshal(map[string]string{"path": "docs/a", "content": strings.Repeat(content, 1+(70000/(len(content)+1))%7)})
		reg.Execute(policy.WithPrincipal(context.Background(), bob), "write_file", args)
		if _, err := policy.VerifyAudit(bytes.NewReader(buf.Bytes())); err != nil {
			t.Fatalf("%v:\n%.500s", err, buf.String())
		}
		line, _, _ := strings.Cut(buf.String(), "\n")
		var rec policy.AuditRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil || len(line) >= policy.MaxAuditRecord {
			t.Fatalf("%d bytes: %v", len(line), err)
		}
		if (rec.Args == nil) != (len(rec.Truncated) == 1) {
			t.Fatalf("args %d bytes, truncated %v", len(rec.Args), rec.Truncated)
		}
	})
}
