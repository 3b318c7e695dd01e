package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"
)

// Bounds of the event stream of one request to an MCP server over
// Streamable HTTP, all its resumptions (GET with Last-Event-ID) together:
// past any of them, the call fails saying which was passed, and the rest
// of the stream is not read. go-sdk bounds each event (MaxEventSize), not
// how many come: a server could otherwise keep a call reading small
// events, or ending the stream after each one and having it resumed at
// once, for the whole of the call's time limit (its only bound in time),
// or for ever when the call has none.
const (
	// DefaultMaxStreamEvents bounds the events of one request's stream:
	// progress and log notifications, requests to the client, and the
	// response.
	DefaultMaxStreamEvents = 100_000
	// DefaultMaxStreamBytes bounds the bytes of one request's stream.
	DefaultMaxStreamBytes = 256 << 20
	// DefaultMaxStreamResumes bounds the resumptions of one request's
	// stream.
	DefaultMaxStreamResumes = 100
)

// DefaultStandaloneResumeGap is the least time between two resumptions
// of a session's standalone stream (the GET that carries the server's
// notifications and requests): a server that ends it after each event,
// asking to be reconnected at once, would otherwise have the client send
// GETs without pause for as long as the session lasts.
const DefaultStandaloneResumeGap = time.Second

// streamBounds are the bounds a streamLedger applies.
type streamBounds struct {
	events, bytes, resumes int64
	gap                    time.Duration // between resumptions of a standalone stream
}

var defaultStreamBounds = streamBounds{DefaultMaxStreamEvents, DefaultMaxStreamBytes, DefaultMaxStreamResumes, DefaultStandaloneResumeGap}

// A streamUse is what one request's event stream has spent.
type streamUse struct {
	id                     json.RawMessage // the request's JSON-RPC id; nil if unknown
	events, bytes, resumes int64
	standalone             bool      // the session's standalone stream: no bound but the gap
	started                time.Time // when its latest GET was sent (standalone)
}

// maxEndedStreams bounds the ended streams a ledger remembers for their
// resumption; the oldest is forgotten first.
const maxEndedStreams = 1024

// A streamLedger carries the budget of each request's event stream
// across its resumptions: a stream the server ended is recorded under
// the ID of its last event, and the GET that resumes after that ID
// takes its budget on. It is safe for concurrent use.
type streamLedger struct {
	bounds streamBounds
	gate   *floodGate // the server's notifications and requests; nil: no bound
	// closing ends the client's answers to the server's requests still
	// being sent, when the client closes (closeAnswers).
	closing      context.Context
	closeAnswers context.CancelFunc

	mu     sync.Mutex
	ended  map[string]*streamUse
	order  []string        // keys of ended, oldest first
	theirs map[string]bool // the server's requests passed on, not yet answered (by id)
}

func newStreamLedger(b streamBounds) *streamLedger {
	closing, closeAnswers := context.WithCancel(context.Background())
	return &streamLedger{bounds: b, ended: map[string]*streamUse{}, gate: newFloodGate(defaultFloodBounds),
		closing: closing, closeAnswers: closeAnswers, theirs: map[string]bool{}}
}

// end records use under each non-empty key.
func (l *streamLedger) end(use *streamUse, keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if k == "" {
			continue
		}
		if _, ok := l.ended[k]; !ok {
			l.order = append(l.order, k)
		}
		l.ended[k] = use
	}
	for len(l.order) > maxEndedStreams {
		delete(l.ended, l.order[0])
		l.order = l.order[1:]
	}
}

// resume returns the budget of the stream that ended after event ID
// last, or nil if none is known (the standalone stream's, or forgotten).
func (l *streamLedger) resume(last string) *streamUse {
	l.mu.Lock()
	defer l.mu.Unlock()
	use := l.ended[last]
	if use != nil {
		for k, u := range l.ended {
			if u == use {
				delete(l.ended, k)
			}
		}
	}
	return use
}

