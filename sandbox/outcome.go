package sandbox

import (
	"fmt"
	"github.com/miniopenclaw/tool/internal/showtext"
	"github.com/miniopenclaw/tool/sandbox/internal/outcome"
	"strings"
	"time"
)

// An Outcome classifies how a run ended.
type Outcome string

const (
	// Exited means the command exited by itself; see Result.ExitCode.
	Exited Outcome = "exited"
	// Signaled means a signal the sandbox did not send ended the command.
	Signaled Outcome = "signaled"
	// TimedOut means the run's context ended first and the run was killed.
	TimedOut Outcome = "timed_out"
	// OutputLimit means the run wrote more than Limits.Output bytes and
	// was killed.
	OutputLimit Outcome = "output_limit"
	// CPULimit means the run used up Limits.CPU and the kernel killed it.
	CPULimit Outcome = "cpu_limit"
	// MemoryLimit means the run reached Limits.Memory: the run's cgroup
	// counted an OOM kill, or, without a cgroup, an allocation failed and
	// the command failed because of it (read from its error output).
	MemoryLimit Outcome = "memory_limit"
	// PIDsLimit means creating a process failed at Limits.Processes and
	// the command failed: the run's cgroup counted a refused fork, or,
	// without a cgroup, the command's error output says so.
	PIDsLimit Outcome = "pids_limit"
	// WriteLimit means the command failed after it used up a write
	// budget (Limits.WriteBytes): when it ended, less than a sixteenth of
	// the workspace's budget ([LayerWriteBudget]) or of the private /tmp,
	// or no inode, was left. Only the native backend reports it; /tmp's
	// only in fork mode (its helper reads what was left once the command
	// has ended), the workspace's in every mode.
	WriteLimit Outcome = "write_limit"
)

// A Result is what a finished run gives back.
type Result struct {
	// Outcome classifies how the run ended.
	Outcome Outcome
	// ExitCode is the command's exit status, or -1 when a signal ended it.
	ExitCode int
	// Signal names the signal that ended the command ("killed"), if any.
	Signal string
	// Stdout and Stderr are the bytes the command wrote, as written, each
	// cut when the run reached Limits.Output. Use [Result.Text] or
	// [Sanitize] before showing them to a model or a terminal.
	Stdout, Stderr []byte
	// Truncated reports that output was cut at Limits.Output.
	Truncated bool
	// Duration is the wall time from start to reaping.
	Duration time.Duration
	// CPU is the user and system CPU time the run used.
	CPU time.Duration
	// Layers are the sandbox layers that were active, in the order they
	// were applied.
	Layers []Layer
	// Cgroup is the cgroup version of the run's leaf ("v1" or "v2"), or
	// empty when the run had none (see [LayerCgroup]).
	Cgroup string
	// Mode says how the command ran: [ModeNative], or which way a
	// container backend ([*github.com/miniopenclaw/tool/sandbox/container.Backend]) ran it.
	Mode Mode
	// Fallback, when not empty, says why the run took a slower mode than
	// its backend prefers: a warm container whose call server could not
	// start runs each call with the engine's exec ([ModeWarmExec]), and
	// this is the reason. A run never falls back to the host.
	Fallback string
	// ProtectedChanged lists the protected paths (Policy.Protected, and
	// the hooks and config of the repositories a .git leads to inside the
	// workspace) that the run created, removed, replaced or changed:
	// changes the write budget's apply step refused ([LayerWriteBudget]:
	// they did not reach the host), and what the comparison of the host
	// before and after the run found (what the sandbox could not keep the
	// run from doing when it wrote the workspace directly: a protected path
	// missing when the run started can be created, see Policy.Protected),
	// for the program to inspect or undo. The comparison covers the path, the identity of
	// each directory above it inside the workspace, and every entry of
	// its tree to 16 levels (type, inode, size, modification and change
	// times), at most 131,072 entries over all the paths: a workspace past
	// that (or deeper) is refused before the run, and after a run the path
	// being compared when the bound was reached and every one after it are
	// listed, not judged. The native and the container backends fill it in.
	ProtectedChanged []string
	// NotApplied lists what the run changed in its workspace that the
	// supervisor did not apply to the host workspace ([LayerWriteBudget]),
	// one "path: reason" each: a fifo, socket or device, a setuid or setgid
	// file, an entry past the apply step's bounds, or one it failed to
	// write. A change under a protected path is not applied either; it is
	// listed in ProtectedChanged instead. At most 64 entries are listed
	// (a path over 512 bytes cut, with its length), and one more counts
	// the rest.
	NotApplied []string
	// NetworkDenials lists the connections the proxy of a [NetworkAllow]
	// run refused, in the order it refused them (at most
	// [MaxNetworkDenials]; NetworkDenialsDropped counts the rest).
	NetworkDenials []NetworkDenial
	// NetworkDenialsDropped is the number of denials past
	// [MaxNetworkDenials] that were counted but not listed.
	NetworkDenialsDropped int
}

