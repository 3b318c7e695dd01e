package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/miniopenclaw/tool"
)

// Exit codes.
const (
	exitOK        = 0 // the command worked; for call, the tool succeeded
	exitToolError = 1 // the tool ran and its result is an error, or the command failed
	exitUsage     = 2 // the command line was wrong
)

// env is what a command runs with.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// A command is one clawtool subcommand.
type command struct {
	name    string
	args    string // argument synopsis for help
	summary string
	run     func(ctx context.Context, e *env, args []string) int
}

// commands is the command table, in the order help lists them.
func commands() []command {
	return []command{
		{"list", "[flags]", "print a table of the tools: name, flags, description", runList},
		{"schema", "[--format F] [NAME...]", "print tool definitions as JSON", runSchema},
		{"call", "[flags] NAME [JSON | -]", "call a tool with JSON arguments and print the result", runCall},
		{"search", "[flags] QUERY...", "print the tools that best match a query, with scores", runSearch},
		{"serve", "[--http ADDR] [flags]", "serve the tools as an MCP server (stdio, or Streamable HTTP)", runServe},
		{"gen", "[flags] [packages]", "generate tools and descriptions from Go doc comments (go:generate)", genCommand},
		{"chat", `[flags] ["PROMPT" | -]`, "talk to a model (OPENAI_* or ANTHROPIC_*) that calls the tools; no PROMPT: a session", runChat},
		{"version", "", "print the version of clawtool and of the Go it was built with", runVersion},
		{"sandbox", "probe | run [flags] -- CMD ARGS", "show the sandbox layers, or run a command in the sandbox", runSandbox},
		{"worker", "--nats URL [flags]", "serve the tools to every clawtool on a NATS bus, sharing calls with other workers", runWorker},
		{"plugins", "--config FILE [--json]", "load the MCP servers and WebAssembly modules of a configuration file and show each one's state", runPlugins},
		{"nats-server", "[--addr ADDR] [--jetstream DIR]", "run an embedded NATS server for a one-machine setup", runNATSServer},
		{"inspect", "[--addr ADDR] [flags]", "serve a web page to try the tools by hand and watch batches on a timeline", runInspect},
		{"policy", "check POLICY | explain --policy FILE --as USER[:ROLE,...] TOOL [JSON]", "validate Cedar policies against the tools, or explain a decision", runPolicy},
		{"approvals", "list | show ID | approve ID | deny ID [flags]", "list the calls waiting for a person's approval, show one, approve or deny it", runApprovals},
		{"audit", "verify|story ...", "check the hash chain of an audit log, or print the story of one call (its request, answer and run)", runAudit},
		{"tasks", "get|cancel ID --mcp \"CMD\" | --mcp-url URL [--json]", "show or cancel a task of an MCP server (a long-running call)", runTasks},
		{"auth", "login|logout|status SERVER --config FILE", "log in to a URL server behind OAuth (MCP authorization), log out, or show the stored login", runAuth},
	}
}

