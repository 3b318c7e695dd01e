package natstool

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
)

// Defaults and limits of an [Importer].
const (
	DefaultDiscoveryWait  = 2 * time.Second
	DefaultDiscoveryQuiet = 250 * time.Millisecond
	DefaultResync         = 15 * time.Second
	DefaultWorkerTimeout  = 5 * time.Second
	DefaultCallTimeout    = 60 * time.Second

	// MaxServices bounds the $SRV.INFO replies one scan reads, and
	// MaxTools the tools an importer registers.
	MaxServices = 10000
	MaxTools    = 10000
	// MaxDescriptionBytes bounds an imported tool's description; a longer
	// one is cut at a rune boundary, with a mark.
	MaxDescriptionBytes = 16 << 10
	// MaxSchemaBytes bounds an imported tool's input or output schema; a
	// tool with a larger one is left out.
	MaxSchemaBytes = 256 << 10
	// DefaultMaxResultBytes bounds a result read from the object store.
	DefaultMaxResultBytes = 64 << 20
	// MaxQueuedReplies bounds the messages on reply subjects (results,
	// heartbeats, progress reports) that an importer holds before one of
	// its callers takes them: the NATS client drops the ones beyond it, as
	// it drops a slow consumer's, and a call whose result was dropped ends
	// when its worker timeout runs out.
	MaxQueuedReplies = 1 << 14
)

// ImportOptions configure an [Importer]. A nil *ImportOptions, and every
// zero field, means the default.
type ImportOptions struct {
	// Prefix goes before the name of every imported tool.
	Prefix string
	// Filter, when set, keeps only the tools for which it returns true,
	// given the service's name and the tool's name on the service.
	Filter func(service, tool string) bool
	// DiscoveryWait bounds how long a scan waits for $SRV.INFO replies in
	// all ([DefaultDiscoveryWait]), and DiscoveryQuiet how long it waits
	// after the latest reply ([DefaultDiscoveryQuiet]). A service that
	// answers later is found by its announcement or by the next periodic
	// scan.
	DiscoveryWait, DiscoveryQuiet time.Duration
	// Resync is the period of the full scans that find services which
	// appeared or vanished without an announcement, such as a worker that
	// was killed ([DefaultResync]); negative disables them.
	Resync time.Duration
	// WorkerTimeout is how long a call waits without hearing from its
	// worker (no heartbeat, progress or result) before it takes the worker
	// for dead and fails as unavailable ([DefaultWorkerTimeout]): at least
	// that long, and at most a tenth more, as one watchdog for the
	// importer checks every call ten times per worker timeout. Keep it a
	// few times the workers' heartbeat.
	WorkerTimeout time.Duration
	// CallTimeout bounds calls whose context has no deadline
	// ([DefaultCallTimeout]).
	CallTimeout time.Duration
	// MaxResultBytes bounds a result read from a worker's object store
	// ([DefaultMaxResultBytes]).
	MaxResultBytes int64
	// Retry is the retry policy of imported tools that their service says
	// are idempotent; others are never retried. Nil means
	// tool.RetryPolicy{MaxAttempts: 3}: a [tool.Executor] tries such a
	// call up to three times when it fails as unavailable, and NATS gives
	// each attempt to whichever worker is there. A zero policy turns
	// retries off.
	Retry *tool.RetryPolicy
	// CallHeaders, when set, gives headers added to every call's request:
	// for example the principal the call is made for, which the worker
	// restores with [ServeOptions.CallContext]. Its context carries the
	// call's [Request] ([RequestFrom]), to which [SignedHeaders] binds a
	// signed claim.
	CallHeaders func(ctx context.Context) nats.Header
	// Logger receives tools left out and scans that failed ([slog.Default]
	// when nil).
	Logger *slog.Logger
	// ReplyKey, when set, imports only services whose definitions a
	// worker with the same key signed ([ServeOptions.ReplyKey],
	// [MetadataSignature]; others are left out and logged), and takes
	// only results and progress reports signed for the call by such a
	// worker (see [ReplyKey]): others are dropped and logged, and the
	// call waits on for its worker's. A call whose worker sent only unsigned results
	// (a worker without the key, or older than reply signatures) fails,
	// once the worker falls silent, with an error that says so. Without
	// it, whoever can publish on the caller's inbox can answer its calls.
	ReplyKey *ReplyKey
}

type importConfig struct {
	prefix         string
	filter         func(service, tool string) bool
	wait, quiet    time.Duration
	resync         time.Duration
	workerTimeout  time.Duration
	callTimeout    time.Duration
	maxResultBytes int64
	headers        func(context.Context) nats.Header
	retry          tool.RetryPolicy
	logger         *slog.Logger
	replyKey       *ReplyKey
}

