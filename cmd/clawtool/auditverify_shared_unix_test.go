//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuditVerifyHeadFileOthersMayWrite: clawtool audit verify
// --head-file checks a log against a head kept where whoever edits the
// log cannot write. A head file others may write proves nothing: the one
// who cut the log writes the cut log's head there, and verify said "ok
// ... holds the head" (the attack, before the fix). Such a head file is
// now refused, saying why; the control is the same forgery in a head
// file only its owner may write, which verify takes (the check is on who
// may write the file, not on what it says).
func TestAuditVerifyHeadFileOthersMayWrite(t *testing.T) {
	dir := t.TempDir()
	roles := filepath.Join("testdata", "policy", "roles.cedar")
	log, head := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "audit.head")
	do := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &out)
		return code, out.String()
	}
	for range 2 {
		if code, out := do("call", "calc", `{"expression":"1+2"}`, "--policy", roles, "--as", "bob:analyst", "--audit", log, "--audit-head", head); code != exitOK {
			t.Fatalf("call: exit %d: %s", code, out)
		}
	}
	// The forger cuts the last call's records and writes the cut log's
	// head into the head file.
	data, _ := os.ReadFile(log)
	lines := strings.SplitAfter(string(data), "\n")
	if err := os.WriteFile(log, []byte(strings.Join(lines[:2], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := do("audit", "verify", log)
	if code != exitOK {
		t.Fatalf("the cut log: exit %d: %s", code, out)
	}
	cutHead := strings.TrimSpace(out[strings.LastIndex(out, "head ")+len("head "):])
	if err := os.WriteFile(head, []byte(`{"records":2,"head":"`+cutHead+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := do("audit", "verify", "--head-file", head, log); code != exitOK || !strings.Contains(out, "holds the head of") {
		t.Fatalf("control: a head file of the owner's: exit %d: %s", code, out)
	}
	if err := os.Chmod(head, 0o666); err != nil {
		t.Fatal(err)
	}
	code, out = do("audit", "verify", "--head-file", head, log)
	if code == exitOK || !strings.Contains(out, "other users may write") {
		t.Fatalf("a head file others may write: exit %d: %s; want it refused", code, out)
	}
}
