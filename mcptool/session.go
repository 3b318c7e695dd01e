package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The direct session path: a tools/call in a 2025-11-25 session is
// answered by ServeHTTP itself, with one strict parse of the body and one
// application/json response, rather than through go-sdk's session
// transport, which decodes the message into a 32 KiB buffer, routes it
// through the session's connection and answers with an event stream. go-sdk
// keeps owning the session: initialize, the GET stream, DELETE,
// notifications, and every request the direct path does not take.
//
// It takes a call only where go-sdk's answer could carry nothing but the
// response: a session whose client declared neither sampling nor
// elicitation and has not set a log level, a call without a progress
// token, _meta or task. A message a tool still sends the client through
// [Session] (roots, the only request such a client can answer) goes on
// the session's standalone stream, as go-sdk's own handler sends it under
// [WithJSONResponse]. A notifications/cancelled naming a call the direct
// path runs cancels it, as go-sdk cancels the calls it runs (and go-sdk
// still receives the notification).

// A liveSession is a 2025-11-25 session go-sdk serves, as the direct
// session path needs it.
type liveSession struct {
	ss      *mcp.ServerSession
	key     string      // the caller the session is bound to (callerKey)
	logging atomic.Bool // the client sent logging/setLevel

	mu    sync.Mutex
	calls map[string]context.CancelFunc // the direct calls running, by requestKey
}

// start records a direct call with the request id, canceled by cancel,
// and returns the function that forgets it. A second call with an id
// already running is not recorded: a cancellation names one request.
func (l *liveSession) start(id []byte, cancel context.CancelFunc) (done func()) {
	key, ok := requestKey(id)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, dup := l.calls[key]; !ok || dup {
		return func() {}
	}
	if l.calls == nil {
		l.calls = map[string]context.CancelFunc{}
	}
	l.calls[key] = cancel
	return func() {
		l.mu.Lock()
		delete(l.calls, key)
		l.mu.Unlock()
	}
}

