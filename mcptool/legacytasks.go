package mcptool

// The 2025-11-25 experimental tasks form, for clients of that protocol
// version: tools declare execution.taskSupport in tools/list, the server
// declares capabilities.tasks in its initialize result, a tools/call whose
// params carry task is answered with {"task":{...}}, and tasks/get,
// tasks/result, tasks/list and tasks/cancel work on the caller's tasks.
// go-sdk knows none of it, so the server answers these requests itself,
// before go-sdk (ServeHTTP for sessions, the stdio connection), and adds
// the two declarations to go-sdk's results.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// legacyVersion is the protocol version of the legacy tasks form.
const legacyVersion = "2025-11-25"

// legacyPageSize is how many tasks one tasks/list page holds.
const legacyPageSize = 50

// legacyParams are the params of the legacy form's requests.
type legacyParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Task      json.RawMessage `json:"task"`
	TaskID    *string         `json:"taskId"`
	Cursor    *string         `json:"cursor"`
}

// legacyTasksServed reports whether tools/call may become a legacy task
// here: not once Server.MCP was called, as for the extension form.
func (s *Server) legacyTasksServed() bool {
	return !s.sdkShared.Load()
}

// legacyHandles reports whether the 2025-11-25 request method with params,
// from the caller of ctx, is one the server answers itself: tasks/get,
// tasks/result, tasks/list, tasks/cancel, and a tools/call that asks for
// a task or calls a tool that runs only as a task, of a tool the tool
// filter shows the caller.
func (s *Server) legacyHandles(ctx context.Context, method string, params json.RawMessage) bool {
	switch method {
	case "tasks/get", "tasks/result", "tasks/list", "tasks/cancel":
		return true
	case "tools/call":
		if !s.legacyTasksServed() {
			return false
		}
		var p legacyParams
		if json.Unmarshal(params, &p) != nil || !s.listable(ctx, p.Name) {
			return false // go-sdk answers it
		}
		if len(p.Task) > 0 && string(p.Task) != "null" {
			return true
		}
		t, ok := s.reg.Get(p.Name)
		return ok && s.taskMode(t) == tool.TaskRequired
	}
	return false
}

func invalidParams(format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// legacyCaller is who sent a request of the legacy form: the owner key of
// its principal, the capabilities its session declared (nil: none known),
// and how to put a request to it (nil: no way).
type legacyCaller struct {
	owner string
	caps  *mcp.ClientCapabilities
	ask   legacyAsker
}

// A legacyAsker sends a server-to-client request (method, params) that a
// legacy task needs answered to the client, and returns the client's
// result: over the stdio connection, or on the event stream of the HTTP
// tasks/result it answers. An error response from the client is an error.
type legacyAsker func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

// legacyAnswer answers a request legacyHandles accepted, from lc. ctx
// bounds tasks/result's wait.
func (s *Server) legacyAnswer(ctx context.Context, lc legacyCaller, method string, raw json.RawMessage) (any, *jsonrpc.Error) {
	owner := lc.owner
	var p legacyParams
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, invalidParams("%s: params: %v", method, err)
		}
	}
	switch method {
	case "tools/call":
		return s.legacyCall(ctx, owner, lc.caps, p)
	case "tasks/list":
		return s.legacyList(ctx, owner, p.Cursor)
	}
	if p.TaskID == nil {
		return nil, invalidParams("%s: params.taskId is required", method)
	}
	id := *p.TaskID
	fail := func(err error) *jsonrpc.Error {
		return &jsonrpc.Error{Code: int64(taskErrorCode(err)), Message: fmt.Sprintf("%s %q: %v", method, id, err)}
	}
	switch method {
	case "tasks/get":
		if err := s.tasks.allowPoll(owner); err != nil {
			return nil, fail(err)
		}
		rec, err := s.store.Get(ctx, owner, id)
		if err != nil {
			return nil, fail(err)
		}
		lt, _ := s.legacyView(rec)
		return lt, nil
	case "tasks/cancel":
		rec, err := s.store.Get(ctx, owner, id)
		if err != nil {
			return nil, fail(err)
		}
		if lt, _ := s.legacyView(rec); lt.Status.Terminal() {
			return nil, invalidParams("tasks/cancel %q: the task is already %s", id, lt.Status)
		}
		if rec, err = s.store.Cancel(ctx, owner, id); err != nil {
			return nil, fail(err)
		}
		lt, _ := s.legacyView(rec)
		return lt, nil
	case "tasks/result":
		return s.legacyResult(ctx, owner, id, lc.ask, fail)
	}
	return nil, &jsonrpc.Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("method %q not found", method)}
}

