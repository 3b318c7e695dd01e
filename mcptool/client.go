package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/jsonschema"
	iloopback "github.com/miniopenclaw/tool/internal/loopback"
	"github.com/miniopenclaw/tool/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of a [Client].
const (
	// DefaultMaxSchemaBytes bounds an imported tool's input or output
	// schema; a larger schema is refused for that tool.
	DefaultMaxSchemaBytes = 256 << 10
	// DefaultMaxSchemaDepth bounds the nesting of an imported schema.
	DefaultMaxSchemaDepth = 64
	// DefaultMaxTools bounds how many tools one listing of a server's
	// tools imports (those the filter keeps): the cap. The tools listed
	// past it are counted, not imported, and reported ([ToolCapError]).
	DefaultMaxTools = 10_000
	// DefaultMaxPages bounds how many tools/list pages one listing reads:
	// enough for DefaultMaxTools tools at ten a page.
	DefaultMaxPages = 1000
	// DefaultMaxDescriptionBytes bounds an imported tool's description,
	// which is sent to the model with every request; a longer one is cut.
	DefaultMaxDescriptionBytes = 16 << 10
	// DefaultMaxListingBytes bounds what one listing of a server's tools
	// keeps in all: the schemas and descriptions of the tools it imports.
	// Without it, the cap of tools times the bound of a schema is
	// gigabytes, and as many schemas compiled.
	DefaultMaxListingBytes = 64 << 20
	// DefaultMaxNameBytes bounds an imported tool's name as the server
	// spells it (MCP asks for at most 128 characters): a tool with a
	// longer name is left out. The name goes back to the server with each
	// call and into each error about the tool.
	DefaultMaxNameBytes = 1 << 10
	// DefaultMaxCursorBytes bounds a tools/list cursor: a listing whose
	// server gives a longer one ends there, with the tools it has. Each
	// cursor is sent back and kept, to find one the server repeats.
	DefaultMaxCursorBytes = 16 << 10
	// DefaultTerminateDuration is how long closing a [Command] transport
	// waits for the server process to exit after its standard input is
	// closed, before it is sent SIGTERM (go-sdk's default is 5 s).
	DefaultTerminateDuration = 200 * time.Millisecond
	// resyncTimeout bounds one re-listing after notifications/tools/list_changed.
	resyncTimeout = 30 * time.Second
	// DefaultReimportGap is the least time between two re-imports after
	// notifications/tools/list_changed: a server that sends them without
	// end gets at most one listing of its tools a second. After a
	// re-import that took longer, the gap is as long as it took: reading a
	// server's listings takes at most half the client's time.
	DefaultReimportGap = time.Second
)

// URL returns a transport that speaks MCP Streamable HTTP to the endpoint
// at url, such as "http://127.0.0.1:8080/mcp". It retries a broken
// server-sent event stream at most twice. Input requests without params
// in its results (see [Command]) are read as having empty params.
//
// [Connect] bounds what any Streamable HTTP transport reads from the
// server: a JSON body to [MaxLineBytes], an event to go-sdk's
// MaxEventSize, the whole event stream of one request, its resumptions
// together, to [DefaultMaxStreamEvents], [DefaultMaxStreamBytes] and
// [DefaultMaxStreamResumes] (past one, the call fails saying so), any
// other body (an HTTP error's text) to 1 MiB; and,
// unless the transport's HTTPClient sets CheckRedirect, it follows a
// redirect only within the origin (scheme, host and port) of the
// request, at most 5 times: a redirect elsewhere fails the request, so
// the request and its credentials never reach another address. Connect
// refuses an endpoint URL that holds a user or password and is plain http
// to another machine: they would go with every request, in clear.
func URL(url string) mcp.Transport {
	return &mcp.StreamableClientTransport{
		Endpoint:   url,
		MaxRetries: 2,
		HTTPClient: &http.Client{Transport: newInputParamsTransport(http.DefaultTransport)},
	}
}

