package sandbox

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestInotifyNotTakenFromSupervisor: inotify instances and watches are
// counted per user, and a user namespace charges what its processes take
// to the user who made it as well: root, the supervisor. A run that took
// every instance it could (128, the host's max_user_instances) left root
// none while it lived, so every root process on the host (the supervisor
// among them) failed inotify_init1 with EMFILE. The control holds the
// instances outside the sandbox, as root, and sees root's own init fail
// meanwhile; in the sandbox the run's user namespace is given a share of
// its own (max_inotify_instances), and root still gets an instance while
// the run holds every one it could take.
func TestInotifyNotTakenFromSupervisor(t *testing.T) {
	f := newFixture(t)
	// hold waits until the attacker says it holds its instances, then
	// tries one as root (this test process).
	hold := func(t *testing.T, out *lockedBuffer) (rootErr error) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "held"); {
			if time.Now().After(deadline) {
				t.Fatalf("the attacker never said it held its instances: %q", out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if fd >= 0 {
			unix.Close(fd)
		}
		return err
	}
	t.Run("control: held by root outside the sandbox", func(t *testing.T) {
		var buf lockedBuffer
		cmd := exec.Command(f.attacker, "inotifyhold", "3s")
		cmd.Env = append(cmd.Environ(), attackEnv+"=1", markEnv+"="+f.mark)
		cmd.Stdout = &buf
		must(t, cmd.Start())
		defer cmd.Wait()
		if err := hold(t, &buf); err == nil {
			t.Fatalf("the control held %q and root could still make an instance: the attack shows nothing here", buf.String())
		}
	})
	t.Run("sandboxed", func(t *testing.T) {
		var buf lockedBuffer
		done := make(chan error, 1)
		go func() {
			cmd := CommandContext(context.Background(), f.policy(), f.attacker, "inotifyhold", "3s")
			cmd.Stdout = &buf
			done <- cmd.Run()
		}()
		err := hold(t, &buf)
		if runErr := <-done; runErr != nil {
			t.Fatalf("run: %v (%q)", runErr, buf.String())
		}
		if err != nil {
			t.Errorf("root could not make an inotify instance while the run held %q: %v", strings.TrimSpace(buf.String()), err)
		}
	})
}
