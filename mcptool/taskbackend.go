package mcptool

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/miniopenclaw/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A TaskStore keeps a [Server]'s tasks and has their calls run. The
// default store keeps them in the serving process's memory and runs each
// call there; [WithTaskStore] installs another, such as the durable store
// of package natstool/mcptasks, which keeps tasks as jobs on JetStream and
// has any worker run them.
//
// Every method is scoped to an owner (the principal's key, opaque to the
// store): a task of another owner, an unknown ID and an expired task are
// all [ErrTaskNotFound], never told apart. A store bounds its tasks (per
// owner, in all, and their results, see [TaskLimits]) and refuses a task
// beyond them with [ErrTooManyTasks]. A store is safe for concurrent use.
type TaskStore interface {
	// Create starts a task that runs call, returning its record at once;
	// the task is readable by Get before Create returns. ctx is the
	// request's: it carries the principal, and its end does not end the
	// task.
	Create(ctx context.Context, call TaskCall) (TaskRecord, error)
	// Get returns owner's task id.
	Get(ctx context.Context, owner, id string) (TaskRecord, error)
	// Update records answers to owner's task id's pending input requests;
	// [ErrTaskNotWaiting] when it is not input_required.
	Update(ctx context.Context, owner, id string, answers map[string]json.RawMessage) error
	// Cancel ends owner's task id if it is live; a terminal task is left
	// as it is.
	Cancel(ctx context.Context, owner, id string) (TaskRecord, error)
	// List returns owner's kept tasks, newest first, at most
	// TaskLimits.MaxTasks of them.
	List(ctx context.Context, owner string) ([]TaskRecord, error)
	// Close refuses new tasks. What happens to the live ones is the
	// store's: the memory store cancels them, a durable store leaves them
	// to its workers.
	Close() error
}

// TaskCall is the call a task runs.
type TaskCall struct {
	// Owner is the key of the principal the task is bound to.
	Owner string
	// Tool and Args are the call: the tool's name in the server's
	// registry and its JSON arguments.
	Tool string
	Args json.RawMessage
	// Capabilities are the client capabilities the request declared
	// (JSON, as in its _meta or the session's initialize), for a store
	// whose workers let the call ask the client for input (see
	// [TaskInput]); nil when unknown.
	Capabilities json.RawMessage
	// run runs the call in the serving process (the memory store's way),
	// set by the Server; other stores ignore it.
	run func(ctx context.Context, t *task)
}

// TaskRecord is the state of a task as a [TaskStore] keeps it.
type TaskRecord struct {
	// Task is the wire envelope: ID, status, status message, timestamps,
	// TTL and polling interval.
	Task
	// Tool is the name of the tool the task calls.
	Tool string
	// InputRequests are the pending input requests (input_required).
	InputRequests map[string]json.RawMessage
	// Result is the tools/call result of a completed task, encoded; or
	// ToolResult is the registry's result, which the Server encodes as
	// its tools/call would (a store whose workers run the call through a
	// tool.Registry sets this one).
	Result     json.RawMessage
	ToolResult *tool.Result
	// Error is the error of a failed task.
	Error *TaskError
	// Progress is the latest progress of a working task, when known.
	Progress *TaskProgress
}

// Errors of a [TaskStore]: the Server answers each with its JSON-RPC
// error (-32602 for the first two, -32603 for the third).
var (
	// ErrTaskNotFound: unknown, expired or another owner's task.
	ErrTaskNotFound = errors.New("task not found")
	// ErrTaskNotWaiting: tasks/update on a task that is not input_required.
	ErrTaskNotWaiting = errors.New("task is not waiting for input")
	// ErrTooManyTasks: a bound of TaskLimits is reached.
	ErrTooManyTasks = errors.New("too many tasks")
)

// WithTaskStore makes the server keep its tasks in ts instead of in its
// memory. The server still applies the polling rate limit of its
// [TaskLimits] (see [WithTasks]); ts applies the other bounds. Close
// closes ts.
func WithTaskStore(ts TaskStore) ServerOption {
	return func(c *serverConfig) { c.store = ts }
}

// memTasks is the in-memory TaskStore: the taskStore, with the calls run
// by the Server that set TaskCall.run.
type memTasks struct{ st *taskStore }

