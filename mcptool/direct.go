package mcptool

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/miniopenclaw/tool/internal/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The direct path: a 2026-07-28 tools/call over HTTP is a whole exchange
// in one POST (no session, no server-to-client requests), so ServeHTTP
// answers the common case itself, with one strict parse of the body and
// one JSON response, rather than through go-sdk's stateless handler, which
// connects a session for every request and decodes the message several
// times. Anything the direct path does not handle exactly as go-sdk would
// (a progress token, a log level, input responses, a tool with
// x-mcp-header parameters, a malformed or unusual request) goes to go-sdk
// unchanged, so the protocol's edges stay go-sdk's.

// Names of the 2026-07-28 headers and _meta keys the direct path reads.
const (
	headerMethod      = "Mcp-Method"
	headerName        = "Mcp-Name"
	headerLastEventID = "Last-Event-ID"
	metaCapabilities  = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo    = "io.modelcontextprotocol/clientInfo"
	metaServerInfo    = "io.modelcontextprotocol/serverInfo"
	directMaxDepth    = 1000 // nesting go-sdk accepts
)

// A directTool is what the direct path needs of one served tool.
type directTool struct {
	wrap     bool // see outputWrapped
	taskOnly bool // runs only as a task (tool.TaskRequired): never directly
}

// directCall is a parsed 2026-07-28 tools/call request.
type directCall struct {
	id   []byte // the request's id, as sent
	name string
	args json.RawMessage
	caps json.RawMessage // _meta clientCapabilities, an object
}

// serveDirect answers r if it is a 2026-07-28 tools/call the direct path
// handles, and reports whether it did. When it did not, r (with its body)
// is as it came, for go-sdk to serve.
func (s *Server) serveDirect(w http.ResponseWriter, r *http.Request) bool {
	h := r.Header
	if s.sdkShared.Load() || r.Method != http.MethodPost || h.Get(headerProtocolVersion) != statelessVersion ||
		h.Get(headerMethod) != "tools/call" || h.Get(headerName) == "" ||
		len(h.Values(headerSessionID)) > 0 || len(h.Values(headerLastEventID)) > 0 ||
		!jsonContent(h.Get("Content-Type")) || !acceptsBoth(h.Values("Accept")) || !hostAllowed(r) {
		return false
	}
	body, ok := readBody(r)
	if !ok {
		return false
	}
	call, ok := parseDirectCall(body)
	if !ok || call.name != h.Get(headerName) {
		return false
	}
	v, ok := s.direct.Load(call.name)
	if !ok {
		return false
	}
	caps, ok := decodeCapabilities(call.caps)
	if !ok {
		return false
	}

	slot := &inputSlot{caps: caps}
	res, err := s.plainCall(r.Context(), ownerKey(r), call.name, call.args, v.(*directTool).wrap, slot, caps)
	if err != nil {
		var jerr *jsonrpc.Error
		if !errors.As(err, &jerr) {
			// The client went away (the request was canceled): no
			// response is due.
			return true
		}
		writeDirectError(w, call.id, jerr)
		return true
	}
	data, err := s.resultJSON(res)
	if err != nil {
		writeDirectError(w, call.id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()})
		return true
	}
	writeDirect(w, http.StatusOK, call.id, "result", data)
	return true
}

// resultJSON encodes res as a 2026-07-28 tools/call result: with the
// server's implementation in _meta and the resultType go-sdk sets.
func (s *Server) resultJSON(res *mcp.CallToolResult) ([]byte, error) {
	kind := `"complete"`
	if res.InputRequests != nil {
		kind = `"input_required"`
	} else if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	res.Meta = mcp.Meta{metaServerInfo: &s.cfg.impl}
	data, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	// data is an object with at least _meta: add resultType as its last
	// member.
	data = append(data[:len(data)-1], `,"resultType":`...)
	data = append(data, kind...)
	return append(data, '}'), nil
}

