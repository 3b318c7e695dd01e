package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// argumentsKey carries the arguments of a tools/call whose numbers go-sdk
// cannot read, from the HTTP layer to the call's handler.
type argumentsKey struct{}

// shieldArguments works around go-sdk v1.8.0, which refuses a 2026-07-28
// tools/call with a protocol error (-32020, "failed to extract name") when
// its arguments hold a number beyond float64 (1e400): it checks the
// Mcp-Name header against the body by reading the arguments into Go
// values. Such a call's arguments are replaced by {} for go-sdk and handed
// to the tool's handler, unchanged, through the request's context, so
// that the model gets a result saying what was wrong. Any other request
// is returned as it is, with its body put back.
func shieldArguments(r *http.Request) *http.Request {
	if r.Method != http.MethodPost || r.Body == nil || r.Header.Get("Mcp-Method") != "tools/call" {
		return r
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPeekBytes+1))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || !hasHugeNumber(body) {
		return r
	}
	var msg map[string]json.RawMessage
	var params map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil || json.Unmarshal(msg["params"], &params) != nil || params["arguments"] == nil {
		return r
	}
	args := params["arguments"]
	params["arguments"] = json.RawMessage("{}")
	var ok bool
	if msg["params"], ok = marshalRaw(params); !ok {
		return r
	}
	rewritten, ok := marshalRaw(msg)
	if !ok {
		return r
	}
	r2 := r.WithContext(context.WithValue(r.Context(), argumentsKey{}, args))
	r2.Body = io.NopCloser(bytes.NewReader(rewritten))
	r2.ContentLength = int64(len(rewritten))
	return r2
}

func marshalRaw(v any) (json.RawMessage, bool) {
	b, err := json.Marshal(v)
	return b, err == nil
}

// hasHugeNumber reports whether the JSON text b holds a number beyond
// the range of float64. It reads b once and allocates nothing.
func hasHugeNumber(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case c == '-' || c >= '0' && c <= '9':
			start, exp := i, false
			for ; i < len(b) && strings.IndexByte("+-.0123456789eE", b[i]) >= 0; i++ {
				exp = exp || b[i] == 'e' || b[i] == 'E'
			}
			if exp || i-start > 300 {
				if _, err := strconv.ParseFloat(string(b[start:i]), 64); err != nil {
					return true
				}
			}
			i--
		}
	}
	return false
}
