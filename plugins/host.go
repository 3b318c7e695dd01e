package plugins

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/mcptool/oauth"
	"github.com/miniopenclaw/tool/sandbox"
	"github.com/miniopenclaw/tool/sandbox/container"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultConnectTimeout bounds the start of one server or module: the
// process start, the MCP handshake and the first tools/list, or reading
// and compiling the module.
const DefaultConnectTimeout = 30 * time.Second

// A State is where an entry of the configuration is.
type State string

// The states of an entry.
const (
	Loading    State = "loading"    // starting, or compiling
	Ready      State = "ready"      // its tools are registered
	Restarting State = "restarting" // its server exited; it is being restarted, and its tools are unavailable meanwhile
	Failed     State = "failed"     // it could not be loaded, or its server was given up; Status.Err says why
)

// Kinds of entries.
const (
	KindServer = "mcp"  // an MCP server
	KindModule = "wasm" // a WebAssembly module
)

// Status describes one entry of the configuration.
type Status struct {
	Name  string // its name in the configuration
	Kind  string // KindServer or KindModule
	State State
	Tools int    // tools it has in the registry
	Err   string // why it failed, or what it left out; secrets redacted
	// Cut, when not nil, reports the tools of a server left out at its
	// cap ("maxTools"); Err then begins with the same report.
	Cut *Cut
	// Restarts counts the restarts in a row of a server that exited (see
	// [RestartPolicy]); it starts again from zero once the server has
	// stayed up.
	Restarts int
	// Confinement is where a stdio server runs: ConfinedNative,
	// ConfinedContainer or Unconfined; empty for a URL server and a
	// module.
	Confinement string
	// Image is the container image of a server whose Confinement is
	// ConfinedContainer; empty otherwise.
	Image string
	// Network is a confined server's network policy ("none", "host",
	// ...); empty otherwise.
	Network string
	// Secrets are the names of the secret-looking variables a confined
	// server is given ([Server.Secrets]); never their values.
	Secrets []string
	// Allow is the allow list of a server whose Network is "allow", each
	// rule as HOST or HOST:PORT,... (sandbox.ParseHostRule's form).
	Allow []string
	// NetworkDenials are the latest connections the allow-list proxy
	// refused the server (at most MaxStatusDenials, oldest first, kept
	// across its restarts); NetworkDenied counts them all.
	NetworkDenials []sandbox.NetworkDenial
	NetworkDenied  int
}

// MaxStatusDenials is the number of network denials [Status] keeps per
// server: the latest.
const MaxStatusDenials = 16

// Confinements of a stdio server (Status.Confinement).
const (
	ConfinedNative    = "native"     // in the native sandbox, under its policy
	ConfinedContainer = "container"  // in a container, under its policy (Server.Image)
	Unconfined        = "unconfined" // as the host's own process
)

// A Cut is the tools an MCP server listed past the cap of its entry
// ([Server.MaxTools], by default mcptool.DefaultMaxTools): they are not
// imported.
type Cut struct {
	MaxTools int  // the cap that applied
	LeftOut  int  // tools left out past it
	AtLeast  bool // LeftOut is a lower bound: the listing stopped early
}

// String says what was left out and what raises the cap, as [Status.Err]
// and the log do.
func (c *Cut) String() string {
	n := fmt.Sprint(c.LeftOut)
	if c.AtLeast {
		n = "at least " + n
	}
	return fmt.Sprintf("%s tools left out: the server lists more than its cap of %d tools (raise it with \"maxTools\" in its entry, up to %d)", n, c.MaxTools, MaxServerTools)
}

// A RestartPolicy says how a [Host] restarts an MCP server that ended on
// its own (its process exited, or its connection broke): after Delay,
// then after a delay that doubles with each restart in a row, up to
// MaxDelay. A server that stays up for Stable starts the count again.
// After Attempts restarts in a row the host gives up: the entry is
// Failed until the configuration changes or the file reloads. While a
// server is down its tools stay listed, and a call to them gives an
// error Result of kind unavailable at once.
type RestartPolicy struct {
	Attempts        int
	Delay, MaxDelay time.Duration
	Stable          time.Duration
}

// DefaultRestart is the RestartPolicy of a Host made without
// [WithRestart]: five restarts in a row, 0.5 s apart at first, at most
// 30 s, the count starting again after a minute up.
func DefaultRestart() RestartPolicy {
	return RestartPolicy{Attempts: 5, Delay: 500 * time.Millisecond, MaxDelay: 30 * time.Second, Stable: time.Minute}
}

// delay is the wait before the n-th restart in a row (n ≥ 1).
func (p RestartPolicy) delay(n int) time.Duration {
	d := p.Delay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	return min(d, p.MaxDelay)
}