// writeDirectError writes a JSON-RPC error response with the HTTP status
// the 2026-07-28 revision requires for its code.
func writeDirectError(w http.ResponseWriter, id []byte, jerr *jsonrpc.Error) {
	status := http.StatusOK
	switch jerr.Code {
	case jsonrpc.CodeMethodNotFound:
		status = http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		status = http.StatusBadRequest
	}
	data, err := json.Marshal(jerr)
	if err != nil {
		data = []byte(`{"code":-32603,"message":"internal error"}`)
	}
	writeDirect(w, status, id, "error", data)
}

// writeDirect writes the JSON-RPC response {"jsonrpc":"2.0","id":id,
// member:value} as the whole application/json body: one message needs no
// event stream, and a body of known length lets the client reuse the
// connection however soon it cancels the call's context.
func writeDirect(w http.ResponseWriter, status int, id []byte, member string, value []byte) {
	buf := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"":}`)+len(id)+len(member)+len(value))
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"`...)
	buf = append(buf, member...)
	buf = append(buf, `":`...)
	buf = append(buf, value...)
	buf = append(buf, '}')
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "no-cache, no-transform")
	hd.Set("Content-Length", strconv.Itoa(len(buf)))
	w.WriteHeader(status)
	_, _ = w.Write(buf)
}

// readBody reads the body of r, up to the size go-sdk accepts, and puts
// it back for a later reader. It reports false when the body is too large
// or cannot be read, leaving the rest for go-sdk to refuse.
func readBody(r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.ContentLength > maxPeekBytes {
		return nil, false
	}
	var body []byte
	var err error
	if r.ContentLength >= 0 {
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, maxPeekBytes+1))
	}
	r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	return body, err == nil && len(body) <= maxPeekBytes
}

// parseCallEnvelope parses body as a JSON-RPC tools/call request made of
// exactly the members jsonrpc "2.0", an integer or string id, method
// "tools/call" and params, each once, and returns its id and params.
func parseCallEnvelope(body []byte) (id, params []byte, ok bool) {
	var version, method []byte
	ok = members(body, func(key string, v []byte) bool {
		switch key {
		case "jsonrpc":
			version = v
		case "id":
			id = v
		case "method":
			method = v
		case "params":
			params = v
		default:
			return false
		}
		return true
	})
	if !ok || string(version) != `"2.0"` || string(method) != `"tools/call"` || !validID(id) || params == nil {
		return nil, nil, false
	}
	return id, params, true
}

// parseDirectCall parses body as a 2026-07-28 tools/call request the
// direct path handles: exactly the members jsonrpc "2.0", an integer or
// string id, method "tools/call" and params, whose members are name,
// arguments (an object) and _meta, whose members are the protocol
// version, the client's capabilities (an object) and optionally its
// implementation. Keys match exactly and may not repeat; anything else is
// left to go-sdk.
func parseDirectCall(body []byte) (directCall, bool) {
	var c directCall
	var params, meta, info, pv []byte
	var ok bool
	if c.id, params, ok = parseCallEnvelope(body); !ok {
		return c, false
	}
	var name []byte
	ok = members(params, func(key string, v []byte) bool {
		switch key {
		case "name":
			name = v
		case "arguments":
			c.args = v
		case "_meta":
			meta = v
		default:
			return false
		}
		return true
	})
	if !ok || meta == nil || c.args != nil && c.args[0] != '{' {
		return c, false
	}
	if c.name, ok = stringValue(name); !ok {
		return c, false
	}
	ok = members(meta, func(key string, v []byte) bool {
		switch key {
		case metaProtocolVersion:
			pv = v
		case metaCapabilities:
			c.caps = v
		case metaClientInfo:
			info = v
		default:
			return false
		}
		return true
	})
	if !ok || string(pv) != `"`+statelessVersion+`"` || c.caps == nil || c.caps[0] != '{' {
		return c, false
	}
	if info != nil {
		var impl mcp.Implementation
		if info[0] != '{' || json.Unmarshal(info, &impl) != nil {
			return c, false
		}
	}
	return c, true
}

