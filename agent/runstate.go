package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/miniopenclaw/tool"
)

// Bounds of a saved [RunState]. A document over any of them is refused
// by [ParseRunState].
const (
	// MaxRunStateBytes bounds the JSON document of a RunState.
	MaxRunStateBytes = 32 << 20
	// MaxRunStateMessages bounds the messages of its conversation.
	MaxRunStateMessages = 100_000
	// MaxRunStateCalls bounds the calls of the step it paused on.
	MaxRunStateCalls = 1024
)

// runStateFormat and runStateVersion name the layout of a saved run.
const (
	runStateFormat  = "clawtool.agent.run"
	runStateVersion = 1
)

// ErrBadRunState is wrapped by the error of [ParseRunState] for a
// document that is not a saved run this package can resume: not JSON,
// truncated, altered (its checksum does not match), too large, of
// another format or version, or with a field out of its bounds. The
// error says which.
var ErrBadRunState = errors.New("not a usable saved agent run")

// ErrPaused is matched (errors.Is) by the [*PausedError] a run that
// paused returns, and wrapped by the error of [Session.Send] on a
// Session that is paused.
var ErrPaused = errors.New("agent run paused: calls wait for approval")

// A PausedError is the error [Session.Send], [Agent.Run] and
// [Session.Resume] return when the run stopped because calls of the
// model's last step wait for a person's approval (see [WithPause]). Its
// State is the run as it stands; save it (its MarshalJSON) and resume
// it, in this process or another, with [Agent.Restore] and
// [Session.Resume] once the approvals are answered.
type PausedError struct {
	State *RunState
}

// Error says how many calls wait, and for which approval requests.
func (e *PausedError) Error() string {
	p := e.State.Pending()
	msg := fmt.Sprintf("agent run paused at step %d: %d call(s) wait for approval:", e.State.step, len(p))
	for _, c := range p {
		msg += fmt.Sprintf(" %s (request %s)", c.Call.Name, c.Approval)
	}
	return msg
}

// Is reports whether target is [ErrPaused].
func (e *PausedError) Is(target error) bool { return target == ErrPaused }

// Approvals tells a paused run where the approval requests its calls
// wait for stand, so that [Session.Resume] runs only answered calls and
// refuses a request whose answer cannot be used. *policy.Authorizer
// implements it.
type Approvals interface {
	// Answered reports whether request id was answered (approved or
	// denied) and its answer is waiting to be used by its call, false
	// while no one answered it, and an error for a request whose answer
	// cannot be used: unknown, expired, or already used.
	Answered(ctx context.Context, id string) (bool, error)
}

// A PendingCall is a call of a paused run that waits for the approval
// request Approval.
type PendingCall struct {
	Call     tool.Call
	Approval string
}

// A RunState is an agent run paused on calls that wait for approval: the
// conversation so far (up to the model's message that made the calls),
// the calls of that step, with the results of those that ran and the
// approval request of each that waits, the step it paused on, and the
// deferred tools the model had found. It carries no API key, endpoint,
// principal or credential: the resuming [Agent] brings its own Model,
// registry and executor, and the calls run as the principal of the
// resuming context. It is a value: MarshalJSON and [ParseRunState] move
// it between processes.
type RunState struct {
	api      API
	model    string
	step     int
	messages []json.RawMessage
	calls    []savedCall
	loaded   []string
}

// savedCall is one call of the step a run paused on: it ran (Result is
// set) or waits (Approval is set).
type savedCall struct {
	ID       string       `json:"id"`
	Name     string       `json:"name"`
	Args     string       `json:"args"` // as the model wrote it, maybe not JSON
	Approval string       `json:"approval,omitempty"`
	Result   *savedResult `json:"result,omitempty"`
}

