package mcptool

import (
	"sync"
	"time"
)

// Bounds of what the other side of one MCP connection may send that is
// not the answer to a request of ours: notifications (progress, log
// messages, task status, list changes, cancellations) and requests (ping,
// elicitation, roots, sampling from a server; calls from a client). Each
// is small and bounded by [MaxLineBytes]; these bound how many come, so
// that a peer cannot keep a connection decoding, queuing and handling
// millions of them. go-sdk queues every notification it reads, without
// bound, until its handler has run, and answers each request on a
// goroutine of its own that lives until the answer is written: a peer
// that does not read its input would pile them up.
const (
	// DefaultNotificationRate is how many notifications (and, from a
	// server, requests) per second one connection passes on, once its
	// burst of DefaultNotificationBurst is spent. Past it they are dropped
	// before go-sdk queues them and the connection goes on; over stdio the
	// drop is logged.
	DefaultNotificationRate = 1000
	// DefaultNotificationBurst is how many notifications one connection
	// passes on at once before DefaultNotificationRate applies.
	DefaultNotificationBurst = 10_000
	// DefaultNotificationByteRate and DefaultNotificationByteBurst bound
	// the bytes of those messages in the same way.
	DefaultNotificationByteRate  = 16 << 20
	DefaultNotificationByteBurst = 64 << 20
	// DefaultMaxRequestsInFlight bounds the requests of the other side
	// one connection has read and not yet answered: a server's requests
	// to the client past it (stdio or HTTP) are dropped, a client's calls
	// to a registry served over stdio past it are answered with an error
	// at once (over HTTP, see [WithRequestLimits]).
	DefaultMaxRequestsInFlight = 256
	// DefaultMaxRequestBytesInFlight bounds the bytes of a client's
	// requests one stdio connection holds while they are being answered
	// (256 requests of 16 MiB, each held until its tool returns, would
	// be 4 GiB); one past it is answered with an error at once. Over
	// HTTP it bounds the bytes of one caller's request bodies held at
	// once (see [RequestLimits]).
	DefaultMaxRequestBytesInFlight = 64 << 20
	// DefaultMaxCallProgress bounds the progress notifications one call
	// to an imported tool takes (over any transport), and
	// DefaultMaxCallProgressBytes the bytes of their messages, counted
	// whole before the cut to 1 KiB: past either, the call fails naming
	// the bound, the server is told to cancel it, and the connection goes
	// on.
	DefaultMaxCallProgress      = 10_000
	DefaultMaxCallProgressBytes = 64 << 20
)

// floodBounds are the bounds a floodGate applies; zero rates or bursts
// mean no bound (the controls of the attack tests).
type floodBounds struct {
	rate, burst         float64 // messages
	byteRate, byteBurst float64 // their bytes
	inFlight            int     // the other side's requests not yet answered
	inFlightBytes       int     // their bytes (a client's, served over stdio)
}

var defaultFloodBounds = floodBounds{
	DefaultNotificationRate, DefaultNotificationBurst,
	DefaultNotificationByteRate, DefaultNotificationByteBurst,
	DefaultMaxRequestsInFlight, DefaultMaxRequestBytesInFlight,
}

// A floodGate is a token bucket, in messages and in bytes, over the
// messages of one connection that are not answers. It is safe for
// concurrent use.
type floodGate struct {
	b floodBounds

	mu      sync.Mutex
	n, size float64   // tokens left
	at      time.Time // when they were counted
	dropped int64
}

func newFloodGate(b floodBounds) *floodGate {
	return &floodGate{b: b, n: b.burst, size: b.byteBurst}
}

// admit takes a message of size bytes from the bucket; false means it is
// over the bounds and is to be dropped, and dropped counts the drops so
// far (for the log).
func (g *floodGate) admit(size int) (ok bool, dropped int64) {
	if g == nil || g.b.burst <= 0 {
		return true, 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	if !g.at.IsZero() {
		d := now.Sub(g.at).Seconds()
		g.n = min(g.b.burst, g.n+d*g.b.rate)
		g.size = min(g.b.byteBurst, g.size+d*g.b.byteRate)
	}
	g.at = now
	if g.n < 1 || g.size < float64(size) {
		g.dropped++
		return false, g.dropped
	}
	g.n--
	g.size -= float64(size)
	return true, 0
}

// logDrop reports whether the n-th drop is logged: the first, then each
// power of ten.
func logDrop(n int64) bool {
	for n >= 10 && n%10 == 0 {
		n /= 10
	}
	return n == 1
}
