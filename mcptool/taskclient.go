package mcptool

// The client side of MCP Tasks: an imported tool whose server answers a
// tools/call with a task handle is awaited here, so that the registry,
// the Executor and the agent see an ordinary call.
//
// go-sdk v1.8.0 knows neither form of tasks: its CallToolResult drops a
// handle's members and its Tool drops execution.taskSupport. The client's
// message filter (filterMessage, applied to every message a client reads,
// over stdio and HTTP alike) therefore moves what go-sdk would drop into
// _meta keys of its own before go-sdk decodes the message: a task handle
// (either form) becomes a CallToolResult with no content and the handle
// under taskHandleMeta, and a listed tool's execution.taskSupport is
// copied under taskSupportMeta. On the way out, a tools/call whose _meta
// carries taskAugmentMeta has it moved to params.task (the legacy form's
// augmentation). A server may put these keys in its messages itself; that
// only says what it could say with a handle, and the handle is checked as
// strictly either way.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/showtext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// _meta keys of the client's message filter.
const (
	taskHandleMeta  = "io.github.miniopenclaw/task-handle"
	taskSupportMeta = "io.github.miniopenclaw/task-support"
	taskAugmentMeta = "io.github.miniopenclaw/task-augment"
)

// Bounds of the client's tasks.
const (
	// DefaultMinPollInterval and DefaultMaxPollInterval clamp the
	// server's pollIntervalMs: a server that suggests 0 is polled at the
	// floor, one that suggests 10^12 ms at the ceiling.
	DefaultMinPollInterval = 25 * time.Millisecond
	DefaultMaxPollInterval = 5 * time.Second
	// DefaultPollInterval is used when the server suggests none.
	DefaultPollInterval = 500 * time.Millisecond
	// DefaultMaxTaskResultBytes bounds one tasks/get or tasks/result
	// answer; a larger one fails the call (and cancels the task).
	DefaultMaxTaskResultBytes = 4 << 20
	// DefaultTaskCancelTimeout bounds the tasks/cancel the client sends
	// when the caller's context ends or the client gives up on a task.
	DefaultTaskCancelTimeout = 2 * time.Second
	// maxTaskIDBytes bounds a task ID from a server.
	maxTaskIDBytes = 256
	// maxHandleBytes bounds a task handle.
	maxHandleBytes = 64 << 10
	// maxInputRounds bounds how many input_required rounds one task may
	// ask; maxInputRequests how many requests one round may hold.
	maxInputRounds   = 64
	maxInputRequests = 16
)

// WithoutTasks makes the client never ask for tasks: it does not declare
// [TasksExtension] in its per-request capabilities (2026-07-28) and does
// not ask for task augmentation (2025-11-25), so that servers answer
// every call synchronously (a tool whose tasks are required then fails).
// By default the client asks for tasks wherever the server offers them:
// it declares the extension on tools/call to a server that advertises it,
// and augments a call of a tool that declares execution.taskSupport
// "optional" or "required" in a 2025-11-25 session.
func WithoutTasks() ClientOption {
	return func(c *clientConfig) { c.noTasks = true }
}

// WithTaskPolling sets the floor and the ceiling of the interval at
// which the client polls a task ([DefaultMinPollInterval],
// [DefaultMaxPollInterval]); zero keeps a default.
func WithTaskPolling(floor, ceiling time.Duration) ClientOption {
	return func(c *clientConfig) {
		if floor > 0 {
			c.pollFloor = floor
		}
		if ceiling > 0 {
			c.pollCeiling = ceiling
		}
	}
}

// An ElicitationHandler answers a server's request for input from the
// user (elicitation/create).
type ElicitationHandler func(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error)

// WithElicitationHandler makes the client declare the elicitation
// capability and answer every elicitation a server asks for with h: on
// the session (elicitation/create), in a 2026-07-28 result's
// inputRequests, and in a task that is input_required (answered with
// tasks/update). For a task, h gets the context of the call that became
// the task. Without a handler, a call served by this package's Server to
// a 2025-11-25 client that declared elicitation (clawtool serve
// aggregating servers) relays the task's questions to that client, and a
// call the Server runs as a task for a client that declared elicitation
// (either form) puts them to that client as its task's input_required
// (see also [WithElicitationRelay]); any other call declares no
// elicitation, and a task that asks for input is cancelled and its call
// fails with an error result saying so.
func WithElicitationHandler(h ElicitationHandler) ClientOption {
	return func(c *clientConfig) { c.elicit = h }
}

