package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// WithTasks sets the bounds of the tasks the server keeps (see
// [TaskLimits]); without it the defaults apply. Tasks are served to
// 2026-07-28 clients over HTTP that declare [TasksExtension].
func WithTasks(lim TaskLimits) ServerOption {
	return func(c *serverConfig) { c.tasks = lim }
}

// WithTaskDecision lets the server run calls of tools that do not declare
// task support as tasks: decide is asked about each tool whose
// tool.Options.Task is TaskNever, and for each it approves, the tool is
// served as if it declared TaskOptional. So a call of it is answered
// with a task handle when the request's client supports tasks (a
// 2026-07-28 request that declares [TasksExtension]; a 2025-11-25 call
// with params.task, which the tool's listing, execution.taskSupport
// "optional", invites) and runs as a plain call otherwise: the decision
// never refuses a client that does not speak tasks. decide must be quick
// and safe for concurrent use; it sees the tool, not the request.
// [TasksOver] is a decision by the tool's timeout.
func WithTaskDecision(decide func(t tool.Tool) bool) ServerOption {
	return func(c *serverConfig) { c.taskDecide = decide }
}

// TasksOver returns a decision for [WithTaskDecision]: a tool whose own
// timeout (tool.Options.Timeout, not the registry's default) is at least
// d may run as a task. For d <= 0 it approves no tool.
func TasksOver(d time.Duration) func(t tool.Tool) bool {
	return func(t tool.Tool) bool {
		to := tool.OptionsOf(t).Timeout
		return d > 0 && to >= d
	}
}

// taskMode is how t may run as a task here: its declared mode, or
// TaskOptional when WithTaskDecision approves a tool that declares none.
func (s *Server) taskMode(t tool.Tool) tool.TaskMode {
	m := tool.OptionsOf(t).Task
	if m == tool.TaskNever && s.cfg.taskDecide != nil && s.cfg.taskDecide(t) {
		return tool.TaskOptional
	}
	return m
}

// taskRequest is a parsed 2026-07-28 request of the tasks surface.
type taskRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name           string          `json:"name"`
		Arguments      json.RawMessage `json:"arguments"`
		TaskID         *string         `json:"taskId"`
		InputResponses json.RawMessage `json:"inputResponses"`
		RequestState   string          `json:"requestState"`
		Meta           struct {
			Caps json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	} `json:"params"`
}

// declaresTasks reports whether the client capabilities raw declare
// TasksExtension.
func declaresTasks(raw json.RawMessage) bool {
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return false
	}
	v, ok := c.Extensions[TasksExtension]
	return ok && len(v) > 0 && v[0] == '{'
}

// ownerKey is the principal a request's tasks are bound to: the same key
// sessions are bound to (callerKey).
func ownerKey(r *http.Request) string {
	p, ok := policy.PrincipalFrom(r.Context())
	user := ""
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		user = ti.UserID
	}
	return callerKey(p, ok, user)
}

// serveTasks answers r if it is a 2026-07-28 request of the tasks
// surface: tasks/get, tasks/update, tasks/cancel (and the removed
// tasks/result and tasks/list), or a tools/call of a tool whose
// tool.Options.Task allows tasks. It reports whether it did; when it did
// not, r (with its body) is as it came.
func (s *Server) serveTasks(w http.ResponseWriter, r *http.Request) bool {
	h := r.Header
	m := h.Get(headerMethod)
	if r.Method != http.MethodPost || h.Get(headerProtocolVersion) != statelessVersion ||
		(m != "tools/call" && !strings.HasPrefix(m, "tasks/")) ||
		len(h.Values(headerSessionID)) > 0 || !jsonContent(h.Get("Content-Type")) || !hostAllowed(r) {
		return false
	}
	if m == "tools/call" {
		// Most calls are of tools without tasks: leave their bodies
		// unread here, for the direct path.
		t, ok := s.reg.Get(strings.TrimSpace(h.Get(headerName)))
		if !ok || s.taskMode(t) == tool.TaskNever {
			return false
		}
	}
	body, ok := readBody(r)
	if !ok {
		return false
	}
	var req taskRequest
	if json.Unmarshal(body, &req) != nil || !validID(req.ID) || req.Method != m {
		return false // go-sdk answers it, the header mismatch included
	}
	if m == "tools/call" {
		if strings.TrimSpace(h.Get(headerName)) != req.Params.Name {
			return false // go-sdk answers the header mismatch
		}
	} else if req.Params.TaskID != nil {
		if name := strings.TrimSpace(h.Get(headerName)); name != "" && name != *req.Params.TaskID {
			writeDirectError(w, req.ID, &jsonrpc.Error{Code: codeHeaderMismatch, Message: "the Mcp-Name header does not match params.taskId"})
			return true
		}
	}
	data, jerr, handled := s.extAnswer(r.Context(), ownerKey(r), &req)
	if !handled {
		return false
	}
	if jerr != nil {
		writeDirectError(w, req.ID, jerr)
		return true
	}
	writeDirect(w, http.StatusOK, req.ID, "result", data)
	return true
}

