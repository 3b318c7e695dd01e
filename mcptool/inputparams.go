package mcptool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
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
// of HTTP responses, plain JSON or server-sent events, and bounds the
// whole event stream of each request (see streamLedger).
type inputParamsTransport struct {
	base    http.RoundTripper
	streams *streamLedger // nil: each stream is bounded alone, by the defaults
}

// newInputParamsTransport wraps base with a ledger of its own.
func newInputParamsTransport(base http.RoundTripper) inputParamsTransport {
	return inputParamsTransport{base: base, streams: newStreamLedger(defaultStreamBounds)}
}

func (t inputParamsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ledger := t.streams
	if ledger == nil {
		ledger = newStreamLedger(defaultStreamBounds)
	}
	// use is the budget of the stream this request's response may be:
	// a request's own (a POST; its JSON-RPC id, once known, lets the
	// client end the call when the budget is spent), or the one a
	// resumption (a GET with Last-Event-ID) continues. The session's
	// standalone stream (a GET without one, or resuming one the ledger
	// does not know) is bounded in the pace of its resumptions only: it
	// lasts the session and carries no call's response.
	var use *streamUse
	if req.Method == http.MethodPost {
		use = &streamUse{}
	} else if req.Method == http.MethodGet {
		last := req.Header.Get("Last-Event-ID")
		if last != "" {
			use = ledger.resume(last)
		}
		if use == nil {
			use = &streamUse{standalone: true}
		}
		if last != "" {
			use.resumes++
		}
		switch {
		case !use.standalone && use.resumes > ledger.bounds.resumes:
			return ledger.stop(req, use, fmt.Sprintf("was resumed more than %d times", ledger.bounds.resumes)), nil
		case use.standalone && last != "":
			// A server that ends the standalone stream after each
			// event, asking for a reconnection at once (retry: 1),
			// is resumed at most once per gap, for as long as the
			// session lasts.
			if d := time.Until(use.started.Add(ledger.bounds.gap)); d > 0 {
				timer := time.NewTimer(d)
				select {
				case <-timer.C:
				case <-req.Context().Done():
					timer.Stop()
					return nil, req.Context().Err()
				}
			}
		}
		use.started = time.Now()
	}
	if req.Body != nil && req.Method == http.MethodPost && req.ContentLength > 0 && req.ContentLength <= MaxLineBytes {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		use.id = callID(body)
		if id := responseID(body); id != "" {
			req = req.WithContext(context.WithValue(req.Context(), answerKey{}, id))
		}
		if out := augmentTasks(body); len(out) != len(body) {
			req = req.Clone(req.Context())
			body = out
			req.ContentLength = int64(len(body))
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	if answer := answerID(req); answer != "" {
		// The client's answer to one of the server's requests: it is
		// in flight until this POST ends, which Close does not wait
		// for (a server that holds the POST would hold Close).
		ctx, cancel := context.WithCancel(req.Context())
		stop := context.AfterFunc(ledger.closing, cancel)
		resp, err := t.base.RoundTrip(req.WithContext(ctx))
		stop()
		ledger.answered(answer)
		if err != nil || resp.Body == nil {
			cancel()
			return resp, err
		}
		resp.Body = cancelBody{resp.Body, cancel}
		return resp, nil
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
		if len(body) > MaxLineBytes {
			return nil, fmt.Errorf("MCP server: %s: a JSON response body longer than %d bytes", req.URL.Redacted(), MaxLineBytes)
		}
		body = filterMessage(body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Del("Content-Length")
	case "text/event-stream":
		pr, pw := io.Pipe()
		go filterEvents(resp.Body, pw, ledger, use)
		resp.Body = eventBody{pr, resp.Body}
	default:
		// An HTTP error's text, or a body of a type MCP does not use:
		// go-sdk reads an error's body whole, looking for a JSON-RPC
		// error in it.
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxOtherBodyBytes, url: req.URL.Redacted()}
	}
	return resp, nil
}

// maxOtherBodyBytes bounds a response body that is neither JSON nor an
// event stream, such as the text of an HTTP error.
const maxOtherBodyBytes = 1 << 20

// boundedBody reads at most left bytes of a body; a longer body reads as
// an error after them.
type boundedBody struct {
	io.ReadCloser
	left int64
	over bool
	url  string
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.over {
		return 0, b.tooLong()
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		b.over = true
		return int(b.left), b.tooLong()
	}
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) tooLong() error {
	return fmt.Errorf("MCP server: %s: a response body longer than %d bytes", b.url, maxOtherBodyBytes)
}

// filterEvents copies an event stream, line by line, applying
// fillInputParams to the data lines, and counting them against use, if
// any: past a bound of the ledger, it ends the stream (see
// streamLedger.stop) and drops the rest. A stream the server ends is
// recorded in the ledger under the ID of its last event, for the
// resumption that may follow. The events of the session's standalone
// stream and of each call's are held whole (up to MaxLineBytes) and
// passed on as streamLedger.pass says: a server's notifications and
// requests past the flood gate, and requests past those in flight, are
// dropped before go-sdk reads them.
func filterEvents(src io.Reader, dst *io.PipeWriter, ledger *streamLedger, use *streamUse) {
	r := bufio.NewReaderSize(src, 64<<10)
	var pending, last string // event IDs: of the event being read, of the last one ended
	mid := false             // lines of an event not yet ended were passed on
	gate := (*floodGate)(nil)
	if use != nil {
		gate = ledger.gate
	}
	var held []byte  // the event being read, when gated
	passing := false // the event is over MaxLineBytes: passed on as it comes
	write := func(p []byte) bool {
		_, werr := dst.Write(p)
		return werr == nil
	}
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
		if use != nil && !use.standalone {
			use.bytes += int64(len(line))
			switch field := bytes.TrimRight(line, "\r\n"); {
			case len(field) == 0 && len(line) > 0:
				use.events++
			}
			what := ""
			if use.events > ledger.bounds.events {
				what = fmt.Sprintf("passed %d events", ledger.bounds.events)
			} else if use.bytes > ledger.bounds.bytes {
				what = fmt.Sprintf("passed %d bytes", ledger.bounds.bytes)
			}
			if what != "" {
				stopStream(dst, use, mid && gate == nil || passing, what)
				return
			}
			mid = len(bytes.TrimRight(line, "\r\n")) > 0
		}
		if use != nil {
			switch field := bytes.TrimRight(line, "\r\n"); {
			case len(field) == 0 && len(line) > 0:
				if pending != "" {
					last, pending = pending, ""
				}
			case bytes.HasPrefix(field, []byte("id:")):
				pending = string(bytes.TrimSpace(field[3:]))
			}
		}
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok && (bytes.Contains(data, []byte(`"inputRequests"`)) ||
			bytes.Contains(data, []byte(`"task"`)) || bytes.Contains(data, []byte(`"execution"`))) {
			trimmed := bytes.TrimSpace(data)
			line = append(append([]byte("data: "), filterMessage(trimmed)...), '\n')
		}
		ok := true
		switch blank := len(bytes.TrimRight(line, "\r\n")) == 0 && len(line) > 0; {
		case gate == nil || passing && !blank:
			ok = write(line)
		case passing: // the end of an event passed on as it came
			passing = false
			ok = write(line)
		case !blank:
			held = append(held, line...)
			if len(held) > MaxLineBytes {
				passing, ok = true, write(held)
				held = held[:0]
			}
		default: // the end of a held event
			if len(held) > 0 && ledger.pass(held) {
				ok = write(held) && write(line)
			}
			held = held[:0]
		}
		if !ok {
			return
		}
		if err != nil {
			if len(held) > 0 && ledger.pass(held) && !write(held) {
				return
			}
			if use != nil {
				// go-sdk resumes after the last event it read whole,
				// or, at the end of the body, after the one it was
				// reading: either may be asked for.
				ledger.end(use, last, pending)
			}
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

// maxRedirects bounds the redirects one request to an MCP server follows.
const maxRedirects = 5

// sameOriginRedirect is the redirect policy of the HTTP transports of a
// [Client]: a redirect is followed only within the origin (scheme, host
// and port) of the request that met it, at most maxRedirects times. A
// server redirecting elsewhere would have the request, its body and the
// credentials sent with it (Authorization, or headers a host adds below
// http.Client, which Go's redirect rules do not strip) replayed at an
// address of its choosing: an internal one, another port of a shared
// host, or plain http.
func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("MCP server: more than %d redirects", maxRedirects)
	}
	from := via[0].URL
	if origin(req.URL) != origin(from) {
		return fmt.Errorf("MCP server: refused a redirect from %s to another origin, %s: an MCP endpoint that moved is configured anew",
			shortText(origin(from), 200), shortText(origin(req.URL), 200))
	}
	return nil
}

// origin returns u's scheme, host and port, with the scheme's default
// port made explicit and the host in lower case.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