// config is o with its defaults filled in.
func (o *ImportOptions) config() importConfig {
	cfg := importConfig{
		wait: DefaultDiscoveryWait, quiet: DefaultDiscoveryQuiet, resync: DefaultResync,
		workerTimeout: DefaultWorkerTimeout, callTimeout: DefaultCallTimeout, maxResultBytes: DefaultMaxResultBytes,
		retry: tool.RetryPolicy{MaxAttempts: 3},
	}
	if o == nil {
		return cfg
	}
	cfg.prefix, cfg.filter, cfg.headers, cfg.logger = o.Prefix, o.Filter, o.CallHeaders, o.Logger
	cfg.replyKey = o.ReplyKey
	positive(&cfg.wait, o.DiscoveryWait)
	positive(&cfg.quiet, o.DiscoveryQuiet)
	if o.Resync != 0 {
		cfg.resync = o.Resync
	}
	positive(&cfg.workerTimeout, o.WorkerTimeout)
	positive(&cfg.callTimeout, o.CallTimeout)
	positive(&cfg.maxResultBytes, o.MaxResultBytes)
	if o.Retry != nil {
		cfg.retry = *o.Retry
	}
	return cfg
}

// nonEmpty sets *dst to v unless v is empty: an empty option keeps the
// default.
func nonEmpty(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

// positive sets *dst to v when v is above zero: a zero or negative option
// keeps the default.
func positive[T int | int64 | time.Duration](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}

// An Importer keeps the tools that services ([Service]) offer on a NATS connection
// registered in a [tool.Registry], as ordinary tools.
//
// It finds services with $SRV.INFO, listens on [ChangeSubject] for
// services that start, change or stop, and scans again periodically to
// notice workers that vanished without a word. Each tool is registered
// under prefix+name (see [ImportOptions.Prefix]); when services with different names
// offer the same name, the first service in name order keeps it and the
// other tool is left out with an error wrapping [tool.ErrDuplicate]. An
// importer never replaces a tool it did not register.
//
// A call is checked against the tool's schema by the local registry, then
// sent as a request to the tool's subject: NATS gives it to one worker of
// the service's queue group. The time the call has left travels with it
// (at the end of the reply subject, see [ReplyTimeoutMark]). A remote result keeps its kind, structured content and
// parts. The worker's progress reports reach the caller's
// [tool.ProgressFunc], except those that do not grow. A call that no worker receives, that finds every worker busy, or
// whose worker stops answering is a [tool.KindUnavailable] result whose
// error is marked [tool.Transient], so an [tool.Executor] retries it on
// another worker when the tool is idempotent.
type Importer struct {
	nc  *nats.Conn
	reg *tool.Registry
	cfg importConfig

	inbox string // prefix of reply subjects, ends with '.'
	// cancelKey derives each call's cancel secret (callCancelSecret):
	// random, and never sent.
	cancelKey [32]byte
	replies   *nats.Subscription
	// queued receives every message on a reply subject, straight from the
	// connection's reader (a channel subscription). The callers waiting
	// for their calls take them and route each to its call (onReply),
	// so that a reply reaches a lone caller with no goroutine between the
	// reader and it; the watchdog routes what waits there at each tick.
	queued  chan *nats.Msg
	changes *nats.Subscription

	mu        sync.Mutex
	pending   map[string]*pendingCall
	seq       uint64
	tick      atomic.Uint64        // watchdog ticks so far
	instances map[string]*instance // by micro service instance id
	owned     map[string]string    // local name → fingerprint
	closed    bool

	syncMu sync.Mutex // one reconciliation at a time
	kick   chan string
	done   chan struct{}
	wg     sync.WaitGroup
}

// instance is what one micro service instance said about itself.
type instance struct {
	service, version, id string
	protocol             int // its MetadataProtocol
	tools                []remoteDef
}

type remoteDef struct {
	Definition
	subject string
}

// pendingCall is a call waiting for its result.
type pendingCall struct {
	// msgs carries, to the caller, progress reports, then the message
	// that ends the call: the result (or a no-responders status), or one
	// of the sentinels below. onReply keeps at most one progress report
	// in it, so the result and a sentinel always find room.
	msgs chan *nats.Msg
	// heard is the watchdog tick at which the worker was last heard
	// from. A heartbeat only sets it: it wakes nobody.
	heard atomic.Uint64

	// With a reply key: what the call's result is bound to (its subject
	// and arguments), the sequence number of the latest progress report
	// taken, and the replies refused (their count, and the latest
	// reason).
	subject string
	args    []byte
	seq     atomic.Int64
	beat    atomic.Int64 // of the latest heartbeat taken
	refused atomic.Int64
	why     atomic.Value // error
}

// refuse drops a reply of pc that is not signed for it, and logs why.
// Only refused results count toward the error of a call whose worker
// then falls silent.
func (im *Importer) refuse(pc *pendingCall, err error, result bool) {
	if !result {
		im.logger().Debug("natstool: reply refused", "subject", pc.subject, "err", err)
		return
	}
	pc.refused.Add(1)
	pc.why.Store(err)
	im.logger().Warn("natstool: reply refused", "subject", pc.subject, "err", err)
}

// Messages that end a call without a word from its worker.
var (
	closedMsg = new(nats.Msg) // the importer was closed
	silentMsg = new(nats.Msg) // nothing heard for the worker timeout
)

// watchdogTicks is how many ticks of the watchdog make a worker
// timeout: a call is given up between one and 1+1/watchdogTicks worker
// timeouts after its worker was last heard from.
const watchdogTicks = 10

// Import starts an [Importer] for reg on nc: it scans for services,
// registers their tools, and keeps reg in sync until [Importer.Close].
// Tools left out are logged; [Importer.Sync] returns them as errors. An
// error from Import means nothing was started.
func Import(ctx context.Context, nc *nats.Conn, reg *tool.Registry, opts *ImportOptions) (*Importer, error) {
	cfg := opts.config()
	im := &Importer{
		nc: nc, reg: reg, cfg: cfg,
		inbox:     nc.NewRespInbox() + ".",
		queued:    make(chan *nats.Msg, MaxQueuedReplies),
		pending:   make(map[string]*pendingCall),
		instances: make(map[string]*instance),
		owned:     make(map[string]string),
		kick:      make(chan string, 64),
		done:      make(chan struct{}),
	}
	rand.Read(im.cancelKey[:]) // never fails (crypto/rand)
	var err error
	if im.replies, err = nc.ChanSubscribe(im.inbox+"*", im.queued); err != nil {
		return nil, fmt.Errorf("natstool: %w", err)
	}
	if im.changes, err = nc.Subscribe(ChangeSubject, im.onAnnouncement); err != nil {
		im.replies.Unsubscribe()
		return nil, fmt.Errorf("natstool: %w", err)
	}
	if err := im.Sync(ctx); err != nil {
		im.logger().Warn("natstool: some tools were not imported", "err", err)
	}
	im.wg.Add(2)
	go im.loop()
	go im.watchdog()
	return im, nil
}

func (im *Importer) logger() *slog.Logger {
	if im.cfg.logger != nil {
		return im.cfg.logger
	}
	return slog.Default()
}

// Close stops keeping the registry in sync and removes the tools the
// importer registered. Calls in flight end with an unavailable result.
func (im *Importer) Close() error {
	im.mu.Lock()
	if im.closed {
		im.mu.Unlock()
		return nil
	}
	im.closed = true
	im.mu.Unlock()
	close(im.done)
	im.wg.Wait()
	// Deliver what calls canceled on their way out published.
	im.nc.FlushTimeout(5 * time.Second)
	err := errors.Join(im.changes.Unsubscribe(), im.replies.Unsubscribe())
	im.syncMu.Lock()
	im.mu.Lock()
	for name := range im.owned {
		im.reg.Remove(name)
	}
	im.owned = map[string]string{}
	for _, pc := range im.pending {
		select {
		case pc.msgs <- closedMsg:
		default:
		}
	}
	im.mu.Unlock()
	im.syncMu.Unlock()
	if errors.Is(err, nats.ErrConnectionClosed) {
		err = nil
	}
	return err
}

// Sync scans for services now and brings the registry up to date. It
// returns one error per tool left out (errors.Is finds
// [tool.ErrDuplicate], [tool.ErrInvalidSchema] or [tool.ErrInvalidName]),
// or the error that stopped the scan.
func (im *Importer) Sync(ctx context.Context) error {
	found, refused, err := im.scan(ctx)
	if err != nil {
		return err
	}
	im.syncMu.Lock()
	defer im.syncMu.Unlock()
	im.mu.Lock()
	im.instances = found
	im.mu.Unlock()
	return errors.Join(append(refused, im.reconcile())...)
}

// loop handles announcements and periodic scans.
func (im *Importer) loop() {
	defer im.wg.Done()
	var tick <-chan time.Time
	if im.cfg.resync > 0 {
		t := time.NewTicker(im.cfg.resync)
		defer t.Stop()
		tick = t.C
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-im.done
		cancel()
	}()
	for {
		var err error
		select {
		case <-im.done:
			return
		case <-tick:
			err = im.Sync(ctx)
		case payload := <-im.kick:
			err = im.announced(ctx, payload)
		}
		if err != nil && ctx.Err() == nil {
			im.logger().Warn("natstool: resync", "err", err)
		}
	}
}

// watchdog gives up the calls whose worker has not been heard from for
// the worker timeout. One ticker for the importer rather than a timer per
// call: a call only notes the tick at which it last heard its worker.
func (im *Importer) watchdog() {
	defer im.wg.Done()
	t := time.NewTicker(max(im.cfg.workerTimeout/watchdogTicks, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-im.done:
			return
		case <-t.C:
		}
		// A caller busy elsewhere (in its progress callback, say) takes
		// no replies: what waits is routed now, so that the calls hear
		// their workers, and none is taken for silent while its result
		// waits here. With no call in flight, this drops what came late.
		im.drain()
		now := im.tick.Add(1)
		im.mu.Lock()
		for _, pc := range im.pending {
			if now-pc.heard.Load() > watchdogTicks {
				select {
				case pc.msgs <- silentMsg:
				default:
				}
			}
		}
		im.mu.Unlock()
	}
}

// onAnnouncement queues an announcement for the loop.
func (im *Importer) onAnnouncement(m *nats.Msg) {
	select {
	case im.kick <- string(m.Data):
	default:
		// The queue is full of announcements: a full scan will see
		// everything they say.
		select {
		case im.kick <- "":
		default:
		}
	}
}

// announced updates one instance after its announcement, or scans again
// when the announcement cannot be read.
func (im *Importer) announced(ctx context.Context, payload string) error {
	var a Announcement
	if payload == "" || json.Unmarshal([]byte(payload), &a) != nil || a.ID == "" || a.Service == "" {
		return im.Sync(ctx)
	}
	if a.Stopped {
		if im.stillAnswers(ctx, a.ID) {
			im.logger().Info("natstool: announcement ignored: the instance it says stopped still answers (forged?)", "id", showName(a.ID))
			return nil
		}
		im.syncMu.Lock()
		defer im.syncMu.Unlock()
		im.mu.Lock()
		delete(im.instances, a.ID)
		im.mu.Unlock()
		return im.reconcile()
	}
	replaces := a.Replaces
	if replaces != "" && im.stillAnswers(ctx, replaces) {
		im.logger().Info("natstool: announcement ignored: the instance it says was replaced still answers (forged?)", "id", showName(replaces))
		replaces = ""
	}
	subject, err := micro.ControlSubject(micro.InfoVerb, a.Service, a.ID)
	if err != nil {
		return nil // not a name a service can have: ignore
	}
	rctx, cancel := context.WithTimeout(ctx, im.cfg.wait)
	defer cancel()
	msg, err := im.nc.RequestWithContext(rctx, subject, nil)
	var inst *instance
	if err == nil {
		inst, err = im.parseInfo(msg.Data)
	}
	im.syncMu.Lock()
	defer im.syncMu.Unlock()
	im.mu.Lock()
	delete(im.instances, replaces)
	if inst != nil {
		im.instances[inst.id] = inst
	}
	im.mu.Unlock()
	if rerr := im.reconcile(); err == nil {
		err = rerr
	} else {
		err = fmt.Errorf("natstool: info of service %s instance %s: %w", a.Service, a.ID, err)
	}
	return err
}

// stillAnswers reports whether the known instance id still answers its
// $SRV.PING: an announcement that it stopped, or was replaced, comes
// from anyone who may publish on ChangeSubject, and an instance id is no
// secret. An instance this importer does not know has nothing to remove;
// one that does not answer within the discovery quiet time, or at all,
// is taken as gone.
func (im *Importer) stillAnswers(ctx context.Context, id string) bool {
	im.mu.Lock()
	inst := im.instances[id]
	im.mu.Unlock()
	if inst == nil {
		return false
	}
	subject, err := micro.ControlSubject(micro.PingVerb, inst.service, inst.id)
	if err != nil {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, im.cfg.quiet)
	defer cancel()
	_, err = im.nc.RequestWithContext(pctx, subject, nil)
	return err == nil
}

// scan asks every service for its INFO and returns the clawtool services.
// Services refused (not signed, with a reply key) are returned as
// errors, one per instance.
func (im *Importer) scan(ctx context.Context) (found map[string]*instance, refused []error, err error) {
	inbox := im.nc.NewRespInbox()
	ch := make(chan *nats.Msg, 256)
	sub, err := im.nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return nil, nil, fmt.Errorf("natstool: scan: %w", err)
	}
	defer sub.Unsubscribe()
	subject, _ := micro.ControlSubject(micro.InfoVerb, "", "")
	if err := im.nc.PublishRequest(subject, inbox, nil); err != nil {
		return nil, nil, fmt.Errorf("natstool: scan: %w", err)
	}
	found = make(map[string]*instance)
	total := time.NewTimer(im.cfg.wait)
	defer total.Stop()
	var quiet <-chan time.Time
	for n := 0; n < MaxServices; n++ {
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("natstool: scan: %w", context.Cause(ctx))
		case <-total.C:
			return found, refused, nil
		case <-quiet:
			return found, refused, nil
		case m := <-ch:
			if m.Header.Get("Status") == "503" {
				return found, refused, nil // no service at all
			}
			inst, err := im.parseInfo(m.Data)
			if err != nil && len(refused) < 64 {
				refused = append(refused, err)
			}
			if inst != nil {
				found[inst.id] = inst
			}
			quiet = time.After(im.cfg.quiet)
		}
	}
	return found, refused, nil
}

