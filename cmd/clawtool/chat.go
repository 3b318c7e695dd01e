package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/miniopenclaw/tool/agent"
	"github.com/miniopenclaw/tool/openaitool"
)

func runChat(ctx context.Context, e *env, args []string) int {
	return chat(ctx, e, args, os.Getenv)
}

// chat is runChat with the environment read through getenv, for tests.
func chat(ctx context.Context, e *env, args []string, getenv func(string) string) int {
	fs := newFlags(e, "chat", `[flags] "PROMPT" | -`, `Chat runs the agent loop on the tools: it sends PROMPT (read from standard
input when it is "-") to a model with the tool definitions, runs the tool calls
the model asks for, one batch per turn, sends the results back, and repeats
until the model answers. Each tool call and result is printed to standard
error as it happens; the answer is printed to standard output.

The model endpoint comes from the environment:
`+agent.EnvHelp)
	api := fs.String("api", "", "model API: openai (Chat Completions) or anthropic (Messages); default: from the environment")
	model := fs.String("model", "", "model name (default: $OPENAI_MODEL or $ANTHROPIC_MODEL, else the API's default)")
	strict := fs.String("strict", "off", "OpenAI strict mode for tool definitions: off, on or auto")
	maxSteps := fs.Int("max-steps", agent.DefaultMaxSteps, "most model turns")
	system := fs.String("system", "", "system prompt")
	rf := addRegistryFlags(fs)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	prompt := strings.Join(fs.Args(), " ")
	if prompt == "-" {
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool chat: reading the prompt: %v\n", err)
			return exitUsage
		}
		prompt = string(b)
	}
	var mode openaitool.StrictMode
	switch *strict {
	case "off":
		mode = openaitool.StrictOff
	case "on":
		mode = openaitool.StrictOn
	case "auto":
		mode = openaitool.StrictAuto
	default:
		fmt.Fprintf(e.stderr, "clawtool chat: -strict must be off, on or auto, not %q\n", *strict)
		return exitUsage
	}
	m, err := agent.FromEnv(getenv, agent.API(*api), *model)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool chat: %v\n", err)
		return exitUsage
	}
	r, cleanup, ok := rf.open(ctx, e, "chat")
	if !ok {
		return exitToolError
	}
	defer cleanup()

	a := agent.New(m, r, agent.WithStrict(mode), agent.WithMaxSteps(*maxSteps), agent.WithSystem(*system),
		agent.WithObserver(func(ev agent.Event) { printEvent(e.stderr, ev) }))
	answer, err := a.Run(ctx, prompt)
	if answer != "" {
		fmt.Fprintln(e.stdout, answer)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool chat: %v\n", err)
		if errors.Is(err, agent.ErrMaxSteps) {
			fmt.Fprintln(e.stderr, "clawtool chat: raise -max-steps to let the model go on")
		}
		return exitToolError
	}
	return exitOK
}

// printEvent prints one step of the loop for a person watching it.
func printEvent(w io.Writer, ev agent.Event) {
	switch ev.Kind {
	case agent.EventToolCall:
		args := string(ev.Call.Args)
		if args == "" {
			args = "{}"
		}
		fmt.Fprintf(w, "[%d] → %s %s\n", ev.Step, ev.Call.Name, oneLine(args, 300))
	case agent.EventToolResult:
		res := ev.Outcome.Result
		if res.IsError {
			fmt.Fprintf(w, "[%d] ← %s error (%s): %s\n", ev.Step, ev.Call.Name, res.Kind, oneLine(res.Error, 300))
		} else {
			fmt.Fprintf(w, "[%d] ← %s: %s\n", ev.Step, ev.Call.Name, oneLine(res.Text(), 300))
		}
	case agent.EventText:
		fmt.Fprintf(w, "[%d] model: %s\n", ev.Step, oneLine(ev.Text, 300))
	}
}

// oneLine shortens s to one line of at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		cut := n
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