// A Client is a connection to one MCP server whose tools can be imported
// into a [tool.Registry] as [tool.Tool] values. Make one with [Connect].
// It is safe for concurrent use.
//
// # Names
//
// An imported tool is registered as prefix+name (see [WithPrefix]). A
// name outside the registry's set ^[a-zA-Z0-9_-]{1,64}$ (MCP allows dots,
// longer names and more) is mapped into it: every other character
// becomes '_', the name is cut to fit, and an underscore and eight hex
// digits of a hash of the server's name are appended, so the mapping is
// stable across connections and distinct names stay distinct. Each tool
// keeps the server's own name, and calls go out under it.
//
// # Calls
//
// An imported tool validates its arguments against the server's input
// schema before anything is sent (the [tool.Registry] also does, before
// Execute is called). The call honours its context: when it ends,
// go-sdk sends notifications/cancelled and Execute returns at once, so a
// hung server costs at most the call's time limit ([WithCallTimeout], or
// the registry's default) and a dead one gives an error at once. A result
// with isError set becomes a Result with IsError set and the server's text
// as its Error. Structured content is checked against the tool's output
// schema here, since go-sdk's client does not check it; content that does
// not match, or is missing, gives an error Result. Progress the server
// reports reaches the caller's [tool.ProgressFunc] (see
// [tool.WithProgress]), its message cut to 1 KiB.
//
// # Reconnecting
//
// A Client does not reconnect. When the server exits or the connection
// breaks, the imported tools stay registered and every call to them gives
// an error Result saying the connection is closed (for a [Command]
// server, with its exit status and the end of its standard error);
// [Client.Done] is closed. To recover, [Connect] again and [Client.Import] into the same
// registry: tools under the same names replace the old ones (a new Client
// does not remove tools the old one imported, so remove those that
// vanished, or start from a fresh registry).
type Client struct {
	cfg     clientConfig
	session *mcp.ClientSession
	done    chan struct{}

	progress sync.Map // progress token (string) → *callProgress of the call
	awaiting sync.Map // task ID (string) → context of the call awaiting it (WithElicitationRelay)
	nextTok  atomic.Uint64

	syncMu sync.Mutex // held while a registry is brought in sync

	mu      sync.Mutex
	imports []*importState
	dirty   chan struct{} // list_changed seen; cap 1
	stop    context.CancelFunc
	wg      sync.WaitGroup
	closed  bool

	filtered  bool                  // the transport applies filterMessage: tasks can be asked for
	resources *jsonschema.Resources // WithSchemaResources; nil if none
	endErr    error                 // why the session ended; read after done
	// closeAnswers ends the answers to the server's requests still being
	// sent over HTTP, which go-sdk's Close would wait for; nil if none.
	closeAnswers context.CancelFunc
	ended        func() error // a Command transport's end, if any
}

type clientConfig struct {
	impl             mcp.Implementation
	prefix           string
	filter           func(name string) bool
	timeout          time.Duration
	logger           *slog.Logger
	protocolVersion  string
	maxSchemaBytes   int
	maxSchemaDepth   int
	assertFormat     bool
	resources        map[string]json.RawMessage
	maxInFlight      int
	maxTools         int
	maxPages         int
	maxDescription   int
	maxListing       int // DefaultMaxListingBytes unless set (tests)
	maxName          int // DefaultMaxNameBytes unless set (tests)
	maxCursor        int // DefaultMaxCursorBytes unless set (tests)
	maxProgress      int // DefaultMaxCallProgress; 0: no bound (tests)
	maxProgressBytes int // DefaultMaxCallProgressBytes; 0: no bound (tests)
	onReimport       func(Reimport)
	noTasks          bool          // WithoutTasks
	pollFloor        time.Duration // WithTaskPolling
	pollCeiling      time.Duration
	elicit           ElicitationHandler
	relay            bool            // WithElicitationRelay
	approver         policy.Approver // WithElicitationApprover
	reimportGap      time.Duration   // DefaultReimportGap unless gapSet (tests)
	gapSet           bool
	fixedGap         bool // the gap is reimportGap, not also as long as the re-import (tests)
}

// A ClientOption configures a [Client] made by [Connect].
type ClientOption func(*clientConfig)

// WithPrefix prepends prefix to the name of every imported tool, the
// specification's advice for clients that merge the tools of several
// servers. prefix should itself match [a-zA-Z0-9_-]*, for example "fs_".
func WithPrefix(prefix string) ClientOption {
	return func(c *clientConfig) { c.prefix = prefix }
}

// WithFilter imports only the tools for which keep, given the server's
// own name for the tool, returns true.
func WithFilter(keep func(name string) bool) ClientOption {
	return func(c *clientConfig) { c.filter = keep }
}

// WithCallTimeout sets the time limit of each call to an imported tool
// (its [tool.Options.Timeout]). Zero, the default, leaves it to the
// registry's default.
func WithCallTimeout(d time.Duration) ClientOption {
	return func(c *clientConfig) { c.timeout = d }
}