// parseInfo reads a $SRV.INFO reply; nil for services that are not
// clawtool services, and with an error for those refused (with a reply
// key, not signed by a worker holding it).
func (im *Importer) parseInfo(data []byte) (*instance, error) {
	var info micro.Info
	if json.Unmarshal(data, &info) != nil || info.Metadata[MetadataProtocol] == "" || info.ID == "" {
		return nil, nil
	}
	if k := im.cfg.replyKey; k != nil {
		defs := make([]endpointDef, len(info.Endpoints))
		for i, ep := range info.Endpoints {
			defs[i] = endpointDef{ep.Name, ep.Subject, ep.Metadata[MetadataTool]}
		}
		if err := k.verifyAny(info.Metadata[MetadataSignature], signDefinitions, definitionFields(info.Name, info.Version, defs)...); err != nil {
			im.logger().Warn("natstool: service refused: its definitions are not signed by a worker holding the key", "service", info.Name, "id", info.ID, "err", err)
			return nil, fmt.Errorf("natstool: service %q instance %q refused, its tools not imported: its definitions are not signed by a worker holding the key (a worker without --principal-key, or older than signed definitions?): %w", showName(info.Name), showName(info.ID), err)
		}
	}
	inst := &instance{service: info.Name, version: info.Version, id: info.ID, protocol: protocolOf(info.Metadata[MetadataProtocol])}
	for _, ep := range info.Endpoints {
		raw := ep.Metadata[MetadataTool]
		if raw == "" {
			continue
		}
		var d Definition
		if err := json.Unmarshal([]byte(raw), &d); err != nil || d.Name == "" {
			im.logger().Warn("natstool: a tool definition cannot be read", "service", info.Name, "endpoint", ep.Name)
			continue
		}
		inst.tools = append(inst.tools, remoteDef{Definition: d, subject: ep.Subject})
	}
	return inst, nil
}

