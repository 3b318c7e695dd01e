// Package agent runs the agent loop: it sends the conversation and a
// registry's tool definitions to a model, runs the tool calls the model
// asks for as one batch through a [tool.Executor], appends the results,
// and repeats until the model answers without calling a tool or a step
// limit is reached.
//
// It speaks plain net/http to any OpenAI-compatible Chat Completions
// endpoint (OpenAI, Ollama, vLLM, llama.cpp's server) and to Anthropic's
// Messages API; see [OpenAI], [Anthropic] and [FromEnv]. The wire formats
// come from packages openaitool and anthropictool. With [WithStream] the
// model's replies stream (server-sent events) and their text reaches the
// caller as it arrives.
//
// [Agent.Run] holds a conversation of one prompt; a [Session] holds one
// that goes on over several prompts, each seeing the ones before.
//
// A registry with more tools than a threshold is not sent whole: the
// model gets the tools set to be always loaded and a tool_search tool, and
// the tools it finds become callable for the rest of the conversation
// (see [WithToolSearch]). On Chat Completions the found definitions are
// appended to the request's tools; on the Messages API every tool is sent
// with defer_loading and the search answers with tool_reference blocks,
// or Anthropic's own search runs on the server ([WithServerToolSearch]).
//
// A tool call that fails (unknown tool, arguments that do not match the
// schema, a tool error, a timeout) is answered with an error result, which
// lets the model correct itself on the next step; it never stops the loop.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/anthropictool"
	"github.com/miniopenclaw/tool/internal/jsonobj"
	"github.com/miniopenclaw/tool/openaitool"
	"github.com/miniopenclaw/tool/toolsearch"
)

// DefaultMaxSteps is how many model turns [Agent.Run] allows by default.
const DefaultMaxSteps = 10

// MaxStepCalls bounds the tool calls of one model turn: a turn of more
// ends the run with an error before any of them runs. A model led astray
// (by text it read in a tool's result) could otherwise ask for as many
// calls as a response's bytes hold, tens of thousands, each to run and
// each result to go back to the model. It is the bound of the calls of a
// step a paused run keeps ([MaxRunStateCalls]).
const MaxStepCalls = MaxRunStateCalls

// MaxStepResultBytes bounds the text of the results of one step together
// (outputs, failures' messages and text resources), which go back to the
// model in the next request and in every later one. When a step's results
// are over it, each is cut to an equal share of it, with a notice.
const MaxStepResultBytes = 4 << 20

// ErrMaxSteps is wrapped by the error [Agent.Run] returns when the model
// was still calling tools after the step limit.
var ErrMaxSteps = errors.New("step limit reached")

// EventKind says what an [Event] reports.
type EventKind string

// The kinds of [Event].
const (
	// EventToolCall: the model asked for Call; it is about to run.
	EventToolCall EventKind = "tool_call"
	// EventToolResult: Call has run; Outcome is what became of it.
	EventToolResult EventKind = "tool_result"
	// EventText: the model said Text along with its tool calls. (Its
	// final answer is what Run returns.)
	EventText EventKind = "text"
)

// An Event reports progress of [Agent.Run] to an observer set with
// [WithObserver].
type Event struct {
	Kind EventKind
	// Step counts model turns from 1.
	Step    int
	Call    tool.Call    // for EventToolCall and EventToolResult
	Outcome tool.Outcome // for EventToolResult
	Text    string       // for EventText
}

// An Option configures an [Agent].
type Option func(*config)

type config struct {
	system   string
	maxSteps int
	strict   openaitool.StrictMode
	observer func(Event)
	onText   func(string)
	exec     *tool.Executor
	loading  toolsearch.Loading
	server   string // Anthropic server tool search type, or ""
	keep     func(tool.Tool) bool

	pause      bool
	approvals  Approvals
	checkpoint func(context.Context, *RunState) error
}

// WithSystem sets the system prompt.
func WithSystem(prompt string) Option {
	return func(c *config) { c.system = prompt }
}

// WithMaxSteps sets how many model turns one Run may take. The default is
// [DefaultMaxSteps]; n < 1 means 1.
func WithMaxSteps(n int) Option {
	return func(c *config) { c.maxSteps = max(n, 1) }
}

// WithStrict sets OpenAI's strict mode for the tool definitions sent to a
// Chat Completions model (see [openaitool.StrictMode]); the default is
// [openaitool.StrictOff]. Nulls the model sends for fields strict mode
// made nullable are turned back into defaults before the calls run
// ([openaitool.Tools.Normalize]).
func WithStrict(m openaitool.StrictMode) Option {
	return func(c *config) { c.strict = m }
}

// WithObserver sets a function called, in the goroutine of Run, for each
// [Event]: each tool call before its batch runs, each outcome after, and
// the model's text.
func WithObserver(fn func(Event)) Option {
	return func(c *config) { c.observer = fn }
}