// maxMembers bounds the members of an object members reads: every
// object the direct paths take (a request, its params, their _meta, a
// cancellation) has a handful. A longer one is left to go-sdk, which
// reads it in linear time; members checks each key against the ones
// before it, so a notifications/cancelled of 40,000 keys (430 KB) took
// 4 s, and one of 4 MiB minutes, of a core (TestHostileManyMembers).
const maxMembers = 16

// members calls f with each member of the JSON object data (its key
// decoded, its value as raw JSON) and reports whether data is one valid
// object of at most maxMembers members, with no key repeated, for which
// f returned true every time.
func members(data []byte, f func(key string, value []byte) bool) bool {
	return membersUpTo(data, maxMembers, f, nil)
}

// membersUpTo is members with a bound of most members; it adds to
// compared, when not nil, the keys it compared.
func membersUpTo(data []byte, most int, f func(key string, value []byte) bool, compared *int) bool {
	i := jsontext.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	var seenArray [8]string // room for the members of the usual requests
	seen := seenArray[:0]
	i = jsontext.SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return jsontext.SkipSpace(data, i+1) == len(data)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return false
		}
		k, next, err := jsontext.ReadString(data, i, nil)
		if err != nil {
			return false
		}
		if len(seen) == most {
			return false
		}
		key := string(k)
		for _, s := range seen {
			if s == key {
				return false
			}
		}
		if compared != nil {
			*compared += len(seen)
		}
		seen = append(seen, key)
		i = jsontext.SkipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		start := jsontext.SkipSpace(data, i+1)
		end, err := jsontext.SkipValue(data, start, 1, directMaxDepth)
		if err != nil || !f(key, data[start:end]) {
			return false
		}
		i = jsontext.SkipSpace(data, end)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = jsontext.SkipSpace(data, i+1)
		case '}':
			return jsontext.SkipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}

// validID reports whether v is a JSON-RPC id the server answers with
// exactly: a string, or an integer of magnitude at most 2^53 in its
// shortest form (see exactID); another is left to the path that refuses
// it.
func validID(v []byte) bool {
	return len(v) > 0 && string(v) != "null" && exactID(v)
}

// stringValue decodes the JSON string v.
func stringValue(v []byte) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	s, _, err := jsontext.ReadString(v, 0, nil)
	return string(s), err == nil
}

// capabilitiesV2 is the 2026-07-28 form of the client's capabilities,
// where roots is a capability of its own.
type capabilitiesV2 struct {
	mcp.ClientCapabilities
	Roots *mcp.RootCapabilities `json:"roots,omitempty"`
}

// decodeCapabilities decodes the clientCapabilities of a request's _meta
// into go-sdk's form, as its stateless handler does.
func decodeCapabilities(raw json.RawMessage) (*mcp.ClientCapabilities, bool) {
	var v2 capabilitiesV2
	if json.Unmarshal(raw, &v2) != nil {
		return nil, false
	}
	caps := v2.ClientCapabilities
	caps.RootsV2 = v2.Roots
	if caps.RootsV2 != nil {
		caps.Roots = *caps.RootsV2
	}
	return &caps, true
}

// jsonContent reports whether a Content-Type is application/json.
func jsonContent(ct string) bool {
	base, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(base), "application/json")
}

// acceptsBoth reports whether Accept headers admit both application/json
// and text/event-stream, which a Streamable HTTP client must send.
func acceptsBoth(values []string) bool {
	var jsonOK, streamOK bool
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(t, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// hostAllowed reports whether r passes go-sdk's DNS rebinding check: a
// request to a loopback listener must name a loopback host. A request
// that does not is left to go-sdk, which refuses it.
func hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !loopback(local.String()) {
		return true
	}
	return loopback(r.Host)
}

// loopback reports whether a host, with or without a port, is localhost
// or a loopback IP address.
func loopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
