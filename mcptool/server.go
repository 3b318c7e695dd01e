package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Server serves the tools of a [tool.Registry] to MCP clients over any
// go-sdk transport: stdio ([Server.ServeStdio]), Streamable HTTP
// ([Server.ServeHTTP]: a Server is an [http.Handler]) or an in-memory
// pipe ([Server.Run]).
//
// Every tools/call goes through [tool.Registry.Execute]: arguments are
// parsed strictly and validated, defaults applied, the tool runs under its
// time limit and panic guard, and its output is cut to the result budget.
// A failed call, invalid arguments included, comes back as a result with
// isError set, never as a JSON-RPC error, so the model can read it and
// correct itself (SEP-1303). A call to a name the server does not have is
// a JSON-RPC error -32602, as the specification's example shows.
//
// The server follows the registry: a tool registered, replaced or removed
// after NewServer is listed (or no longer listed) on the next tools/list,
// and clients are told with notifications/tools/list_changed (on
// 2026-07-28 sessions, on their subscriptions/listen stream). Tools are
// listed in name order, in pages of [WithPageSize] tools.
//
// A Server is safe for concurrent use and may serve many sessions at
// once. Call [Server.Close] to stop following the registry.
type Server struct {
	reg  *tool.Registry
	sdk  *mcp.Server
	cfg  serverConfig
	stop func()

	mu     sync.Mutex
	closed bool

	httpOnce sync.Once
	http     http.Handler

	direct    sync.Map    // name → *directTool, the tools ServeHTTP may call itself
	bound     sync.Map    // session id → the key of the caller it is bound to (see ServeHTTP)
	live      sync.Map    // session id → *liveSession, for the direct session path (session.go)
	sdkShared atomic.Bool // MCP was called: serve HTTP through go-sdk only
	// delivering marks the input requests of legacy tasks being put to
	// their clients (task ID, NUL, request key), so that two tasks/result
	// of one task do not ask the same twice.
	delivering sync.Map
	// waiting are the server-to-client requests of legacy tasks sent on
	// HTTP event streams, awaiting the client's response (legacyKey).
	waiting sync.Map
	tasks   *taskStore // the in-memory tasks, and the tasks/get rate limit (taskserver.go)
	rounds  *rounds    // sealed requestStates and held rounds (mrtr.go)
	store   TaskStore  // where tasks are kept: memTasks over tasks, or WithTaskStore's
	// sessions bounds the live 2025-11-25 HTTP sessions (sessionlimit.go).
	sessions *sessionLedger
	// listens bounds the 2026-07-28 subscriptions/listen streams served
	// at once, alike (sessionlimit.go).
	listens *sessionLedger
	// requests bounds the POST requests served at once (requestlimit.go).
	requests *requestGate
}

type serverConfig struct {
	impl         mcp.Implementation
	pageSize     int
	logger       *slog.Logger
	jsonResponse bool
	pending      <-chan struct{}
	pendingWait  time.Duration
	filter       func(ctx context.Context, name string) bool
	tasks        TaskLimits
	store        TaskStore
	rounds       InputRoundLimits
	taskDecide   func(tool.Tool) bool

	sessionsPerCaller, sessionsTotal int           // WithSessionLimits
	requestLimits                    RequestLimits // WithRequestLimits
	writeTimeout                     time.Duration // WithWriteTimeout
	noStreamQueue                    bool          // streams written by their writer, for the attack tests' controls
}

// A ServerOption configures a [Server] made by [NewServer].
type ServerOption func(*serverConfig)

// WithImplementation sets the name and version the server reports to
// clients (serverInfo). The default is "clawtool" and "dev".
func WithImplementation(name, version string) ServerOption {
	return func(c *serverConfig) { c.impl.Name, c.impl.Version = name, version }
}

// WithPageSize sets how many tools one tools/list page holds; clients
// follow nextCursor for the rest. Zero or a negative n keeps go-sdk's
// default of 1000.
func WithPageSize(n int) ServerOption {
	return func(c *serverConfig) { c.pageSize = n }
}