// stopEvent is what ends a stream that passed a bound: with the
// request's id known, an error response to it, which ends the call and
// no more; without, a line no event stream may hold, which go-sdk takes
// for a broken connection.
func stopEvent(use *streamUse, what string) []byte {
	msg := "the MCP server's event stream for this request " + what + " without the response"
	if len(use.id) == 0 {
		return []byte("mcptool - " + msg + "\n\n") // no colon: not a field
	}
	msg = "mcptool: " + msg
	e, _ := json.Marshal(map[string]any{"code": -32603, "message": msg})
	return []byte("data: {\"jsonrpc\":\"2.0\",\"id\":" + string(use.id) + ",\"error\":" + string(e) + "}\n\n")
}

// stopStream writes the end of a stream that passed a bound, and closes
// it. An event of which some lines were passed on (mid) is ended first,
// under a name go-sdk does not read: it is dropped whole.
func stopStream(dst *io.PipeWriter, use *streamUse, mid bool, what string) {
	if mid {
		dst.Write([]byte("event: mcptool-cut\n\n"))
	}
	dst.Write(stopEvent(use, what))
	dst.Close()
}

// stop answers a resumption past the bound without sending it.
func (l *streamLedger) stop(req *http.Request, use *streamUse, what string) *http.Response {
	body := stopEvent(use, what)
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"text/event-stream"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// callID returns the id of the JSON-RPC request body, or nil if it is
// not one.
func callID(body []byte) json.RawMessage {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method == "" || !validID(m.ID) {
		return nil
	}
	return m.ID
}

// pass reports whether an event the server sent (its lines, held whole)
// is passed on to go-sdk: a response always; a notification within the
// flood gate; a request within the gate and while fewer than the gate's
// inFlight of the server's requests wait for their answers (go-sdk
// answers each on a goroutine of its own, which lives until its answer
// is sent). An event that is not one JSON-RPC message is passed on, for
// go-sdk to refuse.
func (l *streamLedger) pass(event []byte) bool {
	var data []byte
	for line := range bytes.Lines(event) {
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			d = bytes.TrimPrefix(d, []byte(" "))
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimRight(d, "\r\n")...)
		}
	}
	if !containsFold(data, "method") && !bytes.Contains(data, []byte(`\u`)) {
		// No member named method, in any case (encoding/json matches
		// names without regard to case) or escape: a response.
		return true
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if len(data) == 0 || json.Unmarshal(data, &m) != nil || m.Method == nil {
		return true
	}
	if ok, _ := l.gate.admit(len(event)); !ok {
		return false
	}
	if len(m.ID) == 0 || string(m.ID) == "null" {
		return true
	}
	key, ok := requestKey(m.ID)
	if !ok {
		return true // go-sdk refuses it
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.gate.b.inFlight; n > 0 && len(l.theirs) >= n {
		return false
	}
	l.theirs[key] = true
	return true
}

// answered forgets the server's request id, whose answer was sent.
func (l *streamLedger) answered(id string) {
	l.mu.Lock()
	delete(l.theirs, id)
	l.mu.Unlock()
}

// answerKey carries, on a POST's context, the request key of the
// server's request the POST answers.
type answerKey struct{}

// answerID returns the request key of the server's request that req
// answers, or "".
func answerID(req *http.Request) string {
	id, _ := req.Context().Value(answerKey{}).(string)
	return id
}

// responseID returns the request key of the JSON-RPC response body, or ""
// if it is not one.
func responseID(body []byte) string {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method != nil || m.Result == nil && m.Error == nil {
		return ""
	}
	key, _ := requestKey(m.ID)
	return key
}

// cancelBody cancels its request's context when it is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// containsFold reports whether s holds word (ASCII lower case) in any
// case.
func containsFold(s []byte, word string) bool {
	for i := 0; i+len(word) <= len(s); i++ {
		if s[i]|0x20 == word[0] && bytes.EqualFold(s[i:i+len(word)], []byte(word)) {
			return true
		}
	}
	return false
}
