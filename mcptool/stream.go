package mcptool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one message of the stdio transport, a line of
// newline-delimited JSON, in both directions of [Server.ServeIO] and
// [Command]. A longer line is not buffered: a server answers it with a
// parse error, a client skips it.
const MaxLineBytes = mcp.DefaultMaxLineLength

// maxSkipLogs bounds how many skipped lines one connection logs.
const maxSkipLogs = 10

// A streamConn is an MCP connection over newline-delimited JSON-RPC, the
// stdio transport, used in place of go-sdk's for three reasons:
//   - Served (server is true), it answers every request it has read
//     before it reports the end of its input, so that a client that
//     closes its side after the last request still gets every response
//     (go-sdk drops the responses still being computed).
//   - Served, a line that is not JSON-RPC gets a JSON-RPC error (-32700
//     or -32600) and the connection carries on; as a client, such a line
//     (a banner a server prints on start) is skipped and logged.
//   - A request without params gets {}, and so does an input request
//     without params in a result (go-sdk v1.8.0 fails roots/list without
//     params, which mcp-go servers send; see fillInputParams).
type streamConn struct {
	server bool
	logger *slog.Logger
	// ended describes the end of the input when the other side went away
	// on its own; it may return err itself. Nil for plain streams.
	ended func(err error) error

	incoming chan lineOrErr
	w        io.Writer
	closer   func() error // closes the underlying streams, if they are ours

	writeMu sync.Mutex

	inputErr error // how the input ended; read and set by Read only

	mu         sync.Mutex
	pending    map[jsonrpc.ID]int  // requests read and not yet answered, their sizes (server only)
	pendingSum int                 // the sizes in pending
	asked      map[jsonrpc.ID]bool // the server's requests to the client, unanswered
	inputEnded bool                // the input ended: nothing more will come
	orphans    []jsonrpc.ID        // asked after the input ended: answered by drain
	wake       chan struct{}       // cap 1: something drain waits for happened
	skipped    int                 // lines skipped and logged
	theirs     map[jsonrpc.ID]bool // the server's requests read, not yet answered (client only)
	listens    map[jsonrpc.ID]bool // subscriptions/listen streams open (server only)
	busyDrops  int64               // the server's requests dropped past maxInFlight

	gate        *floodGate // the other side's notifications (and a server's requests); nil: no bound
	maxInFlight int        // the other side's requests read and not answered; 0: no bound
	maxBytes    int        // the bytes of a client's requests read and not answered; 0: no bound
	writeEnd    error      // how the server ended, when a write found it gone first (client only)

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

type lineOrErr struct {
	line    []byte
	tooLong bool
	err     error
}

// newStreamConn returns a connection reading r and writing w; closer,
// if not nil, is called once by Close.
func newStreamConn(r io.Reader, w io.Writer, closer func() error, server bool, logger *slog.Logger) *streamConn {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &streamConn{
		server:   server,
		logger:   logger,
		incoming: make(chan lineOrErr),
		w:        w,
		closer:   closer,
		pending:  make(map[jsonrpc.ID]int),
		asked:    make(map[jsonrpc.ID]bool),
		theirs:   make(map[jsonrpc.ID]bool),
		listens:  make(map[jsonrpc.ID]bool),
		wake:     make(chan struct{}, 1),
		closed:   make(chan struct{}),

		gate:        newFloodGate(defaultFloodBounds),
		maxInFlight: defaultFloodBounds.inFlight,
		maxBytes:    defaultFloodBounds.inFlightBytes,
	}
	// Reads block until the other side writes or hangs up, so they run on
	// their own goroutine, which Close cannot interrupt when r is not
	// ours to close (it ends at r's next line or end).
	go c.readLines(bufio.NewReaderSize(r, 64<<10))
	return c
}

// readLines delivers r's lines, each cut off at MaxLineBytes, until r
// ends or fails.
func (c *streamConn) readLines(r *bufio.Reader) {
	for {
		var line []byte
		tooLong := false
		var err error
		for {
			var chunk []byte
			chunk, err = r.ReadSlice('\n')
			if !tooLong && len(line)+len(chunk) > MaxLineBytes {
				tooLong, line = true, nil
			}
			if !tooLong {
				line = append(line, chunk...)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			select {
			case c.incoming <- lineOrErr{line: line, tooLong: tooLong}:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			select {
			case c.incoming <- lineOrErr{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

func (c *streamConn) SessionID() string { return "" }

// Read returns the next JSON-RPC message. After the input ends, a served
// connection waits until every request it returned has been answered (or
// the connection is closed) before it returns the end; meanwhile, each
// request the server sent the client, which can no longer answer, is
// answered with an error in the client's stead, so that nothing waits for
// it.
func (c *streamConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if c.inputErr != nil {
			return c.drain(ctx)
		}
		var in lineOrErr
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			c.mu.Lock()
			err := c.writeEnd
			c.mu.Unlock()
			if err != nil {
				return nil, err // the server ended before its input: how
			}
			return nil, io.EOF
		case in = <-c.incoming:
		}
		if in.err != nil {
			c.mu.Lock()
			c.inputErr, c.inputEnded = in.err, true
			for id := range c.asked {
				c.orphans = append(c.orphans, id)
			}
			clear(c.asked)
			c.mu.Unlock()
			continue
		}
		if in.tooLong {
			c.refuse(nil, jsonrpc.CodeParseError, fmt.Sprintf("Parse error: a message is one line of at most %d bytes", MaxLineBytes), in.line)
			continue
		}
		line := bytes.TrimSpace(in.line)
		if !c.server {
			line = filterMessage(line)
		}
		if c.server && !exactIDs(line) {
			c.refuse(nil, jsonrpc.CodeInvalidRequest, errInexactID, line)
			continue
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if _, ok := msg.(*jsonrpc.Response); ok && err == nil && !isResponse(line) {
			err = errors.New("a message needs a method, a result or an error")
		}
		if err != nil {
			c.refuseLine(line, err)
			continue
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			if !c.admit(m, len(line)) {
				continue
			}
			if len(m.Params) == 0 || string(m.Params) == "null" {
				m.Params = json.RawMessage("{}")
			}
			// A subscriptions/listen stream lasts as long as the session:
			// its answer is not awaited.
			if c.server && m.IsCall() && m.Method != "subscriptions/listen" {
				c.mu.Lock()
				c.pendingSum += len(line) - c.pending[m.ID]
				c.pending[m.ID] = len(line)
				c.mu.Unlock()
			}
		case *jsonrpc.Response:
			c.mu.Lock()
			delete(c.asked, m.ID)
			c.mu.Unlock()
		}
		return msg, nil
	}
}

// admit applies the connection's flood bounds to a request or
// notification of size bytes just read, and reports whether it is passed
// on. A served connection passes a client's calls up to maxInFlight not
// yet answered, and answers one past it with an error at once (a write
// that waits while the client does not read, which holds the reading
// back); it passes notifications within the gate's rate. A client passes
// a server's notifications and requests within the gate's rate, and
// requests up to maxInFlight not yet answered; it drops the others, which
// it logs (the first, then each power of ten).
func (c *streamConn) admit(m *jsonrpc.Request, size int) bool {
	if c.server && m.IsCall() {
		var refuse string
		c.mu.Lock()
		switch {
		case m.Method == "subscriptions/listen" && c.maxInFlight > 0 && len(c.listens) >= DefaultMaxSessionsPerCaller:
			// A listen stream lasts the session: it is not in flight,
			// and is bounded as an HTTP caller's are.
			refuse = fmt.Sprintf("mcptool: more than %d subscriptions/listen streams of this connection at once", DefaultMaxSessionsPerCaller)
		case m.Method == "subscriptions/listen":
			c.listens[m.ID] = true
		case c.maxInFlight > 0 && len(c.pending) >= c.maxInFlight:
			refuse = fmt.Sprintf("mcptool: more than %d requests of this connection in flight; send it again when one has been answered", c.maxInFlight)
		case c.maxBytes > 0 && c.pendingSum+size > c.maxBytes:
			refuse = fmt.Sprintf("mcptool: more than %d bytes of requests of this connection in flight; send it again when one has been answered", c.maxBytes)
		}
		c.mu.Unlock()
		if refuse != "" {
			c.answerError(m.ID, refuse)
			return false
		}
		return true
	}
	ok, dropped := c.gate.admit(size)
	what := "notifications"
	if ok && m.IsCall() {
		c.mu.Lock()
		if c.maxInFlight > 0 && len(c.theirs) >= c.maxInFlight {
			ok, what = false, "requests past the bound of requests in flight"
			c.busyDrops++
			dropped = c.busyDrops
		} else {
			c.theirs[m.ID] = true
		}
		c.mu.Unlock()
	}
	if !ok && logDrop(dropped) {
		who := "server"
		if c.server {
			who = "client"
		}
		c.logger.Warn("mcptool: dropped "+what+" of a "+who+" that sends more than the connection's bounds",
			"dropped", dropped, "method", shortText(m.Method, 100), "rate", c.gate.b.rate, "burst", c.gate.b.burst, "inFlight", c.maxInFlight)
	}
	return ok
}

// answerError answers request id with a JSON-RPC error (a served
// connection's refusal of a request it will not pass on).
func (c *streamConn) answerError(id jsonrpc.ID, message string) {
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: -32000, Message: message}})
	if err != nil {
		return
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, _ = c.w.Write(append(data, '\n'))
}

// drain is Read after the input ended: it answers the server's requests
// to the client in the client's stead until every request read has been
// answered, then returns the end of the input.
func (c *streamConn) drain(ctx context.Context) (jsonrpc.Message, error) {
	for c.server {
		c.mu.Lock()
		if len(c.orphans) > 0 {
			id := c.orphans[0]
			c.orphans = c.orphans[1:]
			c.mu.Unlock()
			return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
				Code: jsonrpc.CodeInternalError, Message: "the client closed its input: no answer will come"}}, nil
		}
		if len(c.pending) == 0 {
			c.mu.Unlock()
			break
		}
		c.mu.Unlock()
		select {
		case <-c.wake:
		case <-c.closed:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case <-c.closed:
		return nil, io.EOF
	default:
	}
	if c.ended != nil {
		return nil, c.ended(c.inputErr)
	}
	return nil, c.inputErr
}

// refuseLine answers (server) or logs (client) a line that is not a
// JSON-RPC message.
func (c *streamConn) refuseLine(line []byte, err error) {
	if !json.Valid(line) {
		c.refuse(nil, jsonrpc.CodeParseError, "Parse error: not valid JSON", line)
		return
	}
	// Valid JSON but not a message: answer under its id when it has one.
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	var id json.RawMessage
	if json.Unmarshal(line, &probe) == nil && len(probe.ID) > 0 && (probe.ID[0] == '"' || probe.ID[0] == '-' || probe.ID[0] >= '0' && probe.ID[0] <= '9') {
		id = probe.ID
	}
	msg := "Invalid Request: " + err.Error()
	if bytes.HasPrefix(line, []byte("[")) {
		msg = "Invalid Request: JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send one message per line"
	}
	c.refuse(id, jsonrpc.CodeInvalidRequest, msg, line)
}

// refuse answers an unusable line with a JSON-RPC error under id (null
// when nil) on a served connection, and logs it on a client.
func (c *streamConn) refuse(id json.RawMessage, code int64, message string, line []byte) {
	if !c.server {
		c.mu.Lock()
		c.skipped++
		n := c.skipped
		c.mu.Unlock()
		switch {
		case n <= maxSkipLogs:
			c.logger.Warn("mcptool: skipped a line that is not a JSON-RPC message", "line", shortText(string(line), 200), "reason", message)
		case n == maxSkipLogs+1:
			c.logger.Warn("mcptool: skipping more lines that are not JSON-RPC messages; no longer logging them")
		}
		return
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	text, _ := json.Marshal(message)
	resp := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", id, code, text)
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, _ = io.WriteString(c.w, resp)
}

// Write writes msg as one line.
func (c *streamConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	if !c.server {
		data = augmentTasks(data)
	}
	data = append(data, '\n')
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	req, _ := msg.(*jsonrpc.Request)
	if c.server && req != nil && req.IsCall() {
		// Before writing: the answer may come at once.
		c.mu.Lock()
		if c.inputEnded {
			c.orphans = append(c.orphans, req.ID)
		} else {
			c.asked[req.ID] = true
		}
		c.mu.Unlock()
	}
	c.writeMu.Lock()
	_, err = c.w.Write(data)
	c.writeMu.Unlock()
	if !c.server {
		if resp, ok := msg.(*jsonrpc.Response); ok {
			c.mu.Lock()
			delete(c.theirs, resp.ID)
			c.mu.Unlock()
		}
		if err != nil && c.ended != nil {
			select {
			case <-c.closed: // closed by us: the write error says enough
			default:
				// The server went away before its input did: say how it
				// ended, as a read would, rather than only "broken pipe"
				// (a server that fails at start closes its input before
				// the client has read anything).
				err = c.ended(err)
				c.mu.Lock()
				if c.writeEnd == nil {
					c.writeEnd = err
				}
				c.mu.Unlock()
			}
		}
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		c.pendingSum -= c.pending[resp.ID]
		delete(c.pending, resp.ID)
		delete(c.listens, resp.ID)
		c.mu.Unlock()
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return err
}

// Close closes the connection and, if they are its own, its streams.
func (c *streamConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.closer != nil {
			c.closeErr = c.closer()
		}
	})
	return c.closeErr
}

// ioTransport serves newline-delimited JSON-RPC over a reader and a
// writer it does not close.
type ioTransport struct {
	r      io.Reader
	w      io.Writer
	logger *slog.Logger
	bounds *floodBounds // nil: defaultFloodBounds
}

func (t *ioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := newStreamConn(t.r, t.w, nil, true, t.logger)
	c.bound(t.bounds)
	return c, nil
}

// bound sets the connection's flood bounds to b, if not nil; it is
// called before the connection is read.
func (c *streamConn) bound(b *floodBounds) {
	if b != nil {
		c.gate, c.maxInFlight, c.maxBytes = newFloodGate(*b), b.inFlight, b.inFlightBytes
	}
}

// isResponse reports whether a message go-sdk decoded as a response has
// the result or error member a response must have.
func isResponse(line []byte) bool {
	var probe struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	return json.Unmarshal(line, &probe) == nil && (probe.Result != nil || probe.Error != nil)
}
