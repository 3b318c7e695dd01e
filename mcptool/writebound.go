package mcptool

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// DefaultWriteTimeout is how long [Server.ServeHTTP] waits for one write
// of a response to reach its client (see [WithWriteTimeout]).
const DefaultWriteTimeout = 30 * time.Second

// WithWriteTimeout bounds how long one write of a response of
// [Server.ServeHTTP] may wait for its client to take it: an event of a
// stream (a session's GET stream, a subscriptions/listen stream, a call's
// progress) or a whole JSON answer. A write that does not complete in d
// fails, and its response ends: the client is gone for the server, as if
// it had hung up (a stream's client listens anew). Without the bound a
// client that opens a stream and never reads it stops the server once
// the connection's buffers are full: every tools/list_changed is sent to
// the sessions one after the other, so the sessions after the stuck one
// never got theirs, and each later change left one more goroutine
// waiting for ever (TestHostileStuckStreamReader). Zero or a negative d
// keeps [DefaultWriteTimeout].
//
// The bound needs a ResponseWriter that can set a write deadline
// (http.ResponseController.SetWriteDeadline: net/http's own, and any
// wrapper with an Unwrap method); behind one that cannot, writes are not
// bounded. The deadline is lifted when the request has been served, so
// that it does not outlive the request on a kept-alive connection.
func WithWriteTimeout(d time.Duration) ServerOption {
	return func(c *serverConfig) { c.writeTimeout = d }
}

// boundWrites returns w with each write and flush bounded by d, and the
// function to call once the request has been served.
func boundWrites(w http.ResponseWriter, d time.Duration) (http.ResponseWriter, func()) {
	if d <= 0 {
		d = DefaultWriteTimeout
	}
	rc := http.NewResponseController(w)
	if rc.SetWriteDeadline(time.Now().Add(d)) != nil {
		return w, func() {} // not supported: see WithWriteTimeout
	}
	bw := &boundedWriter{ResponseWriter: w, rc: rc, d: d}
	return bw, func() { _ = rc.SetWriteDeadline(time.Time{}) }
}

// A boundedWriter sets a write deadline before each write and flush.
// Once one failed, the connection is broken and net/http has canceled
// the request's context; every later write fails at once.
type boundedWriter struct {
	http.ResponseWriter
	rc     *http.ResponseController
	d      time.Duration
	failed error
}

func (w *boundedWriter) arm() error {
	if w.failed != nil {
		return w.failed
	}
	return w.rc.SetWriteDeadline(time.Now().Add(w.d))
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	if err := w.arm(); err != nil {
		return 0, err
	}
	n, err := w.ResponseWriter.Write(p)
	if err != nil {
		w.failed = err
	}
	return n, err
}

// Flush flushes within the deadline; http.ResponseController calls it.
func (w *boundedWriter) FlushError() error {
	if err := w.arm(); err != nil {
		return err
	}
	if err := w.rc.Flush(); err != nil {
		w.failed = err
		return err
	}
	return nil
}

// Flush is FlushError for callers of http.Flusher.
func (w *boundedWriter) Flush() { _ = w.FlushError() }