// WithStream asks the model to stream its replies and calls fn, in the
// goroutine of Run or Send, with each piece of the replies' text as it
// arrives: the text that comes with tool calls as well as the final
// answer. Everything else is as without streaming: the text is still
// reported as [EventText] and the answer returned whole. A server that
// answers a streaming request with a plain JSON reply is read as such, and
// fn gets that reply's text in one piece.
func WithStream(fn func(text string)) Option {
	return func(c *config) { c.onText = fn }
}

// WithExecutor sets the executor that runs each turn's calls. The default
// is tool.NewExecutor(r) for the Agent's registry.
func WithExecutor(e *tool.Executor) Option {
	return func(c *config) { c.exec = e }
}

// WithToolSearch sets which tools are sent to the model on every turn and
// which are deferred: left out of the request until the model finds them
// with the tool_search tool ([toolsearch.NewTool]), after which they stay
// callable for the rest of the conversation. The default, the zero
// [toolsearch.Loading], defers every tool when the registry holds more
// than [toolsearch.DefaultThreshold]; Loading{Threshold: -1} never defers
// a tool by count.
func WithToolSearch(l toolsearch.Loading) Option {
	return func(c *config) { c.loading = l }
}

// WithServerToolSearch makes a Messages API conversation whose tools are
// deferred use Anthropic's server-side tool search of type typ
// ([anthropictool.ToolSearchRegex] or [anthropictool.ToolSearchBM25])
// instead of this package's search: the API itself finds and loads the
// deferred tools. The default is the client-side search of package
// toolsearch, whose results the API loads from tool_reference blocks.
// Chat Completions conversations ignore it.
func WithServerToolSearch(typ string) Option {
	return func(c *config) { c.server = typ }
}

// WithPause makes a run stop, instead of handing the refusal to the
// model, when a call of a step waits for a person's approval: its
// outcome's error has a method PendingApproval() string that returns the
// approval request's id (a policy.DeniedError for an "ask" does). The
// other calls of the step run as usual; then [Session.Send] (or
// [Agent.Run], or [Session.Resume]) returns a [*PausedError] whose State
// holds the run, and the Session stays paused until [Session.Resume].
//
// approvals, when not nil, is asked by Resume where each request stands
// before its call is made again: a call whose request is still pending
// is not made (the run pauses again), and a request whose answer cannot
// be used (expired, unknown, already used: the state was resumed
// before) makes Resume fail without running anything. With nil, Resume
// makes every waiting call again and the executor's authorizer decides:
// a call still waiting pauses the run again.
func WithPause(approvals Approvals) Option {
	return func(c *config) { c.pause, c.approvals = true, approvals }
}

// WithCheckpoint sets a function that saves a paused run: it is called
// with the [RunState] when a run pauses, and by [Session.Resume] after
// the calls it made ran and before the model is asked again, so that a
// process that dies after a call ran does not lose the call's result
// nor make the call again. An error from fn stops the run with that
// error. It matters only with [WithPause].
func WithCheckpoint(fn func(ctx context.Context, st *RunState) error) Option {
	return func(c *config) { c.checkpoint = fn }
}

// An Agent runs conversations with a model that can call the tools of a
// registry. It is safe for concurrent use; each Run and each [Session] is
// its own conversation.
type Agent struct {
	model *Model
	reg   *tool.Registry
	cfg   config

	mu    sync.Mutex
	index *toolsearch.Index // made by the first Session that defers tools
}

// New returns an Agent for model m and the tools of r.
func New(m *Model, r *tool.Registry, opts ...Option) *Agent {
	cfg := config{maxSteps: DefaultMaxSteps}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.exec == nil {
		cfg.exec = tool.NewExecutor(r)
	}
	return &Agent{model: m, reg: r, cfg: cfg}
}

// Close releases the search index an Agent that defers tools keeps
// following its registry. The Agent remains usable; a later Run or
// Session that defers tools makes a new index, and a Session started
// before Close searches the tools its index held then.
func (a *Agent) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.index != nil {
		a.index.Close()
		a.index = nil
	}
}

// searchIndex returns the Agent's index of its registry, made when first
// needed.
func (a *Agent) searchIndex() *toolsearch.Index {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.index == nil {
		a.index = toolsearch.NewWithOptions(a.reg, a.cfg.loading.Search)
	}
	return a.index
}

// Run holds one conversation that starts with prompt and returns the
// model's final answer: the text of its first reply without tool calls.
// Each reply's tool calls run as one batch (concurrently, as the executor
// allows), and their results go back to the model in the next request.
// The tool list is read from the registry when Run starts.
//
// Run returns an error for a request the API refuses (an [*APIError]), a
// response it cannot read, tool definitions that cannot be converted (for
// example a schema that cannot be made strict under [openaitool.StrictOn]),
// the end of ctx, and, wrapping [ErrMaxSteps] together with the last text
// the model gave, a model still calling tools after the step limit.
func (a *Agent) Run(ctx context.Context, prompt string) (string, error) {
	return a.NewSession().Send(ctx, prompt)
}

