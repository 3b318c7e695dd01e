package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"

	"github.com/miniopenclaw/tool/internal/jsontext"
	"github.com/miniopenclaw/tool/policy"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Names from the MCP specification that route an HTTP request.
const (
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerSessionID       = "Mcp-Session-Id"
	metaProtocolVersion   = "io.modelcontextprotocol/protocolVersion"
	statelessVersion      = "2026-07-28" // the first revision without sessions
	maxPeekBytes          = mcp.DefaultMaxRequestBodyBytes
)

// MaxBatchMessages bounds the messages of one JSON-RPC batch a POST may
// carry (a session of protocol 2025-03-26, the last revision with
// batches; later ones refuse any). A longer batch is refused with 400 and
// a JSON-RPC error (-32600) before any of its messages is handled: one
// request of a few MiB would otherwise start thousands of calls at once.
const MaxBatchMessages = 64

// httpHandlers are the two go-sdk handlers one endpoint dispatches to.
type httpHandlers struct {
	stateless http.Handler // 2026-07-28 and later: no sessions
	sessions  http.Handler // 2025-11-25 and earlier: initialize, Mcp-Session-Id
	checkIDs  bool         // refuse ids go-sdk does not echo exactly (exactIDs)
}

func newHTTPHandlers(sdk *mcp.Server, jsonResponse bool) *httpHandlers {
	get := func(*http.Request) *mcp.Server { return sdk }
	return &httpHandlers{
		stateless: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
			Stateless:                    true,
			PropagateRequestCancellation: true, // a closed response stream is a cancellation
			JSONResponse:                 jsonResponse,
		}),
		sessions: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse}),
	}
}

// ServeHTTP serves the registry over the MCP Streamable HTTP transport, so
// a Server can be mounted on a mux at the endpoint path of the caller's
// choice (conventionally /mcp).
//
// One endpoint speaks both protocol eras. A request of the 2026-07-28
// revision (an MCP-Protocol-Version header, or the protocol version in
// the request's _meta, of 2026-07-28 or later) is served statelessly:
// every POST is a whole exchange, progress travels on its response stream,
// and list changes reach clients through subscriptions/listen. Any other
// request (a legacy initialize, a request carrying Mcp-Session-Id, a GET
// or DELETE of a session) is served with 2025-11-25 sessions.
//
// A POST that carries one call is answered with a single application/json
// body when nothing but the response can come of it (a 2026-07-28
// tools/call without a progress token or a log level; a 2025-11-25
// tools/call without a progress token, in a session whose client declared
// neither sampling nor elicitation and set no log level, where a roots
// request a tool still makes goes on the session's GET stream, as under
// [WithJSONResponse]), and otherwise with an event stream whose last
// event, the response, leaves together with the end of the body;
// [WithJSONResponse] makes every answer JSON. Either way a client that
// cancels each call's context as soon as the call returns keeps its
// connection.
//
// Cross-origin browser requests are refused with 403 (the specification
// requires servers to validate Origin), and so is a request that reaches
// a loopback listener under a non-loopback Host name (DNS rebinding);
// Host names are compared as DNS does, without regard to case or a
// trailing dot. Bind local servers to 127.0.0.1.
//
// Every request is decided for the principal of its own context
// (policy.PrincipalFrom, as bearer.RequireToken sets it from the
// request's bearer token), never for the one of the session it names:
// sessions are not authentication. A 2025-11-25 session is bound to the
// principal ID of the request that initialized it (the anonymous
// principal when that request carried none), and a request that names
// the session with another principal, or none, is answered 404 Not
// Found, whatever its method (POST, GET stream, DELETE): for that caller
// the session does not exist, so a client that meets it starts a session
// of its own, as the specification says it must. A new token for the
// same principal may go on with the session (access tokens are refreshed
// while sessions last), and the roles and attributes of each request are
// its own. The principal reaches the tools, the [WithToolFilter] and the
// registry's Authorizer through each request's context; middleware added
// with [Server.MCP] runs outside the server's and sees no principal on
// the context, but the request's own in req.GetExtra().TokenInfo.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.httpOnce.Do(func() {
		h := newHTTPHandlers(s.sdk, s.cfg.jsonResponse)
		h.checkIDs = true
		s.http = http.NewCrossOriginProtection().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rest := func(w http.ResponseWriter, r *http.Request) {
				if r, ok := s.withCaller(w, r); ok {
					if r.Method == http.MethodDelete && r.Header.Get(headerSessionID) != "" {
						w = s.ending(w, r.Header.Get(headerSessionID))
					}
					r, listen, done := s.bounded(r)
					defer done()
					if (listen || r.Method == http.MethodGet) && !s.cfg.noStreamQueue {
						var drain func()
						w, r, drain = queueStream(w, r, s.logger())
						defer drain()
					}
					h.route(w, r)
				}
			}
			if s.serveTasks(w, r) || s.serveDirect(w, r) || s.serveSession(w, r) || s.serveLegacyTasks(w, r, rest) {
				return
			}
			rest(w, r)
		}))
	})
	r, release, ok := s.admitRequest(w, r)
	if !ok {
		return
	}
	defer release()
	w, lift := boundWrites(w, s.cfg.writeTimeout)
	defer lift()
	s.http.ServeHTTP(w, canonicalHost(r))
}