// legacyCall starts a task for a task-augmented tools/call from a client
// whose session declared caps: a tool's RequestInput (or an
// ElicitApprover's ask) within the task needs them declared, and puts the
// task into input_required, whose requests tasks/result carries.
func (s *Server) legacyCall(ctx context.Context, owner string, caps *mcp.ClientCapabilities, p legacyParams) (any, *jsonrpc.Error) {
	t, found := s.reg.Get(p.Name)
	v, direct := s.direct.Load(p.Name)
	if !found || !direct {
		return nil, invalidParams("unknown tool %q", p.Name)
	}
	mode := s.taskMode(t)
	asTask := len(p.Task) > 0 && string(p.Task) != "null"
	switch {
	case mode == tool.TaskNever:
		return nil, &jsonrpc.Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("tool %q does not run as a task (execution.taskSupport is forbidden): call it without params.task", p.Name)}
	case !asTask:
		return nil, &jsonrpc.Error{Code: CodeMethodNotFound, Message: fmt.Sprintf("tool %q runs only as a task (execution.taskSupport is required): call it with params.task", p.Name)}
	}
	var tp TaskParams
	if err := json.Unmarshal(p.Task, &tp); err != nil {
		return nil, invalidParams("tools/call: params.task: %v", err)
	}
	wrap := v.(*directTool).wrap
	name, args := p.Name, p.Arguments
	var rawCaps json.RawMessage
	if caps != nil {
		rawCaps, _ = json.Marshal(caps)
	}
	rec, err := s.store.Create(ctx, TaskCall{Owner: owner, Tool: name, Args: args, Capabilities: rawCaps,
		run: func(ctx context.Context, tk *task) { s.runTask(ctx, tk, name, args, wrap, caps, nil, "") }})
	if err != nil {
		return nil, &jsonrpc.Error{Code: -32603, Message: "tools/call: " + err.Error()}
	}
	lt, _ := s.legacyView(rec)
	return LegacyCreateTaskResult{Task: lt}, nil
}

// legacyView is rec in the legacy form, and rec settled. A completed
// task whose result is an isError result is failed in this form.
func (s *Server) legacyView(rec TaskRecord) (LegacyTask, TaskRecord) {
	rec = s.settle(rec)
	lt := rec.Task.Legacy()
	if rec.Status == StatusCompleted {
		var r struct {
			IsError bool `json:"isError"`
		}
		if json.Unmarshal(rec.Result, &r) == nil && r.IsError {
			lt.Status = StatusFailed
		}
	}
	if lt.Status == StatusFailed && lt.StatusMessage == "" && rec.Error != nil {
		lt.StatusMessage = rec.Error.Message
	}
	return lt, rec
}