// extAnswer answers a 2026-07-28 request of the tasks surface for owner,
// whatever its transport: tasks/get, tasks/update, tasks/cancel (and the
// removed tasks/result and tasks/list), or a tools/call of a tool whose
// tool.Options.Task allows tasks. handled false leaves the request to the
// synchronous path.
func (s *Server) extAnswer(ctx context.Context, owner string, req *taskRequest) (result json.RawMessage, jerr *jsonrpc.Error, handled bool) {
	m := req.Method
	fail := func(code int, msg string, data any) (json.RawMessage, *jsonrpc.Error, bool) {
		var raw json.RawMessage
		if data != nil {
			raw, _ = json.Marshal(data)
		}
		return nil, &jsonrpc.Error{Code: int64(code), Message: msg, Data: raw}, true
	}
	if m == "tools/call" {
		return s.extCall(ctx, owner, req)
	}
	switch m {
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return fail(CodeMethodNotFound, fmt.Sprintf("method %q not found: tasks/result and tasks/list do not exist in the tasks extension; tasks/get inlines the result", m), nil)
	}
	if !declaresTasks(req.Params.Meta.Caps) {
		return fail(CodeMissingCapability, "the client did not declare the extension "+TasksExtension,
			MissingCapabilityData{RequiredCapabilities: map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}})
	}
	if req.Params.TaskID == nil {
		return fail(CodeInvalidParams, m+": params.taskId is required", nil)
	}
	id := *req.Params.TaskID
	var out any
	var err error
	switch m {
	case "tasks/get":
		if err = s.tasks.allowPoll(owner); err == nil {
			var rec TaskRecord
			if rec, err = s.store.Get(ctx, owner, id); err == nil {
				out = s.detailed(rec)
			}
		}
	case "tasks/update":
		var answers map[string]json.RawMessage
		if json.Unmarshal(req.Params.InputResponses, &answers) != nil || answers == nil {
			return fail(CodeInvalidParams, "tasks/update: params.inputResponses must be an object", nil)
		}
		err = s.store.Update(ctx, owner, id, answers)
		out = TaskAck{ResultType: ResultTypeComplete}
	case "tasks/cancel":
		_, err = s.store.Cancel(ctx, owner, id)
		out = TaskAck{ResultType: ResultTypeComplete}
	}
	if err != nil {
		return fail(taskErrorCode(err), fmt.Sprintf("%s %q: %v", m, id, err), nil)
	}
	data, err := json.Marshal(out)
	if err != nil {
		return fail(-32603, err.Error(), nil)
	}
	return data, nil, true
}

// listable reports whether the tool filter (WithToolFilter), if any,
// shows tool name to the caller of ctx. A hidden tool never becomes a
// task: its call takes the synchronous path, where the registry's
// Authorizer decides it as any call.
func (s *Server) listable(ctx context.Context, name string) bool {
	return s.cfg.filter == nil || s.cfg.filter(ctx, name)
}

// codeHeaderMismatch is SEP-2243's HeaderMismatch.
const codeHeaderMismatch = -32020

// taskErrorCode is the JSON-RPC code of a task store error.
func taskErrorCode(err error) int {
	switch {
	case errors.Is(err, errPollLimit):
		return CodeRateLimited
	case errors.Is(err, ErrTaskNotFound), errors.Is(err, ErrTaskNotWaiting), errors.Is(err, errAnswersTooLarge):
		return CodeInvalidParams
	}
	return -32603 // too many tasks, a store that cannot be reached
}