// WithMaxInFlight sets how many calls of each imported tool an
// [tool.Executor] batch runs at once ([tool.Options.MaxInFlight]): 1 runs
// each tool's calls one at a time, a negative n sets no limit. By default
// a batch of calls to imported tools runs in parallel, except for a tool
// whose server says destructiveHint true (and not readOnlyHint), whose
// calls run one at a time. Tools that claim nothing are not held back,
// although MCP reads them as destructive: the server did not say so, and
// a batch of remote calls is expected to run at once.
func WithMaxInFlight(n int) ClientOption {
	return func(c *clientConfig) { c.maxInFlight = n }
}

// WithClientImplementation sets the name and version the client reports
// to servers (clientInfo). The default is "clawtool" and "dev".
func WithClientImplementation(name, version string) ClientOption {
	return func(c *clientConfig) { c.impl.Name, c.impl.Version = name, version }
}

// WithClientLogger sets the logger for protocol events, such as a tool
// refused on re-import. The default discards them.
func WithClientLogger(l *slog.Logger) ClientOption {
	return func(c *clientConfig) { c.logger = l }
}

// WithProtocolVersion sets the protocol version to ask for. The default
// asks for the newest (2026-07-28) with server/discover and falls back to
// an initialize handshake at 2025-11-25; "2025-11-25" skips the probe,
// which saves a round trip with servers known to be older.
func WithProtocolVersion(v string) ClientOption {
	return func(c *clientConfig) { c.protocolVersion = v }
}

// WithSchemaLimits bounds the size in bytes and the nesting depth of an
// imported tool's schemas; a tool over a limit is not imported. Zero keeps
// the default ([DefaultMaxSchemaBytes], [DefaultMaxSchemaDepth]).
func WithSchemaLimits(maxBytes, maxDepth int) ClientOption {
	return func(c *clientConfig) {
		if maxBytes > 0 {
			c.maxSchemaBytes = maxBytes
		}
		if maxDepth > 0 {
			c.maxSchemaDepth = maxDepth
		}
	}
}

// WithFormatAssertion makes the format keyword of imported schemas an
// assertion for date-time, date, time, email, uuid, ipv4, ipv6 and uri.
// By default format is an annotation, as draft 2020-12 says, since
// servers often accept values their schema's format would refuse.
func WithFormatAssertion() ClientOption {
	return func(c *clientConfig) { c.assertFormat = true }
}

// WithSchemaResources registers schemas in advance, by absolute URI, for
// the $ref of imported schemas to name: schemas are never fetched, and a
// reference to anything else leaves the tool out. An imported schema that
// uses them gets them embedded under its "$defs", so that the tool's
// schema is whole wherever it is sent. Connect fails if a URI is not
// absolute or a schema is not JSON.
func WithSchemaResources(schemas map[string]json.RawMessage) ClientOption {
	return func(c *clientConfig) { c.resources = schemas }
}

// ErrImportLimit is wrapped by the errors of [Client.Tools] and
// [Client.Import] that report a limit of [WithImportLimits] reached: the
// tools within the limits are imported all the same.
var ErrImportLimit = errors.New("mcptool: import limit reached")

// A ToolCapError reports a listing cut at the tool cap of
// [WithImportLimits]: the first Max tools the filter keeps are imported,
// and LeftOut more are not. The listing goes on past the cap only to count
// them, within the page limit; when it stops early (the page limit, or a
// repeated cursor), AtLeast is true and LeftOut is a lower bound. It
// wraps [ErrImportLimit].
type ToolCapError struct {
	Max     int  // the cap
	LeftOut int  // tools left out past it
	AtLeast bool // LeftOut is a lower bound
}

func (e *ToolCapError) Error() string {
	n := fmt.Sprint(e.LeftOut)
	if e.AtLeast {
		n = "at least " + n
	}
	return fmt.Sprintf("mcptool: tools/list: %s tools left out: the server lists more than the cap of %d (WithImportLimits raises it)", n, e.Max)
}

func (e *ToolCapError) Unwrap() error { return ErrImportLimit }

// WithImportLimits bounds what one listing of a server's tools reads: at
// most maxTools tools imported (the cap: the tools the filter keeps past
// it are counted and left out, see [ToolCapError]), over at most maxPages
// tools/list pages, and a description of at most maxDescriptionBytes
// bytes per tool (a longer one is cut, with a notice for the model). The
// listing also stops when the server repeats a cursor. Zero keeps a
// default ([DefaultMaxTools], [DefaultMaxPages],
// [DefaultMaxDescriptionBytes]). The limits apply to every import of the
// client, the first and each one after notifications/tools/list_changed.
func WithImportLimits(maxTools, maxPages, maxDescriptionBytes int) ClientOption {
	return func(c *clientConfig) {
		if maxTools > 0 {
			c.maxTools = maxTools
		}
		if maxPages > 0 {
			c.maxPages = maxPages
		}
		if maxDescriptionBytes > 0 {
			c.maxDescription = maxDescriptionBytes
		}
	}
}

