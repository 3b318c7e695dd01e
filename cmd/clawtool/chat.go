package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/agent"
	"github.com/miniopenclaw/tool/internal/runstore"
	"github.com/miniopenclaw/tool/openaitool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/miniopenclaw/tool/toolsearch"
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

Under --policy, a call that needs a person's approval pauses the run: chat
prints the approval request and the command that approves it, saves the run
in the user's state directory (clawtool/runs under $XDG_STATE_HOME or
~/.local/state), and exits with status 3, printing the run's ID; with
--wait-approval it first waits that long for the answers (Ctrl-C stops
waiting). --resume ID continues a saved run once its approvals are answered:
an approved call runs once, a denied one tells the model who denied it and
why, and the model goes on; then each line of standard input is a prompt.

The model endpoint comes from the environment:
`+agent.EnvHelp)
	api := fs.String("api", "", "model API: openai (Chat Completions) or anthropic (Messages); default: from the environment")
	model := fs.String("model", "", "model name (default: $OPENAI_MODEL or $ANTHROPIC_MODEL, else the API's default)")
	strict := fs.String("strict", "off", "OpenAI strict mode for tool definitions: off, on or auto")
	maxSteps := fs.Int("max-steps", agent.DefaultMaxSteps, "most model turns per prompt")
	system := fs.String("system", "", "system prompt")
	stream := fs.Bool("stream", true, "stream the model's text as it arrives (-stream=false: ask for whole replies)")
	resume := fs.String("resume", "", "continue the saved run `ID` whose calls waited for approval (with the --policy and --as it ran with)")
	wait := fs.Duration("wait-approval", 0, "when a call waits for approval, wait up to `DURATION` for the answer before saving the run and exiting (0: save and exit at once)")
	sem := addSemanticFlags(fs)
	rf := addRegistryFlags(fs)
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	if *resume != "" && (fs.NArg() > 0 || rf.policy.file == "") {
		return usageError(fs, "--resume takes no PROMPT and needs --policy (and the --as the run was made with)")
	}
	if *wait < 0 {
		return usageError(fs, "--wait-approval must not be negative")
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
	search, stopSearch, err := sem.options(ctx, toolsearch.Options{}, getenv)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool chat: %v\n", err)
		return exitUsage
	}
	defer stopSearch()
	if *sem.embeddings != "" || *sem.sentenceEncoder != "" {
		search.Embedder = &warnEmbedder{Embedder: search.Embedder, w: e.stderr, cmd: "chat"}
	}
	rf.config.watch = true // a long session follows the configuration file
	r, cleanup, ok := rf.open(ctx, e, "chat")
	if !ok {
		return exitToolError
	}
	defer cleanup()

	out := &chatOutput{stdout: e.stdout, stderr: e.stderr, streaming: *stream}
	opts := []agent.Option{agent.WithStrict(mode), agent.WithMaxSteps(*maxSteps), agent.WithSystem(*system), agent.WithObserver(out.event),
		agent.WithToolSearch(toolsearch.Loading{Search: search})}
	if keep := rf.policy.listFilter(r); keep != nil {
		opts = append(opts, agent.WithToolFilter(func(t tool.Tool) bool { return keep(ctx, t.Name()) }))
	}
	if *stream {
		opts = append(opts, agent.WithStream(out.text))
	}
	if ap := rf.policy.loaded; ap != nil {
		store, err := runstore.Default()
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool chat: %v\n", err)
			return exitToolError
		}
		id := *resume
		if id == "" {
			id = runstore.NewID()
		}
		out.pause = &chatPause{store: store, id: id, authz: ap, pf: rf.policy, wait: *wait}
		opts = append(opts, agent.WithPause(ap), agent.WithCheckpoint(func(_ context.Context, st *agent.RunState) error {
			return store.Save(id, st)
		}))
	}
	a := agent.New(m, r, opts...)
	if *resume != "" {
		st, err := out.pause.store.Load(*resume)
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool chat: %v\n", err)
			return exitToolError
		}
		session, err := a.Restore(st)
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool chat: %v\n", err)
			return exitToolError
		}
		answer, err := session.Resume(ctx)
		if code := out.finish(ctx, session, answer, err); code != exitOK {
			return code
		}
		return chatSession(ctx, e, session, out)
	}
	session := a.NewSession()
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
		switch out.send(ctx, session, prompt) {
		case exitOK:
		case exitPaused:
			return exitPaused
		default:
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
	midLine        bool       // stdout has text not yet ended by a newline
	pause          *chatPause // under --policy: where paused runs go
}

// send sends one prompt and prints the answer, returning the exit status.
func (o *chatOutput) send(ctx context.Context, s *agent.Session, prompt string) int {
	answer, err := s.Send(ctx, prompt)
	return o.finish(ctx, s, answer, err)
}

// finish prints what became of a prompt or a resumed run: the answer, or
// the approvals a paused run waits for, which it waits for (see
// --wait-approval) and resumes, or saves and returns exitPaused.
func (o *chatOutput) finish(ctx context.Context, s *agent.Session, answer string, err error) int {
	for o.pause != nil {
		var paused *agent.PausedError
		if !errors.As(err, &paused) {
			break
		}
		o.endLine()
		if !o.pause.await(ctx, o.stderr, paused.State) {
			return exitPaused
		}
		answer, err = s.Resume(ctx)
	}
	if err == nil && o.pause != nil {
		if derr := o.pause.store.Delete(o.pause.id); derr != nil {
			fmt.Fprintf(o.stderr, "clawtool chat: %v\n", derr)
		}
	}
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
		fmt.Fprintf(w, "[%d] → %s %s\n", ev.Step, shownText(ev.Call.Name, 200), oneLine(args, 300))
	case agent.EventToolResult:
		res := ev.Outcome.Result
		if res.IsError {
			fmt.Fprintf(w, "[%d] ← %s error (%s): %s\n", ev.Step, shownText(ev.Call.Name, 200), res.Kind, oneLine(res.Error, 300))
		} else {
			fmt.Fprintf(w, "[%d] ← %s: %s\n", ev.Step, shownText(ev.Call.Name, 200), oneLine(res.Text(), 300))
		}
	case agent.EventText:
		fmt.Fprintf(w, "[%d] model: %s\n", ev.Step, oneLine(ev.Text, 300))
	}
}

// oneLine shortens s to one line of at most n bytes (and a mark), with
// control, invisible and bidirectional characters escaped (shownText):
// what it prints comes from the model and the tools, and raw, an ESC
// sequence would drive the terminal (clear it, set its title, write the
// clipboard) and U+202E reorder the line a person reads.
func oneLine(s string, n int) string {
	return shownText(strings.Join(strings.Fields(s), " "), n)
}

// exitPaused is chat's exit status when the run waits for approval and
// was saved.
const exitPaused = 3

// chatPollInterval is how often chat asks whether approvals were
// answered while it waits; the tests shorten it.
var chatPollInterval = time.Second

// chatPause is where chat saves a run that paused, and how it waits.
type chatPause struct {
	store runstore.Store
	id    string
	authz *policy.Authorizer
	pf    *policyFlags
	wait  time.Duration
}

// await prints the approvals st waits for and waits up to p.wait for
// them to be answered. It returns true when the run should be resumed
// (every request answered, or one that can no longer be, which Resume
// reports), and false when it was saved and chat should exit.
func (p *chatPause) await(ctx context.Context, w io.Writer, st *agent.RunState) bool {
	pending := st.Pending()
	for _, c := range pending {
		fmt.Fprintf(w, "clawtool chat: the call to %s %s waits for approval request %s. A person the policies let approve it runs:\n  %s\n",
			shownText(c.Call.Name, 200), oneLine(string(c.Call.Args), 200), c.Approval, p.pf.approveCommand(c.Approval))
	}
	as := ""
	if p.pf.as != "" {
		as = " --as " + p.pf.as
	}
	fmt.Fprintf(w, "clawtool chat: the run is saved as %s; once the approvals are answered, continue it with:\n  clawtool chat --resume %s --policy %s%s\n", p.id, p.id, p.pf.file, as)
	if p.wait <= 0 {
		return false
	}
	fmt.Fprintf(w, "clawtool chat: waiting up to %s for the answers (Ctrl-C exits; the run stays saved)\n", p.wait)
	deadline := time.NewTimer(p.wait)
	defer deadline.Stop()
	tick := time.NewTicker(chatPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			fmt.Fprintf(w, "clawtool chat: no answer after %s\n", p.wait)
			return false
		case <-tick.C:
		}
		answered := 0
		for _, c := range pending {
			ok, err := p.authz.Answered(ctx, c.Approval)
			if err != nil {
				return true // Resume says why it cannot go on
			}
			if ok {
				answered++
			}
		}
		if answered == len(pending) {
			return true
		}
	}
}