// A caller is who sent one HTTP request: the principal its context
// carried, and the key its session is bound to.
type caller struct {
	p   policy.Principal
	ok  bool   // false: the anonymous principal
	key string // see callerKey
}

// callerExtra is the key under which the caller travels in the
// TokenInfo's Extra of the request given to go-sdk.
const callerExtra = "github.com/miniopenclaw/tool/mcptool.caller"

// callerKey identifies a caller for session binding: the principal ID,
// and the user ID of a go-sdk TokenInfo a host's middleware set. Quoting
// keeps it unambiguous.
func callerKey(p policy.Principal, ok bool, tokenUser string) string {
	key := anonymousKey
	if ok {
		key = "user " + strconv.Quote(p.ID)
	}
	if tokenUser != "" {
		key += " token-user " + strconv.Quote(tokenUser)
	}
	return key
}

// withCaller refuses r when it names a session that is not its caller's,
// and otherwise returns r as go-sdk is to serve it: its context carries
// no principal (go-sdk keeps the context of a session's first request
// for all the session's requests) and the caller rides in a TokenInfo,
// which go-sdk hands to the server with each request (see callerContext).
func (s *Server) withCaller(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	ctx := r.Context()
	p, ok := policy.PrincipalFrom(ctx)
	info := &auth.TokenInfo{}
	if ti := auth.TokenInfoFromContext(ctx); ti != nil {
		*info = *ti
		info.Extra = maps.Clone(ti.Extra)
	}
	c := &caller{p: p, ok: ok, key: callerKey(p, ok, info.UserID)}
	if ids := r.Header.Values(headerSessionID); len(ids) > 0 {
		if bound, found := s.bound.Load(ids[0]); len(ids) > 1 || !found || bound.(string) != c.key {
			// Not this caller's session; go-sdk says the same of a
			// session that does not exist.
			http.Error(w, "session not found", http.StatusNotFound)
			return nil, false
		}
	}
	if info.Extra == nil {
		info.Extra = map[string]any{}
	}
	info.Extra[callerExtra] = c
	if info.UserID == "" {
		// go-sdk binds the session to it too: a second lock on the
		// same door.
		info.UserID = c.key
	}
	ctx, ok = withTokenInfo(policy.WithoutPrincipal(ctx), info)
	if !ok {
		http.Error(w, "mcptool: the request's caller cannot be passed on", http.StatusInternalServerError)
		return nil, false
	}
	return r.WithContext(ctx), true
}

