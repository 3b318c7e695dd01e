package sandbox

import (
	"context"
	"errors"
	"io"
)

// Run runs the command argv (argv[0] is looked up in the PATH of the
// policy's environment) under p and waits for it. Its standard input is
// empty. ctx bounds the run: when it is done the whole process tree is
// killed and the Result's Outcome is [TimedOut].
//
// Run returns an error, and runs nothing, when p is invalid or needs a layer
// the host lacks (a [*LayerError]); it returns an error too when the sandbox
// could not be built or the command could not be started. Otherwise the
// Result says how the command ended, whatever that was.
func Run(ctx context.Context, p Policy, argv ...string) (*Result, error) {
	return DefaultNative().Run(ctx, p, argv, nil)
}

// A Cmd is a command to run in the sandbox, shaped like [os/exec.Cmd] so
// that a tool's own subprocess can move into the sandbox with one changed
// call:
//
//	cmd := sandbox.CommandContext(ctx, policy, "git", "status")
//	out, err := cmd.Output()
type Cmd struct {
	// Policy is what the command may touch.
	Policy Policy
	// Args holds the command name followed by its arguments.
	Args []string
	// Stdin is the command's standard input; nil means empty. An
	// *os.File that is a pipe or a regular file open read-only (a pipe's
	// read end) is handed to the command as it is, so the command reads
	// it as the caller writes, for as long as it runs. On the native
	// backend a regular file open for writing is copied in as any reader
	// is, /dev/null is an empty input, and any other *os.File (a
	// terminal, a socket, a device, a pipe open for writing), which the
	// command could write to or change with ioctls, makes the run fail
	// before anything starts.
	Stdin io.Reader
	// Stdout and Stderr, when set, receive the command's standard output
	// and standard error as it writes them, for a command that runs as
	// long as its caller talks to it (an MCP server on stdio): what goes
	// to them is neither kept in the Result nor counted against
	// Limits.Output, which then bounds only the stream left unset. A
	// [*Native] and a Backend that is a [CmdRunner] (the container
	// backend) stream; a Cmd that sets either with another Backend fails
	// without running anything.
	Stdout, Stderr io.Writer
	// Backend runs the command; nil means [DefaultNative].
	Backend Backend
	// ConfigureProxy, when set, is called with the proxy of a
	// [NetworkAllow] run before it serves the command: the caller names
	// its Client, reports denials as they happen (OnDenial), sets its Log
	// or bounds, and tests map their names to loopback servers (Resolve,
	// Dial). It runs in the caller's process, never in the sandbox. Its
	// Rules are Policy.Allow whatever the function sets: the policy alone
	// says which hosts are listed. Ignored for any other network, and by
	// a backend that is neither the native one nor a [CmdRunner].
	ConfigureProxy func(*Proxy)
	// Result is how the run ended, set by Run and Output.
	Result *Result

	ctx context.Context
}

// CommandContext returns a Cmd that runs name with args under p, bounded by
// ctx.
func CommandContext(ctx context.Context, p Policy, name string, args ...string) *Cmd {
	return &Cmd{Policy: p, Args: append([]string{name}, args...), ctx: ctx}
}

// Run runs the command and waits for it. It returns nil when the command
// exited with status 0, an [*ExitError] carrying the Result when it ended
// any other way, and another error when it could not run at all.
func (c *Cmd) Run() error {
	if c.Result != nil {
		return errors.New("sandbox: Cmd already ran")
	}
	ctx := c.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	b := c.Backend
	if b == nil {
		b = DefaultNative()
	}
	var (
		r   *Result
		err error
	)
	n, native := b.(*Native)
	switch {
	case native && (c.Stdout != nil || c.Stderr != nil || c.ConfigureProxy != nil):
		if c.Policy.Image != "" {
			return errNativeImage
		}
		r, err = n.run(ctx, c.Policy, c.Args, c.Stdin, streams{c.Stdout, c.Stderr, c.ConfigureProxy})
	case !native && (c.Stdout != nil || c.Stderr != nil || c.ConfigureProxy != nil) && isCmdRunner(b):
		r, err = b.(CmdRunner).RunCmd(ctx, c)
	case c.Stdout != nil || c.Stderr != nil:
		return errNoStreams
	default:
		r, err = b.Run(ctx, c.Policy, c.Args, c.Stdin)
	}
	if err != nil {
		return err
	}
	c.Result = r
	if !r.OK() {
		return &ExitError{Result: r}
	}
	return nil
}

// Output runs the command and returns its standard output (capped at
// Limits.Output), with the error of [Cmd.Run].
func (c *Cmd) Output() ([]byte, error) {
	err := c.Run()
	if c.Result == nil {
		return nil, err
	}
	return c.Result.Stdout, err
}

// streams are what a [Cmd] adds to a native run: the writers it streams
// the command's output to, and its ConfigureProxy.
type streams struct {
	stdout, stderr io.Writer
	proxy          func(*Proxy)
}

func isCmdRunner(b Backend) bool {
	_, ok := b.(CmdRunner)
	return ok
}

var errNoStreams = errors.New("sandbox: only the native backend and a CmdRunner (the container backend) stream a command's output (Cmd.Stdout, Cmd.Stderr); refusing to run it")

// An ExitError reports a command that ran but did not exit with status 0.
type ExitError struct {
	*Result
}

func (e *ExitError) Error() string { return "sandbox: command " + e.Summary() }
