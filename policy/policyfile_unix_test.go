//go:build unix

package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// TestPolicyFileOthersMayWrite: a policy file that other users may
// write, or that another user owns, is theirs to rewrite: a permit for
// everything written into it is in force at the next reload (SIGHUP, a
// configuration change) or start. Load and ReloadFile refuse such a file
// (a reload keeps the policies in force), judging the file opened, so a
// symbolic link to another user's file is refused too. Before the fix
// every attack row loaded the attacker's permit and the call ran; the
// control rows show the same rewrite taking effect in a file only its
// owner may write, which is what a reload is for.
func TestPolicyFileOthersMayWrite(t *testing.T) {
	const mine = `permit (principal, action, resource == Tool::"read");`
	const theirs = `permit (principal, action, resource);`
	root := os.Geteuid() == 0
	for _, tc := range []struct {
		name    string
		rewrite func(t *testing.T, path string) string // the file Load and ReloadFile are given
		refused string                                 // "": the rewrite loads
	}{
		{"control: the owner's file, mode 0644", func(t *testing.T, p string) string { return p }, ""},
		{"control: the owner's file, mode 0600", func(t *testing.T, p string) string { chmod(t, p, 0o600); return p }, ""},
		{"attack: others may write it", func(t *testing.T, p string) string { chmod(t, p, 0o666); return p }, "other users may write"},
		{"attack: the group may write it", func(t *testing.T, p string) string { chmod(t, p, 0o664); return p }, "other users may write"},
		{"attack: a link to a file others may write", func(t *testing.T, p string) string {
			chmod(t, p, 0o646)
			link := filepath.Join(t.TempDir(), "link.cedar")
			if err := os.Symlink(p, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "other users may write"},
		{"attack: another user owns it", func(t *testing.T, p string) string {
			if !root {
				t.Skip("giving a file to another user needs root") // the unit test of checkKeyOwnerFor covers the rest
			}
			if err := os.Chown(p, 4242, 4242); err != nil {
				t.Fatal(err)
			}
			return p
		}, "owned by user 4242"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "roles.cedar")
			if err := os.WriteFile(p, []byte(mine), 0o644); err != nil {
				t.Fatal(err)
			}
			chmod(t, p, 0o644)
			a, err := policy.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			deleteCall := func() policy.Effect {
				return a.Decide(policy.WithPrincipal(context.Background(), policy.Principal{ID: "eve"}), tool.AccessRequest{Name: "delete"}).Effect
			}
			if e := deleteCall(); e != policy.Deny {
				t.Fatalf("before the rewrite: %s, want deny", e)
			}
			// The rewrite, as the other user would make it.
			if err := os.WriteFile(p, []byte(theirs), 0o644); err != nil {
				t.Fatal(err)
			}
			name := tc.rewrite(t, p)
			reloadErr := a.ReloadFile(name)
			_, loadErr := policy.Load(name)
			if tc.refused == "" {
				if reloadErr != nil || loadErr != nil {
					t.Fatalf("ReloadFile: %v, Load: %v; want both to load", reloadErr, loadErr)
				}
				if e := deleteCall(); e != policy.Allow {
					t.Fatalf("after the owner's rewrite: %s, want allow", e)
				}
				return
			}
			for _, err := range []error{reloadErr, loadErr} {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("ReloadFile: %v, Load: %v; want both refused with %q", reloadErr, loadErr, tc.refused)
				}
			}
			if e := deleteCall(); e != policy.Deny {
				t.Fatalf("after a refused reload: %s, want deny (the policies in force)", e)
			}
		})
	}
}

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}