// A Host loads the entries of a [Config] into a [tool.Registry] and keeps
// them there: each entry loads on its own, so one that fails is reported
// in [Host.Status] and the others load all the same; [Host.Apply] with a
// new configuration restarts only the entries that changed, closes the
// removed ones and starts the new ones, changing the registry in place
// (an mcptool server in front of it tells its clients with
// notifications/tools/list_changed). A call in flight on an entry that
// is closed ends at once with an error Result (kind unavailable) saying
// so. A server that ends on its own is restarted (see [RestartPolicy]).
//
// A Host is safe for concurrent use. Close closes every entry.
type Host struct {
	reg      *tool.Registry
	logger   *slog.Logger
	onReload func(error)
	timeout  time.Duration
	debounce time.Duration
	cacheDir string
	restart  RestartPolicy
	tokens   oauth.Store   // WithTokenStore; nil: the default file store
	added    []AddedServer // WithServers, in order
	elicit   mcptool.ElicitationHandler
	relay    bool // WithElicitationRelay
	// proxyHook, set by tests, adjusts a confined server's allow-list
	// proxy after the host configured it (the tests' resolver and
	// dialer); no Option sets it.
	proxyHook func(*sandbox.Proxy)
	// containerOwner, set by tests, is the owner label of the host's
	// containers; empty means ContainerOwner.
	containerOwner string

	ctrMu sync.Mutex
	ctr   *container.Backend // made at the first server in a container
	// now and sleep are the clock of restarts; tests replace them.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error

	applyMu sync.Mutex // one Apply at a time

	mu      sync.Mutex
	cfg     *Config // the configuration applied last
	cfgErr  error   // why the last reload was refused; nil if it was not
	entries map[string]*entry
	closed  bool
}

// An Option configures a Host.
type Option func(*Host)

// WithLogger logs what the host does (entries that fail, tools left out,
// reloads refused) to l, with secrets redacted. The default discards it.
func WithLogger(l *slog.Logger) Option { return func(h *Host) { h.logger = l } }

// WithReloadFunc calls fn after each [Host.Reload], with nil when the
// configuration was applied or the reason it was refused.
func WithReloadFunc(fn func(err error)) Option { return func(h *Host) { h.onReload = fn } }

// WithConnectTimeout sets the time limit of starting one entry; zero
// means DefaultConnectTimeout.
func WithConnectTimeout(d time.Duration) Option { return func(h *Host) { h.timeout = d } }

// WithDebounce sets how long [Host.Watch] waits after the file last
// changed before it reloads; zero means DefaultDebounce.
func WithDebounce(d time.Duration) Option { return func(h *Host) { h.debounce = d } }

// WithCacheDir keeps the compiled code of WebAssembly modules in dir, so
// that a module is compiled once for every entry and restart that uses
// it, and once across processes that share dir. Empty, the default,
// compiles each module entry in memory.
func WithCacheDir(dir string) Option { return func(h *Host) { h.cacheDir = dir } }

// WithRestart sets how servers that end on their own are restarted. A
// zero field takes DefaultRestart's; Attempts below zero never restarts.
func WithRestart(p RestartPolicy) Option { return func(h *Host) { h.restart = p } }

// WithElicitationHandler answers the requests for input (elicitations)
// the MCP servers of every entry make during a call with fn; without it,
// they are handled as mcptool.WithElicitationHandler says for a client
// without a handler.
func WithElicitationHandler(fn mcptool.ElicitationHandler) Option {
	return func(h *Host) { h.elicit = fn }
}

// WithElicitationRelay relays the questions the MCP servers of every
// entry ask for their tasks to where the awaiting call's questions go
// (see mcptool.WithElicitationRelay): the handler of
// [WithElicitationHandler] if set, else the client of an mcptool.Server
// in front of the registry that made the call.
func WithElicitationRelay() Option { return func(h *Host) { h.relay = true } }

// NewHost returns a Host that loads tools into reg.
func NewHost(reg *tool.Registry, opts ...Option) *Host {
	h := &Host{reg: reg, logger: slog.New(slog.DiscardHandler), entries: map[string]*entry{}, now: time.Now, sleep: sleep}
	for _, o := range opts {
		o(h)
	}
	if h.timeout <= 0 {
		h.timeout = DefaultConnectTimeout
	}
	if h.debounce <= 0 {
		h.debounce = DefaultDebounce
	}
	r, d := &h.restart, DefaultRestart()
	switch {
	case r.Attempts == 0:
		r.Attempts = d.Attempts
	case r.Attempts < 0:
		r.Attempts = 0
	}
	if r.Delay <= 0 {
		r.Delay = d.Delay
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = max(d.MaxDelay, r.Delay)
	}
	if r.Stable <= 0 {
		r.Stable = d.Stable
	}
	return h
}

// sleep waits for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Config returns the configuration applied last, or nil.
func (h *Host) Config() *Config {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg
}

// ConfigError returns why the last reload was refused (the last good
// configuration stays applied), or nil.
func (h *Host) ConfigError() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfgErr
}