// WithJSONResponse makes [Server.ServeHTTP] answer every POST with one
// application/json body rather than an event stream, in both protocol
// eras. Notifications about a call, such as its progress, then cannot
// travel with its response: a 2025-11-25 session receives them on its GET
// stream, if it opened one, and a 2026-07-28 call does not receive them.
// Without this option, a call that may send notifications (a 2026-07-28
// call with a progress token or a log level, any 2025-11-25 call) is
// answered with an event stream, and every other call with JSON.
func WithJSONResponse() ServerOption {
	return func(c *serverConfig) { c.jsonResponse = true }
}

// WithToolsPending is for a server whose registry is still being filled,
// for example by imports that run in the background: until pending is
// closed, but no longer than maxWait after NewServer, tools/list and
// tools/call wait for it. Everything else (initialize, ping) is answered
// at once, so a client's first request never waits on a slow import, and
// a client that lists the tools once still sees them all. Tools that
// arrive later are announced with notifications/tools/list_changed as
// always.
func WithToolsPending(pending <-chan struct{}, maxWait time.Duration) ServerOption {
	return func(c *serverConfig) { c.pending, c.pendingWait = pending, maxWait }
}

// WithServerLogger sets the logger for protocol events such as a failed
// notification. The default discards them.
func WithServerLogger(l *slog.Logger) ServerOption {
	return func(c *serverConfig) { c.logger = l }
}

// NewServer returns a Server for the tools of reg, configured by opts.
// It declares the tools capability with listChanged: true and logging
// (what tools write to [tool.ClientLogger] goes to the client), and
// nothing else (no prompts, resources or tasks).
func NewServer(reg *tool.Registry, opts ...ServerOption) *Server {
	cfg := serverConfig{impl: mcp.Implementation{Name: "clawtool", Version: "dev"}}
	for _, opt := range opts {
		opt(&cfg)
	}
	sdkOpts := &mcp.ServerOptions{
		Logger:   cfg.logger,
		PageSize: cfg.pageSize,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}, Logging: &mcp.LoggingCapabilities{},
			Extensions: map[string]any{TasksExtension: map[string]any{}}},
	}
	if cfg.filter != nil {
		// Each caller sees a list of its own: no cache may hand it to
		// another.
		sdkOpts.SetCacheable = func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			if _, ok := req.(*mcp.ListToolsRequest); ok {
				c.CacheScope = "private"
			}
		}
	}
	s := &Server{reg: reg, cfg: cfg, tasks: newTaskStore(cfg.tasks), store: cfg.store, rounds: newRounds(cfg.rounds),
		sessions: newSessionLedger(cfg.sessionsPerCaller, cfg.sessionsTotal),
		listens:  newSessionLedger(cfg.sessionsPerCaller, cfg.sessionsTotal),
		requests: newRequestGate(cfg.requestLimits)}
	if s.store == nil {
		s.store = memTasks{s.tasks}
	}
	impl := cfg.impl
	s.sdk = mcp.NewServer(&impl, sdkOpts)
	s.sdk.AddReceivingMiddleware(toolsOnly)
	if cfg.pending != nil {
		s.sdk.AddReceivingMiddleware(waitForTools(cfg.pending, time.Now().Add(cfg.pendingWait)))
	}
	if cfg.filter != nil {
		s.sdk.AddReceivingMiddleware(filterTools(cfg.filter))
	}
	// Last, so outermost: everything above sees each request's caller.
	s.sdk.AddReceivingMiddleware(s.callerContext)
	// Follow the registry first, then load it: a change that lands in
	// between is applied twice, which is harmless, rather than lost.
	s.stop = reg.OnChange(s.sync)
	for _, t := range reg.List() {
		s.sync(t.Name())
	}
	return s
}

// MCP returns the underlying go-sdk server, for serving it with a
// transport this package does not wrap. It serves tools only: prompts,
// resources and completions are answered with "method not found", since
// the server does not declare them. Tools must be changed through the
// registry, not here.
//
// Once MCP has been called, [Server.ServeHTTP] serves every request
// through go-sdk, the 2026-07-28 tools/call requests it otherwise answers
// itself included, so that middleware added to the returned server sees
// them all.
func (s *Server) MCP() *mcp.Server {
	s.sdkShared.Store(true)
	return s.sdk
}

// toolsOnly refuses the requests of features the server does not declare,
// which go-sdk would otherwise answer with empty results.
// waitForTools holds tools/list and tools/call until pending is closed or
// the time until has come; see WithToolsPending.
func waitForTools(pending <-chan struct{}, until time.Time) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" || method == "tools/call" {
				select {
				case <-pending:
				default:
					t := time.NewTimer(time.Until(until))
					select {
					case <-pending:
					case <-t.C:
					case <-ctx.Done():
					}
					t.Stop()
				}
			}
			return next(ctx, method, req)
		}
	}
}