// WithElicitationRelay makes the client declare the elicitation
// capability in 2025-11-25 sessions and relay each elicitation a server
// asks for one of its tasks (a request carrying the related-task _meta of
// a task a call of this client is awaiting) to where that call's own
// questions go: the handler of [WithElicitationHandler] if set, else the
// client of this package's Server that made the call (over its 2025-11-25
// session, or, when the Server runs the call as a task, as that task's
// input_required). A request of no such task, or of a call with nowhere
// to relay to, is answered with an error, which ends the server's task.
// clawtool serve uses it for the servers it aggregates.
func WithElicitationRelay() ClientOption {
	return func(c *clientConfig) { c.relay = true }
}

// relayElicitation is the session's elicitation handler of a client with
// WithElicitationRelay.
func (c *Client) relayElicitation(callCtx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p := req.Params
	if p == nil {
		return nil, errors.New("an elicitation without params")
	}
	var id string
	if rt, ok := p.Meta[RelatedTaskMeta].(map[string]any); ok {
		id, _ = rt["taskId"].(string)
	}
	var ctx context.Context
	if v, ok := c.awaiting.Load(id); ok && id != "" {
		ctx = v.(context.Context)
	} else if own, _ := callCtx.Value(callOfKey{}).(*Client); id == "" && own == c {
		// A 2026-07-28 server's multi round-trip request in a plain
		// call's result: go-sdk fulfills it with the call's context.
		ctx = callCtx
	}
	if ctx == nil {
		return nil, errors.New("this client relays only the questions of its own calls and of the tasks they await, and this one is of neither")
	}
	h := c.elicitation(ctx)
	if h == nil {
		if id == "" {
			return nil, errors.New("the call has no client to relay the question to")
		}
		return nil, fmt.Errorf("the call awaiting task %q has no client to relay the question to", shortText(id, 60))
	}
	q := *p
	q.Meta = nil // the related task is this server's, not the relay's
	return h(ctx, &q)
}

// callOfKey marks the context of a call a Client makes: go-sdk answers
// the multi round-trip requests of the call's result with it.
type callOfKey struct{}

// A TaskEvent is a change of a task that a call to an imported tool
// became: its creation, a new status, or new progress.
type TaskEvent struct {
	Tool     string        // the tool's name in the registry
	TaskID   string        // the server's ID of the task
	Status   TaskStatus    // the task's status
	Message  string        // the server's statusMessage, if any
	Progress *TaskProgress // the latest progress, if the server reports it
}

type taskEventsKey struct{}

// WithTaskEvents returns a context whose calls to imported tools report
// each change of the tasks they become to fn, in order, from the
// goroutine that runs the call (fn must be safe for concurrent use when
// calls run at once). A call that is answered at once reports nothing.
func WithTaskEvents(ctx context.Context, fn func(TaskEvent)) context.Context {
	return context.WithValue(ctx, taskEventsKey{}, fn)
}

// taskForm is how a call asks for a task.
type taskForm int

const (
	noTask     taskForm = iota
	taskExt             // 2026-07-28: the extension in per-request capabilities
	taskLegacy          // 2025-11-25: params.task
)

// taskForm says how a call of t asks for a task.
func (t *remoteTool) taskForm() taskForm {
	c := t.c
	if c.cfg.noTasks || !c.filtered {
		return noTask
	}
	if c.newProtocol() {
		if c.serverHasTasks() {
			return taskExt
		}
		return noTask
	}
	if t.taskSupport == TaskOptional || t.taskSupport == TaskRequired {
		return taskLegacy
	}
	return noTask
}

// newProtocol reports whether the session speaks 2026-07-28 or later.
func (c *Client) newProtocol() bool {
	res := c.session.InitializeResult()
	return res != nil && res.ProtocolVersion >= statelessVersion
}

// serverHasTasks reports whether the server advertises TasksExtension.
func (c *Client) serverHasTasks() bool {
	res := c.session.InitializeResult()
	if res == nil || res.Capabilities == nil {
		return false
	}
	_, ok := res.Capabilities.Extensions[TasksExtension]
	return ok
}