// Status returns the state of every entry, by name.
func (h *Host) Status() []Status {
	h.mu.Lock()
	es := make([]*entry, 0, len(h.entries))
	for _, e := range h.entries {
		es = append(es, e)
	}
	h.mu.Unlock()
	out := make([]Status, 0, len(es))
	for _, e := range es {
		out = append(out, e.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Reload reads the configuration file and applies it (see [Host.Apply]).
// A file that cannot be read or parsed changes nothing: the last good
// configuration stays, and the error, which says why, is returned,
// logged and kept for [Host.ConfigError].
func (h *Host) Reload(ctx context.Context, file string) error {
	c, err := ReadFile(file)
	h.mu.Lock()
	h.cfgErr = err
	h.mu.Unlock()
	if err != nil {
		h.logger.Warn("plugins: configuration not applied; the last good one stays", "error", err)
	} else {
		h.Apply(ctx, c)
	}
	if h.onReload != nil {
		h.onReload(err)
	}
	return err
}

// Apply makes the registry hold the tools of c: entries that are new
// start, entries whose settings changed (including the values their
// environment references expand to, and a module's file) or that failed
// restart, entries no longer named are closed, and the others are left
// alone.
// The servers of [WithServers] start first, one after another in their
// order; then the configuration's entries start, concurrently. Apply
// returns when each has loaded or failed (see [Host.Status]), or ctx is
// done.
func (h *Host) Apply(ctx context.Context, c *Config) {
	h.applyMu.Lock()
	defer h.applyMu.Unlock()
	// The sandbox policy bounds the entries; one that cannot be read
	// fails them all, never loads them unsandboxed.
	policy, perr := c.Sandbox, error(nil)
	if policy == nil && c.SandboxPolicy != "" {
		policy, perr = sandbox.ReadPolicyFile(c.SandboxPolicy)
		if perr != nil {
			perr = fmt.Errorf("sandboxPolicy: %w", perr)
		}
	}
	d := settings{c.Defaults, policy}
	want := map[string]*entry{}
	for name, s := range c.Servers {
		if !s.Disabled {
			if h.isAdded(name) {
				h.logger.Warn("plugins: MCP server "+strconv.Quote(name)+" of the configuration left out: the program adds a server of the same name", "event", EventFailed)
				continue
			}
			want[name] = h.serverEntry(name, s, c, policy, perr, d, nil)
		}
	}
	for i := range h.added {
		a := &h.added[i]
		want[a.Name] = h.serverEntry(a.Name, a.Server, c, policy, perr, d, a)
	}
	for name, m := range c.Modules {
		if !m.Disabled {
			want[name] = h.newEntry(name, KindModule, c, moduleFingerprint(m, d), func(ctx context.Context, e *entry) error {
				if perr != nil {
					return perr
				}
				if err := moduleSecretRefs(c.secretRefs[name]); err != nil {
					return err
				}
				return e.startModule(ctx, m, policy)
			})
		}
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	var stale, fresh []*entry
	for name, old := range h.entries {
		if w, ok := want[name]; !ok || w.fp != old.fp || w.kind != old.kind || old.failed() {
			stale = append(stale, old)
			delete(h.entries, name)
		}
	}
	for name, w := range want {
		if _, ok := h.entries[name]; !ok {
			h.entries[name] = w
			fresh = append(fresh, w)
		}
	}
	h.cfg = c
	h.mu.Unlock()
	// Close first, so that a restarted entry's tools can take their
	// names again.
	var wg sync.WaitGroup
	for _, e := range stale {
		wg.Go(e.close)
	}
	wg.Wait()
	// The added servers start first, one after another, so that a name
	// two of them serve goes to the earlier one; then the others, together.
	for i := range h.added {
		for _, e := range fresh {
			if e.added != nil && e.name == h.added[i].Name {
				e.start(ctx)
			}
		}
	}
	for _, e := range fresh {
		if e.added == nil {
			wg.Go(func() { e.start(ctx) })
		}
	}
	wg.Wait()
}

// isAdded reports whether name is the name of a server added with
// WithServers.
func (h *Host) isAdded(name string) bool {
	for _, a := range h.added {
		if a.Name == name {
			return true
		}
	}
	return false
}

// serverEntry returns the entry of the server s named name, of the
// configuration c (or added, when a is not nil), bounded by policy (or
// failing with perr, why policy could not be read) and the settings d.
func (h *Host) serverEntry(name string, s Server, c *Config, policy *sandbox.Policy, perr error, d settings, a *AddedServer) *entry {
	// A server's own policy is read with the configuration, like the
	// default; one that cannot be read fails the server alone.
	sp, serr := policy, perr
	if a != nil && serr == nil {
		// The configuration's servers were checked when it was parsed.
		serr = s.check()
	}
	if serr == nil && s.SandboxPolicy != "" && s.URL == "" {
		if serr = checkTrustedFile(s.SandboxPolicy); serr != nil {
			serr = fmt.Errorf("sandboxPolicy: %w", serr)
		} else if sp, serr = sandbox.ReadPolicyFile(s.SandboxPolicy); serr != nil {
			serr = fmt.Errorf("sandboxPolicy: %w", serr)
		}
	}
	var confine *sandbox.Policy
	if serr == nil && sp == nil && s.Image != "" {
		sp = &sandbox.Policy{} // "image" alone confines: the default policy
	}
	if serr == nil && sp != nil && s.URL == "" && !s.Unsandboxed {
		var refs []secretRef
		if a == nil && c != nil {
			refs = c.secretRefs[name] // an added server's entry was not expanded
		}
		confine, serr = serverPolicy(sp, s, refs)
	}
	e := h.newEntry(name, KindServer, c, fingerprint(struct {
		S Server
		P *sandbox.Policy
	}{s, confine}, d), func(ctx context.Context, e *entry) error {
		if serr != nil {
			return serr
		}
		return e.startServer(ctx, s)
	})
	e.confine = confine
	if a != nil {
		e.added, e.loginHint = a, a.LoginHint
		if a.Logger != nil {
			e.log = a.Logger
		}
	}
	if s.URL == "" {
		e.confinement, e.network = Unconfined, ""
		// A server refused confinement (its policy unreadable, its entry
		// not runnable under it) was meant to be confined: it says so,
		// not "unconfined", though it never ran.
		shown := confine
		if shown == nil && serr != nil && !s.Unsandboxed {
			shown = cmp.Or(sp, &sandbox.Policy{})
		}
		if shown != nil {
			e.confinement, e.network = ConfinedNative, string(shown.Network)
			if e.image = cmp.Or(s.Image, shown.Image); e.image != "" {
				e.confinement = ConfinedContainer
			}
			if e.network == "" {
				e.network = string(sandbox.NetworkNone)
			}
			for _, r := range shown.Allow {
				e.allow = append(e.allow, formatRule(r))
			}
			e.secrets = slices.Clone(s.Secrets)
		}
	}
	return e
}

// Close closes every entry, removing their tools from the registry, and
// stops the processes. Later Apply calls do nothing.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	es := h.entries
	h.entries = map[string]*entry{}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range es {
		wg.Go(e.close)
	}
	wg.Wait()
	h.ctrMu.Lock()
	defer h.ctrMu.Unlock()
	if h.ctr != nil {
		err := h.ctr.Close()
		h.ctr = nil
		return err
	}
	return nil
}

// ContainerOwner is the owner label (container.LabelOwner) of the
// containers a Host runs servers in: a Host's start removes the ones a
// crashed process of this host left behind.
const ContainerOwner = "clawtool-plugins"

// containerStart bounds connecting to the container engine.
const containerStart = 30 * time.Second

// containers returns the host's container backend, connecting to the
// engine at the first server that runs in a container; a failure is
// tried again at the next start.
func (h *Host) containers() (sandbox.Backend, error) {
	h.ctrMu.Lock()
	defer h.ctrMu.Unlock()
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, errors.New("plugins: the host is closed")
	}
	if h.ctr != nil {
		return h.ctr, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerStart)
	defer cancel()
	b, err := container.New(ctx, container.Options{Owner: cmp.Or(h.containerOwner, ContainerOwner), NetworkLog: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	h.ctr = b
	return b, nil
}

// settings are what bounds every entry: a change restarts them all.
type settings struct {
	Defaults Defaults
	Policy   *sandbox.Policy
}

// fingerprint identifies an entry's settings: a change restarts it.
func fingerprint(v any, d settings) string {
	b, _ := json.Marshal(struct {
		V any
		D settings
	}{v, d})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func moduleFingerprint(m Module, d settings) string {
	f, err := os.Open(m.Path)
	sum := sha256.New()
	if err == nil {
		_, _ = sum.Write([]byte(fingerprint(m, d)))
		_, err = copyN(sum, f, maxModuleBytes+1)
		f.Close()
	}
	if err != nil {
		return fingerprint(struct {
			M   Module
			Err string
		}{m, err.Error()}, d)
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// errRemoved ends the calls in flight on an entry that is closed.
var errRemoved = errors.New("removed from the configuration")

// An entry is one server or module of the configuration, loaded.
type entry struct {
	h        *Host
	name     string
	kind     string
	fp       string
	redact   func(string) string
	defaults Defaults
	load     func(context.Context, *entry) error
	// confine is the policy a stdio server runs under, nil for one that
	// runs unconfined; confinement and network describe it for Status.
	confine                     *sandbox.Policy
	confinement, network, image string
	allow, secrets              []string
	// log receives the records about the entry: the host's logger, or
	// the added server's own. added is the server of WithServers the
	// entry is, nil for an entry of the configuration; loginHint is its
	// LoginHint.
	log       *slog.Logger
	added     *AddedServer
	loginHint string

	mu      sync.Mutex
	state   State
	err     string
	cut     *Cut                    // the last import's cut, if any
	taken   []string                // names left out since the last report, because others have them
	denials []sandbox.NetworkDenial // the latest, at most MaxStatusDenials
	denied  int                     // denials in all
	closed  bool
	owned   map[string]bool // names it registered in h.reg
	calls   map[uint64]context.CancelCauseFunc
	nextID  uint64
	closers []func() // run by close, last first
	// cancelStart ends a start in progress.
	cancelStart context.CancelFunc
	started     chan struct{}

	// A server's connection and restarts: life ends when the entry
	// closes, bg runs the watch that restarts it.
	life      context.Context
	endLife   context.CancelFunc
	bg        sync.WaitGroup
	closeConn func() // closes the current connection
	upSince   time.Time
	restarts  int
}

func (h *Host) newEntry(name, kind string, c *Config, fp string, load func(context.Context, *entry) error) *entry {
	life, end := context.WithCancel(context.Background())
	return &entry{
		h: h, name: name, kind: kind, fp: fp, redact: c.Redact, defaults: c.Defaults, load: load,
		state: Loading, owned: map[string]bool{}, calls: map[uint64]context.CancelCauseFunc{},
		started: make(chan struct{}), life: life, endLife: end, log: h.logger,
	}
}

func (e *entry) what() string {
	if e.kind == KindModule {
		return fmt.Sprintf("module %q", e.name)
	}
	return fmt.Sprintf("MCP server %q", e.name)
}

// failed reports whether the entry failed, to be retried on the next
// Apply.
func (e *entry) failed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state == Failed
}

func (e *entry) status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := Status{Name: e.name, Kind: e.kind, State: e.state, Tools: len(e.owned), Err: e.err, Restarts: e.restarts,
		Confinement: e.confinement, Image: e.image, Network: e.network, Allow: slices.Clone(e.allow), Secrets: slices.Clone(e.secrets),
		NetworkDenials: slices.Clone(e.denials), NetworkDenied: e.denied}
	if e.cut != nil {
		cut := *e.cut
		st.Cut = &cut
		st.Err = strings.TrimSuffix(cut.String()+"\n"+st.Err, "\n")
	}
	return st
}

// start loads the entry, bounded by the host's connect timeout.
func (e *entry) start(ctx context.Context) {
	defer close(e.started)
	ctx, cancel := context.WithTimeout(ctx, e.h.timeout)
	defer cancel()
	e.mu.Lock()
	if e.closed {
		// Closed before its turn came (the added servers start one
		// after another): nothing to load, nothing to report.
		e.mu.Unlock()
		return
	}
	e.cancelStart = cancel
	e.mu.Unlock()
	err := e.load(ctx, e)
	e.mu.Lock()
	closed := e.closed
	if err != nil {
		e.state, e.err = Failed, e.redact(err.Error())
	} else if e.state == Loading {
		e.state = Ready
	}
	msg := e.err
	e.mu.Unlock()
	if err != nil && !closed {
		e.log.Warn("plugins: "+e.what()+" failed to load; the others load all the same", "event", EventFailed, "error", msg)
		e.shutdown()
	}
}

// warn records and logs a problem that left part of the entry out.
func (e *entry) warn(err error) {
	msg := e.redact(err.Error())
	e.mu.Lock()
	if e.err == "" {
		e.err = msg
	}
	e.mu.Unlock()
	e.log.Warn("plugins: "+e.what()+": part of it left out", "event", EventPartial, "error", msg)
}

// onClose arranges for fn to run when the entry closes.
func (e *entry) onClose(fn func()) {
	e.mu.Lock()
	e.closers = append(e.closers, fn)
	e.mu.Unlock()
}

// close removes the entry's tools, ends its calls in flight and releases
// what it holds.
func (e *entry) close() {
	e.mu.Lock()
	e.closed = true
	for _, cancel := range e.calls {
		cancel(errRemoved)
	}
	if e.cancelStart != nil {
		e.cancelStart()
	}
	e.mu.Unlock()
	// Wait for a start in progress, and a restart: what they hold is
	// released below.
	<-e.started
	e.endLife()
	e.bg.Wait()
	e.shutdown()
}

// shutdown removes the entry's tools and runs its closers.
func (e *entry) shutdown() {
	e.mu.Lock()
	names := e.owned
	e.owned = map[string]bool{}
	closers := e.closers
	e.closers = nil
	if e.closeConn != nil {
		closers = append(closers, e.closeConn)
		e.closeConn = nil
	}
	e.mu.Unlock()
	for name := range names {
		if t, ok := e.h.reg.Get(name); ok {
			if g, ok := t.(*gated); ok && g.e == e {
				e.h.reg.Remove(name)
			}
		}
	}
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
}

// put registers t (in the entry's gate) under its name, or removes the
// entry's tool of that name when t is nil. A name another entry or the
// program already uses is left to it, and reported.
func (e *entry) put(name string, t tool.Tool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	reg := e.h.reg
	if t == nil {
		if e.owned[name] {
			delete(e.owned, name)
			reg.Remove(name)
		}
		return
	}
	if e.owned[name] {
		// A restarted server's tool that has not changed keeps its place:
		// only the connection it calls through is new.
		if old, ok := reg.Get(name); ok {
			if g, ok := old.(*gated); ok && g.e == e && sameDefinition(g.Tool, t) {
				g.impl.Store(&t)
				return
			}
		}
	}
	g := &gated{Tool: t, e: e}
	g.impl.Store(&t)
	var err error
	if e.owned[name] {
		// The entry's own tool, changed: replaced without the registry's
		// warning per tool (the import reports what changed).
		_, err = reg.Replace(g)
	} else {
		err = reg.RegisterUnique(g)
	}
	if err != nil {
		if e.owned[name] {
			delete(e.owned, name)
			reg.Remove(name)
		}
		if errors.Is(err, tool.ErrDuplicate) {
			e.taken = append(e.taken, name) // reported once per import
			return
		}
		e.mu.Unlock()
		e.warn(fmt.Errorf("tool %q left out: %w", name, err))
		e.mu.Lock()
		return
	}
	e.owned[name] = true
}

// track registers a call in flight; ok is false when the entry is closed.
func (e *entry) track(cancel context.CancelCauseFunc) (id uint64, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, false
	}
	e.nextID++
	e.calls[e.nextID] = cancel
	return e.nextID, true
}

func (e *entry) untrack(id uint64) {
	e.mu.Lock()
	delete(e.calls, id)
	e.mu.Unlock()
}

// sameDefinition reports whether a and b define the same tool.
func sameDefinition(a, b tool.Tool) bool {
	return a.Name() == b.Name() && a.Description() == b.Description() &&
		bytes.Equal(a.Parameters(), b.Parameters()) && reflect.DeepEqual(tool.OptionsOf(a), tool.OptionsOf(b))
}

// A gated tool is a tool of an entry: its calls end when the entry
// closes, and the configuration's defaults apply to it. Its definition
// is the tool it was registered with; its calls go to impl, the same
// tool or, after its server restarted, the same tool on the new
// connection.
type gated struct {
	tool.Tool
	e    *entry
	impl atomic.Pointer[tool.Tool]
}

// Options returns the tool's options, with the configuration's default
// time limit and result budget where the tool sets none.
func (g *gated) Options() tool.Options {
	o := tool.OptionsOf(g.Tool)
	if o.Timeout == 0 {
		o.Timeout = time.Duration(g.e.defaults.Timeout)
	}
	if o.MaxOutputBytes == 0 {
		o.MaxOutputBytes = g.e.defaults.MaxOutput
	}
	return o
}

// MCPAnnotations forwards the annotations of an imported MCP tool, so
// that an MCP server in front of the registry describes it as its own
// server did (see [mcptool.Annotated]): a gated tool changes no
// annotation.
func (g *gated) MCPAnnotations() (*mcptool.Annotations, bool) {
	if a, ok := g.Tool.(mcptool.Annotated); ok {
		return a.MCPAnnotations()
	}
	return nil, false
}

// Execute calls the tool; when the entry closes meanwhile, the call ends
// with an error Result of kind unavailable.
func (g *gated) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	id, ok := g.e.track(cancel)
	if !ok {
		return g.removed(), nil
	}
	defer g.e.untrack(id)
	if res, down := g.e.down(g.Name()); down {
		return res, nil
	}
	res, err := (*g.impl.Load()).Execute(ctx, args)
	if errors.Is(context.Cause(ctx), errRemoved) {
		return g.removed(), nil
	}
	return res, err
}

// down returns the Result of a call to the entry's tool name while its
// server is restarting or was given up; down is false otherwise.
func (e *entry) down(name string) (res tool.Result, down bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var why string
	switch e.state {
	case Restarting:
		why = "is restarting"
	case Failed:
		why = "was given up after restarting too often"
	default:
		return tool.Result{}, false
	}
	// The first line only: the end of a server's standard error is for
	// the person reading Status, not for the model.
	reason, _, _ := strings.Cut(e.err, "\n")
	return tool.Result{IsError: true, Kind: tool.KindUnavailable, Error: fmt.Sprintf(
		"tool %q is unavailable: its %s ended and %s (%s); try again later", name, e.what(), why, reason)}, true
}

func (g *gated) removed() tool.Result {
	return tool.Result{IsError: true, Kind: tool.KindUnavailable, Error: fmt.Sprintf(
		"tool %q is gone: its %s was removed from the configuration or restarted while the call ran; list the tools again before retrying",
		g.Name(), g.e.what())}
}

// startServer connects to the MCP server and imports its tools, then
// watches the connection: a server that ends on its own is restarted
// (see [RestartPolicy]).
func (e *entry) startServer(ctx context.Context, s Server) error {
	c, err := e.connect(ctx, s)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.upSince = e.h.now()
	e.mu.Unlock()
	e.bg.Go(func() {
		for c != nil {
			select {
			case <-c.Done():
			case <-e.life.Done():
				return
			}
			c = e.restart(s, c.Err())
		}
	})
	return nil
}

// connect starts one connection to the server and imports its tools into
// a registry of the connection's own, which the entry mirrors into the
// host's; tools the entry had that the server no longer serves are
// removed. The connection closes when the entry closes or the next
// connection replaces it.
func (e *entry) connect(ctx context.Context, s Server) (*mcptool.Client, error) {
	opts := []mcptool.ClientOption{
		mcptool.WithImportLimits(s.MaxTools, maxPages(s.MaxTools), 0),
		mcptool.WithPrefix(s.Prefix),
		mcptool.WithFilter(s.keeps),
		mcptool.WithClientLogger(slog.New(redactingHandler{e.log.Handler(), e.redact})),
		mcptool.WithCallTimeout(time.Duration(s.Timeout)),
		mcptool.WithReimportFunc(e.reimported),
	}
	if s.NoTasks {
		opts = append(opts, mcptool.WithoutTasks())
	}
	switch {
	case e.h.elicit != nil:
		opts = append(opts, mcptool.WithElicitationHandler(e.h.elicit))
	case e.h.relay:
		opts = append(opts, mcptool.WithElicitationRelay())
	}
	var t mcp.Transport
	if s.URL != "" {
		var err error
		if t, err = e.h.withOAuth(urlTransport(s.URL, s.Headers), e.name, e.loginHint, s, slog.New(redactingHandler{e.log.Handler(), e.redact})); err != nil {
			return nil, err
		}
	} else if e.confine != nil {
		t = confinedTransport(e.name, *e.confine, s, e.configureProxy, e.h.containers)
	} else {
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Dir = s.Cwd
		if len(s.Env) > 0 {
			cmd.Env = os.Environ()
			for _, k := range sortedKeys(s.Env) {
				cmd.Env = append(cmd.Env, k+"="+s.Env[k])
			}
		}
		t = mcptool.CommandTransport(cmd)
	}
	c, err := mcptool.Connect(ctx, t, opts...)
	if err != nil {
		return nil, err
	}
	own := tool.NewRegistry()
	stop := own.OnChange(func(name string) {
		t, ok := own.Get(name)
		if !ok {
			t = nil
		}
		e.put(name, t)
	})
	if !e.setConn(func() { stop(); c.Close() }) {
		return nil, errRemoved
	}
	err = c.Import(ctx, own)
	e.reportTaken()
	err = e.recordCut(err)
	switch {
	case err == nil:
	case errors.Is(err, tool.ErrInvalidSchema) || errors.Is(err, tool.ErrInvalidName) ||
		errors.Is(err, tool.ErrDuplicate) || errors.Is(err, mcptool.ErrImportLimit):
		e.warn(err)
	default:
		return nil, err
	}
	e.mu.Lock()
	var gone []string
	for name := range e.owned {
		if _, ok := own.Get(name); !ok {
			gone = append(gone, name)
		}
	}
	e.mu.Unlock()
	for _, name := range gone {
		e.put(name, nil)
	}
	return c, nil
}

// reportTaken records and logs, in one line, the tools the entry left
// out since the last report because other entries or the program have
// their names.
func (e *entry) reportTaken() {
	e.mu.Lock()
	taken := e.taken
	e.taken = nil
	e.mu.Unlock()
	if len(taken) == 0 {
		return
	}
	slices.Sort(taken)
	names := taken
	if len(names) > 8 {
		names = append(names[:8:8], fmt.Sprintf("and %d more", len(taken)-8))
	}
	msg := fmt.Sprintf("%d of its tools left out, their names are taken: %s", len(taken), strings.Join(names, ", "))
	e.mu.Lock()
	if e.err == "" {
		e.err = msg
	}
	e.mu.Unlock()
	e.log.Warn("plugins: "+e.what()+": "+msg, "event", EventTaken, "taken", taken)
}

// maxPages is the tools/list page limit for a cap of maxTools: the
// default, or enough pages for maxTools tools at ten a page.
func maxPages(maxTools int) int {
	return max(mcptool.DefaultMaxPages, maxTools/10)
}

// recordCut keeps the cut err reports, if any, for Status, logs it as
// one line and returns err without it.
func (e *entry) recordCut(err error) error {
	var capped *mcptool.ToolCapError
	var rest []error
	for _, leaf := range leafErrors(err) {
		if c, ok := leaf.(*mcptool.ToolCapError); ok {
			capped = c
			continue
		}
		rest = append(rest, leaf)
	}
	var cut *Cut
	if capped != nil {
		cut = &Cut{MaxTools: capped.Max, LeftOut: capped.LeftOut, AtLeast: capped.AtLeast}
	}
	e.mu.Lock()
	e.cut = cut
	e.mu.Unlock()
	if cut != nil {
		e.log.Warn("plugins: "+e.what()+": "+cut.String(), "event", EventCut, "leftOut", cut.LeftOut, "maxTools", cut.MaxTools, "atLeast", cut.AtLeast)
	}
	return errors.Join(rest...)
}

// reimported records and logs a re-import after the server's
// tools/list_changed: its cut, if any, as the first import's is (one
// WARN line), and one line for the rest.
func (e *entry) reimported(r mcptool.Reimport) {
	rest := e.recordCut(r.Err)
	e.reportTaken()
	attrs := []any{"event", EventReimported, "added", r.Added, "changed", r.Changed, "removed", r.Removed}
	if rest != nil {
		e.log.Warn("plugins: "+e.what()+": re-import after tools/list_changed left part of it out", append(attrs, "error", e.redact(rest.Error()))...)
		return
	}
	e.log.Info("plugins: "+e.what()+": re-imported after tools/list_changed", attrs...)
}

// leafErrors flattens errors joined with errors.Join.
func leafErrors(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var leaves []error
	for _, e := range j.Unwrap() {
		leaves = append(leaves, leafErrors(e)...)
	}
	return leaves
}

// setConn closes the entry's current connection and makes closeConn the
// way to close the new one; it is false, and closes it at once, when the
// entry is closed.
func (e *entry) setConn(closeConn func()) bool {
	e.mu.Lock()
	old, closed := e.closeConn, e.closed
	if !closed {
		e.closeConn = closeConn
	}
	e.mu.Unlock()
	if old != nil {
		old()
	}
	if closed {
		closeConn()
	}
	return !closed
}

// restart restarts a server that ended on its own, after a delay that
// doubles with each restart in a row; it returns the new connection, or
// nil when the entry closed or the restarts in a row reached the limit
// (the entry is then Failed until the configuration changes or reloads).
// Meanwhile the entry is Restarting and calls to its tools give an
// unavailable Result at once.
//
// ended is how the connection ended, when the client knows (a stdio
// server's exit status and the end of its standard error): Status.Err
// gives it, after the restart's count.
func (e *entry) restart(s Server, ended error) *mcptool.Client {
	h, p := e.h, e.h.restart
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	if h.now().Sub(e.upSince) >= p.Stable {
		e.restarts = 0
	}
	why := "the server exited or hung up"
	if ended != nil {
		why += ": " + e.redact(ended.Error())
	}
	e.mu.Unlock()
	for {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return nil
		}
		if e.restarts >= p.Attempts {
			e.state = Failed
			e.err = fmt.Sprintf("not restarted again after %d restarts in a row (its tools are unavailable until its entry in the configuration changes or the file reloads): %s", e.restarts, why)
			msg := e.err
			e.mu.Unlock()
			e.log.Warn("plugins: "+e.what()+" given up", "event", EventGivenUp, "error", msg)
			return nil
		}
		e.restarts++
		n, delay := e.restarts, p.delay(e.restarts)
		e.state = Restarting
		e.err = fmt.Sprintf("restart %d of %d in %s: %s", n, p.Attempts, delay, why)
		msg := e.err
		e.mu.Unlock()
		e.log.Warn("plugins: "+e.what()+" restarting", "event", EventRestarting, "error", msg)
		if h.sleep(e.life, delay) != nil {
			return nil
		}
		ctx, cancel := context.WithTimeout(e.life, h.timeout)
		c, err := e.connect(ctx, s)
		cancel()
		if err == nil {
			e.mu.Lock()
			e.state, e.err, e.upSince = Ready, "", h.now()
			e.mu.Unlock()
			return c
		}
		why = "restart failed: " + e.redact(err.Error())
	}
}

// urlTransport is mcptool.URL with headers sent on every request.
func urlTransport(url string, headers map[string]string) mcp.Transport {
	t := mcptool.URL(url)
	st, ok := t.(*mcp.StreamableClientTransport)
	if !ok || len(headers) == 0 {
		return t
	}
	base := st.HTTPClient.Transport
	st.HTTPClient = &http.Client{Transport: headerTransport{base: base, headers: headers}}
	return st
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// redactingHandler redacts secrets from log messages and string values.
type redactingHandler struct {
	h      slog.Handler
	redact func(string) string
}

func (r redactingHandler) Enabled(ctx context.Context, l slog.Level) bool { return r.h.Enabled(ctx, l) }

func (r redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, r.redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(slog.String(a.Key, r.redact(a.Value.String())))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r redactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = slog.String(a.Key, r.redact(a.Value.String()))
	}
	return redactingHandler{r.h.WithAttrs(red), r.redact}
}

func (r redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{r.h.WithGroup(name), r.redact}
}