func toolsOnly(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "prompts/list", "prompts/get", "resources/list", "resources/read",
			"resources/templates/list", "resources/subscribe", "resources/unsubscribe", "completion/complete":
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q not found: this server has tools only", method)}
		}
		return next(ctx, method, req)
	}
}

// Run serves one session over t and returns when the client disconnects
// or ctx is done.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.sdk.Run(ctx, t)
}

// ServeStdio serves one session over the process's standard input and
// output, the MCP stdio transport, as [Server.ServeIO] does. Nothing but
// MCP messages is written to standard output; log to standard error.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.ServeIO(ctx, os.Stdin, os.Stdout)
}

// ServeIO serves one session of the MCP stdio transport (one JSON-RPC
// message per line) reading r and writing w, and returns nil when r ends,
// or ctx.Err() when ctx is done. It closes neither.
//
// Every request read gets its response before ServeIO returns, even when
// r ends right after the request (as with "clawtool serve <
// requests.jsonl"). A line that is not a JSON-RPC message gets a JSON-RPC
// error (-32700 for invalid JSON, -32600 for anything else, batches
// included) and the session carries on; so does a line longer than
// [MaxLineBytes], which is not buffered.
func (s *Server) ServeIO(ctx context.Context, r io.Reader, w io.Writer) error {
	p, ok := policy.PrincipalFrom(ctx)
	t := legacyTransport{Transport: &ioTransport{r: r, w: w, logger: s.cfg.logger}, s: s, owner: callerKey(p, ok, "")}
	err := s.sdk.Run(ctx, t)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Close stops following the registry and cancels the live tasks (they
// end as cancelled; kept results stay readable until they expire) and
// the calls that wait for a client's answer (a held round, see
// [WithInputRounds]).
// Sessions already connected keep working with the tools they have.
// Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.stop()
		s.tasks.close()
		s.rounds.close()
		s.store.Close()
	}
	return nil
}

// sync makes the go-sdk server's entry for name match the registry.
func (s *Server) sync(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.direct.Delete(name)
	t, ok := s.reg.Get(name)
	if !ok {
		s.sdk.RemoveTools(name)
		return
	}
	st, err := sdkTool(t)
	if err != nil {
		// The registry accepted the tool, so this is a bug in the
		// conversion; keep serving the others.
		s.logger().Error("mcptool: cannot serve tool", "tool", name, "error", err)
		s.sdk.RemoveTools(name)
		return
	}
	if err := s.addTool(st, s.handler(name, t)); err != nil {
		s.logger().Error("mcptool: cannot serve tool", "tool", name, "error", err)
		s.sdk.RemoveTools(name)
		return
	}
	if in, _ := st.InputSchema.(json.RawMessage); !bytes.Contains(in, []byte(`"x-mcp-header"`)) {
		// Parameters mirrored in headers are go-sdk's to check.
		opts := tool.OptionsOf(t)
		s.direct.Store(name, &directTool{wrap: outputWrapped(opts.OutputSchema), taskOnly: opts.Task == tool.TaskRequired})
	}
}

// addTool adds st to the go-sdk server, which panics on a tool it cannot
// serve (for example an invalid x-mcp-header annotation).
func (s *Server) addTool(st *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v", v)
		}
	}()
	s.sdk.AddTool(st, h)
	return nil
}

func (s *Server) logger() *slog.Logger {
	if s.cfg.logger != nil {
		return s.cfg.logger
	}
	return slog.New(slog.DiscardHandler)
}

