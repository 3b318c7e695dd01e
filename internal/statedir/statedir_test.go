//go:build !darwin && !windows

package statedir

import (
	"path/filepath"
	"testing"
)

func TestDir(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	if got, err := Dir("oauth"); err != nil || got != filepath.Join(state, "clawtool", "oauth") {
		t.Errorf("Dir(oauth) = %q, %v", got, err)
	}
	home := t.TempDir()
	t.Setenv("XDG_STATE_HOME", "relative/ignored")
	t.Setenv("HOME", home)
	if got, err := Dir("approvals"); err != nil || got != filepath.Join(home, ".local", "state", "clawtool", "approvals") {
		t.Errorf("Dir(approvals) with a relative XDG_STATE_HOME = %q, %v", got, err)
	}
	for _, bad := range []string{"", ".", "..", "a/b", "../x"} {
		if _, err := Dir(bad); err == nil {
			t.Errorf("Dir(%q): no error", bad)
		}
	}
}
