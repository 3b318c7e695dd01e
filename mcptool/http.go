package mcptool

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/miniopenclaw/tool/internal/jsontext"
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

// httpHandlers are the two go-sdk handlers one endpoint dispatches to.
type httpHandlers struct {
	stateless http.Handler // 2026-07-28 and later: no sessions
	sessions  http.Handler // 2025-11-25 and earlier: initialize, Mcp-Session-Id
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
// tools/call without a progress token or a log level), and otherwise with
// an event stream whose last event, the response, leaves together with
// the end of the body; [WithJSONResponse] makes every answer JSON. Either
// way a client that cancels each call's context as soon as the call
// returns keeps its connection.
//
// Cross-origin browser requests are refused with 403 (the specification
// requires servers to validate Origin), and so is a request that reaches
// a loopback listener under a non-loopback Host name (DNS rebinding);
// Host names are compared as DNS does, without regard to case or a
// trailing dot. Bind local servers to 127.0.0.1.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.httpOnce.Do(func() {
		h := newHTTPHandlers(s.sdk, s.cfg.jsonResponse)
		s.http = http.NewCrossOriginProtection().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !s.serveDirect(w, r) {
				h.route(w, r)
			}
		}))
	})
	s.http.ServeHTTP(w, canonicalHost(r))
}

// route sends r to the handler of its protocol era.
func (h *httpHandlers) route(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		if body, ok := readBody(r); ok && !batch(body) {
			w = &finalFlushWriter{ResponseWriter: w}
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