// legacyResult waits until task id is terminal, polling the store, for as
// long as ctx lasts, and answers what the tools/call would have: its
// result with the related-task _meta, or its error. While the task is
// input_required, it puts the task's requests to the client with ask (the
// 2025-11-25 form carries them on tasks/result) and records the answers.
func (s *Server) legacyResult(ctx context.Context, owner, id string, ask legacyAsker, fail func(error) *jsonrpc.Error) (any, *jsonrpc.Error) {
	wait := 10 * time.Millisecond
	for {
		rec, err := s.store.Get(ctx, owner, id)
		if err != nil {
			return nil, fail(err)
		}
		if rec.Status == StatusInputRequired && len(rec.InputRequests) > 0 && ask != nil {
			if err := s.legacyDeliver(ctx, owner, id, rec.InputRequests, ask); err != nil {
				return nil, &jsonrpc.Error{Code: -32603, Message: fmt.Sprintf("tasks/result %q: %v", id, err)}
			}
			wait = 10 * time.Millisecond
			continue
		}
		lt, rec := s.legacyView(rec)
		if lt.Status.Terminal() {
			switch {
			case rec.Error != nil:
				return nil, &jsonrpc.Error{Code: int64(rec.Error.Code), Message: rec.Error.Message, Data: rec.Error.Data}
			case rec.Status == StatusCancelled:
				return nil, &jsonrpc.Error{Code: -32603, Message: fmt.Sprintf("tasks/result %q: the task was cancelled", id)}
			}
			return withRelatedTask(rec.Result, id), nil
		}
		select {
		case <-ctx.Done():
			return nil, &jsonrpc.Error{Code: -32603, Message: fmt.Sprintf("tasks/result %q: the request ended before the task: %v", id, context.Cause(ctx))}
		case <-time.After(wait):
		}
		wait = min(2*wait, 250*time.Millisecond)
	}
}

// legacyDeliver puts the pending input requests of owner's task id to
// its client with ask, one at a time in the order of their keys, each
// with the related-task _meta, and records each answer with the store's
// Update. A request another tasks/result of the same task is putting
// already is skipped. When the client answers with an error, the task is
// cancelled: nothing else could answer it.
func (s *Server) legacyDeliver(ctx context.Context, owner, id string, requests map[string]json.RawMessage, ask legacyAsker) error {
	keys := slices.Sorted(maps.Keys(requests))
	for _, key := range keys {
		mark := id + "\x00" + key
		if _, busy := s.delivering.LoadOrStore(mark, true); busy {
			continue
		}
		err := func() error {
			defer s.delivering.Delete(mark)
			var req struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if err := json.Unmarshal(requests[key], &req); err != nil || req.Method == "" {
				return fmt.Errorf("the task's input request %q is malformed", key)
			}
			params := req.Params
			if len(params) == 0 || string(params) == "null" {
				params = json.RawMessage(`{}`)
			}
			res, err := ask(ctx, req.Method, withRelatedTask(params, id))
			if err != nil {
				if ctx.Err() == nil {
					s.store.Cancel(context.WithoutCancel(ctx), owner, id)
				}
				return fmt.Errorf("the client did not answer %s (the task was cancelled): %w", req.Method, err)
			}
			err = s.store.Update(ctx, owner, id, map[string]json.RawMessage{key: res})
			if errors.Is(err, ErrTaskNotWaiting) {
				return nil // answered or ended meanwhile
			}
			return err
		}()
		if err != nil {
			return err
		}
	}
	if len(keys) > 0 {
		// Every request is someone's: give them time before looking again.
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// withRelatedTask is the result object raw with _meta's related-task
// member set to id.
func withRelatedTask(raw json.RawMessage, id string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return raw
	}
	meta := map[string]json.RawMessage{}
	json.Unmarshal(obj["_meta"], &meta)
	meta[RelatedTaskMeta], _ = json.Marshal(TaskIDParams{TaskID: id})
	obj["_meta"], _ = json.Marshal(meta)
	out, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return out
}

// legacyList answers tasks/list: the caller's tasks, newest first, a page
// at a time. The cursor is the opaque offset of the page.
func (s *Server) legacyList(ctx context.Context, owner string, cursor *string) (any, *jsonrpc.Error) {
	start := 0
	if cursor != nil && *cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(*cursor)
		n, aerr := strconv.Atoi(strings.TrimPrefix(string(b), "o"))
		if err != nil || aerr != nil || !strings.HasPrefix(string(b), "o") || n <= 0 {
			return nil, invalidParams("tasks/list: the cursor %q is not one this server gave", *cursor)
		}
		start = n
	}
	recs, err := s.store.List(ctx, owner)
	if err != nil {
		return nil, &jsonrpc.Error{Code: -32603, Message: "tasks/list: " + err.Error()}
	}
	if start > len(recs) {
		return nil, invalidParams("tasks/list: the cursor is past the end of the list")
	}
	out := LegacyListTasksResult{Tasks: []LegacyTask{}}
	end := min(start+legacyPageSize, len(recs))
	for _, rec := range recs[start:end] {
		lt, _ := s.legacyView(rec)
		out.Tasks = append(out.Tasks, lt)
	}
	if end < len(recs) {
		out.NextCursor = base64.RawURLEncoding.EncodeToString([]byte("o" + strconv.Itoa(end)))
	}
	return out, nil
}

