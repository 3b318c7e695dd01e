//go:build unix

package policy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/policy"
)

// TestAuditFileOthersMayWrite: the hash chain is not keyed, so whoever
// may write the log rewrites it whole: here another user cuts the records
// of their calls from its end, and the shorter log verifies. OpenAuditFile
// then went on writing to it as if nothing had happened, and a head file
// others may write could be replaced with the forged log's head (the
// attack rows opened before the fix). A log or head file that users other
// than its owner may write, or that another user than this process's or
// root owns, is now refused, judged on the file opened (a link by its
// target). The controls are the same cut by the log's owner, whose log
// at 0600 opens (the chain alone cannot tell; the head file is for that),
// and a log of the owner's at 0644, which others may read.
func TestAuditFileOthersMayWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, log, head string) (string, string)
		refused string // "": opens
	}{
		{"control: the owner's log, 0600", func(t *testing.T, log, head string) (string, string) { return log, "" }, ""},
		{"control: the owner's log, 0644", func(t *testing.T, log, head string) (string, string) { chmod(t, log, 0o644); return log, "" }, ""},
		{"control: the owner's head file", func(t *testing.T, log, head string) (string, string) { return log, head }, ""},
		{"attack: others may write the log", func(t *testing.T, log, head string) (string, string) { chmod(t, log, 0o646); return log, "" }, "other users may write"},
		{"attack: the group may write the log", func(t *testing.T, log, head string) (string, string) { chmod(t, log, 0o660); return log, "" }, "other users may write"},
		{"attack: a link to a log others may write", func(t *testing.T, log, head string) (string, string) {
			chmod(t, log, 0o666)
			link := filepath.Join(t.TempDir(), "audit.jsonl")
			if err := os.Symlink(log, link); err != nil {
				t.Fatal(err)
			}
			return link, ""
		}, "other users may write"},
		{"attack: others may write the head file", func(t *testing.T, log, head string) (string, string) { chmod(t, head, 0o666); return log, head }, "other users may write"},
		{"attack: another user owns the log", func(t *testing.T, log, head string) (string, string) {
			if os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			if err := os.Chown(log, 4242, 4242); err != nil {
				t.Fatal(err)
			}
			return log, ""
		}, "owned by user 4242"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log, head := auditFileWithHead(t, dir, 2)
			// The forger's head file names the cut log's head.
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.SplitAfter(data, []byte("\n"))
			cut := bytes.Join(lines[:2], nil)
			if err := os.WriteFile(log, cut, 0o600); err != nil {
				t.Fatal(err)
			}
			sum, err := policy.VerifyAudit(bytes.NewReader(cut))
			if err != nil {
				t.Fatalf("the cut log does not verify: %v", err)
			}
			if err := os.WriteFile(head, []byte(`{"records":2,"head":"`+sum.Head+`"}`), 0o600); err != nil {
				t.Fatal(err)
			}
			name, headName := tc.setup(t, log, head)
			var opts []policy.AuditOption
			if headName != "" {
				opts = append(opts, policy.WithHeadFile(headName))
			}
			l, err := policy.OpenAuditFile(name, opts...)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("OpenAuditFile: %v", err)
				}
				l.Close()
				return
			}
			if err == nil {
				l.Close()
				t.Fatalf("OpenAuditFile took the cut log (%d records of 4) that others could have rewritten", sum.Records)
			}
			if !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("OpenAuditFile = %v, want %q", err, tc.refused)
			}
		})
	}
}
