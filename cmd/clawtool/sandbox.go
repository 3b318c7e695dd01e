package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/sandbox"
	"github.com/miniopenclaw/tool/sandbox/container"
	"github.com/miniopenclaw/tool/sandbox/workspace"
)

// runSandbox is "clawtool sandbox probe|run".
func runSandbox(ctx context.Context, e *env, args []string) int {
	const about = `Sandbox shows the sandbox a command would get and runs commands in it.

  clawtool sandbox probe
        print the sandbox layers this host offers
  clawtool sandbox run [--workspace DIR] [--image IMAGE] [--net none|host] [--timeout 30s] -- CMD ARGS
        run CMD in the sandbox (in a container of IMAGE with --image), print
        its output and how it ended; the exit status is 0 only when CMD
        exited with status 0`
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(e.stderr, "Usage: clawtool sandbox probe | run [flags] -- CMD ARGS\n\n"+about)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	switch args[0] {
	case "probe":
		rep := sandbox.Probe()
		fmt.Fprint(e.stdout, rep)
		for _, l := range sandbox.RequiredLayers() {
			if !rep.Has(l) {
				return exitToolError
			}
		}
		return exitOK
	case "run":
		return runSandboxRun(ctx, e, args[1:])
	}
	fmt.Fprintf(e.stderr, "clawtool sandbox: unknown subcommand %q (want probe or run)\n", args[0])
	return exitUsage
}

func runSandboxRun(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "sandbox run", "[flags] -- CMD ARGS", "Run runs CMD in the sandbox as the exec tool would, prints its output (control\ncharacters escaped) and how it ended, and exits with status 0 only when CMD\nexited with status 0.")
	ws := fs.String("workspace", "", "the directory the command may write and starts in")
	netw := fs.String("net", "", "network: none (the default), allow (the hosts of --allow-host, through a proxy outside the sandbox), or host")
	var allow []sandbox.HostRule
	fs.Func("allow-host", "with --net allow (implied), let the command reach `HOST[:PORT,...]` (exact, or *.suffix; ports default to 443,80) through the proxy; repeatable", func(s string) error {
		r, err := sandbox.ParseHostRule(s)
		if err == nil {
			allow = append(allow, r)
		}
		return err
	})
	timeout := fs.Duration("timeout", 30*time.Second, "kill the command after this long")
	image := fs.String("image", "", "run in a fresh container of `IMAGE` on the Docker-compatible engine at $DOCKER_HOST or the default socket, instead of the native sandbox")
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(e.stderr, "clawtool sandbox run: no command given after --")
		return exitUsage
	}
	p := sandbox.Policy{Network: sandbox.Network(*netw), Allow: allow}
	if *netw == "" && len(allow) > 0 {
		p.Network = sandbox.NetworkAllow
	}
	if *ws != "" {
		abs, err := filepath.Abs(*ws)
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool sandbox run: %v\n", err)
			return exitUsage
		}
		p.Workspace = abs
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var backend sandbox.Backend = sandbox.DefaultNative()
	if *image != "" {
		c, err := container.New(ctx, container.Options{Image: *image})
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool sandbox run: %v\n", err)
			return exitToolError
		}
		defer c.Close()
		backend = c
	}
	r, err := backend.Run(ctx, p, argv, nil)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool sandbox run: %v\n", err)
		var le *sandbox.LayerError
		if errors.As(err, &le) || errors.Is(err, os.ErrNotExist) {
			return exitToolError
		}
		return exitToolError
	}
	fmt.Fprint(e.stdout, sandbox.Sanitize(r.Stdout))
	if len(r.Stderr) > 0 {
		fmt.Fprint(e.stderr, sandbox.Sanitize(r.Stderr))
	}
	fmt.Fprintf(e.stderr, "clawtool sandbox: %s (outcome %s, mode %s, %s, layers %v)\n", r.Summary(), r.Outcome, r.Mode, r.Duration.Round(time.Millisecond), r.Layers)
	for _, d := range r.NetworkDenials {
		fmt.Fprintf(e.stderr, "clawtool sandbox: network denied: %s port %d (asked by %s): %s\n", sandbox.Sanitize([]byte(d.Host)), d.Port, sandbox.Sanitize([]byte(d.Client)), d.Reason)
	}
	if len(r.ProtectedChanged) > 0 {
		fmt.Fprintf(e.stderr, "clawtool sandbox: the run created or changed protected paths (not applied): %s\n", sandbox.Sanitize([]byte(strings.Join(r.ProtectedChanged, ", "))))
	}
	if len(r.NotApplied) > 0 {
		fmt.Fprintf(e.stderr, "clawtool sandbox: changes not applied to the workspace: %s\n", sandbox.Sanitize([]byte(strings.Join(r.NotApplied, "; "))))
	}
	if r.NetworkDenialsDropped > 0 {
		fmt.Fprintf(e.stderr, "clawtool sandbox: %d more network denials not listed\n", r.NetworkDenialsDropped)
	}
	if r.Fallback != "" {
		fmt.Fprintf(e.stderr, "clawtool sandbox: fell back: %s\n", r.Fallback)
	}
	if r.Truncated {
		fmt.Fprintln(e.stderr, "clawtool sandbox: output was cut at the output limit")
	}
	if !r.OK() {
		return exitToolError
	}
	return exitOK
}

// workspaceFlags add --workspace and --image to the commands that build a
// registry.
type workspaceFlags struct{ dir, image string }

func addWorkspaceFlags(fs *flag.FlagSet) *workspaceFlags {
	w := &workspaceFlags{}
	fs.StringVar(&w.dir, "workspace", "", "add the exec and file tools (read_file, write_file, edit_file, list_dir, glob, grep) confined to `DIR`")
	fs.StringVar(&w.image, "image", "", "with --workspace, run exec's commands in a warm container of `IMAGE` (Docker-compatible engine at $DOCKER_HOST or the default socket) instead of the native sandbox, each command forked by a call server inside it")
	return w
}

// registerInto adds the workspace tools to r when --workspace was given.
func (w *workspaceFlags) registerInto(r *tool.Registry) (cleanup func(), err error) {
	if w == nil || w.dir == "" {
		if w != nil && w.image != "" {
			return nil, errors.New("--image needs --workspace")
		}
		return func() {}, nil
	}
	abs, err := filepath.Abs(w.dir)
	if err != nil {
		return nil, err
	}
	var opts []workspace.Option
	closeBackend := func() {}
	if w.image != "" {
		c, err := container.New(context.Background(), container.Options{Image: w.image, Warm: true})
		if err != nil {
			return nil, err
		}
		opts = append(opts, workspace.WithBackend(c))
		closeBackend = func() { c.Close() }
	}
	ts, err := workspace.New(sandbox.Policy{Workspace: abs}, opts...)
	if err != nil {
		closeBackend()
		return nil, err
	}
	if err := ts.Register(r); err != nil {
		ts.Close()
		closeBackend()
		return nil, err
	}
	return func() { ts.Close(); closeBackend() }, nil
}
