package mcptool

// Multi round-trip requests (SEP-2322) of calls that are not tasks.
//
// A 2026-07-28 client has no requests from server to client: a call that
// needs input is answered with an input_required result (inputRequests and
// requestState), and the client calls again with the same name and
// arguments, its inputResponses and the requestState it got. Two kinds of
// round come out of this server:
//
//   - A stateless round: a tool asked with RequestInput. Its call ended;
//     the retry runs the tool again with the answers. The requestState
//     carries the tool's own state.
//   - A held round: the question came while the call runs on — an
//     imported server asked for input (relayed, see WithElicitationRelay)
//     or an ElicitApprover asked for an approval. The call waits in the
//     server for the answer, under an unguessable round ID the
//     requestState names; the retry hands the answer to the waiting call,
//     which goes on to its result or to its next question.
//
// Every requestState this server sends is sealed (HMAC-SHA256 under a key
// drawn at NewServer) over the caller, the tool, the call's arguments, the
// round and an expiry: a state that was changed, that another caller
// sends, that comes with another tool or other arguments, or that expired,
// is refused with -32602 before anything runs. A held round is used once:
// a replayed retry finds no round and is refused the same way.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// InputRoundLimits bound the held rounds of a [Server]: calls that wait in
// the server for a 2026-07-28 client's answer to a question asked in their
// middle (see [WithInputRounds]). Zero fields keep their defaults.
type InputRoundLimits struct {
	// PerCaller bounds the calls of one caller (principal) waiting at
	// once; a question beyond it fails, and so does the call that asked
	// it (default 8).
	PerCaller int
	// Total bounds the waiting calls of all callers (default 256).
	Total int
	// Keep is how long a waiting call waits for the client's retry before
	// it is cancelled (default 5 minutes).
	Keep time.Duration
	// Rounds bounds the questions one call may ask (default 16).
	Rounds int
	// StateTTL is how long a requestState stays valid (default 1 hour).
	StateTTL time.Duration
}

// Defaults of InputRoundLimits.
const (
	DefaultHeldPerCaller = 8
	DefaultHeldTotal     = 256
	DefaultHeldKeep      = 5 * time.Minute
	DefaultHeldRounds    = 16
	DefaultStateTTL      = time.Hour
	// maxStateBytes bounds a requestState a client sends back, and
	// maxQuestionBytes one relayed question.
	maxStateBytes    = 8 << 10
	maxQuestionBytes = 64 << 10
)

// WithInputRounds sets the bounds of held rounds (see [InputRoundLimits]).
func WithInputRounds(lim InputRoundLimits) ServerOption {
	return func(c *serverConfig) { c.rounds = lim }
}

func (l InputRoundLimits) withDefaults() InputRoundLimits {
	if l.PerCaller <= 0 {
		l.PerCaller = DefaultHeldPerCaller
	}
	if l.Total <= 0 {
		l.Total = DefaultHeldTotal
	}
	if l.Keep <= 0 {
		l.Keep = DefaultHeldKeep
	}
	if l.Rounds <= 0 {
		l.Rounds = DefaultHeldRounds
	}
	if l.StateTTL <= 0 {
		l.StateTTL = DefaultStateTTL
	}
	return l
}

// errBadState is the message prefix of every refused requestState.
const errBadState = "requestState refused"

// roundState is what a sealed requestState carries.
type roundState struct {
	Tool    string `json:"s,omitempty"` // the tool's own state (RequestInput)
	Round   string `json:"r,omitempty"` // a held round's ID
	Expires int64  `json:"x"`           // Unix seconds
}

// rounds holds the sealing key and the held calls of a Server.
type rounds struct {
	lim  InputRoundLimits
	key  [32]byte
	now  func() time.Time
	mu   sync.Mutex
	held map[string]*heldCall // round ID → call waiting for its answer
	per  map[string]int       // caller → waiting calls
	off  bool                 // tests only: the unsealed, unheld rounds of before (a control)
}