// withTokenInfo returns ctx carrying info where go-sdk's transport reads
// it (auth.TokenInfoFromContext). go-sdk sets it only in its own bearer
// token middleware, so this runs that middleware with a verifier that
// returns info, and reports false if it did not pass the request on.
func withTokenInfo(ctx context.Context, info *auth.TokenInfo) (context.Context, bool) {
	var out context.Context
	mw := auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) { return info, nil },
		&auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	inner := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { out = r.Context() })
	req := (&http.Request{Header: http.Header{"Authorization": {"Bearer caller"}}}).WithContext(ctx)
	mw(inner).ServeHTTP(discardWriter{}, req)
	return out, out != nil
}

// discardWriter is the ResponseWriter of withTokenInfo's inner request.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) WriteHeader(int)             {}

// requestCaller returns the caller withCaller attached to req, or nil
// for a request that did not come through ServeHTTP (stdio, an
// in-memory transport, or a go-sdk handler of the host's own).
func requestCaller(req mcp.Request) *caller {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	c, _ := extra.TokenInfo.Extra[callerExtra].(*caller)
	return c
}

// callerContext is the server's outermost receiving middleware: each
// request that came through ServeHTTP is handled with the principal of
// its own caller, not the one the session's context carries, and the
// initialize of a session binds the session to its caller until the
// session ends.
func (s *Server) callerContext(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		c := requestCaller(req)
		if c == nil {
			return next(ctx, method, req)
		}
		if c.ok {
			ctx = policy.WithPrincipal(ctx, c.p)
		} else {
			ctx = policy.WithoutPrincipal(ctx)
		}
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && method == "initialize" && ss.ID() != "" {
			if _, loaded := s.bound.LoadOrStore(ss.ID(), c.key); !loaded {
				s.live.Store(ss.ID(), &liveSession{ss: ss, key: c.key})
				// Past a bound of WithSessionLimits, an older session
				// ends: from now on its requests get 404.
				end := func() {
					s.live.Delete(ss.ID())
					s.bound.Delete(ss.ID())
					go ss.Close()
				}
				for _, old := range s.sessions.admit(ss.ID(), c.key, end) {
					old.end()
				}
				go func() {
					_ = ss.Wait()
					s.sessions.forget(ss.ID())
					s.live.Delete(ss.ID())
					s.bound.Delete(ss.ID())
				}()
			}
		} else if ok && method == "logging/setLevel" {
			// From now on the session's calls may log to the client:
			// go-sdk serves them, on their own streams.
			if v, found := s.live.Load(ss.ID()); found {
				v.(*liveSession).logging.Store(true)
			}
		}
		return next(ctx, method, req)
	}
}

// ending prepares the end of session id, the caller's own, by a DELETE:
// the direct session path stops taking its calls at once (and cancels
// those it runs, as go-sdk cancels its own), and when go-sdk answers the
// DELETE with success, the session is forgotten before the answer
// leaves, so that no request the client sends after it is served on the
// session (a goroutine forgets it too when the session ends, but later).
func (s *Server) ending(w http.ResponseWriter, id string) http.ResponseWriter {
	if v, ok := s.live.LoadAndDelete(id); ok {
		l := v.(*liveSession)
		l.mu.Lock()
		for _, cancel := range l.calls {
			cancel()
		}
		l.mu.Unlock()
	}
	return &endingWriter{ResponseWriter: w, end: func() { s.bound.Delete(id) }}
}

// An endingWriter calls end before it writes a success status.
type endingWriter struct {
	http.ResponseWriter
	end   func()
	wrote bool
}

