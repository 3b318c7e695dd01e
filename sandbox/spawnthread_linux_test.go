package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestRunSurvivesLockedThreadExit: a goroutine of the program (any package
// of it) that ends while locked to its thread ends the thread, and the
// kernel sends the parent death signal of every child that thread started.
// The forker and its helpers (the program's children through CLONE_PARENT,
// the forker's parent being theirs) die by SIGKILL with the thread the
// forker was started from. Each row has the backend's first run, which
// starts its forker, made by a goroutine locked to its thread; then a
// second run waits, and the goroutine ends. In the control the forker is
// started from that thread, as before, and the run waiting is killed;
// started from the spawning thread, it ends as it would have.
func TestRunSurvivesLockedThreadExit(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name       string
		here, kill bool
	}{
		{"control: the forker started from the caller's thread", true, true},
		{"the forker started from the spawning thread", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNative(t, NativeOptions{}, nil)
			n.pool.fk.startHere = tc.here
			stopDir, err := os.MkdirTemp(f.base, "stop-")
			must(t, err)
			must(t, os.Chmod(stopDir, 0o755))
			stop := filepath.Join(stopDir, "stop")
			p := f.policy()
			p.ReadOnly = append(p.ReadOnly, stopDir)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			started, end := make(chan error), make(chan struct{})
			go func() {
				runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
				_, err := n.Run(ctx, p, []string{f.attacker, "waitfor", "/"}, nil)
				started <- err
				<-end
			}()
			if err := <-started; err != nil {
				t.Fatalf("first run: %v", err)
			}
			if n.forkerPid() == 0 {
				t.Fatal("no forker after the first run: the attack needs one")
			}
			var out lockedBuffer
			done := make(chan error, 1)
			cmd := CommandContext(ctx, p, f.attacker, "waitfor", stop)
			cmd.Backend, cmd.Stdout = n, &out
			go func() { done <- cmd.Run() }()
			for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), "waiting"); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					os.WriteFile(stop, nil, 0o644)
					t.Fatalf("the run never started: %q", out.String())
				}
			}
			close(end)
			time.Sleep(200 * time.Millisecond) // the thread's end, and the kernel's signals
			must(t, os.WriteFile(stop, nil, 0o644))
			err = <-done
			switch {
			case tc.kill && err == nil:
				t.Fatalf("the run ended as it would have, after the thread that started its forker ended: the attack shows nothing here")
			case !tc.kill && err != nil:
				t.Fatalf("run: %v (%+v)", err, cmd.Result)
			}
			t.Logf("run: %v", err)
		})
	}
}
