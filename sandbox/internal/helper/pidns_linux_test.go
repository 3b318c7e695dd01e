package helper

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// threadTestEnv makes the test binary, re-executed, do what the helper
// does to its thread before it starts the command in fork mode (its
// children in the command's PID namespace), then make its runtime start
// threads while the goroutine waits: "pinned" with pinThread first, as
// the helper does, "unpinned" without.
const threadTestEnv = "CLAWTOOL_HELPER_THREAD_TEST"

func init() {
	mode, _ := syscall.Getenv(threadTestEnv)
	if mode == "" {
		return
	}
	if mode == "pinned" {
		pinThread()
	}
	if _, err := sys(syscall.SYS_UNSHARE, syscall.CLONE_NEWPID); err != nil {
		write(2, []byte("unshare: "+err.Error()))
		syscall.Exit(3)
	}
	// Each goroutine holds a thread for good, and this one waits for each
	// in turn: the runtime hands its processor to an idle thread when it
	// has one, and starts one from this thread when it has none, which
	// happens within a few waits (8 left the control alive in 30 of 100
	// runs; 100 in none of 80).
	ready := make(chan struct{})
	for range 100 {
		go func() {
			runtime.LockOSThread()
			ready <- struct{}{}
			select {}
		}()
		<-ready
	}
	write(1, []byte("threads started"))
	syscall.Exit(0)
}

// TestThreadsAfterPIDNamespace holds the helper's runtime able to start a
// thread once the helper has entered the command's PID namespace for its
// children (fork mode): a thread cloned from that thread fails (EINVAL,
// its children's PID namespace is not its own), and the runtime, which
// starts a thread from whichever thread needs it, aborts ("runtime/cgo:
// pthread_create failed" under -race). It needs one when the helper,
// preempted after a long raw call, hands its processor over and finds no
// idle thread, which load makes likely. The control, without pinThread,
// aborts; pinned, the runtime's template thread starts them.
func TestThreadsAfterPIDNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("a new PID namespace needs root")
		}
		t.Skip("a new PID namespace needs root")
	}
	for _, c := range []struct {
		mode string
		ok   bool
	}{{"unpinned", false}, {"pinned", true}} {
		var out []byte
		var err error
		started := false
		// The control is given three tries to abort (see init).
		for try := 0; try < 3 && (try == 0 || started); try++ {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), threadTestEnv+"="+c.mode, "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1")
			out, err = cmd.CombinedOutput()
			started = err == nil && strings.Contains(string(out), "threads started")
			if c.ok {
				break
			}
		}
		if started != c.ok {
			t.Errorf("%s: %v %q; want the threads started: %v", c.mode, err, out, c.ok)
		}
		if !c.ok && !strings.Contains(string(out), "pthread_create failed") && !strings.Contains(string(out), "failed to create new OS thread") {
			t.Errorf("%s: %q; want the runtime's report of a thread it could not start", c.mode, out)
		}
	}
}