// A Session is a conversation that goes on over several prompts: each
// [Session.Send] adds a prompt to the messages so far, and the model sees
// them all. A Session is not safe for concurrent use.
//
// When tools are deferred (see [WithToolSearch]), the tools found by a
// search stay callable for the rest of the Session, over later prompts.
type Session struct {
	a      *Agent
	conv   conversation
	search *deferral // nil when no tool is deferred
	paused *pausePoint
}

// pausePoint is the step a run paused on: its calls, the outcomes of
// those that ran, and the approval request each other one waits for.
type pausePoint struct {
	step      int
	calls     []tool.Call
	outcomes  []tool.Outcome // the zero Outcome for a call that waits
	approvals []string       // "" for a call that ran
}

// NewSession starts a conversation with no messages yet. The tool list is
// read from the registry, and the tools to defer chosen, when the first
// prompt is sent.
func (a *Agent) NewSession() *Session { return &Session{a: a} }

// Send adds prompt to the conversation and runs the loop as [Agent.Run]
// does, returning the model's answer, which stays in the conversation for
// the next prompt. It returns the errors Run returns; after an error the
// conversation is as it was before Send, so the same prompt may be sent
// again: tools found during the failed Send are deferred again.
func (s *Session) Send(ctx context.Context, prompt string) (string, error) {
	if s.paused != nil {
		return "", fmt.Errorf("agent: %w: resume the session (Session.Resume) before sending a new prompt", ErrPaused)
	}
	if s.conv == nil {
		tools, search := s.a.plan()
		conv, err := s.a.start(tools, search)
		if err != nil {
			return "", err
		}
		s.conv, s.search = conv, search
	}
	restoreConv := s.conv.checkpoint()
	restoreSearch := s.search.checkpoint()
	s.conv.prompt(prompt)
	answer, err := s.a.loop(ctx, s, 1)
	var paused *PausedError
	if err != nil && !errors.As(err, &paused) {
		restoreConv()
		restoreSearch()
		s.paused = nil
	}
	return answer, err
}

// loop runs the model from step first until it answers. s.search, when
// not nil, runs the model's searches and records the tools they load.
func (a *Agent) loop(ctx context.Context, s *Session, first int) (string, error) {
	conv, search := s.conv, s.search
	stream := a.cfg.onText != nil
	last := ""
	for step := first; step <= a.cfg.maxSteps; step++ {
		body, err := conv.request(stream)
		if err != nil {
			return "", err
		}
		var resp []byte
		streamed := false
		if stream {
			resp, streamed, err = a.model.stream(ctx, body, a.cfg.onText)
		} else {
			resp, err = a.model.post(ctx, body)
		}
		if err != nil {
			return "", fmt.Errorf("step %d: %w", step, err)
		}
		text, calls, err := conv.reply(resp)
		if err != nil {
			return "", fmt.Errorf("step %d: %w", step, err)
		}
		if len(calls) > MaxStepCalls {
			return "", fmt.Errorf("step %d: the model asked for %d tool calls in one turn, more than %d (agent.MaxStepCalls): none was run", step, len(calls), MaxStepCalls)
		}
		if stream && !streamed && text != "" {
			a.cfg.onText(text) // the server did not stream: all at once
		}
		if len(calls) == 0 {
			return text, nil
		}
		if text != "" {
			last = text
			a.emit(Event{Kind: EventText, Step: step, Text: text})
		}
		for _, c := range calls {
			a.emit(Event{Kind: EventToolCall, Step: step, Call: c})
		}
		outcomes, err := a.runBatch(ctx, calls, search)
		if err != nil {
			return "", fmt.Errorf("step %d: %w", step, err)
		}
		for i, o := range outcomes {
			a.emit(Event{Kind: EventToolResult, Step: step, Call: calls[i], Outcome: o})
		}
		if a.cfg.pause {
			p := &pausePoint{step: step, calls: calls, outcomes: outcomes, approvals: make([]string, len(calls))}
			waiting := false
			for i, o := range outcomes {
				if id := pendingApproval(o); id != "" {
					p.approvals[i], p.outcomes[i], waiting = id, tool.Outcome{}, true
				}
			}
			if waiting {
				return "", s.pause(ctx, p)
			}
		}
		if err := a.finishStep(conv, search, calls, outcomes); err != nil {
			return "", err
		}
	}
	return last, fmt.Errorf("%w: the model was still calling tools after %d steps", ErrMaxSteps, a.cfg.maxSteps)
}

// finishStep appends the results of a step's calls to the conversation
// and makes the deferred tools its searches found callable.
func (a *Agent) finishStep(conv conversation, search *deferral, calls []tool.Call, outcomes []tool.Outcome) error {
	if err := conv.results(calls, outcomes); err != nil {
		return err
	}
	if search != nil {
		if more := search.found(calls, outcomes); len(more) > 0 {
			if err := conv.load(more); err != nil {
				return err
			}
		}
	}
	return nil
}

