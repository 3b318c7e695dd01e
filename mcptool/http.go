package mcptool

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

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

func newHTTPHandlers(sdk *mcp.Server) *httpHandlers {
	get := func(*http.Request) *mcp.Server { return sdk }
	return &httpHandlers{
		stateless: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
			Stateless:                    true,
			PropagateRequestCancellation: true, // a closed response stream is a cancellation
		}),
		sessions: mcp.NewStreamableHTTPHandler(get, nil),
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
// Cross-origin browser requests are refused with 403 (the specification
// requires servers to validate Origin), and so is a request that reaches
// a loopback listener under a non-loopback Host name (DNS rebinding);
// Host names are compared as DNS does, without regard to case or a
// trailing dot. Bind local servers to 127.0.0.1.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.httpOnce.Do(func() {
		s.http = http.NewCrossOriginProtection().Handler(http.HandlerFunc(newHTTPHandlers(s.sdk).route))
	})
	s.http.ServeHTTP(w, canonicalHost(r))
}

// route sends r to the handler of its protocol era.
func (h *httpHandlers) route(w http.ResponseWriter, r *http.Request) {
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