// A Reimport is what one re-import of a registry after
// notifications/tools/list_changed did: the tools it added, changed
// (replaced in place) and removed, and the error [Client.Import] would
// have returned (nil when nothing was left out; a cut at the tool cap is
// a [*ToolCapError] in it).
type Reimport struct {
	Added, Changed, Removed int
	Err                     error
}

// WithReimportFunc calls fn after each re-import, for a host that shows
// what its imports left out (package plugins keeps the cut of each
// entry's last import this way). With fn set the client does not log the
// re-import itself: fn reports it as the host sees fit.
func WithReimportFunc(fn func(Reimport)) ClientOption {
	return func(c *clientConfig) { c.onReimport = fn }
}

// Connect connects to the MCP server at the other end of t (see
// [Command], [URL], or mcp.NewInMemoryTransports) and completes the
// protocol handshake, which ctx bounds. The returned Client must be
// closed.
func Connect(ctx context.Context, t mcp.Transport, opts ...ClientOption) (*Client, error) {
	if err := userinfoInClear(t); err != nil {
		return nil, err
	}
	cfg := clientConfig{
		impl:             mcp.Implementation{Name: "clawtool", Version: "dev"},
		maxSchemaBytes:   DefaultMaxSchemaBytes,
		maxSchemaDepth:   DefaultMaxSchemaDepth,
		maxTools:         DefaultMaxTools,
		maxPages:         DefaultMaxPages,
		maxDescription:   DefaultMaxDescriptionBytes,
		maxListing:       DefaultMaxListingBytes,
		maxName:          DefaultMaxNameBytes,
		maxCursor:        DefaultMaxCursorBytes,
		maxProgress:      DefaultMaxCallProgress,
		maxProgressBytes: DefaultMaxCallProgressBytes,
		pollFloor:        DefaultMinPollInterval,
		pollCeiling:      DefaultMaxPollInterval,
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	cfg.pollCeiling = max(cfg.pollCeiling, cfg.pollFloor)
	if !cfg.gapSet {
		cfg.reimportGap = DefaultReimportGap
	}
	c := &Client{cfg: cfg, done: make(chan struct{}), dirty: make(chan struct{}, 1)}
	t, c.filtered = filtered(t)
	if st, ok := t.(*mcp.StreamableClientTransport); ok && st.HTTPClient != nil {
		if ip, ok := st.HTTPClient.Transport.(inputParamsTransport); ok && ip.streams != nil {
			c.closeAnswers = ip.streams.closeAnswers
		}
	}
	if ct, ok := t.(*commandTransport); ok {
		if ct.logger == nil {
			ct.logger = cfg.logger
		}
		c.ended = ct.ended
	}
	if pt, ok := t.(*processTransport); ok {
		if pt.logger == nil {
			pt.logger = cfg.logger
		}
		c.ended = pt.ended
	}
	if len(cfg.resources) > 0 {
		c.resources = &jsonschema.Resources{}
		for uri, doc := range cfg.resources {
			if err := c.resources.Add(uri, doc); err != nil {
				return nil, fmt.Errorf("mcptool: WithSchemaResources: %w", err)
			}
		}
	}
	impl := cfg.impl
	var elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	if h := cfg.elicit; h != nil {
		elicit = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			p := req.Params
			if p == nil {
				p = &mcp.ElicitParams{}
			}
			return h(ctx, p)
		}
	} else if cfg.relay {
		elicit = c.relayElicitation
	} else if cfg.approver != nil {
		elicit = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			p := req.Params
			if p == nil {
				p = &mcp.ElicitParams{}
			}
			return c.approveElicitation(ctx, p)
		}
	}
	sdk := mcp.NewClient(&impl, &mcp.ClientOptions{
		Logger:             cfg.logger,
		ElicitationHandler: elicit,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.dirty <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: c.onProgress,
	})
	registerTaskMethods(sdk)
	var sopts *mcp.ClientSessionOptions
	if cfg.protocolVersion != "" {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: cfg.protocolVersion}
	}
	session, err := sdk.Connect(ctx, t, sopts)
	if err != nil {
		return nil, fmt.Errorf("mcptool: connect: %w", err)
	}
	c.session = session
	life, stop := context.WithCancel(context.Background())
	c.stop = stop
	c.wg.Go(func() {
		c.endErr = session.Wait()
		close(c.done)
	})
	c.wg.Go(func() { c.resyncLoop(life) })
	return c, nil
}

