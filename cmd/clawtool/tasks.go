package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// withTaskLines returns ctx with the states of the MCP tasks its calls
// become written to w, one line per change (with the progress, if any),
// prefixed by "clawtool CMD: ".
func withTaskLines(ctx context.Context, w io.Writer, cmd string) context.Context {
	return mcptool.WithTaskEvents(ctx, func(ev mcptool.TaskEvent) {
		fmt.Fprintf(w, "clawtool %s: %s\n", cmd, taskLine(ev))
	})
}

// taskLine describes a task's change in one line, safe to print.
func taskLine(ev mcptool.TaskEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "task %s (%s): %s", taskText(ev.TaskID, 100), ev.Tool, ev.Status)
	if ev.Message != "" {
		fmt.Fprintf(&b, ": %s", taskText(ev.Message, 200))
	}
	if p := ev.Progress; p != nil {
		b.WriteString(" [")
		fmt.Fprintf(&b, "%g", p.Progress)
		if p.Total > 0 {
			fmt.Fprintf(&b, "/%g", p.Total)
		}
		if p.Message != "" {
			fmt.Fprintf(&b, " %s", taskText(p.Message, 200))
		}
		b.WriteString("]")
	}
	return b.String()
}

// taskText quotes the control characters of s (a server's text), cut to n
// bytes.
func taskText(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "…"
	}
	q := fmt.Sprintf("%q", s)
	return q[1 : len(q)-1]
}

func runTasks(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "tasks", "get|cancel ID (--mcp \"CMD ARGS\" | --mcp-url URL) [--json]", `Tasks shows (get) or cancels (cancel) the task ID of one MCP server, given
with --mcp (a server to start, over stdio) or --mcp-url (Streamable HTTP).
get prints the task's status, times, progress and, once it is completed,
its result; cancel asks the server to cancel it. With --json each prints
the server's answer as JSON. A task belongs to the principal that made
it: another principal, an unknown ID and an expired task get the same
error. The exit status is 0 when the server answered, 1 when it gave an
error, and 2 for usage errors.`)
	var argv []string
	url := fs.String("mcp-url", "", "the `URL` of the MCP server (Streamable HTTP)")
	fs.Func("mcp", "the MCP server that `\"CMD ARGS\"` starts (stdio)", func(s string) error {
		var err error
		if argv, err = splitCommand(s); err == nil && len(argv) == 0 {
			err = errors.New("empty command")
		}
		return err
	})
	asJSON := fs.Bool("json", false, "print the server's answer as JSON")
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	switch {
	case fs.NArg() == 0:
		return usageError(fs, "missing get or cancel")
	case fs.Arg(0) != "get" && fs.Arg(0) != "cancel":
		return usageError(fs, "unknown subcommand %q: want get or cancel", fs.Arg(0))
	case fs.NArg() != 2:
		return usageError(fs, "%s takes one task ID", fs.Arg(0))
	case (len(argv) == 0) == (*url == ""):
		return usageError(fs, "give the server with exactly one of --mcp and --mcp-url")
	}
	op, id := fs.Arg(0), fs.Arg(1)
	var t mcp.Transport
	if *url != "" {
		t = mcptool.URL(*url)
	} else {
		t = mcptool.Command(argv[0], argv[1:]...)
	}
	cctx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
	defer cancel()
	c, err := mcptool.Connect(cctx, t)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool tasks: %v\n", err)
		return exitToolError
	}
	defer c.Close()
	if op == "cancel" {
		if err := c.CancelTask(cctx, id); err != nil {
			fmt.Fprintf(e.stderr, "clawtool tasks: %v\n", err)
			return exitToolError
		}
		if *asJSON {
			writeJSON(e.stdout, map[string]any{"taskId": id, "cancelled": true})
		} else {
			fmt.Fprintf(e.stdout, "task %s: cancel requested\n", taskText(id, 300))
		}
		return exitOK
	}
	d, err := c.GetTask(cctx, id)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool tasks: %v\n", err)
		return exitToolError
	}
	if *asJSON {
		writeJSON(e.stdout, d)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "task:     %s\nstatus:   %s\n", taskText(d.TaskID, 300), d.Status)
	if d.StatusMessage != "" {
		fmt.Fprintf(e.stdout, "message:  %s\n", taskText(d.StatusMessage, 2000))
	}
	fmt.Fprintf(e.stdout, "created:  %s\nupdated:  %s\n", taskText(d.CreatedAt, 60), taskText(d.LastUpdatedAt, 60))
	if d.TTLMs != nil {
		fmt.Fprintf(e.stdout, "ttl:      %d ms\n", *d.TTLMs)
	}
	if p, ok := d.Meta[mcptool.ProgressMeta]; ok {
		b, _ := json.Marshal(p)
		fmt.Fprintf(e.stdout, "progress: %s\n", taskText(string(b), 300))
	}
	for _, rid := range slices.Sorted(maps.Keys(d.InputRequests)) {
		fmt.Fprintf(e.stdout, "input:    %s %s\n", taskText(rid, 100), taskText(string(d.InputRequests[rid]), 2000))
	}
	if d.Error != nil {
		fmt.Fprintf(e.stdout, "error:    %s (code %d)\n", taskText(d.Error.Message, 2000), d.Error.Code)
	}
	if len(d.Result) > 0 {
		fmt.Fprintf(e.stdout, "result:   %s\n", d.Result)
	}
	return exitOK
}
