package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/agent"
	"github.com/miniopenclaw/tool/openaitool"
)

func runChat(ctx context.Context, e *env, args []string) int {
	return chat(ctx, e, args, os.Getenv)
}

// maxPromptBytes bounds one prompt read from standard input.
const maxPromptBytes = 8 << 20

// chat is runChat with the environment read through getenv, for tests.
func chat(ctx context.Context, e *env, args []string, getenv func(string) string) int {
	fs := newFlags(e, "chat", `[flags] ["PROMPT" | -]`, `Chat runs the agent loop on the tools: it sends a prompt to a model with the
tool definitions, runs the tool calls the model asks for, one batch per turn,
sends the results back, and repeats until the model answers. The model's text
is printed to standard output as it arrives; each tool call and result is
printed to standard error as it happens.

With PROMPT, chat sends that one prompt ("-": standard input, whole) and
exits. Without it, chat is a session: each line read from standard input is
a prompt, the model seeing the conversation so far, until the input ends or
a line says /exit. A prompt that fails is reported and left out of the
conversation; the exit status is then 1.

The model endpoint comes from the environment:
`+agent.EnvHelp)
	api := fs.String("api", "", "model API: openai (Chat Completions) or anthropic (Messages); default: from the environment")
	model := fs.String("model", "", "model name (default: $OPENAI_MODEL or $ANTHROPIC_MODEL, else the API's default)")
	strict := fs.String("strict", "off", "OpenAI strict mode for tool definitions: off, on or auto")
	maxSteps := fs.Int("max-steps", agent.DefaultMaxSteps, "most model turns per prompt")
	system := fs.String("system", "", "system prompt")
	stream := fs.Bool("stream", true, "stream the model's text as it arrives (-stream=false: ask for whole replies)")
	rf := addRegistryFlags(fs)
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	var prompt string
	switch {
	case fs.NArg() == 1 && fs.Arg(0) == "-":
		b, err := readInput(e.stdin, maxPromptBytes, "a prompt")
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool chat: %v\n", err)
			return exitUsage
		}
		prompt = string(b)
	case fs.NArg() > 0:
		prompt = strings.Join(fs.Args(), " ")
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
		return usageError(fs, "-strict must be off, on or auto, not %q", *strict)
	}
	m, err := agent.FromEnv(getenv, agent.API(*api), *model)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool chat: %v\n", err)
		return exitUsage
	}
	rf.config.watch = true // a long session follows the configuration file
	r, cleanup, ok := rf.open(ctx, e, "chat")
	if !ok {
		return exitToolError
	}
	defer cleanup()

	out := &chatOutput{stdout: e.stdout, stderr: e.stderr, streaming: *stream}
	opts := []agent.Option{agent.WithStrict(mode), agent.WithMaxSteps(*maxSteps), agent.WithSystem(*system), agent.WithObserver(out.event)}
	if keep := rf.policy.listFilter(r); keep != nil {
		opts = append(opts, agent.WithToolFilter(func(t tool.Tool) bool { return keep(ctx, t.Name()) }))
	}
	if *stream {
		opts = append(opts, agent.WithStream(out.text))
	}
	session := agent.New(m, r, opts...).NewSession()
	if fs.NArg() > 0 {
		return out.send(ctx, session, prompt)
	}
	return chatSession(ctx, e, session, out)
}

// chatSession sends each line of standard input as a prompt, until the end
// of the input or a line "/exit". It returns exitToolError when a prompt
// failed.
func chatSession(ctx context.Context, e *env, session *agent.Session, out *chatOutput) int {
	interactive := isTerminal(e.stdin)
	if interactive {
		fmt.Fprintln(e.stderr, "clawtool chat: type a prompt and press Enter; /exit or end of input (Ctrl-D) ends the session.")
	}
	lines := bufio.NewScanner(e.stdin)
	lines.Buffer(make([]byte, 0, 64<<10), maxPromptBytes)
	code := exitOK
	for {
		if interactive {
			fmt.Fprint(e.stderr, "> ")
		}
		if !lines.Scan() {
			break
		}
		prompt := strings.TrimSpace(lines.Text())
		switch prompt {
		case "":
			continue
		case "/exit", "/quit":
			return code
		}
		if out.send(ctx, session, prompt) != exitOK {
			code = exitToolError
		}
		if ctx.Err() != nil {
			return exitToolError
		}
	}
	if err := lines.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("a line of standard input is longer than %s, the most a prompt may hold", byteSize(maxPromptBytes))
		}
		fmt.Fprintf(e.stderr, "clawtool chat: %v\n", err)
		return exitUsage
	}
	if interactive {
		fmt.Fprintln(e.stderr)
	}
	return code
}

// isTerminal reports whether r is a terminal, where a person types.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// chatOutput prints a chat: the model's text on stdout, streamed or whole,
// and the loop's steps on stderr.
type chatOutput struct {
	stdout, stderr io.Writer
	streaming      bool
	midLine        bool // stdout has text not yet ended by a newline
}

// send sends one prompt and prints the answer, returning the exit status.
func (o *chatOutput) send(ctx context.Context, s *agent.Session, prompt string) int {
	answer, err := s.Send(ctx, prompt)
	if !o.streaming && answer != "" {
		fmt.Fprintln(o.stdout, answer)
	}
	o.endLine()
	if err != nil {
		fmt.Fprintf(o.stderr, "clawtool chat: %v\n", err)
		if errors.Is(err, agent.ErrMaxSteps) {
			fmt.Fprintln(o.stderr, "clawtool chat: raise -max-steps to let the model go on")
		}
		return exitToolError
	}
	return exitOK
}

// text prints a piece of the model's text as it arrives.
func (o *chatOutput) text(s string) {
	io.WriteString(o.stdout, s)
	o.midLine = !strings.HasSuffix(s, "\n")
}

// endLine ends the line of streamed text, if one is open.
func (o *chatOutput) endLine() {
	if o.midLine {
		fmt.Fprintln(o.stdout)
		o.midLine = false
	}
}

// event prints one step of the loop.
func (o *chatOutput) event(ev agent.Event) {
	if ev.Kind == agent.EventText && o.streaming {
		return // already on stdout
	}
	o.endLine()
	printEvent(o.stderr, ev)
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
