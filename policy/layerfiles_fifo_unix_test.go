//go:build unix

package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/policy"
)

// TestLayerFilesNotRegular: every file this layer reads, not only the
// policies, was opened as it came. A named pipe given as the principal
// key (--principal-key), the audit head file (--audit-head, audit verify
// --head-file) or the audit log (--audit) blocked the command that opened
// it, for ever while no one wrote: the worker, server or verifier hung
// at its start (the audit log, opened for reading and writing, blocked
// on reading its chain, or once 64 KiB were written, every call). Each
// is now opened without waiting and refused unless it is a regular file,
// saying so. Before the fix the attack rows hung until the guard opened
// the pipe's write end. The controls: a regular file of each is read.
func TestLayerFilesNotRegular(t *testing.T) {
	key := strings.Repeat("k", policy.MinSignerKeyBytes)
	for _, tc := range []struct {
		name string
		open func(path string) error
		good string // a regular file's content for the control; "-": none
	}{
		{"principal key", func(p string) error { _, err := policy.ReadSignerKeyFile(p); return err }, key},
		{"audit head file", func(p string) error { _, err := policy.ReadAuditHeadFile(p); return err }, strings.Repeat("0", 64)},
		{"audit log", func(p string) error {
			l, err := policy.OpenAuditFile(p)
			if err == nil {
				l.Close()
			}
			return err
		}, ""},
		{"audit log's head file", func(p string) error {
			l, err := policy.OpenAuditFile(filepath.Join(filepath.Dir(p), "audit.log"), policy.WithHeadFile(p))
			if err == nil {
				l.Close()
			}
			return err
		}, "-"},
		{"approvals store", func(p string) error {
			_, err := (&policy.FileApprovalStore{Dir: filepath.Dir(p)}).Pending(context.Background(), time.Now())
			return err
		}, `{"version":1,"records":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "file")
			if tc.name == "approvals store" {
				p = filepath.Join(dir, "approvals.json")
			}
			t.Run("control", func(t *testing.T) {
				if tc.good != "-" {
					if err := os.WriteFile(p, []byte(tc.good), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				if err := tc.open(p); err != nil {
					t.Fatalf("a regular file: %v", err)
				}
				os.Remove(p)
			})
			t.Run("attack: a named pipe", func(t *testing.T) {
				mkfifo(t, p)
				var err error
				guard(t, p, func() { err = tc.open(p) })
				if err == nil || !strings.Contains(err.Error(), "not a regular file") {
					t.Fatalf("a named pipe: %v, want refused as not a regular file", err)
				}
			})
		})
	}
}