// pause leaves s paused at p, saves it with the checkpoint function, and
// returns the PausedError, or the error of the save.
func (s *Session) pause(ctx context.Context, p *pausePoint) error {
	s.paused = p
	st := s.state()
	if fn := s.a.cfg.checkpoint; fn != nil {
		if err := fn(ctx, st); err != nil {
			return fmt.Errorf("agent: the run paused at step %d and could not be saved: %w", p.step, err)
		}
	}
	return &PausedError{State: st}
}

// state returns the RunState of the paused s.
func (s *Session) state() *RunState {
	p := s.paused
	st := &RunState{api: s.a.model.api, model: s.a.model.name, step: p.step, messages: slices.Clone(s.conv.messagesSoFar())}
	for i, c := range p.calls {
		sc := savedCall{ID: c.ID, Name: c.Name, Args: string(c.Args), Approval: p.approvals[i]}
		if sc.Approval == "" {
			sc.Result = saveResult(p.outcomes[i].Result)
		}
		st.calls = append(st.calls, sc)
	}
	if s.search != nil {
		for _, t := range s.search.loaded {
			st.loaded = append(st.loaded, t.Name())
		}
	}
	return st
}

// Paused returns the state of a Session paused on calls that wait for
// approval, and nil when it is not paused.
func (s *Session) Paused() *RunState {
	if s.paused == nil {
		return nil
	}
	return s.state()
}

// Restore returns a Session paused as st says, for [Session.Resume] to
// go on with: the conversation of st, with the tools of a's registry
// (and the deferred tools st had found loaded again). a should be made
// as the Agent that paused was (its options are not in st), with a
// Model that speaks the same API; the model's name may differ. Restore
// fails when the APIs differ or a tool st had found is not one a defers.
func (a *Agent) Restore(st *RunState) (*Session, error) {
	if st == nil {
		return nil, errors.New("agent: restore: no run state")
	}
	if st.api != a.model.api {
		return nil, fmt.Errorf("agent: restore: the run was paused talking to the %s API, and this agent's model speaks %s", st.api, a.model.api)
	}
	tools, search := a.plan()
	conv, err := a.start(tools, search)
	if err != nil {
		return nil, err
	}
	if len(st.loaded) > 0 {
		if search == nil {
			return nil, fmt.Errorf("agent: restore: the run had found the deferred tools %q, and this agent defers no tool", st.loaded)
		}
		var more []tool.Tool
		for _, name := range st.loaded {
			t, ok := search.deferred[name]
			if !ok {
				return nil, fmt.Errorf("agent: restore: the run had found the deferred tool %q, which this agent does not defer", printable(name))
			}
			delete(search.deferred, name)
			more = append(more, t)
		}
		search.loaded = append(search.loaded, more...)
		if err := conv.load(more); err != nil {
			return nil, err
		}
	}
	conv.setMessages(slices.Clone(st.messages))
	p := &pausePoint{step: st.step}
	for _, c := range st.calls {
		call := tool.Call{ID: c.ID, Name: c.Name}
		if c.Args != "" {
			call.Args = json.RawMessage(c.Args)
		}
		var o tool.Outcome
		if c.Result != nil {
			o = tool.Outcome{ID: c.ID, Result: c.Result.result()}
		}
		p.calls = append(p.calls, call)
		p.outcomes = append(p.outcomes, o)
		p.approvals = append(p.approvals, c.Approval)
	}
	return &Session{a: a, conv: conv, search: search, paused: p}, nil
}

// Resume goes on with a paused Session (see [WithPause]): it makes the
// calls whose approval requests were answered again, as one batch, so
// that the executor's authorizer uses each answer (once: an approved
// call runs, a denied one gets the refusal saying who denied it and
// why, which the model reads), saves the run (see [WithCheckpoint]),
// appends the step's results to the conversation and runs the model
// until it answers, returning the answer as Send does.
//
// A call whose request is still pending is not made (or, without an
// [Approvals], made and found waiting again): Resume then returns a
// [*PausedError] again, with the results of the calls that did run. A
// request whose answer cannot be used (see [Approvals]) makes Resume
// fail before any call is made, with an error that names the call and
// the request: a state resumed a second time fails so, its approvals
// used by the first. After any other error the Session is paused as it
// was when Resume made its calls (their results kept), so Resume may be
// called again. Resume on a Session that is not paused is an error.
func (s *Session) Resume(ctx context.Context) (string, error) {
	p := s.paused
	if p == nil {
		return "", errors.New("agent: resume: the session is not paused")
	}
	a := s.a
	var again []int
	waiting := false
	for i, id := range p.approvals {
		if id == "" {
			continue
		}
		if a.cfg.approvals != nil {
			ok, err := a.cfg.approvals.Answered(ctx, id)
			if err != nil {
				return "", fmt.Errorf("agent: resume: call %s to %s (step %d) waits for approval %s, whose answer cannot be used: %w", printable(p.calls[i].ID), printable(p.calls[i].Name), p.step, id, err)
			}
			if !ok {
				waiting = true
				continue
			}
		}
		again = append(again, i)
	}
	if len(again) > 0 {
		calls := make([]tool.Call, len(again))
		for k, i := range again {
			calls[k] = p.calls[i]
			a.emit(Event{Kind: EventToolCall, Step: p.step, Call: calls[k]})
		}
		outcomes, err := a.runBatch(ctx, calls, s.search)
		if err != nil {
			return "", fmt.Errorf("step %d: %w", p.step, err)
		}
		for k, i := range again {
			o := outcomes[k]
			a.emit(Event{Kind: EventToolResult, Step: p.step, Call: calls[k], Outcome: o})
			if id := pendingApproval(o); id != "" {
				p.approvals[i], waiting = id, true
				continue
			}
			p.outcomes[i], p.approvals[i] = o, ""
		}
	}
	if waiting {
		if len(again) == 0 {
			return "", &PausedError{State: s.state()}
		}
		return "", s.pause(ctx, p)
	}
	if len(again) > 0 {
		if err := s.pause(ctx, p); !errors.Is(err, ErrPaused) {
			return "", err
		}
	}
	restoreConv := s.conv.checkpoint()
	restoreSearch := s.search.checkpoint()
	s.paused = nil
	answer, err := a.resumeStep(ctx, s, p)
	var paused *PausedError
	if err != nil && !errors.As(err, &paused) {
		restoreConv()
		restoreSearch()
		s.paused = p
	}
	return answer, err
}