// showName is a name a service gave, for an error: cut, and quoted by
// the caller's %q.
func showName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// reconcile makes the registry hold the tools of the known instances.
// The caller holds syncMu.
func (im *Importer) reconcile() error {
	im.mu.Lock()
	if im.closed {
		im.mu.Unlock()
		return nil
	}
	insts := make([]*instance, 0, len(im.instances))
	for _, in := range im.instances {
		insts = append(insts, in)
	}
	im.mu.Unlock()
	// Service name order, then the highest version, then id: the first
	// definition of a name wins.
	slices.SortFunc(insts, func(a, b *instance) int {
		return cmp.Or(strings.Compare(a.service, b.service), -compareVersions(a.version, b.version), strings.Compare(a.id, b.id))
	})
	// The workers of a service share its calls, so a call may reach any
	// of them: during a rolling upgrade, the service speaks the oldest
	// protocol among its instances.
	protocols := make(map[string]int)
	for _, in := range insts {
		if p, seen := protocols[in.service]; !seen || in.protocol < p {
			protocols[in.service] = in.protocol
		}
	}
	var errs []error
	want := make(map[string]*remoteTool)
	for _, in := range insts {
		for _, d := range in.tools {
			if im.cfg.filter != nil && !im.cfg.filter(in.service, d.Name) {
				continue
			}
			t, err := im.newRemoteTool(in.service, protocols[in.service], d)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if other, dup := want[t.name]; dup {
				if other.service != in.service {
					errs = append(errs, fmt.Errorf("natstool: tool %q of service %s: its name is taken by the tool of service %s: %w", d.Name, in.service, other.service, tool.ErrDuplicate))
				}
				continue
			}
			if len(want) == MaxTools {
				errs = append(errs, fmt.Errorf("natstool: more than %d tools: tool %q of service %s and later ones left out", MaxTools, d.Name, in.service))
				break
			}
			want[t.name] = t
		}
	}
	for name, t := range want {
		fp, had := im.owned[name]
		if had && fp == t.fingerprint {
			continue
		}
		var err error
		if had {
			// Its own tool, changed: replaced without the registry's
			// warning, which is for a name taken by someone else.
			_, err = im.reg.Replace(t)
		} else {
			err = im.reg.RegisterUnique(t)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("natstool: tool %q of service %s: %w", t.remote, t.service, err))
			if had {
				im.reg.Remove(name)
				delete(im.owned, name)
			}
			continue
		}
		im.owned[name] = t.fingerprint
	}
	for name := range im.owned {
		if want[name] == nil {
			im.reg.Remove(name)
			delete(im.owned, name)
		}
	}
	return errors.Join(errs...)
}