// handler returns the go-sdk handler for the tool registered as name.
func (s *Server) handler(name string, t tool.Tool) mcp.ToolHandler {
	wrap := outputWrapped(tool.OptionsOf(t).OutputSchema)
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args json.RawMessage
		if req.Params != nil {
			args = req.Params.Arguments
			if shielded, ok := ctx.Value(argumentsKey{}).(json.RawMessage); ok {
				args = shielded // see shieldArguments
			}
			if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
				ctx = tool.WithProgress(ctx, progressRelay(ctx, req.Session, tok))
			}
		}
		slot := &inputSlot{ss: req.Session}
		if req.Params != nil {
			slot.responses, slot.state = req.Params.InputResponses, req.Params.RequestState
		}
		if req.Session != nil {
			ctx = context.WithValue(ctx, sessionKey{}, req.Session)
			ctx = tool.WithClientLogger(ctx, slog.New(clientLog(ctx, req.Session, name)))
		}
		if !statelessCall(req.Session) || s.rounds.off {
			// 2025-11-25: go-sdk puts input requests to the client on the
			// session and calls again with the answers, in this request.
			return s.execute(context.WithValue(ctx, inputKey{}, slot), name, args, wrap, slot)
		}
		caller := roundCaller(ctx, req)
		if slot.state != "" {
			st, jerr := s.rounds.open(caller, name, args, slot.state)
			if jerr != nil {
				return nil, jerr
			}
			if st.Round != "" {
				return s.rounds.resume(ctx, caller, name, args, st.Round, slot.responses)
			}
			slot.state = st.Tool
		}
		return s.plainCall(ctx, caller, name, args, wrap, slot, slot.caps)
	}
}

// statelessCall reports whether a call on ss (nil for the calls
// ServeHTTP answers itself) is a 2026-07-28 call, which has no requests
// from server to client.
func statelessCall(ss *mcp.ServerSession) bool {
	if ss == nil {
		return true
	}
	init := ss.InitializeParams()
	return init == nil || init.ProtocolVersion >= statelessVersion
}

// plainCall runs a 2026-07-28 call that is not a task for caller: the
// requestState of its input requests is sealed to the call, and, when the
// client declared elicitation, questions asked in its middle (a relayed
// question of an imported server, an approval) go to the client as held
// rounds (mrtr.go).
func (s *Server) plainCall(ctx context.Context, caller, name string, args json.RawMessage, wrap bool, slot *inputSlot, caps *mcp.ClientCapabilities) (*mcp.CallToolResult, error) {
	ctx = context.WithValue(ctx, inputKey{}, slot)
	if s.rounds.off {
		return s.execute(ctx, name, args, wrap, slot)
	}
	slot.seal = func(state string) string { return s.rounds.seal(caller, name, args, roundState{Tool: state}) }
	if caps == nil && slot.ss != nil {
		if p := slot.ss.InitializeParams(); p != nil {
			caps = p.Capabilities
		}
	}
	if caps == nil || caps.Elicitation == nil {
		return s.execute(ctx, name, args, wrap, slot)
	}
	return s.rounds.hold(ctx, caller, name, args, func(ctx context.Context) (*mcp.CallToolResult, error) {
		return s.execute(ctx, name, args, wrap, slot)
	})
}

// execute runs the tool registered as name for a tools/call whose
// context, carrying slot, is ctx, and returns the call's answer: a
// result, a JSON-RPC error, or the context's error when the client
// canceled the call.
func (s *Server) execute(ctx context.Context, name string, args json.RawMessage, wrap bool, slot *inputSlot) (*mcp.CallToolResult, error) {
	res := s.reg.Execute(ctx, name, args)
	slot.kind = res.Kind
	if ans, err := slot.answer(); (ans != nil || err != nil) && res.IsError && (res.Kind == tool.KindToolError || res.Kind == tool.KindDenied) {
		// The tool asked the client for input (RequestInput), or an
		// ElicitApprover asked its user to approve the call.
		return ans, err
	}
	if res.IsError && res.Kind == tool.KindNotFound {
		// Removed between go-sdk's lookup and ours.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
	}
	if res.IsError && res.Kind == tool.KindCanceled && ctx.Err() != nil {
		// The client canceled the request: no response is due.
		return nil, context.Cause(ctx)
	}
	return callResult(res, wrap), nil
}

type sessionKey struct{}

// Session returns the MCP session of the client whose tools/call a tool is
// serving, or nil when ctx does not belong to such a call. A tool uses it
// for requests to the client, such as sampling (CreateMessage) or
// elicitation (Elicit), after checking that the client declared the
// capability; the request must use ctx, so that it ends with the call.
//
// Such requests work in 2025-11-25 sessions only: the 2026-07-28 protocol
// has no requests from server to client, and go-sdk refuses them with an
// error. A 2026-07-28 call has no session, and Session may return nil for
// it (it does for the calls [Server.ServeHTTP] answers itself).
// [RequestInput] works in both, and is the way to write a tool that asks
// its client for input.
func Session(ctx context.Context) *mcp.ServerSession {
	ss, _ := ctx.Value(sessionKey{}).(*mcp.ServerSession)
	return ss
}

