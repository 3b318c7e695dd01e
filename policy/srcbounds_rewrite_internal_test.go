package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyFileRewrittenWhileRead: a policy file rewritten in place
// (truncated, then written) while a reload reads it may be read cut
// between two policies, which parses: the forbid at its end is lost and
// the permit for all is loaded. Here the file is cut to its first policy
// between the reader's open and its read; before the fix the reload
// loaded the permit alone (the control below shows what that cut text
// gives). A regular file whose size or modification time changes while
// it is read is now refused, and the policies in force stay.
func TestPolicyFileRewrittenWhileRead(t *testing.T) {
	const permit = `permit (principal, action, resource);` + "\n"
	const whole = permit + `forbid (principal, action, resource == Tool::"wipe");` + "\n"
	p := filepath.Join(t.TempDir(), "p.cedar")
	if err := os.WriteFile(p, []byte(whole), 0o600); err != nil {
		t.Fatal(err)
	}
	// Control: the cut text parses, and would allow wipe.
	if _, err := compile("cut.cedar", []byte(permit)); err != nil {
		t.Fatalf("control: the cut text does not parse: %v", err)
	}
	// Control: the file read without a change loads.
	if src, err := readPolicyFileWhile(p, nil); err != nil || string(src) != whole {
		t.Fatalf("control: %q, %v", src, err)
	}
	cut := func() {
		if err := os.Truncate(p, int64(len(permit))); err != nil {
			t.Fatal(err)
		}
	}
	src, err := readPolicyFileWhile(p, cut)
	if err == nil || !strings.Contains(err.Error(), "changed while it was read") {
		t.Fatalf("a file cut while read: %q, %v; want it refused", src, err)
	}
}
