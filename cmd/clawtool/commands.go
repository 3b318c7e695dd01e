package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/suggest"
	"github.com/miniopenclaw/tool/policy"
)

func runList(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "list", "[flags]", `List prints a table of the available tools: name, behaviour flags
(read-only, destructive, idempotent, open-world) and description. With
--json it prints a JSON array instead, one object per tool:
{"name":…,"title":…,"description":…,"read_only":…,"destructive":…,
"idempotent":…,"open_world":…}, with the whole description. With --policy,
it lists only the tools the --as principal may call (for some arguments),
as an MCP server under the same policy would list them.`)
	asJSON := fs.Bool("json", false, "print a JSON array of the tools instead of a table")
	rf := addRegistryFlags(fs)
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	_, tools, cleanup, ok := rf.openListable(ctx, e, "list")
	if !ok {
		return exitToolError
	}
	defer cleanup()
	if *asJSON {
		writeJSON(e.stdout, listEntries(tools))
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tFLAGS\tDESCRIPTION")
	for _, t := range tools {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name(), flagsOf(t), summary(t.Description()))
	}
	tw.Flush()
	return exitOK
}

// A listEntry is one tool in the output of "clawtool list --json".
type listEntry struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description"`
	ReadOnly    bool   `json:"read_only"`
	Destructive bool   `json:"destructive"`
	Idempotent  bool   `json:"idempotent"`
	OpenWorld   bool   `json:"open_world"`
}

func listEntries(tools []tool.Tool) []listEntry {
	out := make([]listEntry, 0, len(tools))
	for _, t := range tools {
		a := tool.OptionsOf(t).Annotations
		out = append(out, listEntry{
			Name: t.Name(), Title: a.Title, Description: t.Description(),
			ReadOnly: a.ReadOnly, Destructive: a.Destructive, Idempotent: a.Idempotent, OpenWorld: a.OpenWorld,
		})
	}
	return out
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
	// An imported server writes the description: its control,
	// invisible and bidirectional characters are shown escaped, never
	// sent to the terminal.
	return shownText(desc, 4*width)
}

func runSchema(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "schema", "[--format F] [NAME...]", "Schema prints the definitions of the named tools (all tools when no name is\ngiven) as JSON, in the shape a model API expects. With --policy, only the\ntools the --as principal may call are shown; another name is unknown.")
	format := fs.String("format", "openai", "definition format: "+strings.Join(schemaFormats(), ", "))
	rf := addRegistryFlags(fs)
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	r, tools, cleanup, ok := rf.openListable(ctx, e, "schema")
	if !ok {
		return exitToolError
	}
	defer cleanup()
	if fs.NArg() > 0 {
		seen := registryOf(tools) // the tools the principal may see, by name
		tools = tools[:0:0]
		for _, name := range fs.Args() {
			t, ok := seen.Get(name)
			if !ok {
				fmt.Fprintf(e.stderr, "clawtool schema: %s\n", unknownTool(name, seen))
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

// unknownTool says that r has no tool called name, suggesting the names
// close to it, as the registry's own error for an unknown tool does.
func unknownTool(name string, r *tool.Registry) string {
	var names []string
	for _, t := range r.List() {
		names = append(names, t.Name())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "unknown tool %q", name)
	if close := suggest.Closest(name, names, 3); len(close) > 0 {
		b.WriteString("; did you mean ")
		for i, c := range close {
			if i > 0 {
				b.WriteString(" or ")
			}
			fmt.Fprintf(&b, "%q", c)
		}
		b.WriteString("?")
	}
	fmt.Fprintf(&b, " (run clawtool list to see the %d tools)", len(names))
	return b.String()
}

// schemaFormats lists the formats renderSchema knows.
func schemaFormats() []string { return providerFormats() }

// renderSchema renders tools in the given format.
func renderSchema(format string, r *tool.Registry, tools []tool.Tool) ([]byte, error) {
	switch format {
	case "openai":
		return registryOf(tools).Definitions(), nil
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
batch, concurrently and in dependency order, and prints their outcomes.
A question an MCP server asks during a call (an elicitation, or a task
waiting for input) is put to the person at the terminal; without a
terminal the call fails saying so.`)
	rf := addRegistryFlags(fs)
	bf := addBatchFlags(fs)
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	ctx = withTaskLines(ctx, e.stderr, "call")
	rf.mcp.elicit = terminalElicitation
	if code, ok := bf.run(ctx, e, fs, rf); ok {
		return code
	}
	switch {
	case fs.NArg() == 0:
		return usageError(fs, "missing NAME: give the name of the tool to call, or a JSON array of calls")
	case fs.NArg() > 2:
		return usageError(fs, "too many arguments: want NAME and one JSON object, got %d arguments (quote the JSON)", fs.NArg())
	}
	name := fs.Arg(0)
	input := []byte("{}")
	if fs.NArg() == 2 {
		input = []byte(fs.Arg(1))
		if fs.Arg(1) == "-" {
			b, err := readInput(e.stdin, tool.DefaultMaxArgsBytes, "a tool's arguments")
			if err != nil {
				fmt.Fprintf(e.stderr, "clawtool call: %v\n", err)
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
	if req, ok := res.Metadata["approval_request"].(policy.ApprovalRequest); ok {
		fmt.Fprintf(e.stderr, "clawtool call: the call waits for approval request %s. A person the policies let approve it runs:\n  %s\nthen make the same call again, unchanged, before %s.\n",
			req.ID, rf.policy.approveCommand(req.ID), req.Expires.UTC().Format(time.RFC3339))
	}
	if res.IsError {
		return exitToolError
	}
	return exitOK
}

// readInput reads all of standard input, refusing more than limit bytes
// (the most that what describes may hold) with an error that states the
// limit.
func readInput(stdin io.Reader, limit int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(stdin, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading standard input: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("standard input holds more than %s, the most %s may hold", byteSize(limit), what)
	}
	return b, nil
}

// byteSize writes n bytes in the largest binary unit that divides it.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// writeJSON writes v as indented JSON without HTML escaping.
func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