// clientLog returns the handler behind [tool.ClientLogger] for the
// request whose context is ctx: records become notifications/message from
// logger name, sent only at or above the level the client set (with
// logging/setLevel, or per request in the 2026-07-28 protocol), and not at
// all when it set none.
func clientLog(ctx context.Context, ss *mcp.ServerSession, name string) slog.Handler {
	//lint:ignore SA1019 logging is deprecated by 2026-07-28 but still in use, and 2025-11-25 clients rely on it
	h := mcp.NewLoggingHandler(ss, &mcp.LoggingHandlerOptions{LoggerName: name})
	return requestHandler{ctx, h}
}

// requestHandler sends every record with the context of the request it
// was made for, whatever context the tool logged with: that context holds
// the level a 2026-07-28 client asked for and ties the notification to
// the request's stream, and a tool that logs with Info rather than
// InfoContext would otherwise lose both.
type requestHandler struct {
	ctx context.Context
	h   slog.Handler
}

func (r requestHandler) Enabled(_ context.Context, l slog.Level) bool { return r.h.Enabled(r.ctx, l) }
func (r requestHandler) Handle(_ context.Context, rec slog.Record) error {
	return r.h.Handle(r.ctx, rec)
}
func (r requestHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestHandler{r.ctx, r.h.WithAttrs(as)}
}
func (r requestHandler) WithGroup(name string) slog.Handler {
	return requestHandler{r.ctx, r.h.WithGroup(name)}
}

// progressRelay returns a ProgressFunc that sends notifications/progress
// for the request whose token is tok, dropping reports whose progress does
// not grow (MCP requires it to increase with every notification).
func progressRelay(ctx context.Context, ss *mcp.ServerSession, tok any) tool.ProgressFunc {
	var mu sync.Mutex
	last, sent := 0.0, false
	return func(progress, total float64, message string) {
		mu.Lock()
		defer mu.Unlock()
		if sent && progress <= last {
			return
		}
		last, sent = progress, true
		// The tool's context derives from the request's, so the
		// notification travels on the request's own stream over HTTP.
		_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: tok, Progress: progress, Total: total, Message: message,
		})
	}
}

// callResult converts a Result into an MCP tools/call result: a text
// block for Output, then one block per Part. A structured result comes
// back both as structuredContent and as its JSON text, for clients that
// read only content.
func callResult(res tool.Result, wrap bool) *mcp.CallToolResult {
	if res.IsError {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: res.Error}}}
	}
	out := &mcp.CallToolResult{Content: []mcp.Content{}}
	text := res.Output
	if len(res.Structured) > 0 {
		if text == "" {
			text = string(res.Structured)
		}
		if wrap {
			out.StructuredContent = map[string]json.RawMessage{wrapKey: res.Structured}
		} else {
			out.StructuredContent = res.Structured
		}
	}
	if text != "" || len(res.Structured) == 0 && len(res.Parts) == 0 {
		out.Content = append(out.Content, &mcp.TextContent{Text: text})
	}
	for _, p := range res.Parts {
		out.Content = append(out.Content, partContent(p))
	}
	return out
}

// partContent converts a Part, already checked by Execute, into an MCP
// content block.
func partContent(p tool.Part) mcp.Content {
	switch p.Type {
	case tool.PartImage:
		return &mcp.ImageContent{MIMEType: p.MIMEType, Data: p.Data}
	case tool.PartAudio:
		return &mcp.AudioContent{MIMEType: p.MIMEType, Data: p.Data}
	case tool.PartResource:
		rc := &mcp.ResourceContents{URI: p.URI, MIMEType: p.MIMEType, Text: p.Text}
		if len(p.Data) > 0 {
			rc.Text, rc.Blob = "", p.Data
		}
		return &mcp.EmbeddedResource{Resource: rc}
	case tool.PartResourceLink:
		return &mcp.ResourceLink{URI: p.URI, Name: p.Name, Description: p.Description, MIMEType: p.MIMEType}
	}
	// A type added to package tool after this code: describe it.
	return &mcp.TextContent{Text: p.String()}
}