// legacyPatch adds the legacy form's declarations to a result go-sdk
// made: capabilities.tasks to an initialize result of protocol version
// 2025-11-25, execution.taskSupport to the tools of a tools/list result.
// Anything it cannot read goes out as it came.
func (s *Server) legacyPatch(method string, result json.RawMessage) json.RawMessage {
	if !s.legacyTasksServed() {
		return result
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(result, &obj) != nil || obj == nil {
		return result
	}
	switch method {
	case "initialize":
		var v string
		if json.Unmarshal(obj["protocolVersion"], &v) != nil || v != legacyVersion {
			return result
		}
		caps := map[string]json.RawMessage{}
		if json.Unmarshal(obj["capabilities"], &caps) != nil {
			return result
		}
		caps["tasks"], _ = json.Marshal(legacyTasksCapability())
		obj["capabilities"], _ = json.Marshal(caps)
	case "tools/list":
		var tools []map[string]json.RawMessage
		if json.Unmarshal(obj["tools"], &tools) != nil {
			return result
		}
		for _, t := range tools {
			var name string
			json.Unmarshal(t["name"], &name)
			rt, ok := s.reg.Get(name)
			if !ok {
				continue
			}
			switch s.taskMode(rt) {
			case tool.TaskOptional:
				t["execution"], _ = json.Marshal(ToolExecution{TaskSupport: TaskOptional})
			case tool.TaskRequired:
				t["execution"], _ = json.Marshal(ToolExecution{TaskSupport: TaskRequired})
			}
		}
		obj["tools"], _ = json.Marshal(tools)
	default:
		return result
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return result
	}
	return out
}

// legacyRequest is a JSON-RPC request as read from an HTTP body.
type legacyRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// serveLegacyTasks answers r if it is a POST of a 2025-11-25 session
// bound to r's caller carrying a request of the legacy tasks form, and
// reports whether it did. For an initialize or tools/list of that
// version, it serves r through next and adds the declarations to the
// result.
func (s *Server) serveLegacyTasks(w http.ResponseWriter, r *http.Request, next func(http.ResponseWriter, *http.Request)) bool {
	if r.Method != http.MethodPost || !jsonContent(r.Header.Get("Content-Type")) || !hostAllowed(r) {
		return false
	}
	ids := r.Header.Values(headerSessionID)
	version := r.Header.Get(headerProtocolVersion)
	if len(ids) > 1 || len(ids) == 1 && version != legacyVersion {
		return false
	}
	body, ok := readBody(r)
	if !ok {
		return false
	}
	var req legacyRequest
	if json.Unmarshal(body, &req) != nil || !validID(req.ID) {
		return false // go-sdk answers it
	}
	if len(ids) == 0 {
		if req.Method != "initialize" {
			return false
		}
		pw := &patchWriter{ResponseWriter: w}
		next(pw, r)
		pw.finish(func(res json.RawMessage) json.RawMessage { return s.legacyPatch("initialize", res) }, req.ID)
		return true
	}
	owner := ownerKey(r)
	if bound, found := s.bound.Load(ids[0]); !found || bound.(string) != owner {
		return false // go-sdk's path answers 404
	}
	if req.Method == "tools/list" {
		pw := &patchWriter{ResponseWriter: w}
		next(pw, r)
		pw.finish(func(res json.RawMessage) json.RawMessage { return s.legacyPatch("tools/list", res) }, req.ID)
		return true
	}
	if req.Method == "" {
		// A response: to a request a legacy task put to this session's
		// client (httpAsk), or go-sdk's to answer.
		v, mine := s.waiting.LoadAndDelete(ids[0] + "\x00" + string(bytes.TrimSpace(req.ID)))
		if !mine {
			return false
		}
		var res struct {
			Result json.RawMessage `json:"result"`
			Error  *jsonrpc.Error  `json:"error"`
		}
		var rerr error
		if err := json.Unmarshal(body, &res); err != nil {
			rerr = err
		} else if res.Error != nil {
			rerr = res.Error
		}
		v.(chan legacyResponse) <- legacyResponse{res.Result, rerr} // buffered, and taken from waiting once
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	if !s.legacyHandles(r.Context(), req.Method, req.Params) {
		return false
	}
	ls := &legacyStream{w: w}
	caller := legacyCaller{owner: owner, caps: s.sessionCaps(ids[0]), ask: s.httpAsk(ls, ids[0])}
	result, jerr := s.legacyAnswer(r.Context(), caller, req.Method, req.Params)
	var data []byte
	var err error
	member := "result"
	if jerr == nil {
		if data, err = json.Marshal(result); err != nil {
			jerr = &jsonrpc.Error{Code: -32603, Message: err.Error()}
		}
	}
	if jerr != nil {
		// In a 2025-11-25 session a JSON-RPC error travels with status
		// 200, as go-sdk sends it.
		if data, err = json.Marshal(jerr); err != nil {
			data = []byte(`{"code":-32603,"message":"internal error"}`)
		}
		member = "error"
	}
	if ls.streaming() {
		ls.send([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"` + member + `":` + string(data) + `}`))
		return true
	}
	writeDirect(w, http.StatusOK, req.ID, member, data)
	return true
}

// sessionCaps returns the capabilities the client of go-sdk session id
// declared, or nil.
func (s *Server) sessionCaps(id string) *mcp.ClientCapabilities {
	for ss := range s.sdk.Sessions() {
		if ss.ID() == id {
			if p := ss.InitializeParams(); p != nil {
				return p.Capabilities
			}
			return nil
		}
	}
	return nil
}

// legacyResponse is a client's response to a request of httpAsk.
type legacyResponse struct {
	result json.RawMessage
	err    error
}

// legacyStream is the answer to one HTTP request of the legacy form: one
// JSON body, or, once a task has a request to put to the client, an event
// stream carrying those requests and then the answer.
type legacyStream struct {
	w       http.ResponseWriter
	mu      sync.Mutex
	started bool
}

func (ls *legacyStream) streaming() bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.started
}

// send writes msg, a JSON-RPC message, as an event of the stream, which
// it starts if it has not.
func (ls *legacyStream) send(msg []byte) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if !ls.started {
		h := ls.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache, no-transform")
		h.Del("Content-Length")
		ls.w.WriteHeader(http.StatusOK)
		ls.started = true
	}
	if _, err := fmt.Fprintf(ls.w, "event: message\ndata: %s\n\n", msg); err != nil {
		return err
	}
	return http.NewResponseController(ls.w).Flush()
}

// httpAsk is the legacyAsker of an HTTP request of session: it sends the
// request on ls and waits for the client's response, which the client
// POSTs to the session (serveLegacyTasks hands it over).
func (s *Server) httpAsk(ls *legacyStream, session string) legacyAsker {
	return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		id, err := json.Marshal("clawtool-task-" + newTaskID())
		if err != nil {
			return nil, err
		}
		key := session + "\x00" + string(id)
		ch := make(chan legacyResponse, 1)
		s.waiting.Store(key, ch)
		defer s.waiting.Delete(key)
		msg, err := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  json.RawMessage `json:"params"`
		}{"2.0", id, method, params})
		if err != nil {
			return nil, err
		}
		if err := ls.send(msg); err != nil {
			return nil, fmt.Errorf("sending the request: %w", err)
		}
		select {
		case res := <-ch:
			return responseResult(res.result, res.err)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// patchWriter holds a response back until finish, which rewrites the
// result of the response to one request in it (a JSON body, or the data
// of an event of an event stream) and sends it all.
type patchWriter struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (p *patchWriter) WriteHeader(code int) {
	if p.status == 0 {
		p.status = code
	}
}

func (p *patchWriter) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.status = http.StatusOK
	}
	return p.buf.Write(b)
}

// Flush holds the bytes back: they leave at finish.
func (p *patchWriter) Flush() {}

// finish rewrites the response to request id with patch and sends the
// response.
func (p *patchWriter) finish(patch func(json.RawMessage) json.RawMessage, id json.RawMessage) {
	body := p.buf.Bytes()
	rewrite := func(msg []byte) []byte {
		var m map[string]json.RawMessage
		if json.Unmarshal(msg, &m) != nil || !bytes.Equal(bytes.TrimSpace(m["id"]), bytes.TrimSpace(id)) || m["result"] == nil {
			return msg
		}
		m["result"] = patch(m["result"])
		out, err := json.Marshal(m)
		if err != nil {
			return msg
		}
		return out
	}
	ct := p.Header().Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		body = rewrite(body)
	case strings.HasPrefix(ct, "text/event-stream"):
		lines := bytes.Split(body, []byte("\n"))
		for i, l := range lines {
			if d, ok := bytes.CutPrefix(l, []byte("data: ")); ok {
				lines[i] = append([]byte("data: "), rewrite(d)...)
			}
		}
		body = bytes.Join(lines, []byte("\n"))
	}
	p.Header().Del("Content-Length")
	if p.status == 0 {
		p.status = http.StatusOK
	}
	p.ResponseWriter.WriteHeader(p.status)
	p.ResponseWriter.Write(body)
	if f, ok := p.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// legacyConn is the stdio connection of a session: it answers the tasks
// requests of a 2026-07-28 client (the extension form, request by
// request) and, once the session is of protocol version 2025-11-25, the
// legacy form's, and adds the legacy declarations to go-sdk's initialize
// and tools/list results.
type legacyConn struct {
	mcp.Connection
	s     *Server
	owner string
	ctx   context.Context // ends when the connection closes
	stop  context.CancelFunc

	mu      sync.Mutex
	legacy  bool                    // the session is of version 2025-11-25
	pending map[jsonrpc.ID]string   // id → initialize or tools/list, until answered
	caps    *mcp.ClientCapabilities // as the client's initialize declared them
	// waiting are the requests legacy tasks put to the client (ask),
	// awaiting its responses.
	waiting map[jsonrpc.ID]chan *jsonrpc.Response
	wg      sync.WaitGroup
}

func newLegacyConn(inner mcp.Connection, s *Server, owner string) *legacyConn {
	ctx, stop := context.WithCancel(context.Background())
	return &legacyConn{Connection: inner, s: s, owner: owner, ctx: ctx, stop: stop, pending: map[jsonrpc.ID]string{},
		waiting: map[jsonrpc.ID]chan *jsonrpc.Response{}}
}

// maxPending bounds the initialize and tools/list requests awaiting their
// answers: beyond it, their results go out unpatched.
const maxPending = 1024

func (c *legacyConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		if res, ok := msg.(*jsonrpc.Response); ok {
			c.mu.Lock()
			ch, mine := c.waiting[res.ID]
			delete(c.waiting, res.ID)
			c.mu.Unlock()
			if mine {
				ch <- res // buffered
				continue
			}
			return msg, nil
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			return msg, nil
		}
		c.mu.Lock()
		legacy := c.legacy
		if (req.Method == "initialize" || req.Method == "tools/list") && len(c.pending) < maxPending {
			c.pending[req.ID] = req.Method
		}
		if req.Method == "initialize" {
			var p struct {
				Capabilities *mcp.ClientCapabilities `json:"capabilities"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				c.caps = p.Capabilities
			}
		}
		caller := legacyCaller{owner: c.owner, caps: c.caps, ask: c.ask}
		c.mu.Unlock()
		if req.Method == "tools/call" || strings.HasPrefix(req.Method, "tasks/") {
			if data, jerr, handled := c.extension(req); handled {
				res := &jsonrpc.Response{ID: req.ID, Result: data}
				if jerr != nil {
					res.Error = jerr
				}
				if err := c.Connection.Write(ctx, res); err != nil {
					return nil, err
				}
				continue
			}
		}
		if !legacy || !c.s.legacyHandles(c.ctx, req.Method, req.Params) {
			return msg, nil
		}
		c.wg.Go(func() { // tasks/result blocks: never hold up the reading
			res := &jsonrpc.Response{ID: req.ID}
			result, jerr := c.s.legacyAnswer(c.ctx, caller, req.Method, req.Params)
			if jerr != nil {
				res.Error = jerr
			} else if data, merr := json.Marshal(result); merr != nil {
				res.Error = &jsonrpc.Error{Code: -32603, Message: merr.Error()}
			} else {
				res.Result = data
			}
			c.Connection.Write(c.ctx, res)
		})
	}
}

// maxAsks bounds the requests legacy tasks put to one client at once.
const maxAsks = 64

// ask sends a request of a legacy task to the client on the connection
// and waits for its response, or for ctx or the connection to end.
func (c *legacyConn) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	id, err := jsonrpc.MakeID("clawtool-task-" + newTaskID())
	if err != nil {
		return nil, err
	}
	ch := make(chan *jsonrpc.Response, 1)
	c.mu.Lock()
	if len(c.waiting) >= maxAsks {
		c.mu.Unlock()
		return nil, fmt.Errorf("%d requests to the client are waiting already", maxAsks)
	}
	c.waiting[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
	}()
	if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		return nil, err
	}
	select {
	case res := <-ch:
		return responseResult(res.Result, res.Error)
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-c.ctx.Done():
		return nil, errors.New("the connection closed")
	}
}