// compareVersions compares dotted version numbers numerically, falling
// back to text for parts that are not numbers.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y string
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		xn, xerr := strconv.Atoi(x)
		yn, yerr := strconv.Atoi(y)
		if xerr == nil && yerr == nil {
			if c := cmp.Compare(xn, yn); c != 0 {
				return c
			}
			continue
		}
		if c := strings.Compare(x, y); c != 0 {
			return c
		}
	}
	return 0
}

// drain routes the replies waiting in queued, at most as many as were
// there when it started.
func (im *Importer) drain() {
	for range len(im.queued) {
		select {
		case m := <-im.queued:
			im.onReply(m)
		default:
			return
		}
	}
}

// onReply routes a message on a reply subject to its call. It (run by
// the callers and the watchdog) is the only sender of progress and
// results on the calls' channels.
func (im *Importer) onReply(m *nats.Msg) {
	token := strings.TrimPrefix(m.Subject, im.inbox)
	im.mu.Lock()
	pc := im.pending[token]
	im.mu.Unlock()
	if pc == nil {
		return // the call is over
	}
	kind := m.Header.Get(HeaderKind)
	if k := im.cfg.replyKey; k != nil && m.Header.Get("Status") == "" {
		// Checked here, before the message takes a place in pc.msgs, so
		// that forged replies cannot crowd out the worker's. A large
		// result is checked once its object is read (finish).
		switch {
		case kind == kindHeartbeat:
			beat, _, err := k.verify(m.Header, signHeartbeat, []byte(m.Subject))
			if err != nil {
				im.refuse(pc, err, false)
				return
			}
			if last := pc.beat.Load(); beat <= last || !pc.beat.CompareAndSwap(last, beat) {
				return // an older beat, or one seen already: a replay
			}
		case kind == kindBusy:
			if _, _, err := k.verify(m.Header, signBusy, []byte(pc.subject), []byte(m.Subject)); err != nil {
				im.refuse(pc, err, false)
				return
			}
		case kind == kindProgress:
			seq, _, err := k.verify(m.Header, signProgress, []byte(m.Subject), m.Data)
			if err != nil {
				im.refuse(pc, err, false)
				return
			}
			if last := pc.seq.Load(); seq <= last || !pc.seq.CompareAndSwap(last, seq) {
				return // an older report, or one seen already
			}
		case m.Header.Get(HeaderObject) == "":
			if _, _, err := k.verify(m.Header, signResult, resultFields(pc.subject, m.Subject, pc.args, m.Data)...); err != nil {
				im.refuse(pc, err, true)
				return
			}
		}
	}
	pc.heard.Store(im.tick.Load())
	switch kind {
	case kindHeartbeat:
		return
	case kindProgress:
		if len(pc.msgs) > 0 {
			return // the caller has not taken the previous one yet
		}
	}
	select {
	case pc.msgs <- m:
	default:
	}
}

