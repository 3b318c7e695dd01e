package mcptool

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeHTTPViaSDK serves r through go-sdk's handlers alone, without the
// direct path, so tests can compare the two.
func (s *Server) ServeHTTPViaSDK(w http.ResponseWriter, r *http.Request) {
	newHTTPHandlers(s.sdk, s.cfg.jsonResponse).route(w, r)
}

// WithoutRoundDefences makes s answer 2026-07-28 calls as it did before
// sealed request states and held rounds, for the controls of the attack
// tests.
func WithoutRoundDefences(s *Server) { s.rounds.off = true }

// WithReimportGap sets the least time between two re-imports after
// notifications/tools/list_changed; 0 takes none, for the control of the
// list_changed storm attack.
func WithReimportGap(d time.Duration) ClientOption {
	return func(c *clientConfig) { c.reimportGap = d; c.gapSet = true }
}

// clientPipe is the client side of the stdio transport ([Command]'s
// connection) over r and w, closing both on Close.
type clientPipe struct {
	r      io.ReadCloser
	w      io.WriteCloser
	bounds *floodBounds
}

func (t *clientPipe) Connect(context.Context) (mcp.Connection, error) {
	c := newStreamConn(t.r, t.w, func() error { t.w.Close(); return t.r.Close() }, false, nil)
	c.bound(t.bounds)
	return c, nil
}

// ClientPipe returns [Command]'s transport over in-memory pipes, for the
// attack tests' hand-written servers.
func ClientPipe(r io.ReadCloser, w io.WriteCloser) mcp.Transport { return &clientPipe{r: r, w: w} }

// FloodBounds are a connection's bounds of what the other side sends
// that is not an answer (DefaultNotificationRate and the rest); zero
// Burst or InFlight is no bound, for the attack tests' controls.
type FloodBounds struct {
	Rate, Burst   float64
	InFlight      int
	InFlightBytes int
}

func (b FloodBounds) bounds() *floodBounds {
	return &floodBounds{rate: b.Rate, burst: b.Burst, byteRate: DefaultNotificationByteRate, byteBurst: DefaultNotificationByteBurst,
		inFlight: b.InFlight, inFlightBytes: b.InFlightBytes}
}

// BoundedClientPipe is [ClientPipe] with the connection's flood bounds
// set.
func BoundedClientPipe(r io.ReadCloser, w io.WriteCloser, b FloodBounds) mcp.Transport {
	return &clientPipe{r: r, w: w, bounds: b.bounds()}
}

// ServeIOBounded is [Server.ServeIO] with the connection's flood bounds
// set.
func (s *Server) ServeIOBounded(ctx context.Context, r io.Reader, w io.Writer, b FloodBounds) error {
	t := legacyTransport{Transport: &ioTransport{r: r, w: w, logger: s.cfg.logger, bounds: b.bounds()}, s: s}
	err := s.sdk.Run(ctx, t)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// WithCallProgressBounds sets the bounds of the progress one call takes
// (DefaultMaxCallProgress, DefaultMaxCallProgressBytes); 0 is no bound,
// for the attack tests' controls.
func WithCallProgressBounds(n, bytes int) ClientOption {
	return func(c *clientConfig) { c.maxProgress, c.maxProgressBytes = n, bytes }
}

// WithListingBytes sets the bound of DefaultMaxListingBytes, for the
// attack test of a listing of many large schemas at a small scale.
func WithListingBytes(n int) ClientOption {
	return func(c *clientConfig) { c.maxListing = n }
}

// SDKSessionsHandler returns go-sdk's handler of 2025-11-25 sessions for
// s alone, without this package's bounds, for the controls of the
// attack tests.
func (s *Server) SDKSessionsHandler() http.Handler {
	return newHTTPHandlers(s.sdk, s.cfg.jsonResponse).sessions
}

// BoundedURL is [URL] with the bounds of one request's event stream
// (events, bytes, resumptions) set, for the attack tests' controls.
func BoundedURL(url string, events, bytes, resumes int64) mcp.Transport {
	t := URL(url).(*mcp.StreamableClientTransport)
	t.HTTPClient = &http.Client{Transport: inputParamsTransport{base: http.DefaultTransport,
		streams: newStreamLedger(streamBounds{events, bytes, resumes, DefaultStandaloneResumeGap})}}
	return t
}

// GappedURL is [URL] with the least time between resumptions of the
// standalone stream set, for the attack test's control.
func GappedURL(url string, gap time.Duration) mcp.Transport {
	t := URL(url).(*mcp.StreamableClientTransport)
	b := defaultStreamBounds
	b.gap = gap
	t.HTTPClient = &http.Client{Transport: inputParamsTransport{base: http.DefaultTransport, streams: newStreamLedger(b)}}
	return t
}

// LiveSessions returns how many 2025-11-25 HTTP sessions s keeps.
func LiveSessions(s *Server) int { return s.sessions.len() }

// LiveListens returns how many 2026-07-28 subscriptions/listen streams s
// serves.
func LiveListens(s *Server) int { return s.listens.len() }

// GatedURL is [URL] with the flood bounds of the standalone stream's
// events set, for the attack test.
func GatedURL(url string, b FloodBounds) mcp.Transport {
	t := URL(url).(*mcp.StreamableClientTransport)
	l := newStreamLedger(defaultStreamBounds)
	l.gate = newFloodGate(*b.bounds())
	t.HTTPClient = &http.Client{Transport: inputParamsTransport{base: http.DefaultTransport, streams: l}}
	return t
}

// WithNameBytes sets the bound of DefaultMaxNameBytes, for the control of
// the attack test of long tool names.
func WithNameBytes(n int) ClientOption {
	return func(c *clientConfig) { c.maxName = n }
}

// WithCursorBytes sets the bound of DefaultMaxCursorBytes, for the
// control of the attack test of long cursors.
func WithCursorBytes(n int) ClientOption {
	return func(c *clientConfig) { c.maxCursor = n }
}

// WithFixedReimportGap makes the gap after a re-import the set gap alone,
// however long the re-import took, for the control of the attack test of
// slow listings.
func WithFixedReimportGap() ClientOption {
	return func(c *clientConfig) { c.fixedGap = true }
}

// KeysCompared returns how many key comparisons reading the members of
// the JSON object data takes, with at most most members (0: the bound of
// the direct paths), and whether it read them all.
func KeysCompared(data []byte, most int) (compared int, ok bool) {
	if most == 0 {
		most = maxMembers
	}
	ok = membersUpTo(data, most, func(string, []byte) bool { return true }, &compared)
	return compared, ok
}

// WithoutStreamQueue makes s write its long-lived event streams from the
// writer's goroutine, as before each had a queue of its own, for the
// controls of the stuck reader attacks.
func WithoutStreamQueue() ServerOption {
	return func(c *serverConfig) { c.noStreamQueue = true }
}