// responseResult is the result of a client's response, or its error.
func responseResult(result json.RawMessage, rerr error) (json.RawMessage, error) {
	if rerr != nil {
		return nil, fmt.Errorf("the client answered with an error: %w", rerr)
	}
	if len(result) == 0 {
		return nil, errors.New("the client answered without a result")
	}
	return result, nil
}

// extension answers req if it is a 2026-07-28 request (its _meta names
// that protocol version) of the tasks extension's surface.
func (c *legacyConn) extension(req *jsonrpc.Request) (json.RawMessage, *jsonrpc.Error, bool) {
	var probe struct {
		Meta struct {
			Version string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	if json.Unmarshal(req.Params, &probe) != nil || probe.Meta.Version != statelessVersion {
		return nil, nil, false
	}
	tr := taskRequest{Method: req.Method}
	if json.Unmarshal(req.Params, &tr.Params) != nil {
		return nil, nil, false // go-sdk answers it
	}
	if req.Method == "tools/call" {
		if t, ok := c.s.reg.Get(tr.Params.Name); !ok || c.s.taskMode(t) == tool.TaskNever {
			return nil, nil, false
		}
	}
	return c.s.extAnswer(c.ctx, c.owner, &tr)
}

func (c *legacyConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if res, ok := msg.(*jsonrpc.Response); ok && res.Error == nil {
		c.mu.Lock()
		method, found := c.pending[res.ID]
		delete(c.pending, res.ID)
		if found && method == "initialize" {
			var v struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			json.Unmarshal(res.Result, &v)
			c.legacy = v.ProtocolVersion == legacyVersion
		}
		c.mu.Unlock()
		if found {
			patched := *res
			patched.Result = c.s.legacyPatch(method, res.Result)
			msg = &patched
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *legacyConn) Close() error {
	c.stop()
	err := c.Connection.Close()
	c.wg.Wait()
	return err
}

// legacyTransport wraps the connections of t in legacyConns.
type legacyTransport struct {
	mcp.Transport
	s     *Server
	owner string
}

func (t legacyTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newLegacyConn(conn, t.s, t.owner), nil
}