// A remoteTool is a tool of a NATS service, imported as a tool.Tool.
type remoteTool struct {
	im          *Importer
	name        string // in the registry
	remote      string // on the service
	service     string
	subject     string
	description string
	params      json.RawMessage
	opts        tool.Options
	fingerprint string
}

func (im *Importer) newRemoteTool(service string, protocol int, d remoteDef) (*remoteTool, error) {
	name := im.cfg.prefix + d.Name
	if protocol < 2 {
		return nil, fmt.Errorf("natstool: tool %q of service %s: a worker of the service speaks wire protocol %d, which took the caller's deadline from a header; this importer sends it only in the reply subject (protocol 2): upgrade that worker", d.Name, service, protocol)
	}
	if !tool.ValidName(name) {
		return nil, fmt.Errorf("natstool: tool %q of service %s: %q is not a valid tool name: %w", d.Name, service, name, tool.ErrInvalidName)
	}
	if err := checkSubject(d.subject, service, d.Name); err != nil {
		return nil, fmt.Errorf("natstool: tool %q of service %q: %w", d.Name, service, err)
	}
	if len(d.InputSchema) > MaxSchemaBytes || len(d.OutputSchema) > MaxSchemaBytes {
		return nil, fmt.Errorf("natstool: tool %q of service %s: its schema is larger than %d bytes: %w", d.Name, service, MaxSchemaBytes, tool.ErrInvalidSchema)
	}
	desc := d.Description
	if len(desc) > MaxDescriptionBytes {
		n := MaxDescriptionBytes
		for n > 0 && desc[n]&0xC0 == 0x80 {
			n--
		}
		desc = desc[:n] + "…"
	}
	fp, _ := json.Marshal(d.Definition)
	var retry tool.RetryPolicy
	if d.Annotations.Idempotent {
		retry = im.cfg.retry
	}
	return &remoteTool{
		im: im, name: name, remote: d.Name, service: service, subject: d.subject,
		description: desc, params: d.InputSchema,
		opts: tool.Options{
			Annotations:  d.toolAnnotations(),
			OutputSchema: d.OutputSchema,
			Retry:        retry,
			// Execute always honors its context, so the goroutine of its
			// own that Registry.Execute gives other tools saves nothing.
			Inline: true,
			// It waits on its context's Done and reads the cause: the
			// registry's one shared timer ends it as well as a timer of
			// its own per call would, for less.
			SharedTimer: true,
			// The worker enforces the tool's own limit; the caller's
			// registry default (or context) bounds the wait here.
		},
		fingerprint: service + "\x00" + d.subject + "\x00" + strconv.Itoa(protocol) + "\x00" + string(fp),
	}, nil
}

func (t *remoteTool) Name() string                { return t.name }
func (t *remoteTool) Description() string         { return t.description }
func (t *remoteTool) Parameters() json.RawMessage { return t.params }
func (t *remoteTool) Options() tool.Options       { return t.opts }

