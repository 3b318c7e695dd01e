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

// auditFileWithHead writes n decisions (each with its outcome: 2n
// records) to a log in dir that publishes its head to a head file, and
// returns the paths of both.
func auditFileWithHead(t *testing.T, dir string, n int) (log, head string) {
	t.Helper()
	log, head = filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "audit.head")
	l, err := policy.OpenAuditFile(log, policy.WithHeadFile(head))
	if err != nil {
		t.Fatal(err)
	}
	a := newTestAuthorizer(t, policy.WithAudit(l))
	reg, _ := testRegistry(t, a)
	for range n {
		if res := reg.Execute(policy.WithPrincipal(context.Background(), carol), "read_file", json.RawMessage(`{"path":"docs/a"}`)); res.IsError {
			t.Fatal(res.Error)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return log, head
}

func readHead(t *testing.T, path string) policy.AuditSummary {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := policy.ParseAuditHead(data)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestAuditHeadDetectsCut: cutting the last records of a log verifies
// on its own (the control: a chain cannot show a cut at its end), and is
// reported against the head the writer published; OpenAuditFile refuses
// to continue the cut log. Records appended after a checkpoint are fine.
func TestAuditHeadDetectsCut(t *testing.T) {
	dir := t.TempDir()
	log, head := auditFileWithHead(t, dir, 3)
	kept := readHead(t, head)
	data, _ := os.ReadFile(log)
	sum, err := policy.VerifyAudit(bytes.NewReader(data))
	if err != nil || sum != kept || kept.Records != 6 {
		t.Fatalf("the head file holds %+v, the log verifies as %+v, %v", kept, sum, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("publishing the head left files behind: %v", entries)
	}
	if sum, err := policy.VerifyAuditHead(bytes.NewReader(data), kept); err != nil || sum != kept {
		t.Errorf("the whole log against its head: %+v, %v", sum, err)
	}

	lines := strings.SplitAfter(string(data), "\n")
	cut := strings.Join(lines[:4], "") // the last decision and its outcome removed
	if sum, err := policy.VerifyAudit(strings.NewReader(cut)); err != nil || sum.Records != 4 {
		t.Fatalf("control: the cut log on its own: %+v, %v", sum, err)
	}
	_, err = policy.VerifyAuditHead(strings.NewReader(cut), kept)
	if !errors.Is(err, policy.ErrAuditCut) || !errors.Is(err, policy.ErrAuditBroken) || !strings.Contains(err.Error(), "the kept head "+kept.Head+" (record 6) is not in the log, which ends at record 4") {
		t.Errorf("the cut log against the head: %v", err)
	}
	// A bare hash, as --head gives it, finds the cut too.
	bare, err := policy.ParseAuditHead([]byte(kept.Head + "\n"))
	if err != nil || bare.Records != 0 {
		t.Fatalf("bare head: %+v, %v", bare, err)
	}
	if _, err := policy.VerifyAuditHead(strings.NewReader(cut), bare); !errors.Is(err, policy.ErrAuditCut) {
		t.Errorf("the cut log against the bare head: %v", err)
	}

	os.WriteFile(log, []byte(cut), 0o600)
	if _, err := policy.OpenAuditFile(log, policy.WithHeadFile(head)); !errors.Is(err, policy.ErrAuditCut) {
		t.Errorf("OpenAuditFile continued a cut log: %v", err)
	}
	if readHead(t, head) != kept {
		t.Error("refusing the cut log changed the head file")
	}

	// The whole log again, and more records: an older head is in it.
	os.WriteFile(log, data, 0o600)
	auditFileWithHead(t, dir, 1)
	newer := readHead(t, head)
	data, _ = os.ReadFile(log)
	if newer.Records != 8 {
		t.Errorf("the head after two more records: %+v", newer)
	}
	if _, err := policy.VerifyAuditHead(bytes.NewReader(data), kept); err != nil {
		t.Errorf("a log that grew since its checkpoint: %v", err)
	}
}

func TestParseAuditHead(t *testing.T) {
	h := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		in   string
		ok   bool
		want policy.AuditSummary
	}{
		{h, true, policy.AuditSummary{Head: h}},
		{`{"records":3,"head":"` + h + `"}` + "\n", true, policy.AuditSummary{Records: 3, Head: h}},
		{strings.Repeat("0", 64), true, policy.AuditSummary{Head: strings.Repeat("0", 64)}},
		{strings.ToUpper(h), false, policy.AuditSummary{}},
		{h[:62], false, policy.AuditSummary{}},
		{"", false, policy.AuditSummary{}},
		{`{"records":3,"head":"` + h + `","x":1}`, false, policy.AuditSummary{}},
		{`{"records":3,"head":"` + h + `"} {}`, false, policy.AuditSummary{}},
		{`{"records":-1,"head":"` + h + `"}`, false, policy.AuditSummary{}},
		{`{"records":2,"head":"` + strings.Repeat("0", 64) + `"}`, false, policy.AuditSummary{}},
	} {
		got, err := policy.ParseAuditHead([]byte(tc.in))
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseAuditHead(%q) = %+v, %v", tc.in, got, err)
		}
	}
}

// TestAuditHeadLogger: each record's head goes to the logger too.
func TestAuditHeadLogger(t *testing.T) {
	var logs, audit bytes.Buffer
	l := policy.NewAuditLog(&audit, policy.WithHeadLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	a := newTestAuthorizer(t, policy.WithAudit(l))
	reg, _ := testRegistry(t, a)
	reg.Execute(policy.WithPrincipal(context.Background(), carol), "read_file", json.RawMessage(`{"path":"docs/a"}`))
	sum, err := policy.VerifyAudit(bytes.NewReader(audit.Bytes()))
	if err != nil || sum.Records != 2 {
		t.Fatal(sum, err)
	}
	if n := strings.Count(logs.String(), `msg="audit head"`); n != 2 || !strings.Contains(logs.String(), "records=2 head="+sum.Head) {
		t.Errorf("logged:\n%s", logs.String())
	}
}

// A head file that cannot be written makes the append report it.
func TestAuditHeadFileUnwritable(t *testing.T) {
	dir := t.TempDir()
	_, err := policy.OpenAuditFile(filepath.Join(dir, "audit.jsonl"), policy.WithHeadFile(filepath.Join(dir, "missing", "audit.head")))
	if err == nil || !strings.Contains(err.Error(), "its head could not be published") {
		t.Errorf("open with a head file in a missing directory: %v", err)
	}
}

// FuzzParseAuditHead: a head that parses is a well-formed head, and
// prints back as what it read.
func FuzzParseAuditHead(f *testing.F) {
	f.Add([]byte(`{"records":3,"head":"` + strings.Repeat("ab", 32) + `"}`))
	f.Add([]byte(strings.Repeat("0", 64)))
	f.Add([]byte(`{"records":1e2,"head":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := policy.ParseAuditHead(data)
		if err != nil {
			return
		}
		if len(h.Head) != 64 || strings.Trim(h.Head, "0123456789abcdef") != "" || h.Records < 0 {
			t.Fatalf("parsed %q as %+v", data, h)
		}
		again, _ := json.Marshal(h)
		if h2, err := policy.ParseAuditHead(again); err != nil || h2 != h {
			t.Fatalf("%+v does not read back: %+v, %v", h, h2, err)
		}
	})
}
