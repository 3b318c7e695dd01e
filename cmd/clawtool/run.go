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
		{"chat", `[flags] "PROMPT"`, "run the agent loop: a model (OPENAI_* or ANTHROPIC_API_KEY) calling the tools", runChat},
	}
}

// run is the whole program; main only adds the process around it.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
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
	fmt.Fprintf(stderr, "clawtool: unknown command %q\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "clawtool lists, inspects, calls and serves tools for LLM agents.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  clawtool %s %s\n        %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "clawtool COMMAND -h" for a command's flags.`)
}

// newFlags returns a flag set for a command that reports errors on e.stderr.
func newFlags(e *env, c string, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(c, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: clawtool %s %s\n\n%s\n", c, synopsis, about)
		var hasFlags bool
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(fs.Output(), "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args and returns the exit code to use when the command
// must stop: exitOK after -h, exitUsage after a bad flag, or -1 to go on.
func parseFlags(fs *flag.FlagSet, args []string) int {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return -1
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	default:
		return exitUsage
	}
}

// registryFlags are the flags every command that needs tools accepts.
type registryFlags struct{ mcp *mcpFlags }

func addRegistryFlags(fs *flag.FlagSet) *registryFlags {
	return &registryFlags{mcp: addMCPFlags(fs)}
}

// build returns a registry holding the built-in tools and any tools the
// flags add. The caller must call cleanup when done.
func (rf *registryFlags) build(ctx context.Context, e *env) (r *tool.Registry, cleanup func(), err error) {
	r = tool.NewRegistry()
	if err := registerBuiltins(r); err != nil {
		return nil, nil, fmt.Errorf("built-in tools: %w", err)
	}
	cleanup, err = rf.mcp.importInto(ctx, e, r)
	if err != nil {
		return nil, nil, err
	}
	return r, cleanup, nil
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
