package mcptool

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
)

// fillInputParams works around go-sdk v1.8.0, which fails a whole call
// with "unexpected end of JSON input" when a result's inputRequests holds
// a request without params (optional in the specification; mcp-go servers
// send roots/list that way): it gives every such request empty params. A
// message that needs nothing is returned as it is, without being parsed.
func fillInputParams(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(`"inputRequests"`)) {
		return msg
	}
	var m map[string]json.RawMessage
	var result map[string]json.RawMessage
	var requests map[string]map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || json.Unmarshal(m["result"], &result) != nil ||
		json.Unmarshal(result["inputRequests"], &requests) != nil {
		return msg
	}
	changed := false
	for _, r := range requests {
		if r != nil && (len(r["params"]) == 0 || string(r["params"]) == "null") {
			r["params"] = json.RawMessage("{}")
			changed = true
		}
	}
	if !changed {
		return msg
	}
	var err error
	if result["inputRequests"], err = json.Marshal(requests); err != nil {
		return msg
	}
	if m["result"], err = json.Marshal(result); err != nil {
		return msg
	}
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// inputParamsTransport applies fillInputParams to the JSON-RPC messages
// of HTTP responses, plain JSON or server-sent events.
type inputParamsTransport struct{ base http.RoundTripper }

func (t inputParamsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Method == http.MethodPost && req.ContentLength > 0 && req.ContentLength <= MaxLineBytes {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if out := augmentTasks(body); len(out) != len(body) {
			req = req.Clone(req.Context())
			body = out
			req.ContentLength = int64(len(body))
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, MaxLineBytes+1))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		body = filterMessage(body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Del("Content-Length")
	case "text/event-stream":
		pr, pw := io.Pipe()
		go filterEvents(resp.Body, pw)
		resp.Body = eventBody{pr, resp.Body}
	}
	return resp, nil
}

// filterEvents copies an event stream, line by line, applying
// fillInputParams to the data lines.
func filterEvents(src io.Reader, dst *io.PipeWriter) {
	r := bufio.NewReaderSize(src, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long line: pass it on whole, unchanged but for its data.
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull && len(long) <= MaxLineBytes {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok && (bytes.Contains(data, []byte(`"inputRequests"`)) ||
			bytes.Contains(data, []byte(`"task"`)) || bytes.Contains(data, []byte(`"execution"`))) {
			trimmed := bytes.TrimSpace(data)
			line = append(append([]byte("data: "), filterMessage(trimmed)...), '\n')
		}
		if _, werr := dst.Write(line); werr != nil {
			return
		}
		if err != nil {
			dst.CloseWithError(err)
			return
		}
	}
}

// eventBody reads the filtered stream and closes the original.
type eventBody struct {
	*io.PipeReader
	orig io.Closer
}

func (b eventBody) Close() error {
	b.PipeReader.Close()
	return b.orig.Close()
}
