// Package sandbox runs commands with no more authority than a tool call
// needs.
//
// A [Policy] says what a run may touch: a workspace directory it may write,
// further paths it may read, protected paths inside the workspace that stay
// read-only, the network (none by default), the environment (never the
// caller's) and resource [Limits]. [Run] starts a command under a policy and
// returns a classified [Result]: exit status or signal, timed out, output
// limit, CPU, memory or process limit, with stdout and stderr kept apart and
// capped.
//
// # Backends
//
// A [Backend] runs a command under a Policy; every backend honours the
// same Policy and [Limits] and classifies runs the same way ([Outcome]).
// Each lives in a package of its own, so a program links only the ones it
// uses:
//
//   - [Native], in this package: the Linux sandbox below; [DefaultNative]
//     is what [Run] and [Cmd] use unless Cmd.Backend says otherwise, and
//     [NewNative] makes one with spares of its own.
//   - [github.com/miniopenclaw/tool/sandbox/container]: a container of a
//     Docker-compatible engine per call, or a warm one per session.
//   - [github.com/miniopenclaw/tool/sandbox/wasm]: WebAssembly modules
//     (WASI), in process.
//
// Package [github.com/miniopenclaw/tool/sandbox/workspace] builds the
// exec and file tools on any of them. The security defaults a run applies
// ([RequiredLayers], [DefaultProtected], [SystemReadOnly], [DefaultEnv],
// [DefaultAllowPorts]) are functions returning copies: nothing a caller
// does with them changes another run. A policy can also be read from a
// JSON file ([ReadPolicyFile]).
//
// # The Linux helper
//
// On Linux the sandbox needs no other program. The calling binary is
// re-executed as a helper that builds the sandbox and then starts the
// command: where procfs takes a PID namespace (Linux 6.15) it forks the
// command from a single-threaded clone into a PID namespace of its own,
// waits for it outside that namespace and reports how it ended (an execve
// from the multi-threaded Go helper would first wait for the runtime's
// other threads to end); elsewhere it executes the command itself. The helper runs from the initialisation of a small internal
// package, before the program's heavier packages are initialised and long
// before main: a program that links this package serves as its own helper
// without calling anything, and the helper starts in little more than the
// time the Go runtime takes to start. The helpers are cloned by a forker,
// the binary re-executed in its forker mode, one per backend while it
// starts helpers (it stops after the backend's idle time): its clone
// into a new user namespace shares the forker's memory on amd64 (the
// child waits on a pipe for its id maps, with raw calls on a stack of its
// own, until its exec) and elsewhere copies the page tables of a freshly
// started process; never those of the large program running the sandbox
// (see [NativeOptions] Helper).
//
// The helper applies, in this order: user, mount, PID, network, IPC and UTS
// namespaces, with the namespace root mapped to an unprivileged host user
// and supplementary groups dropped; a read-only root with a private /tmp,
// tmpfs over /run, /var/run and $XDG_RUNTIME_DIR, a minimal /dev and a fresh
// /proc; the workspace read-write, as an overlay whose changes are held on
// a tmpfs of Limits.WriteBytes ([LayerWriteBudget]) and applied to the host
// workspace by the supervisor after the run, and its protected paths
// re-bound read-only; every capability dropped; no_new_privs; Landlock; a seccomp
// filter; resource limits; descriptors above 2 closed; a clean environment.
// When the host has a writable cgroup (v2 delegating memory and pids, or
// the v1 memory and pids hierarchies) the helper is also moved, before it
// reads its configuration, into a cgroup leaf of its own that bounds the
// whole run's memory and tasks, and is emptied and removed after the run
// ([LayerCgroup]).
//
// # Spares
//
// A run need not wait for the helper to start. After a run, the helper of
// the next run with the same shape (the same namespaces, the same sandbox
// user, the same kind of standard input) is already started in the
// background: a spare, cloned into fresh namespaces with its id maps, its
// Go runtime up, blocked reading its configuration before anything of a
// run reached it. The next such run claims it, moves it into its cgroup
// leaf, sends the configuration and pays only the mounts, Landlock,
// seccomp, the limits and the start of the command. A run that found its
// spare waiting starts the following one when it has ended, off its path;
// a run that had to wait for its spare, or found none, starts the
// following one at once.
// Every spare serves exactly one run, with pipes of its own, so nothing of
// one run reaches the next. A backend keeps at most one spare for each of
// its most recently used shapes (four for [DefaultNative]); a spare idle
// for 30 seconds (by default) is killed, and a spare dies with the program.
// The first run of a shape, a run whose spare died, a run whose standard
// input is a file and one whose configuration exceeds a pipe's 64 KiB start
// the helper themselves, as without spares. A spare costs the CPU of
// starting a helper whether or not a run comes (measured in BENCHMARKS.md).
// Each [*Native] owns its spares ([NativeOptions]; two backends share
// none): a backend made with the zero options keeps none, the environment
// variable CLAWTOOL_SANDBOX_SPARE=0 turns those of [DefaultNative] off, and
// [Native.Close] kills the idle ones and starts no more. A spare is started
// with the program's state of the moment (working directory, umask,
// resource limits), not the claiming run's.
//
// # Failing closed
//
// The sandbox fails closed: [Probe] reports which layers the host offers,
// and a run whose policy needs a missing one fails with a [*LayerError]
// before anything runs. There is no fallback to an unsandboxed run.
package sandbox