// unavailable is the result of a call that no worker ran to the end.
func (t *remoteTool) unavailable(format string, args ...any) (tool.Result, error) {
	msg := fmt.Sprintf(format, args...)
	return tool.Result{IsError: true, Kind: tool.KindUnavailable, Error: msg}, tool.Transient(errors.New(msg))
}

// Execute sends the call to a worker of the tool's service; see [Importer].
func (t *remoteTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	im := t.im
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, im.cfg.callTimeout)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	left := timeoutMs(time.Until(deadline))
	pc := &pendingCall{msgs: make(chan *nats.Msg, 3)}
	if im.cfg.replyKey != nil {
		pc.subject, pc.args = t.subject, args
	}
	im.mu.Lock()
	if im.closed {
		im.mu.Unlock()
		return t.unavailable("tool %q is no longer imported", t.name)
	}
	im.seq++
	// The token is the reply subject's last token, whole: onReply finds
	// the call by it without reading the deadline back.
	// The reply subject is made in one allocation, the token a part of it.
	secret := callCancelSecret(&im.cancelKey, im.seq)
	sum := cancelDigest(secret[:])
	var buf [128]byte
	b := strconv.AppendUint(append(buf[:0], im.inbox...), im.seq, 36)
	b = base64.RawURLEncoding.AppendEncode(append(b, CancelMark...), sum[:])
	b = strconv.AppendInt(append(b, ReplyTimeoutMark...), left, 10)
	reply := string(b)
	token := reply[len(im.inbox):]
	pc.heard.Store(im.tick.Load())
	im.pending[token] = pc
	im.mu.Unlock()
	defer func() {
		im.mu.Lock()
		delete(im.pending, token)
		im.mu.Unlock()
	}()

	if !im.nc.IsConnected() {
		// The client would buffer the request until it reconnects; say
		// at once that no worker can be reached instead.
		return t.unavailable("tool %q cannot be called: the connection to the NATS server is %s; try again later", t.name, strings.ToLower(im.nc.Status().String()))
	}
	var hdr nats.Header
	if im.cfg.headers != nil {
		hdr = im.cfg.headers(withRequest(ctx, Request{Subject: t.subject, Reply: reply, Data: args}))
	}
	if len(hdr) == 0 {
		hdr = nil // no headers at all: the worker parses none
	}
	msg := &nats.Msg{Subject: t.subject, Reply: reply, Data: args, Header: hdr}
	if err := im.nc.PublishMsg(msg); err != nil {
		return t.unavailable("tool %q could not be sent to a worker: %v", t.name, err)
	}
	// Replies are routed by whichever caller takes them, so two reports
	// of one call may be routed out of order: only those that grow are
	// relayed, as tool.ReportProgress allows (and MCP requires).
	relayed, last := false, 0.0
	for {
		select {
		case <-ctx.Done():
			// Tell the worker, so that it stops too: the reply subject
			// and the secret whose digest it carries prove the cancel is
			// the caller's.
			body := base64.RawURLEncoding.AppendEncode(append([]byte(msg.Reply), ' '), secret[:])
			im.nc.Publish(cancelSubject(t.subject[:strings.LastIndexByte(t.subject, '.')]), body)
			return tool.Result{}, context.Cause(ctx)
		case m := <-im.queued:
			// A reply to this call or to another: route it, and take
			// this call's from pc.msgs.
			im.onReply(m)
		case m := <-pc.msgs:
			if m.Header.Get(HeaderKind) == kindProgress {
				var p progressReport
				if json.Unmarshal(m.Data, &p) == nil && (!relayed || p.Progress > last) {
					relayed, last = true, p.Progress
					tool.ReportProgress(ctx, p.Progress, p.Total, p.Message)
				}
				continue
			}
			if m == silentMsg && pc.refused.Load() > 0 {
				why, _ := pc.why.Load().(error)
				return tool.Result{}, fmt.Errorf("service %s, tool %q: %d replies to the call were refused and its worker fell silent: %v (is the worker serving without the reply key, --principal-key, or older than reply signatures?)", t.service, t.name, pc.refused.Load(), why)
			}
			res, err, forged := t.finish(ctx, m, args)
			if forged != nil {
				im.refuse(pc, forged, true)
				continue
			}
			return res, err
		}
	}
}

