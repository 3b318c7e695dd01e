//go:build unix

package policy_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

// TestPolicyFileNotRegular: a policy path that is a named pipe blocked
// Load and ReloadFile for ever while no one wrote to it (a reload on
// SIGHUP hung, the policies it was to bring never came), and loaded
// whatever a writer fed it, read without the check that the file did not
// change while read; a socket or a device is no policy file either.
// Load and ReloadFile now open without waiting and refuse anything but a
// regular file, naming what it is; a failed reload keeps the policies in
// force. Before the fix the first attack row hung (ended by the guard
// below opening the pipe's write end) and the second loaded the writer's
// permit for everything. The control: the same text in a regular file
// loads.
func TestPolicyFileNotRegular(t *testing.T) {
	const mine = `permit (principal, action, resource == Tool::"read");`
	const theirs = `permit (principal, action, resource);`
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string) // makes path; may start a writer
		want string                          // "": loads
	}{
		{"control: a regular file", func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte(theirs), 0o600); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"attack: a named pipe no one writes", func(t *testing.T, p string) { mkfifo(t, p) }, "named pipe"},
		{"attack: a named pipe a writer feeds", func(t *testing.T, p string) {
			mkfifo(t, p)
			go func() {
				// Blocks until the reader opens; gives up when the
				// test ends (the reader refused without reading).
				for range 2 { // Load, then ReloadFile
					w, err := os.OpenFile(p, os.O_WRONLY, 0)
					if err != nil {
						return
					}
					w.WriteString(theirs)
					w.Close()
				}
			}()
		}, "named pipe"},
		{"attack: a socket", func(t *testing.T, p string) {
			l, err := net.Listen("unix", p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
		}, "no such device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			good := filepath.Join(dir, "good.cedar")
			if err := os.WriteFile(good, []byte(mine), 0o600); err != nil {
				t.Fatal(err)
			}
			a, err := policy.Load(good)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "roles.cedar")
			tc.make(t, p)
			var loadErr, reloadErr error
			guard(t, p, func() {
				_, loadErr = policy.Load(p)
				reloadErr = a.ReloadFile(p)
			})
			deleteCall := a.Decide(policy.WithPrincipal(context.Background(), policy.Principal{ID: "eve"}), tool.AccessRequest{Name: "delete"}).Effect
			if tc.want == "" {
				if loadErr != nil || reloadErr != nil || deleteCall != policy.Allow {
					t.Fatalf("control: Load %v, ReloadFile %v, delete %s; want loaded and allowed", loadErr, reloadErr, deleteCall)
				}
				return
			}
			for what, err := range map[string]error{"Load": loadErr, "ReloadFile": reloadErr} {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s = %v, want refused saying %q", what, err, tc.want)
				}
			}
			if deleteCall != policy.Deny {
				t.Errorf("after the refused reload delete is %s, want the policies in force (deny)", deleteCall)
			}
		})
	}
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
}

// guard runs f, and when it has not returned after a minute (it waits
// on the pipe at path for a writer), fails the test and opens the pipe's
// write end so that f returns.
func guard(t *testing.T, path string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	for {
		select {
		case <-done:
			return
		case <-time.After(time.Minute):
			t.Errorf("still waiting on %s after a minute: it blocks", path)
			if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		}
	}
}