func newRounds(lim InputRoundLimits) *rounds {
	r := &rounds{lim: lim.withDefaults(), now: time.Now, held: map[string]*heldCall{}, per: map[string]int{}}
	if _, err := rand.Read(r.key[:]); err != nil {
		panic("mcptool: no randomness for the requestState key: " + err.Error())
	}
	return r
}

// mac is the seal of payload for caller, tool and args.
func (r *rounds) mac(caller, tool string, args json.RawMessage, payload string) []byte {
	h := hmac.New(sha256.New, r.key[:])
	sum := sha256.Sum256(compactJSON(args))
	for _, part := range []string{"clawtool mrtr v1", caller, tool, string(sum[:]), payload} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	return h.Sum(nil)
}

// seal returns st as a requestState bound to caller, tool and args.
func (r *rounds) seal(caller, tool string, args json.RawMessage, st roundState) string {
	st.Expires = r.now().Add(r.lim.StateTTL).Unix()
	data, _ := json.Marshal(st)
	payload := base64.RawURLEncoding.EncodeToString(data)
	return payload + "." + base64.RawURLEncoding.EncodeToString(r.mac(caller, tool, args, payload))
}

// open checks a requestState a client sent back with a call of tool with
// args and returns what it carries, or a -32602 error saying why it is
// refused.
func (r *rounds) open(caller, tool string, args json.RawMessage, state string) (roundState, *jsonrpc.Error) {
	var st roundState
	refuse := func(why string) (roundState, *jsonrpc.Error) {
		return roundState{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: errBadState + ": " + why}
	}
	if len(state) > maxStateBytes {
		return refuse(fmt.Sprintf("it is %d bytes, more than this server ever sends", len(state)))
	}
	payload, sig, ok := strings.Cut(state, ".")
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err != nil || !hmac.Equal(mac, r.mac(caller, tool, args, payload)) {
		return refuse("it is not one this server sent for this call (changed, or sent for another caller, tool or arguments)")
	}
	data, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(data, &st) != nil {
		return refuse("malformed")
	}
	if r.now().Unix() > st.Expires {
		return refuse("it expired; call the tool again without it")
	}
	return st, nil
}

// compactJSON is args without insignificant space, so that a client that
// re-encodes the same arguments still matches.
func compactJSON(args json.RawMessage) []byte {
	if len(args) == 0 {
		return []byte("{}")
	}
	var b bytes.Buffer
	if json.Compact(&b, args) != nil {
		return args
	}
	return b.Bytes()
}

// A heldCall is a call that runs on while its client answers a question.
type heldCall struct {
	r      *rounds
	caller string
	cancel context.CancelFunc

	asks chan heldAsk      // from the call: a question
	done chan heldOutcome  // from the call: its answer, once (buffered)
	mu   sync.Mutex        // one question at a time
	n    int               // questions asked
	id   string            // the waiting round, while registered
	key  string            // the input request ID of the waiting question
	q    *mcp.ElicitParams // the waiting question
	ans  chan *mcp.ElicitResult
	tm   *time.Timer
}

type heldAsk struct {
	key string
	q   *mcp.ElicitParams
	ans chan *mcp.ElicitResult
}

type heldOutcome struct {
	res *mcp.CallToolResult
	err error
}

type heldKey struct{}

// heldFrom returns the held call ctx belongs to, or nil.
func heldFrom(ctx context.Context) *heldCall {
	h, _ := ctx.Value(heldKey{}).(*heldCall)
	return h
}

// elicit puts p to the client of the held call and returns its answer:
// the call's request is answered with p as an input request, and the
// answer comes with the client's retry.
func (h *heldCall) elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return h.ask(ctx, "", p)
}