func (m memTasks) Create(ctx context.Context, call TaskCall) (TaskRecord, error) {
	if call.run == nil {
		return TaskRecord{}, errors.New("mcptool: the in-memory task store runs only its own server's calls")
	}
	// The task outlives the request: its context keeps the request's
	// values (the principal) but not its end.
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	tk, err := m.st.create(call.Owner, cancel)
	if err != nil {
		cancel()
		return TaskRecord{}, err
	}
	m.st.mu.Lock()
	tk.tool = call.Tool // before anyone can list it
	m.st.mu.Unlock()
	sn, _ := m.st.get(tk.owner, tk.id)
	// The run ends at the TTL by itself: dropping an expired task also
	// cancels it, but only when a request comes to look.
	rctx, stop := context.WithDeadline(rctx, tk.created.Add(m.st.lim.TTL))
	go func() {
		defer stop()
		call.run(rctx, tk)
	}()
	return sn.record(), nil
}

func (m memTasks) Get(_ context.Context, owner, id string) (TaskRecord, error) {
	sn, err := m.st.get(owner, id)
	return sn.record(), err
}

func (m memTasks) Update(ctx context.Context, owner, id string, answers map[string]json.RawMessage) error {
	return m.st.update(ctx, owner, id, answers)
}

func (m memTasks) Cancel(_ context.Context, owner, id string) (TaskRecord, error) {
	sn, err := m.st.cancel(owner, id)
	return sn.record(), err
}

func (m memTasks) List(_ context.Context, owner string) ([]TaskRecord, error) {
	sns := m.st.list(owner)
	out := make([]TaskRecord, len(sns))
	for i, sn := range sns {
		out[i] = sn.record()
	}
	sortNewestFirst(out)
	return out, nil
}

func (m memTasks) Close() error {
	m.st.close()
	return nil
}

// record is sn as a TaskRecord.
func (sn snapshot) record() TaskRecord {
	return TaskRecord{Task: sn.Task, Tool: sn.tool, InputRequests: sn.inputs, Result: sn.result, Error: sn.err, Progress: sn.progress}
}

// sortNewestFirst orders recs by creation time, newest first, then by
// ID. The timestamps have one fixed format, so they sort as strings.
func sortNewestFirst(recs []TaskRecord) {
	slices.SortFunc(recs, func(a, b TaskRecord) int {
		return cmp.Or(strings.Compare(b.CreatedAt, a.CreatedAt), strings.Compare(a.TaskID, b.TaskID))
	})
}

// TaskQuestion is what a task's call run by [TaskInput] asked the client.
type TaskQuestion struct {
	// Requests are the input requests by their IDs, each encoded as
	// {"method":…,"params":…}, as tasks/get shows them.
	Requests map[string]json.RawMessage
	// State is the call's request state, for its run with the answers.
	State string
	// Approval is the id of the policy's approval request the question
	// asks about, when an [ElicitApprover] asked it.
	Approval string
}

// maxCapabilitiesBytes bounds the client capabilities TaskInput decodes.
const maxCapabilitiesBytes = 16 << 10

// TaskInput prepares ctx for a run of a task's call away from the
// server that took the request (a durable store's worker), so that the
// call may ask the client for input as it may in the server: with
// [RequestInput], or through an [ElicitApprover] that asks for a policy's
// approval. capabilities are TaskCall.Capabilities; answers, on a run
// after the client answered, are its answers by request ID, with state,
// the State the previous run asked with. After the call returned, asked
// gives what it asked: nil when it asked nothing (its result stands), an
// error when it asked for what the client did not declare (the task then
// fails saying so).
func TaskInput(ctx context.Context, capabilities json.RawMessage, answers map[string]json.RawMessage, state string) (_ context.Context, asked func() (*TaskQuestion, error)) {
	var caps *mcp.ClientCapabilities
	if len(capabilities) > 0 && len(capabilities) <= maxCapabilitiesBytes {
		caps, _ = decodeCapabilities(capabilities)
	}
	slot := &inputSlot{caps: caps, state: state}
	var bad error
	if len(answers) > 0 {
		raw, _ := json.Marshal(answers)
		if err := json.Unmarshal(raw, &slot.responses); err != nil {
			bad = fmt.Errorf("the answers are not input responses: %v", err)
		}
	}
	return context.WithValue(ctx, inputKey{}, slot), func() (*TaskQuestion, error) {
		if bad != nil {
			return nil, bad
		}
		res, err := slot.answer()
		if err != nil {
			return nil, err
		}
		if res == nil || res.InputRequests == nil {
			return nil, nil
		}
		reqs, err := inputRequestsJSON(res.InputRequests)
		if err != nil {
			return nil, err
		}
		slot.mu.Lock()
		approval := slot.approval
		slot.mu.Unlock()
		return &TaskQuestion{Requests: reqs, State: res.RequestState, Approval: approval}, nil
	}
}
