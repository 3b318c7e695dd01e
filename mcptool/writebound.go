package mcptool

import (
	"net/http"
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