// ask is elicit with the input request's ID: key, or when "" one the call
// has not used.
func (h *heldCall) ask(ctx context.Context, key string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n >= h.r.lim.Rounds {
		return nil, fmt.Errorf("the call asked its client %d questions, the most this server relays for one call", h.r.lim.Rounds)
	}
	if data, err := json.Marshal(p); err != nil || len(data) > maxQuestionBytes {
		return nil, fmt.Errorf("the question is larger than the %d bytes this server relays", maxQuestionBytes)
	}
	h.n++
	if key == "" {
		key = fmt.Sprintf("clawtool_input_%d", h.n)
	}
	ask := heldAsk{key: key, q: p, ans: make(chan *mcp.ElicitResult, 1)}
	select {
	case h.asks <- ask:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	select {
	case res := <-ask.ans:
		if res == nil {
			return nil, errors.New("the client's answer did not come before the call stopped waiting for it")
		}
		return res, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// hold runs run (the call) so that questions asked in its middle are put to
// the client as held rounds, and returns the call's answer for the request
// whose context is ctx: its result, or the input_required result of its
// first question.
func (r *rounds) hold(ctx context.Context, caller, tool string, args json.RawMessage,
	run func(ctx context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &heldCall{r: r, caller: caller, cancel: cancel, asks: make(chan heldAsk), done: make(chan heldOutcome, 1)}
	ectx = context.WithValue(ectx, heldKey{}, h)
	go func() {
		defer cancel()
		res, err := run(ectx)
		h.done <- heldOutcome{res, err}
	}()
	return h.wait(ctx, tool, args)
}

// wait waits, for the request whose context is ctx, for the call's answer
// or its next question.
func (h *heldCall) wait(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	select {
	case out := <-h.done:
		return out.res, out.err
	case ask := <-h.asks:
		return h.r.park(h, ask, tool, args)
	case <-ctx.Done():
		h.cancel() // the client went away: so does the call
		return nil, context.Cause(ctx)
	}
}

// park registers the question ask of h as a held round and returns the
// input_required result that puts it to the client. A caller over its
// bound, or a server over its total, gets an error result, and the call
// is cancelled.
func (r *rounds) park(h *heldCall, ask heldAsk, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	r.mu.Lock()
	full := ""
	switch {
	case len(r.held) >= r.lim.Total:
		full = fmt.Sprintf("%d calls already wait for one", r.lim.Total)
	case r.per[h.caller] >= r.lim.PerCaller:
		full = fmt.Sprintf("%d calls of this caller already wait for one", r.lim.PerCaller)
	}
	if full != "" {
		r.mu.Unlock()
		h.cancel() // the call ends on its own goroutine; its answer is dropped
		msg := "the call needs an answer from its client, and " + full + " (the most this server keeps)"
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
	}
	id := rand.Text()
	h.id, h.key, h.q, h.ans = id, ask.key, ask.q, ask.ans
	r.held[id] = h
	r.per[h.caller]++
	h.tm = time.AfterFunc(r.lim.Keep, func() {
		if r.take(h.caller, id) == h {
			h.cancel() // nobody came back for it
		}
	})
	r.mu.Unlock()
	state := r.seal(h.caller, tool, args, roundState{Round: id})
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{ask.key: ask.q}, RequestState: state}, nil
}

// take removes and returns the held call waiting under round id for
// caller, or nil.
func (r *rounds) take(caller, id string) *heldCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.held[id]
	if h == nil || h.caller != caller {
		return nil
	}
	delete(r.held, id)
	if r.per[caller]--; r.per[caller] <= 0 {
		delete(r.per, caller)
	}
	h.tm.Stop()
	return h
}

// resume answers the retry, whose context is ctx, of the held round id:
// it hands the client's answer to the waiting call and returns what the
// call does next. A round that is not waiting (answered already, expired,
// cancelled) is refused with -32602. A retry that does not answer the
// question gets it again, under a new round.
func (r *rounds) resume(ctx context.Context, caller, tool string, args json.RawMessage, id string, responses mcp.InputResponseMap) (*mcp.CallToolResult, error) {
	h := r.take(caller, id)
	if h == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: errBadState + ": no call waits for this answer (it was answered already, or waited longer than the server keeps it)"}
	}
	raw, ok := responses[h.key]
	if !ok {
		return r.park(h, heldAsk{key: h.key, q: h.q, ans: h.ans}, tool, args) // ask again
	}
	res, ok := raw.(*mcp.ElicitResult)
	if !ok || (res.Action != "accept" && res.Action != "decline" && res.Action != "cancel") {
		h.cancel()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("inputResponses[%q] is not an elicitation result (action accept, decline or cancel); the call was ended", h.key)}
	}
	h.ans <- res
	return h.wait(ctx, tool, args)
}

