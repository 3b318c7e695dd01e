package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/miniopenclaw/tool"
)

func runList(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "list", "[flags]", "List prints a table of the available tools: name, behaviour flags\n(read-only, destructive, idempotent, open-world) and description.")
	rf := addRegistryFlags(fs)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "clawtool list: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	r, cleanup, ok := rf.open(ctx, e, "list")
	if !ok {
		return exitToolError
	}
	defer cleanup()
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tFLAGS\tDESCRIPTION")
	for _, t := range r.List() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name(), flagsOf(t), summary(t.Description()))
	}
	tw.Flush()
	return exitOK
}

// summary returns the first sentence of a description, cut to a width
// that fits a table row.
func summary(desc string) string {
	desc, _, _ = strings.Cut(desc, "\n")
	if i := strings.Index(desc, ". "); i >= 0 {
		desc = desc[:i+1]
	}
	const width = 72
	if utf8.RuneCountInString(desc) > width {
		r := []rune(desc)
		desc = strings.TrimRight(string(r[:width-1]), " ") + "…"
	}
	return desc
}

func runSchema(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "schema", "[--format F] [NAME...]", "Schema prints the definitions of the named tools (all tools when no name is\ngiven) as JSON, in the shape a model API expects.")
	format := fs.String("format", "openai", "definition format: "+strings.Join(schemaFormats(), ", "))
	rf := addRegistryFlags(fs)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	r, cleanup, ok := rf.open(ctx, e, "schema")
	if !ok {
		return exitToolError
	}
	defer cleanup()
	tools := r.List()
	if fs.NArg() > 0 {
		tools = tools[:0:0]
		for _, name := range fs.Args() {
			t, ok := r.Get(name)
			if !ok {
				fmt.Fprintf(e.stderr, "clawtool schema: unknown tool %q\n", name)
				return exitUsage
			}
			tools = append(tools, t)
		}
	}
	out, err := renderSchema(*format, r, tools)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool schema: %v\n", err)
		return exitUsage
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") == nil {
		out = pretty.Bytes()
	}
	e.stdout.Write(out)
	fmt.Fprintln(e.stdout)
	return exitOK
}

// schemaFormats lists the formats renderSchema knows.
func schemaFormats() []string { return providerFormats() }

// renderSchema renders tools in the given format.
func renderSchema(format string, r *tool.Registry, tools []tool.Tool) ([]byte, error) {
	switch format {
	case "openai":
		sub := tool.NewRegistry()
		for _, t := range tools {
			if err := sub.Register(t); err != nil {
				return nil, err
			}
		}
		return sub.Definitions(), nil
	}
	return renderDefinitions(format, tools)
}

func runCall(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "call", "[flags] NAME [JSON | -]", `Call calls the tool NAME with the JSON object of arguments given as the
second argument, or read from standard input when it is "-". With no
arguments the tool gets {}. It prints the result as JSON:
{"output":…,"error":…,"is_error":…}. The exit status is 0 when the tool ran
and succeeded, 1 when the result is an error, and 2 for usage errors.
Given a JSON array of calls instead of NAME (or --batch), it runs them as a
batch, concurrently and in dependency order, and prints their outcomes.`)
	rf := addRegistryFlags(fs)
	bf := addBatchFlags(fs)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if code, ok := bf.run(ctx, e, fs, rf); ok {
		return code
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return exitUsage
	}
	name := fs.Arg(0)
	input := []byte("{}")
	if fs.NArg() == 2 {
		input = []byte(fs.Arg(1))
		if fs.Arg(1) == "-" {
			b, err := io.ReadAll(io.LimitReader(e.stdin, 64<<20))
			if err != nil {
				fmt.Fprintf(e.stderr, "clawtool call: reading standard input: %v\n", err)
				return exitUsage
			}
			input = b
		}
	}
	r, cleanup, ok := rf.open(ctx, e, "call")
	if !ok {
		return exitToolError
	}
	defer cleanup()
	res := r.Execute(ctx, name, input)
	writeJSON(e.stdout, res)
	if res.IsError {
		return exitToolError
	}
	return exitOK
}

// writeJSON writes v as indented JSON without HTML escaping.
func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