// resumeStep appends the results of the paused step p and runs the
// loop from the next step.
func (a *Agent) resumeStep(ctx context.Context, s *Session, p *pausePoint) (string, error) {
	if err := a.finishStep(s.conv, s.search, p.calls, p.outcomes); err != nil {
		return "", err
	}
	return a.loop(ctx, s, p.step+1)
}

// runBatch runs one turn's calls through the executor, and calls of the
// tool_search tool, when tools are deferred, through search. A call to a
// deferred tool that no search has found yet does not run: it gets a
// not_found result telling the model to search first (the tool was kept
// out of its request; a model that guessed the name would otherwise run
// it). A batch the executor refuses as a whole (a cycle among "$output"
// references the model wrote, say) still has an error result per call,
// which goes back to the model; only the end of ctx stops the loop.
func (a *Agent) runBatch(ctx context.Context, calls []tool.Call, search *deferral) ([]tool.Outcome, error) {
	// own reports whether the loop answers c itself, instead of the
	// executor.
	own := func(tool.Call) bool { return false }
	if search != nil && search.reg != nil {
		own = func(c tool.Call) bool {
			_, hidden := search.deferred[c.Name]
			return hidden || c.Name == toolsearch.ToolName
		}
	}
	rest := calls
	if slices.ContainsFunc(calls, own) {
		rest = make([]tool.Call, 0, len(calls))
		for _, c := range calls {
			if !own(c) {
				rest = append(rest, c)
			}
		}
	}
	var outcomes []tool.Outcome
	if len(rest) > 0 {
		var err error
		outcomes, err = a.cfg.exec.Run(ctx, rest)
		if err != nil && (ctx.Err() != nil || len(outcomes) != len(rest)) {
			return nil, err
		}
		if err := answers(rest, outcomes); err != nil {
			return nil, err
		}
	}
	if len(rest) == len(calls) {
		return shareResults(outcomes), nil
	}
	all := make([]tool.Outcome, 0, len(calls))
	for _, c := range calls {
		switch {
		case !own(c):
			all = append(all, outcomes[0])
			outcomes = outcomes[1:]
		case c.Name == toolsearch.ToolName:
			all = append(all, tool.Outcome{ID: c.ID, Result: search.reg.Execute(ctx, c.Name, c.Args)})
		default:
			all = append(all, notLoaded(c))
		}
	}
	return shareResults(all), nil
}

// shareResults cuts the results of one step to MaxStepResultBytes of
// text in all, each to an equal share, when they are over it: each result
// is bounded by its tool's budget, but a turn of many calls times that
// budget would go back to the model in every later request.
func shareResults(outcomes []tool.Outcome) []tool.Outcome {
	total := 0
	for _, o := range outcomes {
		total += resultText(o.Result)
	}
	if total <= MaxStepResultBytes {
		return outcomes
	}
	share := MaxStepResultBytes / len(outcomes)
	notice := func(s string, kept int) string {
		return s[:kept] + fmt.Sprintf("\n[cut: %d bytes, of which the first %d are shown; this step's results share %d bytes; ask for less in fewer calls]",
			len(s), kept, MaxStepResultBytes)
	}
	for i := range outcomes {
		r := &outcomes[i].Result
		if resultText(*r) <= share {
			continue
		}
		left := share
		cut := func(s string) string {
			if len(s) <= left {
				left -= len(s)
				return s
			}
			kept := left
			for kept > 0 && !utf8.RuneStart(s[kept]) {
				kept--
			}
			left = 0
			return notice(s, kept)
		}
		if r.Output != "" {
			r.Output = cut(r.Output)
		}
		if r.Error != "" {
			r.Error = cut(r.Error)
		}
		if len(r.Structured) > share {
			r.Structured = nil
		}
		parts := slices.Clone(r.Parts)
		for k, p := range parts {
			if p.Type == tool.PartResource && p.Text != "" {
				parts[k].Text = cut(p.Text)
			}
		}
		r.Parts = parts
	}
	return outcomes
}