func (w *endingWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		if code >= 200 && code < 300 {
			w.end()
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *endingWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *endingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// route sends r to the handler of its protocol era.
func (h *httpHandlers) route(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, ok := readBody(r)
		if ok && h.checkIDs && !exactIDs(body) {
			refuseInvalid(w, errInexactID)
			return
		}
		if ok && !batch(body) {
			w = &finalFlushWriter{ResponseWriter: w}
		} else if ok {
			if n := batchLen(body); n > MaxBatchMessages {
				refuseBatch(w, n)
				return
			}
		}
	}
	if statelessRequest(r) {
		h.stateless.ServeHTTP(w, shieldArguments(r))
	} else {
		h.sessions.ServeHTTP(w, r)
	}
}

// statelessRequest reports whether r belongs to the 2026-07-28 era. It
// may read the body of a POST, and puts it back for the handler.
func statelessRequest(r *http.Request) bool {
	if r.Header.Get(headerSessionID) != "" {
		return false
	}
	if v := r.Header.Get(headerProtocolVersion); v != "" {
		return v >= statelessVersion
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return false
	}
	// No version header: a legacy initialize, or a modern request that
	// left the header out (which the stateless handler reports properly).
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPeekBytes+1))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil {
		return false
	}
	var msg struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false
	}
	var v string
	_ = json.Unmarshal(msg.Params.Meta[metaProtocolVersion], &v)
	return v >= statelessVersion
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

// batch reports whether a request body is a JSON-RPC batch (an array).
func batch(body []byte) bool {
	i := jsontext.SkipSpace(body, 0)
	return i < len(body) && body[i] == '['
}

// batchLen returns how many messages the JSON-RPC batch body holds, or
// 0 when it is not a JSON array (go-sdk refuses that itself).
func batchLen(body []byte) int {
	var msgs []json.RawMessage
	if json.Unmarshal(body, &msgs) != nil {
		return 0
	}
	return len(msgs)
}

// refuseBatch answers a batch of n messages, more than MaxBatchMessages,
// with 400 and a JSON-RPC Invalid Request error.
func refuseBatch(w http.ResponseWriter, n int) {
	refuseInvalid(w, fmt.Sprintf("Invalid Request: a JSON-RPC batch of %d messages; this server takes at most %d in one batch (MCP removed batches in 2025-06-18: send one message per request)", n, MaxBatchMessages))
}

// refuseInvalid answers 400 with a JSON-RPC Invalid Request error (-32600)
// saying msg, under a null id.
func refuseInvalid(w http.ResponseWriter, msg string) {
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32600, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(data)
}

// A finalFlushWriter is the ResponseWriter of a POST that carries one
// message. It does not flush after the event that carries a JSON-RPC
// response, the last event of the stream: that event then leaves with the
// end of the body, in one write, so a client that cancels the call's
// context as soon as it has the response has already read the whole body
// and can reuse the connection. (go-sdk's client drains the stream after
// delivering the response, and a cancellation that wins that race closes
// the connection.) Notifications and requests before it are flushed as
// they are written.
type finalFlushWriter struct {
	http.ResponseWriter
	held bool // the last write was a response event
}

func (w *finalFlushWriter) Write(p []byte) (int, error) {
	w.held = responseEvent(p)
	return w.ResponseWriter.Write(p)
}

// Flush flushes unless the last write was a response event.
func (w *finalFlushWriter) Flush() {
	if !w.held {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *finalFlushWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// responseEvent reports whether p is one whole SSE event whose data is a
// JSON-RPC response (a result or an error, no method).
func responseEvent(p []byte) bool {
	_, data, ok := bytes.Cut(p, []byte("\ndata: "))
	if !ok && bytes.HasPrefix(p, []byte("data: ")) {
		data, ok = p[len("data: "):], true
	}
	data, found := bytes.CutSuffix(data, []byte("\n\n"))
	if !ok || !found || bytes.IndexByte(data, '\n') >= 0 {
		return false
	}
	var response, request bool
	members(data, func(key string, _ []byte) bool {
		switch key {
		case "result", "error":
			response = true
		case "method":
			request = true
		}
		return true
	})
	return response && !request
}