// finish reads the message that ends a call. forged is set, and nothing
// else, for a large result not signed for the call (with a reply key),
// which is dropped: the call waits on for its worker's.
func (t *remoteTool) finish(ctx context.Context, m *nats.Msg, args []byte) (res tool.Result, err error, forged error) {
	switch {
	case m == closedMsg:
		res, err = t.unavailable("tool %q is no longer imported", t.name)
		return res, err, nil
	case m == silentMsg:
		if !t.im.nc.IsConnected() {
			res, err = t.unavailable("the connection to the NATS server was lost during the call to tool %q (nothing heard for %s); whether the worker finished it is unknown", t.name, t.im.cfg.workerTimeout)
			return res, err, nil
		}
		res, err = t.unavailable("the worker running tool %q stopped answering (nothing heard for %s); it may have died", t.name, t.im.cfg.workerTimeout)
		return res, err, nil
	case m.Header.Get("Status") == "503":
		res, err = t.unavailable("no worker of service %s is serving tool %q right now; try again later", t.service, t.name)
		return res, err, nil
	case m.Header.Get(HeaderKind) == kindBusy:
		res, err = t.unavailable("every worker of service %s that received the call to tool %q was busy; try again later", t.service, t.name)
		return res, err, nil
	case m.Header.Get(micro.ErrorCodeHeader) != "":
		return tool.Result{}, fmt.Errorf("service %s, tool %q: %s %s", t.service, t.name, m.Header.Get(micro.ErrorCodeHeader), m.Header.Get(micro.ErrorHeader)), nil
	}
	body := m.Data
	if key := m.Header.Get(HeaderObject); key != "" {
		var verify func([]byte) error
		if k := t.im.cfg.replyKey; k != nil {
			verify = func(b []byte) error {
				_, _, err := k.verify(m.Header, signResult, resultFields(t.subject, m.Subject, args, b)...)
				return err
			}
		}
		if body, err, forged = t.fetchObject(ctx, m.Header.Get(HeaderBucket), key, m.Subject, verify); err != nil || forged != nil {
			return tool.Result{}, err, forged
		}
	}
	res, err = decodeResult(body)
	if err != nil {
		return tool.Result{}, fmt.Errorf("service %s, tool %q: the worker's result cannot be read: %v", t.service, t.name, err), nil
	}
	return res, nil, nil
}

// fetchObject reads, then deletes, a large result from the object store:
// only an object that says it is the result of the call whose reply
// subject is reply (HeaderResultFor, which the worker sets). A reply
// naming any other object (of another bucket, or another call's result)
// could otherwise have the importer read it, with its own rights, into
// this call's result, and delete it.
//
// With verify, the bytes read must pass it before the object is deleted:
// a forged pointer to the call's genuine object (whose own pointer is
// on its way) neither ends the call nor deletes it; forged is then why.
func (t *remoteTool) fetchObject(ctx context.Context, bucket, key, reply string, verify func([]byte) error) (body []byte, err error, forged error) {
	fail := func(err error) ([]byte, error, error) {
		return nil, fmt.Errorf("service %s, tool %q: reading the large result %s/%s: %w", t.service, t.name, bucket, key, err), nil
	}
	js, err := jetstream.New(t.im.nc)
	if err != nil {
		return fail(err)
	}
	store, err := js.ObjectStore(ctx, bucket)
	if err != nil {
		return fail(err)
	}
	info, err := store.GetInfo(ctx, key)
	if err != nil {
		return fail(err)
	}
	if got := info.Headers.Values(HeaderResultFor); len(got) != 1 || got[0] != reply {
		return fail(fmt.Errorf("the object is not this call's result (its %s header does not name this call's reply subject; a worker older than this importer sets none): refused, neither read nor deleted", HeaderResultFor))
	}
	if int64(info.Size) > t.im.cfg.maxResultBytes {
		if verify == nil {
			store.Delete(context.WithoutCancel(ctx), key)
		}
		return fail(fmt.Errorf("%d bytes, more than the limit of %d", info.Size, t.im.cfg.maxResultBytes))
	}
	body, err = store.GetBytes(ctx, key)
	if err != nil {
		return fail(err)
	}
	if verify != nil {
		if err := verify(body); err != nil {
			return nil, nil, fmt.Errorf("the large result %s/%s: %w", bucket, key, err)
		}
	}
	store.Delete(context.WithoutCancel(ctx), key)
	return body, nil, nil
}

// checkSubject refuses a tool's subject, as a $SRV.INFO reply gives it,
// unless it is where a service of that name serves that tool: tokens
// ending in service and the tool's name (Serve's prefix.service.tool),
// each a plain token (not empty, no wildcard, no space or control
// character), the service's name one of letters, digits, '-' and '_'.
// Whoever answers $SRV.INFO chooses the subject: a service could
// otherwise list a tool the host's policy allows whose calls reach
// another service's endpoint, or a wildcard.
func checkSubject(subject, service, name string) error {
	if service == "" || strings.IndexFunc(service, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) >= 0 {
		return fmt.Errorf("the service's name is not one of letters, digits, '-' and '_'")
	}
	if len(subject) > 1024 {
		return fmt.Errorf("a subject of %d bytes", len(subject))
	}
	for tok := range strings.SplitSeq(subject, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.IndexFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
			return fmt.Errorf("subject %q is not a subject to call (an empty token, a wildcard, a space or a control character)", subject)
		}
	}
	if !strings.HasSuffix(subject, "."+service+"."+name) {
		return fmt.Errorf("subject %q is not where a service of that name serves the tool (it must end in %q): refused, since its calls would reach another endpoint", subject, "."+service+"."+name)
	}
	return nil
}