// resultText is the bytes of text of r that go to the model.
func resultText(r tool.Result) int {
	n := len(r.Output) + len(r.Error) + len(r.Structured)
	for _, p := range r.Parts {
		n += len(p.Text)
	}
	return n
}

// answers checks that outcomes answer calls, one each and in order, as
// [tool.Executor.Run] promises: an executor whose batch middleware drops,
// adds or reorders outcomes would give results to the wrong calls.
func answers(calls []tool.Call, outcomes []tool.Outcome) error {
	if len(outcomes) != len(calls) {
		return fmt.Errorf("the executor returned %d outcomes for %d calls", len(outcomes), len(calls))
	}
	for i, o := range outcomes {
		if o.ID != calls[i].ID {
			return fmt.Errorf("the executor's outcome %d is for call %s, not %s", i, printable(o.ID), printable(calls[i].ID))
		}
	}
	return nil
}

// notLoaded is the outcome of a call to a deferred tool that no search
// has found: the tool did not run.
func notLoaded(c tool.Call) tool.Outcome {
	return tool.Outcome{
		ID: c.ID,
		Result: tool.Result{
			Error: fmt.Sprintf("tool %q is not loaded: call %s to find it, then call it in a later turn",
				c.Name, toolsearch.ToolName),
			IsError: true,
			Kind:    tool.KindNotFound,
		},
		Err: fmt.Errorf("%w: %q is deferred and no %s call has found it", tool.ErrNotFound, c.Name, toolsearch.ToolName),
	}
}

// plan returns the tools to send from the start of a Session, and, when
// some are deferred, what finds and loads them.
func (a *Agent) plan() ([]tool.Tool, *deferral) {
	all := a.reg.List()
	if a.cfg.keep != nil {
		all = slices.DeleteFunc(slices.Clone(all), func(t tool.Tool) bool { return !a.cfg.keep(t) })
	}
	loaded, deferred := a.cfg.loading.Split(all)
	if len(deferred) == 0 {
		return all, nil
	}
	d := &deferral{all: all, deferred: make(map[string]tool.Tool, len(deferred))}
	for _, t := range deferred {
		d.deferred[t.Name()] = t
	}
	if a.model.api == Messages && a.cfg.server != "" {
		d.server = a.cfg.server
		return loaded, d
	}
	d.meta = toolsearch.NewTool(a.searchIndex(), func(name string) bool {
		_, ok := d.deferred[name]
		return ok
	})
	d.reg = tool.NewRegistry()
	if err := d.reg.Register(d.meta); err != nil {
		panic(err) // the meta-tool is ours and valid
	}
	return append(slices.Clip(loaded), d.meta), d
}

// deferral is the state of deferred tools in one Session. Like the
// Session, it is used by one goroutine at a time, as is the search tool
// that reads it.
type deferral struct {
	all      []tool.Tool          // the registry's tools when the Session started
	deferred map[string]tool.Tool // deferred tools not found yet
	loaded   []tool.Tool          // deferred tools found, in the order found
	meta     tool.Tool            // the search tool, or nil for a server search
	reg      *tool.Registry       // runs meta
	server   string               // the server search type, or ""
}

// found returns the deferred tools that the searches among calls found,
// and counts them as loaded.
func (d *deferral) found(calls []tool.Call, outcomes []tool.Outcome) []tool.Tool {
	var more []tool.Tool
	for i, c := range calls {
		if c.Name != toolsearch.ToolName {
			continue
		}
		for _, name := range toolsearch.Loaded(outcomes[i].Result) {
			if t, ok := d.deferred[name]; ok {
				more = append(more, t)
				delete(d.deferred, name)
			}
		}
	}
	d.loaded = append(d.loaded, more...)
	return more
}

// checkpoint returns a function that defers again the tools found after
// it was made. It is nil-safe: with no deferral there is nothing to undo.
func (d *deferral) checkpoint() (restore func()) {
	if d == nil {
		return func() {}
	}
	n := len(d.loaded)
	return func() {
		for _, t := range d.loaded[n:] {
			d.deferred[t.Name()] = t
		}
		clear(d.loaded[n:])
		d.loaded = d.loaded[:n]
	}
}

func (a *Agent) emit(e Event) {
	if a.cfg.observer != nil {
		a.cfg.observer(e)
	}
}

