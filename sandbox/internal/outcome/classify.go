package outcome

import (
	"strings"
	"time"
)

// Linux signal numbers [Classify] uses; a container's wait status carries
// Linux's numbering whatever the host is.
const (
	SigKILL = 9
	SigXCPU = 24
)

// Classify decides how a finished run ended, the same way for every
// backend: a kill of the supervisor's own (killed) first, then the
// cgroup's OOM and pids counters, a CPU-limit signal, any other signal,
// and the error output of a failed exit. sig is the Linux number of the
// signal that ended the command, 0 if none; cpuLimit is Limits.CPU; killed
// is the outcome the supervisor killed the run for, "" if none. O is
// sandbox.Outcome.
func Classify[O ~string](killed O, code, sig int, cpu, cpuLimit time.Duration, oom, pidsMax bool, stderr []byte) O {
	failed := sig != 0 || code != 0
	switch {
	case killed != "":
		return killed
	case failed && oom:
		return O(MemoryLimit)
	case (sig == SigXCPU || sig == SigKILL) && cpu >= CPUKillFloor(cpuLimit):
		return O(CPULimit)
	case sig != 0:
		return O(Signaled)
	case failed && pidsMax:
		return O(PIDsLimit)
	case code != 0:
		return O(ClassifyFailure(stderr))
	}
	return O(Exited)
}

// CPUKillFloor is the least CPU time a run killed by the kernel for
// RLIMIT_CPU reports. The kernel checks the limit against tick-sampled CPU
// time, while the reaped process's rusage is the precise figure; on a busy
// machine a process preempted between ticks is charged more ticks than it
// ran, so the precise figure at the kill was measured here as low as 0.88
// of the limit at load 5 (40 runs of a 1 s limit), and lower on a busier
// machine. No other SIGKILL reaches the run unasked (the supervisor's own
// kills are recorded before this classification, and an OOM kill is read
// from the cgroup first), so half the limit is a floor that only a signal
// sent for another reason, early in the run, stays under. The limit is
// rounded up to whole seconds, as the rlimit is.
func CPUKillFloor(limit time.Duration) time.Duration {
	return (limit + time.Second - 1).Truncate(time.Second) / 2
}

// ClassifyFailure reads the cause of a failed exit from the error output
// when a limit, rather than the command, is the likely cause: it returns
// [MemoryLimit], [PIDsLimit] or [Exited].
func ClassifyFailure(stderr []byte) string {
	s := strings.ToLower(string(stderr))
	switch {
	case strings.Contains(s, "out of memory"), strings.Contains(s, "cannot allocate memory"),
		strings.Contains(s, "memoryerror"), strings.Contains(s, "failed to allocate"):
		return MemoryLimit
	case strings.Contains(s, "fork") && strings.Contains(s, "resource temporarily unavailable"),
		strings.Contains(s, "cannot fork"), strings.Contains(s, "pthread_create failed"),
		strings.Contains(s, "newosproc"):
		return PIDsLimit
	}
	return Exited
}
