package sandbox

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// A Backend runs commands under a [Policy] and classifies how they ended.
// A [*Native] is the Linux sandbox of [Run]; a [*github.com/miniopenclaw/tool/sandbox/container.Backend]
// runs commands in containers of a Docker-compatible engine. Both honour the same Policy
// and the same [Limits] and classify runs the same way (see [Outcome]), so
// code written against a Backend does not care which one it has.
type Backend interface {
	// Run runs argv under p with stdin (nil means empty) and waits for it,
	// with the contract of the package-level [Run].
	Run(ctx context.Context, p Policy, argv []string, stdin io.Reader) (*Result, error)
}

// A CmdRunner is a [Backend] that runs a whole [Cmd]: it streams the
// command's output to Cmd.Stdout and Cmd.Stderr as it is written, and hands
// the proxy of a [NetworkAllow] run to Cmd.ConfigureProxy, with the
// contract of [Cmd.Run] for everything else. [Cmd.Run] uses RunCmd when
// the Cmd sets any of the three and its Backend is a CmdRunner; the
// container backend is one.
type CmdRunner interface {
	Backend
	// RunCmd runs c (its Policy, Args, Stdin, Stdout, Stderr and
	// ConfigureProxy) bounded by ctx, and returns how it ended as Run
	// does; it does not set c.Result.
	RunCmd(ctx context.Context, c *Cmd) (*Result, error)
}

// NativeOptions configure a [Native] backend. The zero value is a backend
// without spares: every run starts its helper itself.
type NativeOptions struct {
	// Spares is how many spare helpers the backend keeps waiting at most,
	// one for each of its most recently used shapes (see the package
	// documentation); 0 or less keeps none.
	Spares int
	// Idle is how long a spare waits for a run before it is killed and
	// reaped, and how long the backend's forker (see the package
	// documentation) waits for a helper to start before it is stopped
	// (the next run starts another); 0 or less means 30 seconds.
	Idle time.Duration
	// NetworkLog receives the backend's network denials (runs under
	// [NetworkAllow]), one Warn record each (host, port, addr, reason,
	// client); nil means [slog.Default]. They are in
	// Result.NetworkDenials either way.
	NetworkLog *slog.Logger
	// Helper is the absolute path of the helper program to start for each
	// run, built from the same version of this module (see the command
	// clawtool-sandbox-helper); empty means the program that runs the
	// sandbox, re-executed, as it has always been. The helper program holds
	// the helper's code alone, so it starts with far less work than a
	// large program: a cold run takes less time and CPU. A helper built
	// from other sources refuses every run, and a path that is not
	// absolute or cannot be started fails every run: it never runs a
	// command with fewer layers. Whoever can replace the file can run code
	// as this program's user, as with any program it starts: a run whose
	// Policy.Workspace holds it, or any name its path is resolved through
	// (a directory or a symbolic link on the way), is refused, since its
	// command could change it.
	//
	// With a helper program or without one, the helpers that get a user
	// namespace are started by a forker: the helper program, or this
	// program re-executed, started once (at the first such helper) in its
	// forker mode, which clones each helper with its small address space
	// instead of this program's large one, each still a child of this
	// program. The forker is a child of this program until Close (or this
	// program's end); a forker that died is replaced at the next run, and
	// a run whose forker failed it fails with the reason (see
	// docs/sandbox.md).
	Helper string
}

// DefaultSpares is the number of spare helpers [DefaultNative] keeps.
const DefaultSpares = 4

// defaultIdle is the Idle of NativeOptions left zero.
const defaultIdle = 30 * time.Second

// SpareEnv turns the spare helpers of [DefaultNative] off when it is "0"
// at its first use. It configures only that backend: a Native made with
// [NewNative] keeps what its options say.
const SpareEnv = "CLAWTOOL_SANDBOX_SPARE"

// HelperEnv names, at the first use of [DefaultNative], the helper program
// that backend starts for each run ([NativeOptions.Helper]): the absolute
// path of the command clawtool-sandbox-helper built from the same version
// of this module. Unset or empty means the program itself, re-executed. A
// path that is not absolute, cannot be started, or names a program built
// from other sources fails every run of that backend: it never runs a
// command with fewer layers. It configures only that backend, as
// [SpareEnv] does; a Native made with [NewNative] keeps what its options
// say.
const HelperEnv = "CLAWTOOL_SANDBOX_HELPER"

// Native is the Linux sandbox as a [Backend]: it runs each command in a
// helper of its own, under namespaces, Landlock, a seccomp filter, limits
// and a cgroup leaf (see the package documentation). It refuses a policy
// that names an image.
//
// A Native owns its spare helpers (see [NativeOptions]): two values share
// none, and closing one does not touch the other's. The zero value is
// usable and keeps no spares (but a forker, as every Native does once it
// has run a command: close it too); [NewNative] makes one that does. A Native is
// safe for concurrent use and must not be copied after its first use.
// [DefaultNative] is the one [Run] and a [Cmd] without a Backend use.
type Native struct {
	pool sparePool    // with the options and a test's hooks
	log  *slog.Logger // NativeOptions.NetworkLog
}

// NewNative returns a native backend with the options o. A program that
// makes one calls [Native.Close] when done with it: once it has run a
// command it holds its forker (see NativeOptions.Helper) and its spares,
// child processes that otherwise live until the program ends.
func NewNative(o NativeOptions) *Native {
	n := &Native{log: o.NetworkLog}
	n.pool.configure(o)
	return n
}

// DefaultNative returns the native backend the package-level [Run] and a
// [Cmd] without a Backend use, made at the first call with [DefaultSpares]
// spares, or none when the environment variable [SpareEnv] is "0".
//
// It is a function, not an exported variable as [net/http.DefaultClient]
// is: the default backend is a security default, and a variable any
// imported package could assign would let that package swap the sandbox
// of every Run in the process for a backend of its own choosing. What a
// caller can do with the returned value is run commands and close it;
// closing it only makes later runs start cold.
func DefaultNative() *Native { return defaultNative() }

var defaultNative = sync.OnceValue(func() *Native { return NewNative(defaultNativeOptions(os.Getenv)) })

// defaultNativeOptions returns the options of [DefaultNative] under the
// environment getenv reads.
func defaultNativeOptions(getenv func(string) string) NativeOptions {
	o := NativeOptions{Spares: DefaultSpares, Helper: getenv(HelperEnv)}
	if getenv(SpareEnv) == "0" {
		o.Spares = 0
	}
	return o
}

// Run runs argv under p with stdin (nil means empty) and waits for it, with
// the contract of the package-level [Run]. It refuses a policy that names
// an image.
func (n *Native) Run(ctx context.Context, p Policy, argv []string, stdin io.Reader) (*Result, error) {
	if p.Image != "" {
		return nil, errNativeImage
	}
	return n.run(ctx, p, argv, stdin, streams{})
}

// Close kills and reaps every idle spare helper of n, stops their idle
// timers, waits for the spares being started to end and kills those too,
// and waits for the helpers of ended runs that are still exiting in the
// background (a helper that forked its command reports how it ended first)
// and for their cgroup leaves to be removed. After Close, n still runs
// commands, each starting its helper itself, and starts no more spares.
// It does not wait for runs under way. Close always returns nil; a second
// call only waits again.
func (n *Native) Close() error {
	n.pool.close()
	return nil
}

var errNativeImage = errors.New("sandbox: the policy names an image, which only a container backend can run; refusing to run it on the host")
