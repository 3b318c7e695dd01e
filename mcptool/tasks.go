package mcptool

// Wire types of MCP Tasks, in its two forms. The server (taskserver.go)
// and the client share them; nothing here does I/O.
//
// The extension form (SEP-2663, extension io.modelcontextprotocol/tasks,
// spoken by 2026-07-28 clients that declare the extension in their
// per-request capabilities): a tools/call may be answered with a
// [CreateTaskResult] (resultType "task"); the client polls tasks/get,
// which answers a [DetailedTask] that inlines the tool's result or the
// error once the task is terminal, answers an input_required task with
// tasks/update ([UpdateTaskParams]) and ends it with tasks/cancel. The
// acknowledgements of tasks/update and tasks/cancel are [TaskAck]s.
// tasks/result and tasks/list do not exist in this form.
//
// The legacy form (MCP 2025-11-25, experimental, spoken by clients of
// that protocol version): a tool declares execution.taskSupport
// ([ToolExecution]); a tools/call whose params carry task ([TaskParams])
// is answered with a [LegacyCreateTaskResult] that wraps a [LegacyTask];
// tasks/get and tasks/cancel answer a LegacyTask, tasks/result blocks
// until the task is terminal and answers the tool's result, and
// tasks/list pages through the caller's tasks ([LegacyListTasksResult]).

import "encoding/json"

// TasksExtension is the extension identifier of SEP-2663, the key under
// capabilities.extensions on both sides.
const TasksExtension = "io.modelcontextprotocol/tasks"

// RelatedTaskMeta is the _meta key of the legacy form that ties a message
// (the result of tasks/result, a notification) to its task. The extension
// form does not use it.
const RelatedTaskMeta = "io.modelcontextprotocol/related-task"

// JSON-RPC error codes of the tasks surface.
const (
	// CodeInvalidParams answers a tasks/* request for a task ID that is
	// unknown, expired or another principal's: the three are not told
	// apart.
	CodeInvalidParams = -32602
	// CodeMethodNotFound answers a method of the other form (tasks/result
	// or tasks/list in the extension form).
	CodeMethodNotFound = -32601
	// CodeMissingCapability (Missing Required Client Capability, SEP-2575)
	// answers a tasks/* request from a client that did not declare
	// [TasksExtension], and a tools/call of a tool whose tasks are
	// required from such a client. Its data is a [MissingCapabilityData].
	CodeMissingCapability = -32021
	// CodeRateLimited answers a tasks/get beyond the principal's polling
	// budget. The data carries retryAfterMs.
	CodeRateLimited = -32029
)

// TaskStatus is the state of a task. working and input_required are the
// live states; completed, failed and cancelled are terminal, and a
// terminal task never changes again.
type TaskStatus string

// The task states.
const (
	// StatusWorking: the tool is running.
	StatusWorking TaskStatus = "working"
	// StatusInputRequired: the tool waits for the client's answer to the
	// requests in DetailedTask.InputRequests (an elicitation, or a policy
	// ask waiting for approval).
	StatusInputRequired TaskStatus = "input_required"
	// StatusCompleted: the tool returned a result, which may be an
	// isError result.
	StatusCompleted TaskStatus = "completed"
	// StatusFailed: the call ended with a protocol-level error (a panic, an
	// internal failure); DetailedTask.Error says which.
	StatusFailed TaskStatus = "failed"
	// StatusCancelled: tasks/cancel ended the task.
	StatusCancelled TaskStatus = "cancelled"
)

// Terminal reports whether s is completed, failed or cancelled.
func (s TaskStatus) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Task is the envelope the extension form shares among its task results:
// timestamps are RFC 3339 in UTC with milliseconds; TTLMs is how long
// after creation the task and its result stay readable, in integer
// milliseconds (never null from this server); PollIntervalMs is the
// polling interval the server suggests.
type Task struct {
	TaskID         string     `json:"taskId"`
	Status         TaskStatus `json:"status"`
	StatusMessage  string     `json:"statusMessage,omitempty"`
	CreatedAt      string     `json:"createdAt"`
	LastUpdatedAt  string     `json:"lastUpdatedAt"`
	TTLMs          *int64     `json:"ttlMs"`
	PollIntervalMs int64      `json:"pollIntervalMs,omitempty"`
}

// ResultType values of the 2026-07-28 results.
const (
	ResultTypeTask     = "task"
	ResultTypeComplete = "complete"
)

// CreateTaskResult is the extension form's answer to a tools/call that
// became a task: flat, resultType "task" beside the Task's members, with
// no result, error or inputRequests (those are on tasks/get).
type CreateTaskResult struct {
	ResultType string `json:"resultType"` // always ResultTypeTask
	Task
}