// MaxNetworkDenials is the number of denials a Result lists.
const MaxNetworkDenials = 256

// A NetworkDenial is one connection the proxy refused.
type NetworkDenial struct {
	// Host and Port are what the client asked for, as it wrote them (a
	// name or an IP literal).
	Host string
	Port int
	// Addr is the address the name resolved to, when the refusal was of
	// the address (an internal range) rather than of the name.
	Addr string `json:",omitempty"`
	// Reason says why, in words ("not in the allow list", "resolves to
	// loopback 127.0.0.1", ...).
	Reason string
	// Client names who asked: the command of the run (its argv[0]) or the
	// label the proxy's owner gave it.
	Client string
}

// A Mode names the way a backend ran a command.
type Mode string

const (
	// ModeNative is the Linux sandbox of [Native].
	ModeNative Mode = "native"
	// ModeFresh is a fresh container per call.
	ModeFresh Mode = "fresh"
	// ModeWarmServer is a warm container whose call server forks and
	// executes the command inside it.
	ModeWarmServer Mode = "warm_server"
	// ModeWarmExec is a warm container that runs the command with the
	// engine's exec: when the container backend's Options.WarmExec asks for it, or as
	// the fallback when the call server cannot run (see Result.Fallback).
	ModeWarmExec Mode = "warm_exec"
)

// OK reports whether the command exited by itself with status 0.
func (r *Result) OK() bool { return r.Outcome == Exited && r.ExitCode == 0 }

// Summary is one line saying how the run ended, for a person or a model,
// such as "exited with status 0" or "killed: output limit of 1048576 bytes
// reached".
func (r *Result) Summary() string {
	switch r.Outcome {
	case Exited:
		return fmt.Sprintf("exited with status %d", r.ExitCode)
	case Signaled:
		return "killed by signal " + r.Signal
	case TimedOut:
		return fmt.Sprintf("killed: timed out after %s", r.Duration.Round(time.Millisecond))
	case OutputLimit:
		return "killed: output limit reached"
	case CPULimit:
		return fmt.Sprintf("killed: CPU limit reached after %s of CPU time", r.CPU.Round(time.Millisecond))
	case MemoryLimit:
		return fmt.Sprintf("failed: memory limit reached (exit status %d)", r.ExitCode)
	case PIDsLimit:
		return fmt.Sprintf("failed: process limit reached (exit status %d)", r.ExitCode)
	case WriteLimit:
		return fmt.Sprintf("failed: write limit reached (exit status %d)", r.ExitCode)
	}
	return string(r.Outcome)
}

// Text renders the run for a model: the sanitized stdout, then the
// sanitized stderr under a "stderr:" line, then the summary line.
func (r *Result) Text() string {
	var b strings.Builder
	b.WriteString(Sanitize(r.Stdout))
	if len(r.Stderr) > 0 {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("stderr:\n")
		b.WriteString(Sanitize(r.Stderr))
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	if r.Truncated {
		b.WriteString("[output cut at the output limit]\n")
	}
	if len(r.ProtectedChanged) > 0 {
		b.WriteString("[the run created or changed protected paths: " + Sanitize([]byte(strings.Join(r.ProtectedChanged, ", "))) + "]\n")
	}
	if len(r.NotApplied) > 0 {
		b.WriteString("[changes not applied to the workspace: " + Sanitize([]byte(strings.Join(r.NotApplied, "; "))) + "]\n")
	}
	b.WriteString("[" + r.Summary() + "]")
	return b.String()
}

// Sanitize turns command output into plain text that is safe to show to a
// model or a terminal: newlines and tabs stay, and every other character
// that is not graphic (controls, ANSI escape sequences included since they
// start with ESC, format characters such as U+202E and U+200B, line
// separators, private-use and unassigned code points) becomes a visible
// escape in Go's syntax (\x1b, \r, \u202e), as does every byte that is not
// valid UTF-8 (\xff).
func Sanitize(b []byte) string {
	return showtext.Text(string(b))
}

// classify decides how a finished run ended, the same way for every
// backend; see [outcome.Classify].
func classify(killed Outcome, code, sig int, cpu, cpuLimit time.Duration, oom, pidsMax bool, stderr []byte) Outcome {
	return outcome.Classify(killed, code, sig, cpu, cpuLimit, oom, pidsMax, stderr)
}
