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
// time the Go runtime takes to start.
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
// one run reaches the next. A program keeps at most one spare for each of
// its four most recently used shapes; a spare idle for 30 seconds is
// killed, and a spare dies with the program. The first run of a shape, a
// run whose spare died, a run whose standard input is a file and one whose
// configuration exceeds a pipe's 64 KiB start the helper themselves, as
// without spares. A spare costs the CPU of starting a helper whether or
// not a run comes, and waiting about 0.4% of a core; the environment
// variable CLAWTOOL_SANDBOX_SPARE=0 or [SetSpares] turns spares off, and
// [ReleaseSpares] kills the idle ones. A spare is started with the
// program's state of the moment (working directory, umask, resource
// limits), not the claiming run's.
//
// The sandbox fails closed: [Probe] reports which layers the host offers,
// and a run whose policy needs a missing one fails with a [*LayerError]
// before anything runs. There is no fallback to an unsandboxed run.
//
// The same policies run in containers too: package
// [github.com/miniopenclaw/tool/sandbox/container] is a second
// [Backend], beside [Native], that runs each command in a container of a
// Docker-compatible engine, fresh per call or warm per session, with the
// same limits and the same classification of how the run ended.
//
// A warm container's main process is a call server: this program's own
// binary again, bind-mounted read-only into the container (with its
// dynamic loader and libraries, so that any image will do) and started
// from the initialisation of another small internal package, like the
// helper. The backend talks to it over a unix socket with a bounded binary
// framing; for each call it forks and executes the command inside the
// container as the sandbox user, streams its output back into the same
// capped buffers, kills the call's whole process tree on a timeout or an
// output flood, and kills and reaps whatever the call left before it
// reports the end. A call then costs about a millisecond instead of the
// tens an engine exec takes. When the server cannot run in a container
// the backend falls back to the engine's exec and says so in every
// Result (Mode and Fallback); it never falls back to the host.
package sandbox