// cancel cancels the direct call with the request id, if one is running.
func (l *liveSession) cancel(id []byte) {
	key, ok := requestKey(id)
	if !ok {
		return
	}
	l.mu.Lock()
	cancel := l.calls[key]
	l.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// requestKey is the form of a JSON-RPC id (a string or an integer) that
// two spellings of the same id share.
func requestKey(id []byte) (string, bool) {
	if s, ok := stringValue(id); ok {
		return "s" + s, true
	}
	if !validID(id) {
		return "", false
	}
	n, err := strconv.ParseInt(string(id), 10, 64)
	return "n" + strconv.FormatInt(n, 10), err == nil
}

// sessionCall is a parsed 2025-11-25 tools/call request.
type sessionCall struct {
	id   []byte // the request's id, as sent
	name string
	args json.RawMessage
}

// serveSession answers r if it is a tools/call of a 2025-11-25 session
// bound to r's caller that the direct session path takes, and reports
// whether it did. When it did not, r (with its body) is as it came.
func (s *Server) serveSession(w http.ResponseWriter, r *http.Request) bool {
	h := r.Header
	ids := h.Values(headerSessionID)
	if s.sdkShared.Load() || r.Method != http.MethodPost || len(ids) != 1 || h.Get(headerProtocolVersion) != legacyVersion ||
		len(h.Values(headerLastEventID)) > 0 || !jsonContent(h.Get("Content-Type")) || !acceptsBoth(h.Values("Accept")) || !hostAllowed(r) {
		return false
	}
	v, ok := s.live.Load(ids[0])
	if !ok {
		return false
	}
	live := v.(*liveSession)
	ctx := r.Context()
	p, hasPrincipal := policy.PrincipalFrom(ctx)
	user := ""
	if ti := auth.TokenInfoFromContext(ctx); ti != nil {
		user = ti.UserID
	}
	if live.key != callerKey(p, hasPrincipal, user) || live.logging.Load() {
		return false // go-sdk's path answers 404, or sends the logs
	}
	params := live.ss.InitializeParams()
	if params == nil || params.ProtocolVersion != legacyVersion ||
		params.Capabilities != nil && (params.Capabilities.Sampling != nil || params.Capabilities.Elicitation != nil) {
		return false
	}
	body, ok := readBody(r)
	if !ok {
		return false
	}
	call, ok := parseSessionCall(body)
	if !ok {
		if id, ok := parseCancellation(body); ok {
			// go-sdk cancels the calls it runs; this cancels the one
			// the direct path runs, and go-sdk still answers.
			live.cancel(id)
		}
		return false
	}
	dt, ok := s.direct.Load(call.name)
	if !ok || dt.(*directTool).taskOnly {
		return false
	}

	ss := live.ss
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer live.start(call.id, cancel)()
	slot := &inputSlot{ss: ss}
	ctx = context.WithValue(ctx, sessionKey{}, ss)
	ctx = tool.WithClientLogger(ctx, slog.New(clientLog(ctx, ss, call.name)))
	wrap := dt.(*directTool).wrap
	res, err := s.execute(context.WithValue(ctx, inputKey{}, slot), call.name, call.args, wrap, slot)
	if err == nil && res.InputRequests != nil {
		// What go-sdk does for a client without multi round-trip
		// requests: put them to the client, and call once more.
		res, err = s.fulfill(ctx, ss, call, wrap, res)
	}
	if err != nil {
		var jerr *jsonrpc.Error
		if !errors.As(err, &jerr) {
			if ctx.Err() != nil {
				return true // the client went away: no response is due
			}
			jerr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		data, merr := json.Marshal(jerr)
		if merr != nil {
			data = []byte(`{"code":-32603,"message":"internal error"}`)
		}
		writeDirect(w, http.StatusOK, call.id, "error", data)
		return true
	}
	if data, ok := textResultJSON(res); ok {
		writeDirect(w, http.StatusOK, call.id, "result", data)
		return true
	}
	if res.Content == nil && res.InputRequests == nil {
		res.Content = []mcp.Content{}
	}
	data, err := json.Marshal(res)
	if err != nil {
		data, _ = json.Marshal(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()})
		writeDirect(w, http.StatusOK, call.id, "error", data)
		return true
	}
	writeDirect(w, http.StatusOK, call.id, "result", data)
	return true
}

// fulfill puts the input requests of res (only roots can be asked of a
// session the direct path serves) to the client of ss and runs the call
// again with the answers, once.
func (s *Server) fulfill(ctx context.Context, ss *mcp.ServerSession, call sessionCall, wrap bool, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	if len(res.InputRequests) == 0 {
		return nil, errors.New("the server is busy, retry later")
	}
	answers := make(mcp.InputResponseMap, len(res.InputRequests))
	for id, ir := range res.InputRequests {
		p, ok := ir.(*mcp.ListRootsParams)
		if !ok {
			return nil, fmt.Errorf("multi-round-trip: fulfilling input request %q: the client cannot answer %T", id, ir)
		}
		//lint:ignore SA1019 roots are deprecated by 2026-07-28 but 2025-11-25 clients answer them
		roots, err := ss.ListRoots(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("multi-round-trip: fulfilling input request %q: %w", id, err)
		}
		answers[id] = roots
	}
	slot := &inputSlot{ss: ss, responses: answers, state: res.RequestState}
	return s.execute(context.WithValue(ctx, inputKey{}, slot), call.name, call.args, wrap, slot)
}

// parseCancellation returns the requestId of body if it is a
// notifications/cancelled.
func parseCancellation(body []byte) ([]byte, bool) {
	var method, params, id []byte
	ok := members(body, func(key string, v []byte) bool {
		switch key {
		case "method":
			method = v
		case "params":
			params = v
		}
		return true
	})
	if !ok || string(method) != `"notifications/cancelled"` || params == nil {
		return nil, false
	}
	ok = members(params, func(key string, v []byte) bool {
		if key == "requestId" {
			id = v
		}
		return true
	})
	return id, ok && id != nil
}

// parseSessionCall parses body as a 2025-11-25 tools/call the direct
// session path takes: exactly the members jsonrpc "2.0", an integer or
// string id, method "tools/call" and params, whose members are name and
// optionally arguments (an object). Keys match exactly and may not
// repeat; anything else is left to go-sdk.
func parseSessionCall(body []byte) (sessionCall, bool) {
	var c sessionCall
	var params, name []byte
	var ok bool
	if c.id, params, ok = parseCallEnvelope(body); !ok {
		return c, false
	}
	ok = members(params, func(key string, v []byte) bool {
		switch key {
		case "name":
			name = v
		case "arguments":
			c.args = v
		default:
			return false
		}
		return true
	})
	if !ok || c.args != nil && c.args[0] != '{' {
		return c, false
	}
	c.name, ok = stringValue(name)
	return c, ok
}

// textResultJSON encodes the commonest result, one text block and nothing
// else, as json.Marshal encodes it, without the reflection; ok is false
// for any other result.
func textResultJSON(res *mcp.CallToolResult) (data []byte, ok bool) {
	if len(res.Content) != 1 || res.Meta != nil || res.StructuredContent != nil || res.InputRequests != nil || res.RequestState != "" {
		return nil, false
	}
	tc, isText := res.Content[0].(*mcp.TextContent)
	if !isText || tc.Meta != nil || tc.Annotations != nil || !plainString(tc.Text) {
		return nil, false
	}
	data = make([]byte, 0, len(`{"content":[{"type":"text","text":""}],"isError":true}`)+len(tc.Text))
	data = append(data, `{"content":[{"type":"text","text":"`...)
	data = append(data, tc.Text...)
	data = append(data, `"}]`...)
	if res.IsError {
		data = append(data, `,"isError":true`...)
	}
	return append(data, '}'), true
}

// plainString reports whether s is printable ASCII that JSON, and
// encoding/json, write as it is between quotes.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