// run is the whole program; main only adds the process around it.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		fmt.Fprintf(stderr, "clawtool: no command given\n\n")
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-version", "--version":
		return runVersion(ctx, e, args[1:])
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			return run(ctx, []string{args[1], "-h"}, stdin, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	fmt.Fprintf(stderr, "clawtool: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "clawtool lists, inspects, calls and serves tools for LLM agents.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %s\n        %s\n", strings.TrimSpace("clawtool "+c.name+" "+c.args), c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "clawtool COMMAND -h" for a command's flags. Flags may come before or`)
	fmt.Fprintln(w, `after a command's arguments; every argument after "--" is taken as is.`)
}

// newFlags returns a flag set for a command that reports errors on e.stderr.
func newFlags(e *env, c string, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(c, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\n%s\n", strings.TrimSpace("clawtool "+c+" "+synopsis), about)
		var hasFlags bool
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(fs.Output(), "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args, in which flags may come before, between or after
// the positional arguments (everything after "--" is positional); fs.Args
// then returns the positional arguments in order. It returns the exit code
// to use when the command must stop: exitOK after -h, which prints the
// command's usage to stdout, exitUsage after a bad flag, which is reported
// on fs.Output() before the usage, or -1 to go on.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) int {
	out, usage := fs.Output(), fs.Usage
	// The flag package would print its error and the usage itself; quiet
	// it, and say what was wrong in clawtool's own words below.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	defer func() { fs.SetOutput(out); fs.Usage = usage }()
	var positional []string
	for {
		err := fs.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			fs.SetOutput(stdout)
			usage()
			return exitOK
		case err != nil:
			fmt.Fprintf(out, "clawtool %s: %v\n\n", fs.Name(), err)
			fs.SetOutput(out)
			usage()
			return exitUsage
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	// Parse again so that fs.Args reports every positional argument.
	_ = fs.Parse(append([]string{"--"}, positional...))
	return -1
}

// usageError reports a wrong command line: what was wrong, then the
// command's usage, on fs.Output(). It returns exitUsage.
func usageError(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(fs.Output(), "clawtool %s: %s\n\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return exitUsage
}

// registryFlags are the flags every command that needs tools accepts.
type registryFlags struct {
	mcp    *mcpFlags
	ws     *workspaceFlags
	nats   *natsFlags
	config *configFlags
	policy *policyFlags
}

func addRegistryFlags(fs *flag.FlagSet) *registryFlags {
	m := addMCPFlags(fs)
	rf := &registryFlags{mcp: m, ws: addWorkspaceFlags(fs), nats: addNATSFlags(fs), config: addConfigFlags(fs, m), policy: addPolicyFlags(fs)}
	rf.policy.ws = rf.ws
	return rf
}

// build returns a registry holding the built-in tools (unless
// --no-builtins) and any tools the flags add. The caller must call
// cleanup when done.
func (rf *registryFlags) build(ctx context.Context, e *env) (r *tool.Registry, cleanup func(), err error) {
	var undo cleanups
	r, err = rf.start(&undo)
	if err == nil {
		// The --mcp and --mcp-url servers, then the file's entries; the
		// bus's tools come last: local tools keep their names.
		err = undo.add(rf.config.importInto(ctx, e, r))
	}
	if err == nil {
		err = undo.add(rf.nats.importInto(ctx, e, r))
	}
	if err != nil {
		undo.run()
		return nil, nil, err
	}
	return r, undo.run, nil
}

// start does what build and buildInBackground share: it applies the
// principal and permissions the flags name, and returns a registry with
// the built-in tools (unless --no-builtins) and the workspace tools.
func (rf *registryFlags) start(undo *cleanups) (*tool.Registry, error) {
	rf.forwardPrincipal()
	if err := rf.permissionsFromConfig(); err != nil {
		return nil, err
	}
	undo.add(rf.policy.closeApprovals, nil)
	r, err := rf.mcp.base(rf.policy)
	if err == nil {
		err = undo.add(rf.ws.registerInto(r))
	}
	return r, err
}

// buildInBackground is build for a server: the built-in, workspace and
// NATS tools are in r when it returns, while the MCP servers and the
// configuration file's entries load in the background; pending is closed
// when every one has been tried.
func (rf *registryFlags) buildInBackground(ctx context.Context, e *env) (r *tool.Registry, pending <-chan struct{}, cleanup func(), err error) {
	var undo cleanups
	r, err = rf.start(&undo)
	if err == nil {
		err = undo.add(rf.nats.importInto(ctx, e, r))
	}
	var loaded <-chan struct{}
	if err == nil {
		var c func()
		c, loaded, err = rf.config.importInBackground(ctx, e, r)
		undo.add(c, err)
	}
	if err != nil {
		undo.run()
		return nil, nil, nil, err
	}
	return r, loaded, undo.run, nil
}

// cleanups are the cleanup functions of what a command set up, run in
// reverse order.
type cleanups []func()

// add keeps cleanup when err is nil, and returns err.
func (u *cleanups) add(cleanup func(), err error) error {
	if err == nil && cleanup != nil {
		*u = append(*u, cleanup)
	}
	return err
}

func (u cleanups) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// open is build for the command named c: it reports a failure on
// e.stderr, and ok is false when the command must stop with exitToolError.
func (rf *registryFlags) open(ctx context.Context, e *env, c string) (r *tool.Registry, cleanup func(), ok bool) {
	r, cleanup, err := rf.build(ctx, e)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool %s: %v\n", c, err)
		return nil, nil, false
	}
	return r, cleanup, true
}

// flagsOf describes a tool's annotations as a short comma-separated list.
func flagsOf(t tool.Tool) string {
	a := tool.OptionsOf(t).Annotations
	var f []string
	if a.ReadOnly {
		f = append(f, "read-only")
	}
	if a.Destructive {
		f = append(f, "destructive")
	}
	if a.Idempotent {
		f = append(f, "idempotent")
	}
	if a.OpenWorld {
		f = append(f, "open-world")
	}
	if len(f) == 0 {
		return "-"
	}
	return strings.Join(f, ",")
}