// TaskProgress is the latest progress a working task reported, as the
// tool reported it (tool.ReportProgress).
type TaskProgress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// TaskError is the JSON-RPC error of a failed task.
type TaskError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// DetailedTask is the extension form's tasks/get result: resultType
// "complete", the Task, and by status: InputRequests (input_required; a
// map from server-minted IDs to requests, each a JSON object with
// "method" and "params", e.g. elicitation/create), Result (completed: the
// tools/call result, content and isError included) or Error (failed).
// Progress is this server's addition under _meta, for working tasks.
type DetailedTask struct {
	ResultType string `json:"resultType"` // always ResultTypeComplete
	Task
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	Result        json.RawMessage            `json:"result,omitempty"`
	Error         *TaskError                 `json:"error,omitempty"`
	Meta          map[string]any             `json:"_meta,omitempty"`
}

// ProgressMeta is the _meta key of DetailedTask under which this server
// reports a working task's latest [TaskProgress].
const ProgressMeta = "io.github.miniopenclaw/progress"

// TaskIDParams are the params of tasks/get and tasks/cancel (both forms)
// and of tasks/result (legacy form).
type TaskIDParams struct {
	TaskID string `json:"taskId"`
}

// UpdateTaskParams are the params of tasks/update: answers to some or all
// of a waiting task's InputRequests, keyed by their IDs. Each answer is
// the result the request's method would have returned (for
// elicitation/create: {"action":"accept","content":{...}}).
type UpdateTaskParams struct {
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// TaskAck is the empty acknowledgement of tasks/update and tasks/cancel in
// the extension form: {"resultType":"complete"}.
type TaskAck struct {
	ResultType string `json:"resultType"` // always ResultTypeComplete
}

// MissingCapabilityData is the data of a [CodeMissingCapability] error:
// requiredCapabilities mirrors the client's capabilities object, e.g.
// {"extensions":{"io.modelcontextprotocol/tasks":{}}}.
type MissingCapabilityData struct {
	RequiredCapabilities map[string]any `json:"requiredCapabilities"`
}

// TaskSupport is a tool's execution.taskSupport: whether its calls may
// (optional), must (required) or must not (forbidden, the default) run as
// tasks. tool.Options.Task sets it.
type TaskSupport string

// The TaskSupport values.
const (
	TaskForbidden TaskSupport = "forbidden"
	TaskOptional  TaskSupport = "optional"
	TaskRequired  TaskSupport = "required"
)

// ToolExecution is the execution member of a tool definition (legacy form,
// also read by extension clients): {"taskSupport":"optional"}.
type ToolExecution struct {
	TaskSupport TaskSupport `json:"taskSupport,omitempty"`
}

// TaskParams is the legacy form's task member of tools/call params: the
// client asks for a task and may suggest its TTL in milliseconds.
type TaskParams struct {
	TTL *int64 `json:"ttl,omitempty"`
}

// LegacyTask is the legacy form's Task: as [Task], with ttl and
// pollInterval in place of ttlMs and pollIntervalMs.
type LegacyTask struct {
	TaskID        string     `json:"taskId"`
	Status        TaskStatus `json:"status"`
	StatusMessage string     `json:"statusMessage,omitempty"`
	CreatedAt     string     `json:"createdAt"`
	LastUpdatedAt string     `json:"lastUpdatedAt"`
	TTL           *int64     `json:"ttl"`
	PollInterval  int64      `json:"pollInterval,omitempty"`
}

// LegacyCreateTaskResult is the legacy form's answer to a task-augmented
// tools/call: {"task":{...}}.
type LegacyCreateTaskResult struct {
	Task LegacyTask `json:"task"`
}

// LegacyListTasksResult is the legacy form's tasks/list result: the
// caller's tasks, newest first, a page at a time.
type LegacyListTasksResult struct {
	Tasks      []LegacyTask `json:"tasks"`
	NextCursor string       `json:"nextCursor,omitempty"`
}

// LegacyListTasksParams are the params of tasks/list.
type LegacyListTasksParams struct {
	Cursor string `json:"cursor,omitempty"`
}

// legacyTasksCapability returns the server's capabilities.tasks in the
// legacy form: {"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}.
func legacyTasksCapability() map[string]any {
	return map[string]any{
		"list":     map[string]any{},
		"cancel":   map[string]any{},
		"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}},
	}
}

// Legacy returns t in the legacy form.
func (t Task) Legacy() LegacyTask {
	return LegacyTask{TaskID: t.TaskID, Status: t.Status, StatusMessage: t.StatusMessage,
		CreatedAt: t.CreatedAt, LastUpdatedAt: t.LastUpdatedAt, TTL: t.TTLMs, PollInterval: t.PollIntervalMs}
}