// settle is rec with its result encoded: a ToolResult becomes the
// tools/call result the tool's direct call would answer (a panic fails the
// task, as in memory), and a result larger than MaxResultBytes fails the
// task with an error that says so.
func (s *Server) settle(rec TaskRecord) TaskRecord {
	if rec.ToolResult != nil {
		res := *rec.ToolResult
		rec.ToolResult = nil
		if res.IsError && res.Kind == tool.KindPanic {
			rec.Status, rec.Error = StatusFailed, &TaskError{Code: -32603, Message: res.Error}
			return rec
		}
		wrap := false
		if v, ok := s.direct.Load(rec.Tool); ok {
			wrap = v.(*directTool).wrap
		}
		data, err := json.Marshal(callResult(res, wrap))
		if err != nil {
			rec.Status, rec.Error = StatusFailed, &TaskError{Code: -32603, Message: err.Error()}
			return rec
		}
		rec.Result = data
	}
	if lim := s.tasks.lim.MaxResultBytes; len(rec.Result) > lim {
		rec.Status, rec.Result, rec.Error = StatusFailed, nil, &TaskError{Code: -32603,
			Message: fmt.Sprintf("the result is %d bytes, more than the %d this server keeps", len(rec.Result), lim)}
	}
	return rec
}

// detailed is rec as tasks/get answers it.
func (s *Server) detailed(rec TaskRecord) DetailedTask {
	rec = s.settle(rec)
	d := DetailedTask{ResultType: ResultTypeComplete, Task: rec.Task, Result: rec.Result, Error: rec.Error}
	if len(rec.InputRequests) > 0 && rec.Status == StatusInputRequired {
		d.InputRequests = rec.InputRequests
	}
	if rec.Progress != nil && rec.Status == StatusWorking {
		d.Meta = map[string]any{ProgressMeta: rec.Progress}
	}
	return d
}

// extCall answers a tools/call of a tool that allows tasks: with a task
// handle when the client declared the extension, with
// CodeMissingCapability when it did not and the tool requires tasks;
// otherwise it leaves the call to the synchronous paths.
func (s *Server) extCall(ctx context.Context, owner string, req *taskRequest) (json.RawMessage, *jsonrpc.Error, bool) {
	name := req.Params.Name
	if s.sdkShared.Load() || !s.listable(ctx, name) {
		return nil, nil, false
	}
	v, ok := s.direct.Load(name)
	t, found := s.reg.Get(name)
	if !ok || !found {
		return nil, nil, false
	}
	mode := s.taskMode(t)
	if mode == tool.TaskNever {
		return nil, nil, false
	}
	if !declaresTasks(req.Params.Meta.Caps) {
		if mode == tool.TaskRequired {
			data, _ := json.Marshal(MissingCapabilityData{RequiredCapabilities: map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}})
			return nil, &jsonrpc.Error{Code: CodeMissingCapability, Data: data,
				Message: fmt.Sprintf("tool %q runs only as a task: the client must declare the extension %s", name, TasksExtension)}, true
		}
		return nil, nil, false
	}
	caps, ok := decodeCapabilities(req.Params.Meta.Caps)
	if !ok {
		return nil, nil, false
	}
	var responses mcp.InputResponseMap
	if len(req.Params.InputResponses) > 0 && string(req.Params.InputResponses) != "null" {
		if err := json.Unmarshal(req.Params.InputResponses, &responses); err != nil {
			return nil, &jsonrpc.Error{Code: CodeInvalidParams, Message: "inputResponses: " + err.Error()}, true
		}
	}
	wrap := v.(*directTool).wrap
	args := req.Params.Arguments
	state := ""
	if f, ok := t.(inputFirst); ok {
		// Input first, as multi round trips of the plain call; the task
		// on the round that has it all (mrtr.go).
		res, st, jerr := s.gatherFirst(ctx, owner, name, args, f, caps, responses, req.Params.RequestState)
		if jerr != nil {
			return nil, jerr, true
		}
		if res != nil {
			data, err := s.resultJSON(res)
			if err != nil {
				return nil, &jsonrpc.Error{Code: -32603, Message: err.Error()}, true
			}
			return data, nil, true
		}
		state = st
	}
	rec, err := s.store.Create(ctx, TaskCall{Owner: owner, Tool: name, Args: args, Capabilities: req.Params.Meta.Caps,
		run: func(ctx context.Context, tk *task) {
			s.runTask(ctx, tk, name, args, wrap, caps, responses, state)
		}})
	if err != nil {
		if mode == tool.TaskRequired || !errors.Is(err, ErrTooManyTasks) {
			return nil, &jsonrpc.Error{Code: -32603, Message: "tools/call: " + err.Error()}, true
		}
		return nil, nil, false // run it synchronously
	}
	data, err := json.Marshal(CreateTaskResult{ResultType: ResultTypeTask, Task: rec.Task})
	if err != nil {
		return nil, &jsonrpc.Error{Code: -32603, Message: err.Error()}, true
	}
	return data, nil, true
}