// Session returns the underlying go-sdk session, for the server's
// identity and capabilities or for features this package does not wrap.
func (c *Client) Session() *mcp.ClientSession { return c.session }

// Done returns a channel that is closed when the connection has ended:
// the server exited or hung up, or [Client.Close] was called.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended, once [Client.Done] is closed: for
// a [Command] transport whose server exited on its own, an error that
// gives its exit status and the end of its standard error (as calls to
// its tools do). It is nil while the connection is up, and may be nil or
// a closing error after [Client.Close].
func (c *Client) Err() error {
	select {
	case <-c.done:
	default:
		return nil
	}
	if c.ended != nil {
		if err := c.ended(); err != nil {
			return err
		}
	}
	return c.endErr
}

// Close ends the connection (for a [Command] transport, the process is
// stopped as described there) and stops keeping registries in sync. The
// imported tools stay registered; calls to them give error Results. Close
// waits for the client's goroutines and is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.done
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.stop()
	if c.closeAnswers != nil {
		c.closeAnswers()
	}
	err := c.session.Close()
	c.wg.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// onProgress relays notifications/progress to the call that asked for it,
// and counts them against the call's bounds: past one, the call fails
// naming it (see [DefaultMaxCallProgress]).
func (c *Client) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req.Params == nil {
		return
	}
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	v, ok := c.progress.Load(tok)
	if !ok {
		return
	}
	call := v.(*callProgress)
	p := req.Params
	if !call.count(len(p.Message), c.cfg.maxProgress, c.cfg.maxProgressBytes) {
		return
	}
	tool.ReportProgress(call.ctx, p.Progress, p.Total, shortText(p.Message, maxProgressMessage))
}

// maxProgressMessage bounds the message of a progress notification passed
// on to the caller: a server may send many, each as long as a message.
const maxProgressMessage = 1 << 10

// A callProgress is the progress one call has taken, and how to end the
// call when it takes too much.
type callProgress struct {
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu        sync.Mutex
	n, bytes  int
	overBound bool
}

// count takes one progress notification with a message of size bytes and
// reports whether it is passed on; the first past a bound (maxN
// notifications, maxBytes of messages; 0: none) ends the call, its cause
// naming the bound.
func (p *callProgress) count(size, maxN, maxBytes int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.overBound {
		return false
	}
	p.n++
	p.bytes += size
	var what string
	switch {
	case maxN > 0 && p.n > maxN:
		what = fmt.Sprintf("more than %d progress notifications", maxN)
	case maxBytes > 0 && p.bytes > maxBytes:
		what = fmt.Sprintf("more than %d bytes of progress messages", maxBytes)
	default:
		return true
	}
	p.overBound = true
	p.cancel(fmt.Errorf("%w: the MCP server sent %s for this call", ErrNotificationFlood, what))
	return false
}

// ErrNotificationFlood is wrapped by the error of a call to an imported
// tool that ended because the server sent it more notifications than its
// bounds ([DefaultMaxCallProgress], [DefaultMaxCallProgressBytes]).
var ErrNotificationFlood = errors.New("mcptool: notification bound passed")

// progressToken returns a fresh progress token bound until release is
// called to a context derived from ctx, which the call is to use: it
// ends when the server sends the call more progress than its bounds.
func (c *Client) progressToken(ctx context.Context) (tok string, callCtx context.Context, release func()) {
	tok = "clawtool-" + strconv.FormatUint(c.nextTok.Add(1), 10)
	callCtx, cancel := context.WithCancelCause(ctx)
	c.progress.Store(tok, &callProgress{ctx: callCtx, cancel: cancel})
	return tok, callCtx, func() { c.progress.Delete(tok); cancel(nil) }
}

// userinfoInClear refuses an HTTP transport whose endpoint holds a user
// or password (http://bob:pw@host/mcp) and is plain http to another
// machine: Go's HTTP client sends them with every request, as Basic
// authorization, so they would cross the network in clear
// (TestEndpointUserinfoNotSentInClear).
func userinfoInClear(t mcp.Transport) error {
	st, ok := t.(*mcp.StreamableClientTransport)
	if !ok {
		return nil
	}
	u, err := url.Parse(st.Endpoint)
	if err != nil || u.User == nil || !iloopback.Cleartext(u) {
		return nil // an endpoint that does not parse fails in go-sdk
	}
	return fmt.Errorf("mcptool: the user and password in the endpoint URL would cross the network in clear: it is plain http to %s, another machine; use https, or a loopback address", u.Hostname())
}