// close cancels every held call.
func (r *rounds) close() {
	r.mu.Lock()
	held := r.held
	r.held, r.per = map[string]*heldCall{}, map[string]int{}
	r.mu.Unlock()
	for _, h := range held {
		h.tm.Stop()
		h.cancel()
	}
}

// roundCaller is the caller a call's rounds are bound to: the caller
// ServeHTTP attached to req, or else the principal of ctx.
func roundCaller(ctx context.Context, req mcp.Request) string {
	if req != nil {
		if c := requestCaller(req); c != nil {
			return c.key
		}
	}
	p, ok := policy.PrincipalFrom(ctx)
	return callerKey(p, ok, "")
}

// InputFirst returns a tool that behaves as t, with a first phase,
// gather, that gets the input the call needs from the client before the
// call runs. gather asks with [RequestInput] as a tool would (reading
// the answers with [InputResponses] and [RequestState]) and returns nil
// once it has all it needs.
//
// Its point is a tool that may run as a task (tool.WithTask): called by a
// 2026-07-28 client that declared the tasks extension, its questions are
// multi round-trip requests of the plain call (input_required, no task),
// and the call becomes a task only on the round where gather returns nil,
// as SEP-2663 composes the two: the task handle carries no requestState,
// and the task's run finds the answers of the last round with
// InputResponses and RequestState. Anywhere else (a plain call, a
// 2025-11-25 client) gather runs at the start of the call, as part of it.
//
// The returned tool has t's Options. Wrapping it again (tool.With) hides
// the first phase from the server: wrap t first, then call InputFirst.
func InputFirst(t tool.Tool, gather func(ctx context.Context, args json.RawMessage) error) tool.Tool {
	return inputFirst{t, gather}
}

type inputFirst struct {
	tool.Tool
	gather func(ctx context.Context, args json.RawMessage) error
}

func (f inputFirst) Options() tool.Options { return tool.OptionsOf(f.Tool) }

func (f inputFirst) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if err := f.gather(ctx, args); err != nil {
		return tool.Result{IsError: true, Kind: tool.KindToolError, Error: err.Error()}, err
	}
	return f.Tool.Execute(ctx, args)
}

// gatherFirst runs the first phase of an InputFirst tool for a
// 2026-07-28 tools/call that would become a task. It returns the call's
// answer when the phase asks the client (input_required) or fails, and
// otherwise the tool's state for the task's run.
func (s *Server) gatherFirst(ctx context.Context, owner, name string, args json.RawMessage, f inputFirst,
	caps *mcp.ClientCapabilities, responses mcp.InputResponseMap, state string) (*mcp.CallToolResult, string, *jsonrpc.Error) {
	if state != "" {
		st, jerr := s.rounds.open(owner, name, args, state)
		if jerr != nil {
			return nil, "", jerr
		}
		state = st.Tool
	}
	slot := &inputSlot{caps: caps, responses: responses, state: state,
		seal: func(state string) string { return s.rounds.seal(owner, name, args, roundState{Tool: state}) }}
	err := f.gather(context.WithValue(ctx, inputKey{}, slot), args)
	ans, aerr := slot.answer()
	var jerr *jsonrpc.Error
	switch {
	case errors.As(aerr, &jerr):
		return nil, "", jerr
	case ans != nil:
		return ans, "", nil
	case err != nil:
		return callResult(tool.Result{IsError: true, Error: err.Error()}, false), "", nil
	}
	return nil, state, nil
}