// runTask runs the call of task tk to its end. A tool that asks for input
// (RequestInput, or an ElicitApprover's policy ask) puts the task into
// input_required; when tasks/update has answered every request, the tool
// runs again with the answers, as a client's retry would run it.
func (s *Server) runTask(ctx context.Context, tk *task, name string, args json.RawMessage, wrap bool,
	caps *mcp.ClientCapabilities, responses mcp.InputResponseMap, state string) {
	defer tk.cancel()
	if caps != nil && caps.Elicitation != nil {
		ctx = context.WithValue(ctx, taskAskKey{}, &taskAsker{s: s, tk: tk})
	}
	ctx = tool.WithProgress(ctx, func(progress, total float64, message string) {
		s.tasks.setProgress(tk, TaskProgress{Progress: progress, Total: total, Message: message})
	})
	for {
		slot := &inputSlot{caps: caps, responses: responses, state: state}
		res, err := s.execute(context.WithValue(ctx, inputKey{}, slot), name, args, wrap, slot)
		if ctx.Err() != nil {
			s.tasks.fail(tk, -32603, "the task was ended: "+context.Cause(ctx).Error()) // no-op when cancelled
			return
		}
		var jerr *jsonrpc.Error
		switch {
		case errors.As(err, &jerr):
			s.tasks.fail(tk, int(jerr.Code), jerr.Message)
			return
		case err != nil:
			s.tasks.fail(tk, -32603, err.Error())
			return
		case res.InputRequests != nil:
			reqs, err := inputRequestsJSON(res.InputRequests)
			if err != nil {
				s.tasks.fail(tk, -32603, err.Error())
				return
			}
			answered, err := s.tasks.ask(ctx, tk, reqs)
			if err != nil {
				s.tasks.fail(tk, -32603, "the task was ended while waiting for input: "+err.Error())
				return
			}
			// The call runs again as the request that answered made it:
			// decided for its principal, with the roles and attributes of
			// its own credential, not those of the token that made the
			// task, which may since have lost them.
			ctx = answered.context(ctx)
			raw, _ := json.Marshal(answered.answers)
			responses = nil
			if err := json.Unmarshal(raw, &responses); err != nil {
				s.tasks.fail(tk, CodeInvalidParams, "tasks/update: "+err.Error())
				return
			}
			state = res.RequestState
			continue
		}
		if res.IsError && slot.kind == tool.KindPanic {
			s.tasks.fail(tk, -32603, textOf(res))
			return
		}
		if res.Content == nil {
			res.Content = []mcp.Content{}
		}
		data, err := json.Marshal(res)
		if err != nil {
			s.tasks.fail(tk, -32603, err.Error())
			return
		}
		s.tasks.complete(tk, data)
		return
	}
}

// textOf returns the text of res's first text content.
func textOf(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text
		}
	}
	return "internal error"
}

// inputRequestsJSON encodes each of requests as {"method":…,"params":…}.
func inputRequestsJSON(requests mcp.InputRequestMap) (map[string]json.RawMessage, error) {
	data, err := json.Marshal(requests)
	if err != nil {
		return nil, err
	}
	var out map[string]json.RawMessage
	return out, json.Unmarshal(data, &out)
}

type taskAskKey struct{}

// A taskAsker puts the questions a running task's call relays (an
// imported tool whose server asks for input, see WithElicitationRelay) to
// the task's client, which declared elicitation: the task goes
// input_required with the question, and the answer comes with
// tasks/update (in the 2025-11-25 form, as the response to the request
// tasks/result carries). One question at a time.
type taskAsker struct {
	s  *Server
	tk *task
	mu sync.Mutex
	n  int
}

// elicit asks p and returns the client's answer.
func (a *taskAsker) elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	key := fmt.Sprintf("clawtool_relay_%d", a.n) // never reused within the task
	reqs, err := inputRequestsJSON(mcp.InputRequestMap{key: p})
	if err != nil {
		return nil, err
	}
	answered, err := a.s.tasks.ask(ctx, a.tk, reqs)
	if err != nil {
		return nil, err
	}
	answers := answered.answers
	var res mcp.ElicitResult
	if err := json.Unmarshal(answers[key], &res); err != nil {
		return nil, fmt.Errorf("the answer to %s is not an elicitation result: %v", key, err)
	}
	switch res.Action {
	case "accept", "decline", "cancel":
		return &res, nil
	}
	return nil, fmt.Errorf("the answer to %s has action %q, not accept, decline or cancel", key, shortText(res.Action, 40))
}