// savedResult is what the model sees of a Result; Metadata, which is for
// the program, is not kept.
type savedResult struct {
	Output     string          `json:"output,omitempty"`
	Error      string          `json:"error,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	Kind       tool.ErrorKind  `json:"kind,omitempty"`
	Structured json.RawMessage `json:"structured,omitempty"`
	Parts      []tool.Part     `json:"parts,omitempty"`
}

func saveResult(r tool.Result) *savedResult {
	return &savedResult{Output: r.Output, Error: r.Error, IsError: r.IsError, Kind: r.Kind, Structured: r.Structured, Parts: r.Parts}
}

func (r *savedResult) result() tool.Result {
	return tool.Result{Output: r.Output, Error: r.Error, IsError: r.IsError, Kind: r.Kind, Structured: r.Structured, Parts: r.Parts}
}

// runBody is the "run" member of the document.
type runBody struct {
	API      API               `json:"api"`
	Model    string            `json:"model"`
	Step     int               `json:"step"`
	Messages []json.RawMessage `json:"messages"`
	Calls    []savedCall       `json:"calls"`
	Loaded   []string          `json:"loaded,omitempty"`
}

// runDoc is the document: self-describing, versioned, with a checksum
// of its body that detects accidental damage (not a signature: whoever
// may write the file may rewrite it).
type runDoc struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	SHA256  string          `json:"sha256"`
	Run     json.RawMessage `json:"run"`
}

// Pending returns the calls that wait for approval, in the model's
// order.
func (s *RunState) Pending() []PendingCall {
	var out []PendingCall
	for _, c := range s.calls {
		if c.Approval != "" {
			out = append(out, PendingCall{Call: tool.Call{ID: c.ID, Name: c.Name, Args: json.RawMessage(c.Args)}, Approval: c.Approval})
		}
	}
	return out
}

// MarshalJSON encodes the state as a self-describing document of at
// most [MaxRunStateBytes]: {"format":"clawtool.agent.run","version":1,
// "sha256":…,"run":{…}}. It fails for a state over its bounds.
func (s *RunState) MarshalJSON() ([]byte, error) {
	body, err := json.Marshal(runBody{API: s.api, Model: s.model, Step: s.step, Messages: s.messages, Calls: s.calls, Loaded: s.loaded})
	if err != nil {
		return nil, fmt.Errorf("agent: saving the run: %w", err)
	}
	sum := sha256.Sum256(body)
	doc, err := json.Marshal(runDoc{Format: runStateFormat, Version: runStateVersion, SHA256: hex.EncodeToString(sum[:]), Run: body})
	if err != nil {
		return nil, fmt.Errorf("agent: saving the run: %w", err)
	}
	if len(doc) > MaxRunStateBytes {
		return nil, fmt.Errorf("agent: saving the run: %d bytes, more than %d: %w", len(doc), MaxRunStateBytes, ErrBadRunState)
	}
	return doc, nil
}

// UnmarshalJSON reads a document as [ParseRunState] does.
func (s *RunState) UnmarshalJSON(b []byte) error {
	st, err := ParseRunState(b)
	if err != nil {
		return err
	}
	*s = *st
	return nil
}

// ParseRunState reads a saved run written by [RunState.MarshalJSON]. It
// refuses, with an error wrapping [ErrBadRunState] that says why, a
// document over [MaxRunStateBytes], one that is not JSON or is cut
// short, one of another format or version, one whose body does not
// match its checksum, and one whose fields are out of bounds or
// inconsistent (no messages, a call both ran and waiting, or neither).
func ParseRunState(b []byte) (*RunState, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("agent: saved run: %w: %s", ErrBadRunState, fmt.Sprintf(format, args...))
	}
	if len(b) > MaxRunStateBytes {
		return nil, bad("%d bytes, more than the %d a saved run may hold", len(b), MaxRunStateBytes)
	}
	var doc runDoc
	if err := strictDecode(b, &doc); err != nil {
		if trimmed := bytes.TrimSpace(b); len(trimmed) == 0 || json.Valid(trimmed) {
			return nil, bad("not a saved run document: %v", err)
		}
		return nil, bad("truncated or not JSON: %v", err)
	}
	if doc.Format != runStateFormat {
		return nil, bad("format %q, not %q", printable(doc.Format), runStateFormat)
	}
	if doc.Version != runStateVersion {
		return nil, bad("version %d; this build reads version %d", doc.Version, runStateVersion)
	}
	sum := sha256.Sum256(doc.Run)
	if doc.SHA256 != hex.EncodeToString(sum[:]) {
		return nil, bad("its checksum does not match its contents: it was damaged or edited")
	}
	var body runBody
	if err := strictDecode(doc.Run, &body); err != nil {
		return nil, bad("run: %v", err)
	}
	switch body.API {
	case ChatCompletions, Messages:
	default:
		return nil, bad("unknown API %q", printable(string(body.API)))
	}
	if len(body.Model) > 256 {
		return nil, bad("a model name of %d bytes", len(body.Model))
	}
	if body.Step < 1 || body.Step > 1<<20 {
		return nil, bad("step %d", body.Step)
	}
	if len(body.Messages) == 0 || len(body.Messages) > MaxRunStateMessages {
		return nil, bad("%d messages (1 to %d)", len(body.Messages), MaxRunStateMessages)
	}
	for i, m := range body.Messages {
		if t := bytes.TrimSpace(m); len(t) == 0 || t[0] != '{' {
			return nil, bad("message %d is not a JSON object", i)
		}
	}
	if len(body.Calls) == 0 || len(body.Calls) > MaxRunStateCalls {
		return nil, bad("%d calls (1 to %d)", len(body.Calls), MaxRunStateCalls)
	}
	ids := make(map[string]bool, len(body.Calls))
	for i, c := range body.Calls {
		switch {
		case c.Name == "" || len(c.Name) > 256:
			return nil, bad("call %d has a name of %d bytes", i, len(c.Name))
		case len(c.ID) > 1024 || ids[c.ID] && c.ID != "":
			return nil, bad("call %d: its id is over 1024 bytes or not unique", i)
		case (c.Approval == "") == (c.Result == nil):
			return nil, bad("call %d (%s) must have either a result or an approval request", i, printable(c.Name))
		case c.Approval != "" && !approvalID(c.Approval):
			return nil, bad("call %d (%s) waits for approval %q, which is not a request id", i, printable(c.Name), printable(c.Approval))
		}
		ids[c.ID] = true
	}
	if len(body.Loaded) > MaxRunStateCalls*16 {
		return nil, bad("%d loaded tools", len(body.Loaded))
	}
	return &RunState{api: body.API, model: body.Model, step: body.Step, messages: body.Messages, calls: body.Calls, loaded: body.Loaded}, nil
}

// strictDecode decodes one JSON value into v, refusing unknown fields
// and anything after the value.
func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimSpace(b[dec.InputOffset():])) > 0 {
		return errors.New("data after the document")
	}
	return nil
}

// approvalID reports whether s can be an approval request id: 1 to 128
// printable ASCII characters, no spaces.
func approvalID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// printable cuts s for an error message and escapes what is not graphic.
func printable(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	if !utf8.ValidString(s) {
		return fmt.Sprintf("%q", s)
	}
	for _, r := range s {
		if !unicode.IsGraphic(r) {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}

// pendingApproval returns the approval request id a call's outcome
// waits for: its error, or one it wraps, has a method PendingApproval()
// string that returns it (a policy.DeniedError does); "" for any other
// outcome.
func pendingApproval(o tool.Outcome) string {
	var p interface{ PendingApproval() string }
	if o.Err != nil && errors.As(o.Err, &p) {
		if id := p.PendingApproval(); approvalID(id) {
			return id
		}
	}
	return ""
}
