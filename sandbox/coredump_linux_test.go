package sandbox

import (
	"context"
	"strings"
	"testing"
)

// coreLimit returns the "Max core file size" soft and hard fields of a
// /proc/PID/limits text.
func coreLimit(limits string) string {
	for _, line := range strings.Split(limits, "\n") {
		if rest, ok := strings.CutPrefix(line, "Max core file size"); ok {
			f := strings.Fields(rest)
			if len(f) >= 2 {
				return f[0] + " " + f[1]
			}
		}
	}
	return ""
}

// TestCrashReachesNoCoreHandler is the attack of crashing on purpose to
// hand the run's memory and /proc to the host's core handler: with a pipe
// in kernel.core_pattern (apport, systemd-coredump), the kernel ignores
// RLIMIT_CORE 0 ("core limits are irrelevant to pipes") and starts the
// handler as root in the initial namespaces for a crash in any
// namespace, a handler with a history of privilege escalation through
// such crashes. Only the limit 1 stops a piped dump (the kernel's own
// guard against recursive crashes), and it stops a file dump too (below
// a page). Before, the run's limit was 0, and the run could set any
// value up to its hard limit anyway. Now soft and hard are 1, and the
// seccomp filter refuses setting RLIMIT_CORE (setrlimit, prlimit64 with
// a new value) with EPERM, since lowering it to 0 would arm the pipe
// again. The host's core_pattern is not changed by the test (it is the
// whole machine's); the control, without the filter, shows the run can
// lower the limit to 0 where the filter does not hold it.
func TestCrashReachesNoCoreHandler(t *testing.T) {
	requireSandbox(t)
	script := `grep "core file" /proc/self/limits; ulimit -c 0 2>&1 || true; grep "core file" /proc/self/limits; sh -c 'grep "core file" /proc/self/limits'`
	r, err := Run(context.Background(), Policy{}, "sh", "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(r.Stdout)), "\n")
	if len(lines) < 3 {
		t.Fatalf("output %q %q", r.Stdout, r.Stderr)
	}
	for _, l := range []string{lines[0], lines[len(lines)-2], lines[len(lines)-1]} {
		if got := coreLimit(l); got != "1 1" {
			t.Errorf("the run's core limit is %q (%q), want 1 1: a crash would reach a pipe core handler", got, l)
		}
	}
	if !strings.Contains(string(r.Stdout), "not permitted") {
		t.Errorf("lowering the core limit was not refused: %q", r.Stdout)
	}

	// Control: without the filter, the run lowers its limit to 0.
	r, err = Run(context.Background(), Policy{Without: []Layer{LayerSeccomp}}, "sh", "-c", `ulimit -c 0 && grep "core file" /proc/self/limits`)
	if err != nil {
		t.Fatal(err)
	}
	if got := coreLimit(string(r.Stdout)); got != "0 0" && !strings.HasPrefix(got, "0 ") {
		t.Errorf("control: without the filter the run did not lower its core limit: %q %q", r.Stdout, r.Stderr)
	}
}