// taskCapabilities is the client's capabilities with TasksExtension, as
// the per-request _meta of a call that may become a task, and of
// tasks/*, declares them: go-sdk's defaults (roots with listChanged,
// elicitation when the call has a handler, see elicitation) and the
// extension.
func (c *Client) taskCapabilities(ctx context.Context) map[string]any {
	caps := map[string]any{
		"roots":      map[string]any{"listChanged": true},
		"extensions": map[string]any{TasksExtension: map[string]any{}},
	}
	if c.elicitation(ctx) != nil {
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	return caps
}

// taskParams are the params of tasks/get, tasks/update, tasks/cancel and
// tasks/result.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// rawResult is the result of a tasks/* request, kept as it came.
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) UnmarshalJSON(data []byte) error {
	r.raw = append(json.RawMessage(nil), data...)
	var m struct {
		Meta mcp.Meta `json:"_meta"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	r.Meta = m.Meta
	return nil
}

// taskMethods are the methods the client sends to a server's tasks.
var taskMethods = []string{"tasks/get", "tasks/update", "tasks/cancel", "tasks/result"}

// registerTaskMethods lets sdk send the tasks/* methods.
func registerTaskMethods(sdk *mcp.Client) {
	for _, m := range taskMethods {
		// Only a standard method's name is refused: these are not.
		_ = mcp.AddSendingCustomMethod[*taskParams, *rawResult](sdk, m)
	}
}

// taskCall sends the tasks/* request method for task id and returns its
// result, at most max bytes of it.
func (c *Client) taskCall(ctx context.Context, method, id string, answers map[string]json.RawMessage, max int) (json.RawMessage, error) {
	p := &taskParams{TaskID: id, InputResponses: answers}
	if c.newProtocol() {
		p.Meta = mcp.Meta{mcp.MetaKeyClientCapabilities: c.taskCapabilities(ctx)}
	}
	res, err := mcp.CallCustomMethod[*taskParams, *rawResult](ctx, c.session, method, p)
	if err != nil {
		return nil, err
	}
	if len(res.raw) > max {
		return nil, fmt.Errorf("%s answered %d bytes, over the client's limit of %d", method, len(res.raw), max)
	}
	return res.raw, nil
}

// GetTask asks the server for its task id (tasks/get) and returns it in
// the extension form's shape: in a 2025-11-25 session the legacy task is
// converted (no result is inlined there; the call that made the task
// fetches it with tasks/result). An error is the server's, or says the
// answer is malformed.
func (c *Client) GetTask(ctx context.Context, id string) (*DetailedTask, error) {
	raw, err := c.taskCall(ctx, "tasks/get", id, nil, DefaultMaxTaskResultBytes)
	if err != nil {
		return nil, fmt.Errorf("mcptool: tasks/get %q: %w", id, serverError(err))
	}
	d, err := decodeTask(raw, !c.newProtocol())
	if err != nil {
		return nil, fmt.Errorf("mcptool: tasks/get %q: %w", id, err)
	}
	return d, nil
}

// CancelTask asks the server to cancel its task id (tasks/cancel).
func (c *Client) CancelTask(ctx context.Context, id string) error {
	if _, err := c.taskCall(ctx, "tasks/cancel", id, nil, maxHandleBytes); err != nil {
		return fmt.Errorf("mcptool: tasks/cancel %q: %w", id, serverError(err))
	}
	return nil
}

// A ServerError is a JSON-RPC error a server answered a tasks/* request
// with. Message is as the server wrote it; Error writes its control
// characters as escapes (\x1b), so that printing the error cannot drive
// a terminal.
type ServerError struct {
	Code    int64
	Message string
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("the server says: %s (code %d)", showtext.Text(shortText(e.Message, 2000)), e.Code)
}

// serverError returns the server's JSON-RPC error in err, if there is
// one, as a *ServerError; err otherwise.
func serverError(err error) error {
	var jerr *jsonrpc.Error
	if errors.As(err, &jerr) {
		return &ServerError{Code: jerr.Code, Message: jerr.Message}
	}
	return err
}

// decodeTask decodes a tasks/get answer (legacy: a flat LegacyTask) and
// checks it: a task ID that is a short printable string and a known
// status.
func decodeTask(raw json.RawMessage, legacy bool) (*DetailedTask, error) {
	var d DetailedTask
	if legacy {
		var lt LegacyTask
		if err := json.Unmarshal(raw, &lt); err != nil {
			return nil, fmt.Errorf("malformed task: %v", err)
		}
		d.Task = Task{TaskID: lt.TaskID, Status: lt.Status, StatusMessage: lt.StatusMessage, CreatedAt: lt.CreatedAt,
			LastUpdatedAt: lt.LastUpdatedAt, TTLMs: lt.TTL, PollIntervalMs: lt.PollInterval}
		d.ResultType = ResultTypeComplete
	} else if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("malformed task: %v", err)
	}
	if err := checkTask(d.Task); err != nil {
		return nil, err
	}
	return &d, nil
}

// checkTask checks the members every task must have right.
func checkTask(t Task) error {
	switch {
	case t.TaskID == "":
		return errors.New("malformed task: no taskId")
	case len(t.TaskID) > maxTaskIDBytes || !utf8.ValidString(t.TaskID) || !printableString(t.TaskID):
		return fmt.Errorf("malformed task: a taskId must be at most %d printable bytes", maxTaskIDBytes)
	}
	switch t.Status {
	case StatusWorking, StatusInputRequired, StatusCompleted, StatusFailed, StatusCancelled:
		return nil
	}
	return fmt.Errorf("task %q has an unknown status %q", t.TaskID, shortText(string(t.Status), 40))
}

func printableString(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// decodeHandle decodes the task handle a tools/call was answered with.
func decodeHandle(raw json.RawMessage, form taskForm) (Task, error) {
	if len(raw) > maxHandleBytes {
		return Task{}, fmt.Errorf("malformed task handle: %d bytes", len(raw))
	}
	var t Task
	switch form {
	case taskExt:
		var h CreateTaskResult
		if err := json.Unmarshal(raw, &h); err != nil {
			return Task{}, fmt.Errorf("malformed task handle: %v", err)
		}
		if h.ResultType != ResultTypeTask {
			return Task{}, fmt.Errorf("malformed task handle: resultType %q, want %q", shortText(h.ResultType, 40), ResultTypeTask)
		}
		t = h.Task
	default:
		var h LegacyCreateTaskResult
		if err := json.Unmarshal(raw, &h); err != nil {
			return Task{}, fmt.Errorf("malformed task handle: %v", err)
		}
		lt := h.Task
		t = Task{TaskID: lt.TaskID, Status: lt.Status, StatusMessage: lt.StatusMessage, CreatedAt: lt.CreatedAt,
			LastUpdatedAt: lt.LastUpdatedAt, TTLMs: lt.TTL, PollIntervalMs: lt.PollInterval}
	}
	if err := checkTask(t); err != nil {
		return Task{}, fmt.Errorf("task handle: %w", err)
	}
	return t, nil
}

// taskRun is one call being awaited as a task.
type taskRun struct {
	c      *Client
	t      *remoteTool
	form   taskForm
	id     string
	events func(TaskEvent)
	last   TaskEvent // the last reported
	seen   bool      // last is set
	// answered are the input requests answered so far.
	answered map[string]bool
	rounds   int
}

// awaitTask follows the task a call of t became, whose handle is raw,
// to its end, and returns the tool's result. The returned result is nil
// when the task failed: its error result is then in failed. err reports
// a protocol fault or the end of ctx; the task has been cancelled then.
func (t *remoteTool) awaitTask(ctx context.Context, form taskForm, raw any) (res *mcp.CallToolResult, failed *tool.Result, err error) {
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("MCP server: tool %q: malformed task handle: %v", t.remote, err)
	}
	h, err := decodeHandle(data, form)
	if err != nil {
		return nil, nil, fmt.Errorf("MCP server: tool %q: %w", t.remote, err)
	}
	r := &taskRun{c: t.c, t: t, form: form, id: h.TaskID, answered: map[string]bool{}}
	r.events, _ = ctx.Value(taskEventsKey{}).(func(TaskEvent))
	if t.c.cfg.relay {
		// A task ID another call awaits already (a server that reuses
		// them) keeps the first call's.
		if _, dup := t.c.awaiting.LoadOrStore(h.TaskID, ctx); !dup {
			defer t.c.awaiting.Delete(h.TaskID)
		}
	}
	r.report(h, nil)
	res, failed, err = r.follow(ctx, h)
	if err != nil {
		r.cancel(ctx)
		if ctx.Err() != nil {
			return nil, nil, context.Cause(ctx)
		}
		return nil, nil, fmt.Errorf("MCP server: tool %q: task %q: %w (the task was cancelled)", t.remote, h.TaskID, err)
	}
	return res, failed, nil
}

// refuseTask cancels the task of a handle the client did not ask for,
// whichever form it has, and returns the error of the call.
func (t *remoteTool) refuseTask(ctx context.Context, raw any) error {
	data, _ := json.Marshal(raw)
	for _, form := range []taskForm{taskExt, taskLegacy} {
		if h, err := decodeHandle(data, form); err == nil {
			r := &taskRun{c: t.c, t: t, id: h.TaskID}
			r.cancel(ctx)
			break
		}
	}
	return fmt.Errorf("MCP server: tool %q: the server answered with a task, which the client did not ask for (the task was cancelled)", t.remote)
}

// report passes a change of the task to the context's TaskEvent function.
func (r *taskRun) report(task Task, progress *TaskProgress) {
	if r.events == nil {
		return
	}
	ev := TaskEvent{Tool: r.t.name, TaskID: task.TaskID, Status: task.Status, Message: task.StatusMessage, Progress: progress}
	if r.seen && ev.Status == r.last.Status && ev.Message == r.last.Message && sameProgress(ev.Progress, r.last.Progress) {
		return
	}
	r.last, r.seen = ev, true
	r.events(ev)
}

func sameProgress(a, b *TaskProgress) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// cancel sends tasks/cancel, bounded by DefaultTaskCancelTimeout, and
// reports the task cancelled.
func (r *taskRun) cancel(ctx context.Context) {
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), DefaultTaskCancelTimeout)
	defer stop()
	_ = r.c.CancelTask(cctx, r.id)
	r.report(Task{TaskID: r.id, Status: StatusCancelled, StatusMessage: "cancelled by the client"}, nil)
}

// interval is the server's suggested polling interval, clamped.
func (r *taskRun) interval(ms int64) time.Duration {
	floor, ceiling := r.c.cfg.pollFloor, r.c.cfg.pollCeiling
	if ms <= 0 {
		return max(floor, min(DefaultPollInterval, ceiling))
	}
	if ms > int64(ceiling/time.Millisecond) {
		return ceiling
	}
	return max(floor, time.Duration(ms)*time.Millisecond)
}

// follow polls the task until it is terminal.
func (r *taskRun) follow(ctx context.Context, h Task) (*mcp.CallToolResult, *tool.Result, error) {
	legacy := r.form != taskExt
	cur := &DetailedTask{Task: h}
	wait := r.interval(h.PollIntervalMs)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		if cur.Status.Terminal() {
			return r.finish(ctx, cur)
		}
		if cur.Status == StatusInputRequired {
			if legacy {
				// 2025-11-25: tasks/result carries the server's requests
				// over the session to the client's handlers, and answers
				// once the task is terminal.
				return r.result(ctx, cur)
			}
			if err := r.answer(ctx, cur); err != nil {
				return nil, nil, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-timer.C:
		}
		raw, err := r.c.taskCall(ctx, "tasks/get", r.id, nil, DefaultMaxTaskResultBytes)
		var jerr *jsonrpc.Error
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, nil, ctx.Err()
		case errors.As(err, &jerr) && jerr.Code == CodeRateLimited:
			wait = min(2*wait, r.c.cfg.pollCeiling)
			timer.Reset(wait)
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("tasks/get: %w", err)
		}
		next, err := decodeTask(raw, legacy)
		if err != nil {
			return nil, nil, fmt.Errorf("tasks/get: %w", err)
		}
		if err := r.check(cur, next); err != nil {
			return nil, nil, err
		}
		var progress *TaskProgress
		if p, ok := next.Meta[ProgressMeta]; ok {
			progress = decodeProgress(p)
			if progress != nil {
				tool.ReportProgress(ctx, progress.Progress, progress.Total, shortText(progress.Message, maxProgressMessage))
			}
		}
		r.report(next.Task, progress)
		cur = next
		wait = r.interval(next.PollIntervalMs)
		timer.Reset(wait)
	}
}

// check refuses a tasks/get answer that is not the same task going on:
// another task ID, another creation time, or an update time that went
// backwards.
func (r *taskRun) check(prev, next *DetailedTask) error {
	if next.TaskID != r.id {
		return fmt.Errorf("tasks/get answered task %q for task %q", shortText(next.TaskID, 60), r.id)
	}
	if prev.CreatedAt != "" && next.CreatedAt != "" && prev.CreatedAt != next.CreatedAt {
		return fmt.Errorf("tasks/get changed the task's createdAt from %q to %q", prev.CreatedAt, shortText(next.CreatedAt, 40))
	}
	a, aerr := time.Parse(time.RFC3339Nano, prev.LastUpdatedAt)
	b, berr := time.Parse(time.RFC3339Nano, next.LastUpdatedAt)
	if aerr == nil && berr == nil && b.Before(a) {
		return fmt.Errorf("tasks/get went backwards: lastUpdatedAt %s is before %s", next.LastUpdatedAt, prev.LastUpdatedAt)
	}
	return nil
}

// decodeProgress reads the progress a server put under ProgressMeta.
func decodeProgress(v any) *TaskProgress {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var p TaskProgress
	if json.Unmarshal(data, &p) != nil {
		return nil
	}
	return &p
}

// finish turns a terminal task into the call's result.
func (r *taskRun) finish(ctx context.Context, d *DetailedTask) (*mcp.CallToolResult, *tool.Result, error) {
	if r.form != taskExt && d.Status != StatusCancelled {
		return r.result(ctx, d)
	}
	switch d.Status {
	case StatusCompleted:
		if len(d.Result) == 0 || string(d.Result) == "null" {
			if d.Error != nil {
				return nil, nil, errors.New("the completed task carries an error, not a result")
			}
			// The handle said completed: the result is on tasks/get.
			raw, err := r.c.taskCall(ctx, "tasks/get", r.id, nil, DefaultMaxTaskResultBytes)
			if err != nil {
				return nil, nil, fmt.Errorf("tasks/get: %w", err)
			}
			next, err := decodeTask(raw, false)
			if err != nil {
				return nil, nil, fmt.Errorf("tasks/get: %w", err)
			}
			if err := r.check(d, next); err != nil {
				return nil, nil, err
			}
			if next.Status != StatusCompleted || len(next.Result) == 0 || string(next.Result) == "null" {
				return nil, nil, fmt.Errorf("the task is %s but tasks/get gives no result", d.Status)
			}
			d = next
		}
		return decodeCallResult(d.Result)
	case StatusFailed:
		msg := "failed without an error"
		if d.Error != nil {
			msg = fmt.Sprintf("failed: %s (code %d)", shortText(d.Error.Message, 2000), d.Error.Code)
		} else if d.StatusMessage != "" {
			msg = "failed: " + shortText(d.StatusMessage, 2000)
		}
		return nil, r.failedResult(msg), nil
	default: // cancelled, by someone else
		msg := "was cancelled by the server"
		if d.StatusMessage != "" {
			msg += ": " + shortText(d.StatusMessage, 2000)
		}
		return nil, r.failedResult(msg), nil
	}
}

// failedResult is the error result of a task that failed or was
// cancelled by the server.
func (r *taskRun) failedResult(msg string) *tool.Result {
	return &tool.Result{IsError: true, Kind: tool.KindToolError,
		Error: fmt.Sprintf("MCP server: tool %q: the task %s %s", r.t.remote, r.id, msg)}
}

// result fetches a legacy task's result with tasks/result.
func (r *taskRun) result(ctx context.Context, d *DetailedTask) (*mcp.CallToolResult, *tool.Result, error) {
	raw, err := r.c.taskCall(ctx, "tasks/result", r.id, nil, DefaultMaxTaskResultBytes)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		var jerr *jsonrpc.Error
		if errors.As(err, &jerr) {
			// A failed task answers with its error.
			return nil, r.failedResult(fmt.Sprintf("failed: %s (code %d)", shortText(jerr.Message, 2000), jerr.Code)), nil
		}
		return nil, nil, fmt.Errorf("tasks/result: %w", err)
	}
	if !d.Status.Terminal() {
		// The task was input_required: tasks/result answers once it is
		// terminal, and it gave a result.
		r.report(Task{TaskID: r.id, Status: StatusCompleted}, nil)
	}
	return decodeCallResult(raw)
}

// decodeCallResult decodes a tools/call result inlined in a task.
func decodeCallResult(raw json.RawMessage) (*mcp.CallToolResult, *tool.Result, error) {
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, nil, fmt.Errorf("the task's result is not a tools/call result: %v", err)
	}
	return &res, nil, nil
}

// answer relays a waiting task's input requests to the client's handlers
// and sends the answers with tasks/update.
func (r *taskRun) answer(ctx context.Context, d *DetailedTask) error {
	if len(d.InputRequests) > maxInputRequests {
		return fmt.Errorf("the task asks for %d inputs at once, over the client's limit of %d", len(d.InputRequests), maxInputRequests)
	}
	var fresh []string
	for id := range d.InputRequests {
		if !r.answered[id] {
			fresh = append(fresh, id)
		}
	}
	if len(fresh) == 0 {
		return nil // answered; the server has not moved on yet
	}
	if r.rounds++; r.rounds > maxInputRounds {
		return fmt.Errorf("the task asked for input more than %d times", maxInputRounds)
	}
	answers := map[string]json.RawMessage{}
	for _, id := range fresh {
		raw := d.InputRequests[id]
		out, err := r.c.fulfill(context.WithValue(ctx, askingToolKey{}, r.t.name), raw)
		if err != nil {
			return fmt.Errorf("input request %q: %w", shortText(id, 60), err)
		}
		answers[id] = out
	}
	if _, err := r.c.taskCall(ctx, "tasks/update", r.id, answers, maxHandleBytes); err != nil {
		return fmt.Errorf("tasks/update: %w", err)
	}
	for id := range answers {
		r.answered[id] = true
	}
	return nil
}

// elicitation returns the handler of a call's elicitations: the client's
// own (WithElicitationHandler), or else, when the call is served by this
// package's Server to a 2025-11-25 client that declared elicitation (an
// aggregating clawtool serve), one that relays the question to that
// client over its session; nil when there is neither.
func (c *Client) elicitation(ctx context.Context) ElicitationHandler {
	if c.cfg.elicit != nil {
		return c.cfg.elicit
	}
	if a, _ := ctx.Value(taskAskKey{}).(*taskAsker); a != nil {
		return a.elicit
	}
	if h := heldFrom(ctx); h != nil {
		return h.elicit // a 2026-07-28 client's plain call: a held round
	}
	ss := Session(ctx)
	var init *mcp.InitializeParams
	if ss != nil {
		init = ss.InitializeParams()
	}
	if init == nil || init.ProtocolVersion >= statelessVersion || init.Capabilities == nil || init.Capabilities.Elicitation == nil {
		if c.cfg.approver != nil {
			return c.approveElicitation
		}
		return nil
	}
	return func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return ss.Elicit(ctx, p)
	}
}

// fulfill answers one input request ({"method":…,"params":…}).
func (c *Client) fulfill(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var req struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("malformed: %v", err)
	}
	switch req.Method {
	case "elicitation/create":
		var p mcp.ElicitParams
		if len(req.Params) > 0 && string(req.Params) != "null" {
			if err := json.Unmarshal(req.Params, &p); err != nil {
				return nil, fmt.Errorf("malformed elicitation: %v", err)
			}
		}
		h := c.elicitation(ctx)
		if h == nil {
			return nil, fmt.Errorf("the server asks the user for input (%q), and this client has no elicitation handler (mcptool.WithElicitationHandler) nor a served 2025-11-25 client that declared elicitation to relay it to", shortText(p.Message, 200))
		}
		res, err := h(ctx, &p)
		if err != nil {
			return nil, fmt.Errorf("elicitation: %w", err)
		}
		if res == nil {
			res = &mcp.ElicitResult{Action: "cancel"}
		}
		return json.Marshal(res)
	case "roots/list":
		return json.RawMessage(`{"roots":[]}`), nil
	}
	return nil, fmt.Errorf("the server asks for %q, which this client does not answer", shortText(req.Method, 60))
}

// filterTasks is the part of filterMessage for tasks; see the top of
// this file. It returns msg itself when nothing changes.
func filterTasks(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(`"task"`)) && !bytes.Contains(msg, []byte(`"execution"`)) {
		return msg
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || len(m["result"]) == 0 || m["result"][0] != '{' {
		return msg
	}
	var result map[string]json.RawMessage
	if json.Unmarshal(m["result"], &result) != nil {
		return msg
	}
	var out []byte
	var err error
	switch {
	case string(result["resultType"]) == `"task"` || len(result["task"]) > 0 && result["task"][0] == '{' && result["content"] == nil:
		meta := map[string]json.RawMessage{}
		_ = json.Unmarshal(result["_meta"], &meta)
		meta[taskHandleMeta] = m["result"]
		out, err = json.Marshal(map[string]any{"content": []any{}, "_meta": meta})
	case len(result["tools"]) > 0 && result["tools"][0] == '[':
		out, err = markTaskSupport(result)
	default:
		return msg
	}
	if err != nil || out == nil {
		return msg
	}
	m["result"] = out
	if out, err = json.Marshal(m); err != nil {
		return msg
	}
	return out
}

// markTaskSupport copies each listed tool's execution.taskSupport under
// taskSupportMeta in its _meta, and returns nil when no tool has one.
func markTaskSupport(result map[string]json.RawMessage) ([]byte, error) {
	var tools []map[string]json.RawMessage
	if json.Unmarshal(result["tools"], &tools) != nil {
		return nil, nil
	}
	changed := false
	for _, t := range tools {
		var ex ToolExecution
		if t == nil || json.Unmarshal(t["execution"], &ex) != nil || ex.TaskSupport == "" {
			continue
		}
		meta := map[string]json.RawMessage{}
		_ = json.Unmarshal(t["_meta"], &meta)
		v, err := json.Marshal(ex.TaskSupport)
		if err != nil {
			return nil, err
		}
		meta[taskSupportMeta] = v
		if t["_meta"], err = json.Marshal(meta); err != nil {
			return nil, err
		}
		changed = true
	}
	if !changed {
		return nil, nil
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return nil, err
	}
	result["tools"] = b
	return json.Marshal(result)
}

// augmentTasks moves taskAugmentMeta from a tools/call request's _meta to
// its params.task (the legacy form's task augmentation). It returns msg
// itself when there is nothing to move.
func augmentTasks(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(taskAugmentMeta)) {
		return msg
	}
	var m map[string]json.RawMessage
	var params, meta map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || string(m["method"]) != `"tools/call"` ||
		json.Unmarshal(m["params"], &params) != nil || json.Unmarshal(params["_meta"], &meta) != nil {
		return msg
	}
	v, ok := meta[taskAugmentMeta]
	if !ok {
		return msg
	}
	delete(meta, taskAugmentMeta)
	params["task"] = v
	var err error
	if len(meta) == 0 {
		delete(params, "_meta")
	} else if params["_meta"], err = json.Marshal(meta); err != nil {
		return msg
	}
	if m["params"], err = json.Marshal(params); err != nil {
		return msg
	}
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// filterMessage is what a client does to each message it reads before
// go-sdk decodes it.
func filterMessage(msg []byte) []byte {
	return filterTasks(fillInputParams(msg))
}

// filtered returns t with the client's message filter in place, and
// whether it is: the stdio transports of this package apply it
// themselves; an HTTP transport gets its client's transport wrapped (a
// copy of t, whose own client is left as it is), and, unless its client
// has a CheckRedirect of its own, sameOriginRedirect. Over any other
// transport the client does not ask for tasks, since it would not see a
// task handle.
func filtered(t mcp.Transport) (mcp.Transport, bool) {
	switch tt := t.(type) {
	case *commandTransport, *processTransport:
		return t, true
	case *mcp.StreamableClientTransport:
		cp := *tt
		hc := http.Client{}
		if tt.HTTPClient != nil {
			hc = *tt.HTTPClient
		}
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		if _, ok := base.(inputParamsTransport); !ok {
			hc.Transport = newInputParamsTransport(base)
		}
		if hc.CheckRedirect == nil {
			hc.CheckRedirect = sameOriginRedirect
		}
		cp.HTTPClient = &hc
		return &cp, true
	}
	return t, false
}