// conversation is the provider-specific state of one Session.
type conversation interface {
	// prompt appends a user message.
	prompt(text string)
	// request returns the body of the next request, asking for a
	// streamed reply when stream is set.
	request(stream bool) ([]byte, error)
	// reply reads a response, appends the model's message to the
	// conversation and returns its text and tool calls.
	reply(body []byte) (string, []tool.Call, error)
	// results appends the results of calls.
	results(calls []tool.Call, outcomes []tool.Outcome) error
	// load makes found deferred tools callable in the following
	// requests.
	load(found []tool.Tool) error
	// checkpoint returns a function that puts the conversation back as
	// it is now: its messages and the tools it offers.
	checkpoint() (restore func())
	// messagesSoFar returns the messages, each a JSON object in the
	// API's shape; setMessages replaces them (a restored run's).
	messagesSoFar() []json.RawMessage
	setMessages(msgs []json.RawMessage)
}

func (a *Agent) start(tools []tool.Tool, d *deferral) (conversation, error) {
	switch a.model.api {
	case ChatCompletions:
		c := &chatConv{model: a.model, strict: a.cfg.strict}
		if err := c.setTools(tools); err != nil {
			return nil, err
		}
		if a.cfg.system != "" {
			c.messages.add(openaitool.ChatMessage{Role: "system", Content: a.cfg.system})
		}
		return c, nil
	case Messages:
		c := &messagesConv{model: a.model, system: a.cfg.system}
		var err error
		if d == nil {
			err = c.setTools(tools)
		} else {
			err = c.setDeferred(d)
		}
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	return nil, fmt.Errorf("agent: unknown API %q", a.model.api)
}

// transcript is a conversation's messages so far, each encoded once, in
// the API's own shape.
type transcript []json.RawMessage

// add encodes v, a message of this package's own making, and appends it.
func (t *transcript) add(v any) {
	b, err := jsonobj.Marshal(v)
	if err != nil {
		panic(err) // our own values always marshal
	}
	*t = append(*t, b)
}

// truncate cuts the transcript back to its first n messages.
func (t *transcript) truncate(n int) {
	clear((*t)[n:])
	*t = (*t)[:n]
}

// chatConv is a Chat Completions conversation.
type chatConv struct {
	model    *Model
	strict   openaitool.StrictMode
	list     []tool.Tool
	tools    *openaitool.Tools
	messages transcript
}

func (c *chatConv) setTools(tools []tool.Tool) error {
	ts, err := openaitool.NewTools(tools, openaitool.WithStrict(c.strict))
	if err != nil {
		return err
	}
	c.list, c.tools = tools, ts
	return nil
}

// load appends found to the tools offered, after the others, so that
// the start of the request stays the same for prompt caching.
func (c *chatConv) load(found []tool.Tool) error {
	return c.setTools(append(c.list, found...))
}

func (c *chatConv) prompt(text string) {
	c.messages.add(openaitool.ChatMessage{Role: "user", Content: text})
}

func (c *chatConv) messagesSoFar() []json.RawMessage       { return c.messages }
func (c *chatConv) setMessages(msgs []json.RawMessage)     { c.messages = msgs }
func (c *messagesConv) messagesSoFar() []json.RawMessage   { return c.messages }
func (c *messagesConv) setMessages(msgs []json.RawMessage) { c.messages = msgs }

func (c *chatConv) checkpoint() func() {
	n, list, tools := len(c.messages), c.list, c.tools
	return func() {
		c.messages.truncate(n)
		c.list, c.tools = list, tools
	}
}

func (c *chatConv) request(stream bool) ([]byte, error) {
	req := struct {
		Model     string            `json:"model"`
		Messages  []json.RawMessage `json:"messages"`
		Tools     json.RawMessage   `json:"tools,omitempty"`
		MaxTokens int               `json:"max_tokens,omitempty"`
		// Absent means off, as the SDKs send it when not streaming.
		Stream bool `json:"stream,omitempty"`
	}{Model: c.model.name, Messages: c.messages, MaxTokens: c.model.maxTokens, Stream: stream}
	if len(c.list) > 0 {
		req.Tools = c.tools.Chat()
	}
	return jsonobj.Marshal(req)
}

func (c *chatConv) reply(body []byte) (string, []tool.Call, error) {
	calls, err := openaitool.ChatCalls(body)
	if err != nil {
		return "", nil, err
	}
	var resp struct {
		Choices []struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	_ = json.Unmarshal(body, &resp) // ChatCalls has checked the shape
	text := ""
	if len(resp.Choices) > 0 {
		text = contentText(resp.Choices[0].Message.Content)
	}
	c.messages.add(openaitool.AssistantMessage(text, calls))
	return text, c.tools.Normalize(calls), nil
}

// contentText reads a message's content: a string, null, or an array of
// text parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct{ Type, Text string }
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder // += copied the text so far for each part
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (c *chatConv) results(_ []tool.Call, outcomes []tool.Outcome) error {
	for _, m := range openaitool.ChatResults(outcomes) {
		c.messages.add(m)
	}
	return nil
}

// messagesConv is an Anthropic Messages conversation.
type messagesConv struct {
	model    *Model
	tools    json.RawMessage // nil for none
	native   bool            // search results go back as tool_reference blocks
	system   string
	messages transcript
}

func (c *messagesConv) setTools(tools []tool.Tool) error {
	if len(tools) == 0 {
		return nil
	}
	defs, err := anthropictool.Tools(tools)
	c.tools = defs
	return err
}

// setDeferred sends every tool of d, the deferred ones with
// defer_loading, and the search: the API loads what the search finds,
// and the tools array stays the same for the whole conversation.
func (c *messagesConv) setDeferred(d *deferral) error {
	params, err := anthropictool.DeferredToolParams(d.all, func(name string) bool {
		_, ok := d.deferred[name]
		return ok
	})
	if err != nil {
		return err
	}
	tools := make([]any, 0, len(params)+1)
	for _, p := range params {
		tools = append(tools, p)
	}
	if d.meta != nil {
		meta, err := anthropictool.ToolParams([]tool.Tool{d.meta})
		if err != nil {
			return err
		}
		tools = append(tools, meta[0])
		c.native = true
	} else {
		tools = append(tools, anthropictool.ServerSearchTool(d.server))
	}
	c.tools, err = jsonobj.Marshal(tools)
	return err
}

// load has nothing to do: the API loads found tools itself, from the
// search results in the messages.
func (c *messagesConv) load([]tool.Tool) error { return nil }

func (c *messagesConv) prompt(text string) {
	c.messages.add(struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}{"user", text})
}

// checkpoint restores the messages only: the tools array never changes,
// and the tools a search loaded go with the messages that loaded them.
func (c *messagesConv) checkpoint() func() {
	n := len(c.messages)
	return func() { c.messages.truncate(n) }
}

func (c *messagesConv) request(stream bool) ([]byte, error) {
	req := struct {
		Model     string            `json:"model"`
		MaxTokens int               `json:"max_tokens"`
		System    string            `json:"system,omitempty"`
		Messages  []json.RawMessage `json:"messages"`
		Tools     json.RawMessage   `json:"tools,omitempty"`
		Stream    bool              `json:"stream,omitempty"`
	}{Model: c.model.name, MaxTokens: c.model.maxTokens, System: c.system, Messages: c.messages, Tools: c.tools, Stream: stream}
	if req.MaxTokens <= 0 {
		req.MaxTokens = DefaultMaxTokens
	}
	return jsonobj.Marshal(req)
}

func (c *messagesConv) reply(body []byte) (string, []tool.Call, error) {
	calls, err := anthropictool.Calls(body)
	if err != nil {
		return "", nil, err
	}
	var resp struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return "", nil, err
	}
	// The assistant turn goes back exactly as it came: thinking blocks
	// must keep their signatures, and tool_use ids must match.
	content := resp.Content
	if len(calls) > 0 && (!sameIDs(content, calls) || !objectInputs(calls)) {
		// A tool_use block came without an id or with an input that is
		// not an object, which the API would refuse to read back: send
		// back blocks that carry the ids the results will answer.
		var blocks []anthropictool.ContentBlock
		if text := anthropictool.Text(body); text != "" {
			blocks = append(blocks, anthropictool.ContentBlock{Type: "text", Text: text})
		}
		for _, call := range calls {
			input := call.Args
			if jsonobj.Kind(input) != "object" {
				input = json.RawMessage("{}")
			}
			blocks = append(blocks, anthropictool.ContentBlock{Type: "tool_use", ID: call.ID, Name: call.Name, Input: input})
		}
		b, err := jsonobj.Marshal(blocks)
		if err != nil {
			return "", nil, err
		}
		content = b
	}
	c.messages.add(struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}{"assistant", content})
	return anthropictool.Text(body), calls, nil
}

// sameIDs reports whether the tool_use blocks of content carry the ids of
// calls, in order.
func sameIDs(content json.RawMessage, calls []tool.Call) bool {
	var blocks []struct{ Type, ID string }
	if json.Unmarshal(content, &blocks) != nil {
		return false
	}
	i := 0
	for _, b := range blocks {
		if b.Type != "tool_use" {
			continue
		}
		if i >= len(calls) || calls[i].ID != b.ID {
			return false
		}
		i++
	}
	return i == len(calls)
}

func objectInputs(calls []tool.Call) bool {
	for _, c := range calls {
		if len(c.Args) > 0 && jsonobj.Kind(c.Args) != "object" {
			return false
		}
	}
	return true
}

func (c *messagesConv) results(calls []tool.Call, outcomes []tool.Outcome) error {
	msg := anthropictool.Results(outcomes)
	if c.native {
		for i, call := range calls {
			if call.Name == toolsearch.ToolName && !outcomes[i].Result.IsError && i < len(msg.Content) {
				msg.Content[i] = anthropictool.ToolReferences(outcomes[i].ID, toolsearch.Loaded(outcomes[i].Result))
			}
		}
	}
	c.messages.add(msg)
	return nil
}