// Unwrap gives http.ResponseController the underlying writer.
func (w *boundedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// The bounds of what [Server.ServeHTTP] holds for one long-lived event
// stream (a 2025-11-25 session's GET stream, a 2026-07-28
// subscriptions/listen stream) whose client has not yet taken it.
const (
	// StreamQueueWrites is how many writes one stream may hold.
	StreamQueueWrites = 256
	// StreamQueueBytes is how many bytes one stream may hold; a single
	// write larger than this is held alone.
	StreamQueueBytes = 1 << 20
)

// A streamQueue is the ResponseWriter of a long-lived event stream. Its
// writes and flushes are queued and done by a goroutine of its own, so
// the one who writes (go-sdk's fan-out of notifications/tools/list_changed,
// which writes to every session's stream one after the other) never waits
// for the client: a client that does not read its stream costs the
// others nothing, not even the write bound (WithWriteTimeout) it would
// otherwise hold each of them for, one stuck stream after the other
// (TestHostileStuckReadersCostOthersNothing). A stream whose queue is
// full (StreamQueueWrites, StreamQueueBytes) is ended: its pending write
// fails at once, its request's context is canceled, and the server logs
// it; the client listens anew, as after any end of its stream.
type streamQueue struct {
	w      http.ResponseWriter // the bounded writer
	rc     *http.ResponseController
	cancel context.CancelFunc // ends the stream's request
	logger *slog.Logger

	mu      sync.Mutex
	ops     []queuedWrite
	bytes   int  // held by ops, the one being written included
	started bool // a write or flush was queued (the writer owns w)
	header  bool // WriteHeader was passed on
	closing bool
	err     error
	wake    chan struct{} // cap 1
	exited  chan struct{}
}

// A queuedWrite is a write of data (none for a flush alone) and whether
// a flush follows it.
type queuedWrite struct {
	data  []byte
	flush bool
}

// errStreamQueueFull is the error of the writes to a stream whose queue
// was full.
var errStreamQueueFull = fmt.Errorf("mcptool: the client did not take its event stream (more than %d writes or %d bytes waiting); the stream is ended", StreamQueueWrites, StreamQueueBytes)

// queueStream returns w as the writer of a long-lived event stream, r
// with a context the queue ends when it is full, and the function to
// call once the request has been served, which waits for the queued
// writes (each bounded by WithWriteTimeout).
func queueStream(w http.ResponseWriter, r *http.Request, logger *slog.Logger) (http.ResponseWriter, *http.Request, func()) {
	ctx, cancel := context.WithCancel(r.Context())
	q := &streamQueue{w: w, rc: http.NewResponseController(w), cancel: cancel, logger: logger,
		wake: make(chan struct{}, 1), exited: make(chan struct{})}
	go q.run()
	return q, r.WithContext(ctx), func() {
		q.mu.Lock()
		q.closing = true
		q.mu.Unlock()
		q.signal()
		<-q.exited
		cancel()
	}
}

func (q *streamQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Header is the underlying writer's: go-sdk sets a stream's headers
// before its first write.
func (q *streamQueue) Header() http.Header { return q.w.Header() }

// WriteHeader is passed on at once before anything is queued (no I/O:
// net/http sends the header with the first write), and queued after.
func (q *streamQueue) WriteHeader(code int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.started && !q.header {
		q.w.WriteHeader(code)
		q.header = true
	}
	// After a write the status has left; net/http would ignore it.
}

// Write queues a copy of p.
func (q *streamQueue) Write(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return 0, q.err
	}
	if !q.started && !q.header {
		// Commit the header now, on the writer's goroutine: from here
		// on only the queue's goroutine touches w.
		q.w.WriteHeader(http.StatusOK)
		q.header = true
	}
	q.started = true
	if len(q.ops) > 0 && (len(q.ops) >= StreamQueueWrites || q.bytes+len(p) > StreamQueueBytes) {
		q.fail(errStreamQueueFull)
		return 0, q.err
	}
	q.ops = append(q.ops, queuedWrite{data: bytes.Clone(p)})
	q.bytes += len(p)
	q.signal()
	return len(p), nil
}

// FlushError queues a flush after the writes queued.
func (q *streamQueue) FlushError() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	if n := len(q.ops); n > 0 {
		q.ops[n-1].flush = true
	} else {
		q.started = true
		q.ops = append(q.ops, queuedWrite{flush: true})
	}
	q.signal()
	return nil
}

// Flush is FlushError for callers of http.Flusher.
func (q *streamQueue) Flush() { _ = q.FlushError() }

// fail ends the stream with err: the write under way fails at once, the
// queue is dropped and the request's context is canceled. q.mu is held.
func (q *streamQueue) fail(err error) {
	if q.err != nil {
		return
	}
	q.err = err
	q.ops = nil
	_ = q.rc.SetWriteDeadline(time.Unix(1, 0))
	q.cancel()
	if err == errStreamQueueFull {
		q.logger.Warn("mcptool: event stream ended: its client does not read it", "writes", StreamQueueWrites, "bytes", StreamQueueBytes)
	}
}

// run writes the queue out until it is closed and empty, or fails.
func (q *streamQueue) run() {
	defer close(q.exited)
	for {
		q.mu.Lock()
		for len(q.ops) == 0 && !q.closing && q.err == nil {
			q.mu.Unlock()
			<-q.wake
			q.mu.Lock()
		}
		if q.err != nil || len(q.ops) == 0 {
			q.mu.Unlock()
			return
		}
		op := q.ops[0]
		q.ops[0] = queuedWrite{}
		q.ops = q.ops[1:]
		q.mu.Unlock()

		var err error
		if len(op.data) > 0 {
			_, err = q.w.Write(op.data)
		}
		if err == nil && op.flush {
			err = q.rc.Flush()
		}
		q.mu.Lock()
		q.bytes -= len(op.data)
		if err != nil {
			q.fail(err)
		}
		q.mu.Unlock()
	}
}
