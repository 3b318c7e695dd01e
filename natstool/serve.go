package natstool

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/deadline"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"
)

// Defaults of a [Service].
const (
	DefaultServiceName   = "clawtool"
	DefaultSubjectPrefix = "clawtool.tool"
	DefaultMaxInFlight   = 64
	DefaultMaxWaiting    = 1024
	DefaultHeartbeat     = time.Second
)

// ServeOptions configure a [Service]. A nil *ServeOptions, and every zero
// field, means the default.
type ServeOptions struct {
	// Name is the micro service's name ([DefaultServiceName]). Workers
	// that serve the same tools use the same name: they form one queue
	// group and share the calls. Names are letters, digits, '-' and '_'.
	Name string
	// Version is the service's semantic version ("0.0.0"). When workers of
	// one service disagree about a tool's definition, an importer takes
	// the definition of the highest version.
	Version string
	// Description is the service's description.
	Description string
	// SubjectPrefix is the prefix of the endpoints' subjects
	// ([DefaultSubjectPrefix]): tool T of service S is served on
	// PREFIX.S.T.
	SubjectPrefix string
	// MaxInFlight bounds the calls this worker runs at once
	// ([DefaultMaxInFlight]), and MaxWaiting the calls it keeps waiting
	// for a turn ([DefaultMaxWaiting]; negative: none). A call that finds
	// the waiting line full is answered at once as unavailable, so that
	// the caller may try another worker. Waiting calls count against their
	// own deadline.
	MaxInFlight, MaxWaiting int
	// Heartbeat is how often the worker tells the caller that a call is
	// still waiting or running ([DefaultHeartbeat]): one ticker for the
	// service beats every call in flight at each tick, so a call hears its
	// first heartbeat within one interval, and a call that ends sooner
	// costs nothing for them. An importer that hears nothing for a few
	// heartbeats takes the worker for dead.
	Heartbeat time.Duration
	// ObjectStore, when set, lets results larger than the NATS server's
	// max payload travel through a JetStream object store: the worker puts
	// the result there and the importer reads and deletes it. Give the
	// bucket a TTL so that results whose caller went away do not pile up.
	// Without it, such a result is replaced by an error result that says
	// so; it is never cut.
	ObjectStore jetstream.ObjectStore
	// CallContext, when set, derives each call's context from its request
	// headers: for example, to restore the principal an importer set with
	// [ImportOptions.CallHeaders]. Its context carries the call's
	// [Request] ([RequestFrom]), which [VerifiedContext] checks a signed
	// claim against. An error refuses the call with that error's message
	// (kind denied).
	CallContext func(ctx context.Context, h nats.Header) (context.Context, error)
	// Jobs, when set, makes the service also take jobs from that queue,
	// running up to the service's in-flight limit of them at once, besides
	// its calls. The jobs run with [JobsOptions.Context], or else
	// CallContext. [Service.Stop] stops taking them.
	Jobs *Jobs
	// Logger receives events such as a failed resync of the service's
	// endpoints ([slog.Default] when nil).
	Logger *slog.Logger
	// ReplyKey, when set, signs the service's definitions and each
	// call's result, progress reports, heartbeats and busy reply (see
	// [ReplyKey]), for callers that take only signed replies
	// ([ImportOptions.ReplyKey]).
	ReplyKey *ReplyKey
}

type serveConfig struct {
	name, version, description string
	prefix                     string
	maxInFlight, maxWaiting    int
	heartbeat                  time.Duration
	store                      jetstream.ObjectStore
	bucket                     string
	callContext                func(context.Context, nats.Header) (context.Context, error)
	logger                     *slog.Logger
	jobs                       *Jobs
	replyKey                   *ReplyKey
}

// config is o with its defaults filled in.
func (o *ServeOptions) config() serveConfig {
	cfg := serveConfig{
		name: DefaultServiceName, version: "0.0.0", prefix: DefaultSubjectPrefix,
		maxInFlight: DefaultMaxInFlight, maxWaiting: DefaultMaxWaiting, heartbeat: DefaultHeartbeat,
	}
	if o == nil {
		return cfg
	}
	nonEmpty(&cfg.name, o.Name)
	nonEmpty(&cfg.version, o.Version)
	nonEmpty(&cfg.prefix, o.SubjectPrefix)
	cfg.description = o.Description
	positive(&cfg.maxInFlight, o.MaxInFlight)
	if o.MaxWaiting < 0 {
		cfg.maxWaiting = 0
	} else if o.MaxWaiting > 0 {
		cfg.maxWaiting = o.MaxWaiting
	}
	positive(&cfg.heartbeat, o.Heartbeat)
	cfg.store, cfg.callContext, cfg.jobs, cfg.logger = o.ObjectStore, o.CallContext, o.Jobs, o.Logger
	cfg.replyKey = o.ReplyKey
	return cfg
}

// A Service serves the tools of a [tool.Registry] as a NATS micro service:
// one endpoint per tool, in a queue group named after the service, so that
// every worker process serving the same service shares the calls. Each
// endpoint's metadata holds the tool's [Definition] under [MetadataTool];
// the service answers $SRV.PING, $SRV.INFO and $SRV.STATS as every micro
// service does.
//
// Every call runs through [tool.Registry.ExecuteHere], on a goroutine of
// the service's pool, with a context that
// ends when the caller's time runs out: the time at the end of the reply
// subject ([ReplyTimeoutMark]). While a call waits
// for a turn or runs, the worker sends heartbeats and the tool's progress
// reports to the caller.
//
// When the registry changes, the service's endpoints are rebuilt and the
// change is announced on [ChangeSubject].
type Service struct {
	nc  *nats.Conn
	reg *tool.Registry
	cfg serveConfig

	running chan struct{} // a token per running call
	waiting chan struct{} // a token per call received and not answered
	base    context.Context
	cancel  context.CancelFunc

	mu       sync.Mutex
	svc      micro.Service
	stopped  bool
	inFlight map[string]*call // by reply subject
	// deadlines ends the calls in flight at their caller's deadline, with
	// one timer for the service: a context.WithDeadlineCause per call
	// cost a runtime timer started and stopped, a child registered in its
	// parent and five more allocations, the largest share of a small
	// call's work on the worker. Guarded by mu, like inFlight.
	deadlines deadline.Timer[*call]
	abandon   bool // cancel every call: nobody can receive its result
	cancelSub *nats.Subscription
	stopWatch func()
	dirty     chan struct{}
	loopDone  chan struct{}
	beatsDone chan struct{}
	jobWorker *JobWorker
	calls     sync.WaitGroup

	handoff chan received  // unbuffered: to a runner that waits for a call
	idle    atomic.Int64   // runners waiting for a call
	runners sync.WaitGroup // every runner
}

// A call is one call a worker received and has not answered yet. It is
// also the call's context: a cancelable child of Background that reports
// the caller's deadline and, once the service's deadline timer ended it,
// [context.DeadlineExceeded] as its error with the cause errCallerTimeout,
// as a context made by context.WithDeadlineCause would. Contexts derived
// from it see context.Canceled then, with the same cause.
type call struct {
	context.Context
	s      *Service
	name   string // the tool's
	req    micro.Request
	reply  string
	cancel context.CancelCauseFunc // ends the call's context, with a cause

	deadline time.Time     // the caller's; zero when it set none
	slot     deadline.Slot // in s.deadlines; guarded by s.mu
	expired  atomic.Bool   // the deadline timer ended the call

	keyID string // of the reply key this call's replies are signed with

	mu   sync.Mutex // guards last and seq
	last time.Time  // of the latest progress report sent
	seq  int64      // of the latest progress report sent
}

// Deadline returns the caller's deadline, if it set one.
func (c *call) Deadline() (time.Time, bool) { return c.deadline, !c.deadline.IsZero() }

// Err returns [context.DeadlineExceeded] once the caller's deadline ended
// the call, as context.WithDeadline would.
func (c *call) Err() error {
	err := c.Context.Err()
	if err != nil && c.expired.Load() && context.Cause(c.Context) == errCallerTimeout {
		return context.DeadlineExceeded
	}
	return err
}

// DeadlineSlot returns the call's place in its service's deadline timer.
func (c *call) DeadlineSlot() *deadline.Slot { return &c.slot }

// expire ends the calls whose caller's deadline has passed. It is the
// function the deadline timer runs.
func (s *Service) expire() {
	s.mu.Lock()
	due := s.deadlines.Due(time.Now(), nil)
	for _, c := range due {
		c.expired.Store(true)
	}
	s.mu.Unlock()
	for _, c := range due {
		c.cancel(errCallerTimeout)
	}
}

// Causes of the end of a call's context, made once rather than per call.
var (
	errCallerTimeout  = fmt.Errorf("%w: the caller's time ran out", tool.ErrTimeout)
	errCallerCanceled = errors.New("the caller canceled the call")
	errAbandoned      = errors.New("the worker's connection to NATS was closed: nobody can receive the result")
	errCallDone       = errors.New("the call is over")
)

// Serve starts serving reg's tools on nc. Stop the service with
// [Service.Stop]; closing nc stops it too, without the announcement.
func Serve(nc *nats.Conn, reg *tool.Registry, opts *ServeOptions) (*Service, error) {
	cfg := opts.config()
	if cfg.store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		st, err := cfg.store.Status(ctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("natstool: object store: %w", err)
		}
		cfg.bucket = st.Bucket()
	}
	s := &Service{
		nc: nc, reg: reg, cfg: cfg,
		running:   make(chan struct{}, cfg.maxInFlight),
		waiting:   make(chan struct{}, cfg.maxInFlight+cfg.maxWaiting),
		dirty:     make(chan struct{}, 1),
		loopDone:  make(chan struct{}),
		beatsDone: make(chan struct{}),
		handoff:   make(chan received),
	}
	s.base, s.cancel = context.WithCancel(context.Background())
	s.inFlight = make(map[string]*call)
	s.deadlines.Fire = s.expire
	var err error
	s.cancelSub, err = nc.Subscribe(cancelSubject(cfg.prefix+"."+cfg.name), s.onCancel)
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("natstool: %w", err)
	}
	s.stopWatch = reg.OnChange(func(string) {
		select {
		case s.dirty <- struct{}{}:
		default:
		}
	})
	svc, err := s.build()
	if err != nil {
		s.stopWatch()
		s.cancelSub.Unsubscribe()
		s.cancel()
		close(s.loopDone)
		return nil, err
	}
	s.svc = svc
	if cfg.jobs != nil {
		jobContext := cfg.jobs.cfg.jobContext
		if jobContext == nil {
			jobContext = cfg.callContext
		}
		s.jobWorker, err = cfg.jobs.work(reg, cfg.name+"/"+svc.Info().ID, cfg.maxInFlight, jobContext)
		if err != nil {
			s.stopWatch()
			svc.Stop()
			s.cancelSub.Unsubscribe()
			s.cancel()
			close(s.loopDone)
			return nil, err
		}
	}
	s.announce(Announcement{Service: cfg.name, ID: svc.Info().ID})
	go s.watch()
	go s.heartbeats()
	return s, nil
}

// ID returns the micro service instance's current id. It changes when the
// registry changes and the endpoints are rebuilt.
func (s *Service) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.svc.Info().ID
}

// Stop stops serving: the endpoints are drained, importers are told, and
// Stop waits for the calls already received to be answered, each within
// its own time limit. When the connection is closed, nobody can receive
// those answers, so the calls are canceled instead. It is safe to call
// more than once.
func (s *Service) Stop() error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	svc := s.svc
	s.mu.Unlock()
	s.stopWatch()
	close(s.dirty)
	<-s.loopDone
	if s.jobWorker != nil {
		s.jobWorker.Stop()
	}
	err := svc.Stop()
	if s.nc.IsClosed() {
		s.cancelAll()
	}
	// Callers may still cancel the calls Stop waits for.
	s.calls.Wait()
	s.mu.Lock()
	s.deadlines.Stop() // no call is left for it to end
	s.mu.Unlock()
	s.cancelSub.Unsubscribe()
	s.cancel()
	<-s.beatsDone
	s.runners.Wait()
	s.announce(Announcement{Service: s.cfg.name, ID: svc.Info().ID, Stopped: true})
	return err
}

// watch rebuilds the endpoints after the registry changed, folding changes
// that arrive close together into one rebuild.
func (s *Service) watch() {
	defer close(s.loopDone)
	for range s.dirty {
		time.Sleep(20 * time.Millisecond) // let a burst of registrations finish
		select {
		case _, ok := <-s.dirty:
			if !ok {
				return
			}
		default:
		}
		svc, err := s.build()
		if err != nil {
			s.logger().Error("natstool: could not rebuild the service after a registry change; the previous tools stay served", "service", s.cfg.name, "err", err)
			continue
		}
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			svc.Stop()
			return
		}
		old := s.svc
		s.svc = svc
		s.mu.Unlock()
		// The new endpoints are subscribed before the old ones go, so no
		// call finds nobody serving its tool.
		old.Stop()
		s.announce(Announcement{Service: s.cfg.name, ID: svc.Info().ID, Replaces: old.Info().ID})
	}
}

func (s *Service) logger() *slog.Logger {
	if s.cfg.logger != nil {
		return s.cfg.logger
	}
	return slog.Default()
}

// build makes a micro service with an endpoint per registered tool.
func (s *Service) build() (micro.Service, error) {
	tools := s.reg.List()
	type endpoint struct {
		name, subject, meta string
	}
	eps := make([]endpoint, 0, len(tools))
	size := 0
	for _, t := range tools {
		b, err := json.Marshal(definitionOf(t))
		if err != nil {
			return nil, fmt.Errorf("natstool: tool %q: %w", t.Name(), err)
		}
		ep := endpoint{name: t.Name(), subject: s.cfg.prefix + "." + s.cfg.name + "." + t.Name(), meta: string(b)}
		size += len(ep.meta) + 2*len(ep.subject) + 64
		eps = append(eps, ep)
	}
	if limit := s.maxPayload(); size > limit-4096 {
		return nil, fmt.Errorf("natstool: the definitions of %d tools take about %d bytes, more than fits in one $SRV.INFO reply (the server's max payload is %d bytes): serve them as several services", len(eps), size, limit)
	}
	meta := map[string]string{MetadataProtocol: protocolVersion}
	if k := s.cfg.replyKey; k != nil {
		defs := make([]endpointDef, len(eps))
		for i, ep := range eps {
			defs[i] = endpointDef{ep.name, ep.subject, ep.meta}
		}
		// Signed with every key held: a caller on either key of a
		// rotation imports the tools.
		meta[MetadataSignature] = k.signAll(signDefinitions, definitionFields(s.cfg.name, s.cfg.version, defs)...)
	}
	svc, err := micro.AddService(s.nc, micro.Config{
		Name:        s.cfg.name,
		Version:     s.cfg.version,
		Description: s.cfg.description,
		QueueGroup:  s.cfg.name,
		Metadata:    meta,
	})
	if err != nil {
		return nil, fmt.Errorf("natstool: %w", err)
	}
	for _, ep := range eps {
		err := svc.AddEndpoint(ep.name, s.handler(ep.name),
			micro.WithEndpointSubject(ep.subject),
			micro.WithEndpointMetadata(map[string]string{MetadataTool: ep.meta}))
		if err != nil {
			svc.Stop()
			return nil, fmt.Errorf("natstool: endpoint for tool %q: %w", ep.name, err)
		}
	}
	// Make sure the server has the subscriptions before anyone is told
	// about them: a scan right after Serve returns must find them.
	if err := s.nc.FlushTimeout(10 * time.Second); err != nil {
		svc.Stop()
		return nil, fmt.Errorf("natstool: %w", err)
	}
	return svc, nil
}

// maxPayload is the server's max payload, or the NATS default of 1 MiB
// while a connection made with nats.RetryOnFailedConnect has not reached
// a server yet (it reports 0 then).
func (s *Service) maxPayload() int {
	if n := s.nc.MaxPayload(); n > 0 {
		return int(n)
	}
	return 1 << 20
}

// announce tells importers that an instance started, changed or stopped.
func (s *Service) announce(a Announcement) {
	b, _ := json.Marshal(a)
	if err := s.nc.Publish(ChangeSubject, b); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		s.logger().Warn("natstool: could not announce a change", "service", s.cfg.name, "err", err)
	}
}

// handler receives the calls of one tool. It returns at once so that the
// endpoint's subscription keeps receiving; the call runs in a goroutine
// of the service's pool (see runner) once a running slot is free.
func (s *Service) handler(name string) micro.Handler {
	return micro.HandlerFunc(func(req micro.Request) {
		select {
		case s.waiting <- struct{}{}:
		default:
			if k := s.cfg.replyKey; k != nil {
				sig := k.sign(k.keyFor(nats.Header(req.Headers())), signBusy, 0, 0, []byte(req.Subject()), []byte(req.Reply()))
				s.publish(&nats.Msg{Subject: req.Reply(), Header: signedHeader(kindBusy, sig)}, kindBusy)
				return
			}
			s.reply(req.Reply(), kindBusy, nil)
			return
		}
		s.calls.Add(1)
		c := received{name, req}
		select {
		case s.handoff <- c: // an idle runner takes it
		default:
			s.runners.Add(1)
			go s.runner(c)
		}
	})
}

// received is a call received and handed to a runner.
type received struct {
	name string
	req  micro.Request
}

// runner serves c, then waits for more calls while fewer than the
// running limit of runners wait. A goroutine that lives on keeps the
// stack that decoding, validating and encoding grew: a fresh goroutine
// per call spent more time growing its stack than the call took.
//
// The tool runs on the runner itself ([tool.Registry.ExecuteHere]). A
// tool that ignores its context past the registry's grace period keeps
// its runner: the registry abandons the call, the call is answered and
// counted off without the runner (call.abandoned), and the runner ends
// when the tool returns. The next call that finds no idle runner starts
// a new one.
func (s *Service) runner(c received) {
	for {
		if !s.serveCall(c.name, c.req) {
			return // lost to a tool that ignored its context; counted off already
		}
		if s.idle.Add(1) > int64(s.cfg.maxInFlight) {
			s.idle.Add(-1)
			s.runners.Done()
			return
		}
		select {
		case c = <-s.handoff:
			s.idle.Add(-1)
		case <-s.base.Done():
			s.idle.Add(-1)
			s.runners.Done()
			return
		}
	}
}

// serveCall runs one call and sends its result. The call's context is
// canceled by the caller, by Stop, or at the caller's deadline (a
// standard context deadline whose cause wraps [tool.ErrTimeout]); the
// service's one heartbeat ticker covers every call in flight. It returns
// false when the registry abandoned the call's tool, which still
// runs on this goroutine: the call was answered and counted off by
// call.abandoned.
func (s *Service) serveCall(name string, req micro.Request) bool {
	reply := req.Reply()
	if reply == "" {
		s.done(req, name, nil)
		return true // nobody to answer: a publish, not a request
	}
	h := nats.Header(req.Headers())
	left, ok, err := parseReplyTimeout(reply)
	if err != nil {
		s.done(req, name, &tool.Result{IsError: true, Kind: tool.KindInvalidArguments, Error: err.Error()})
		return true
	}
	// The root is Background rather than s.base: a child of a shared
	// context costs every call a turn at its lock. Stop cancels the calls
	// one by one instead (cancelAll).
	c := &call{s: s, reply: reply, name: name, req: req}
	if k := s.cfg.replyKey; k != nil {
		c.keyID = k.keyFor(h)
	}
	c.Context, c.cancel = context.WithCancelCause(context.Background())
	if ok {
		c.deadline = time.Now().Add(left)
		c.slot.At = c.deadline
	}
	s.mu.Lock()
	if _, taken := s.inFlight[reply]; taken {
		// Another call with the reply subject of one in flight: sent by
		// someone who saw that call, for its result to reach the
		// caller's inbox in place of the caller's. Dropped, unanswered:
		// any answer would go to that inbox.
		s.mu.Unlock()
		c.cancel(errCallDone)
		s.logger().Warn("natstool: call dropped: its reply subject is that of a call this worker is running (sent by someone other than that call's caller)", "tool", name)
		s.done(req, name, nil)
		return true
	}
	s.inFlight[reply] = c
	if ok {
		s.deadlines.Add(c)
	}
	if s.abandon {
		c.cancel(errAbandoned)
	}
	s.mu.Unlock()
	res, kept := s.run(c, c, name, req.Data(), h)
	if !kept {
		return false
	}
	c.answer(res)
	return true
}

// done sends res, the result of a call received by the handler (none
// when res is nil), and counts the call off. The call's place in the
// line is given back before the result goes: a caller that calls again
// as soon as it has the result must find room for the new call.
func (s *Service) done(req micro.Request, name string, res *tool.Result) {
	<-s.waiting
	if res != nil {
		s.result(req, name, *res)
	}
	s.calls.Done()
}

// answer sends the result of a call that ran, or could not run, and
// counts the call off.
func (c *call) answer(res tool.Result) {
	s := c.s
	c.cancel(errCallDone)
	// Out of the heartbeats' map before the result goes: no heartbeat
	// follows a result. The deadline timer stays set: when it fires with
	// nothing due, it sets itself for the next deadline.
	s.mu.Lock()
	delete(s.inFlight, c.reply)
	s.deadlines.Remove(c)
	s.mu.Unlock()
	s.done(c.req, c.name, &res)
}

// abandoned answers a call whose tool the registry abandoned: it ignored
// its context for the grace period after the call's end, and holds the
// call's runner. The call gives back its running slot and its runner's
// place in the pool. It is the callback of [tool.Registry.ExecuteHere].
func (c *call) abandoned(res tool.Result) {
	<-c.s.running
	c.answer(res)
	c.s.runners.Done()
}

// run runs one call once a running slot is free. kept is false when the
// registry abandoned the tool, which ignored its context: then the call
// was answered by c.abandoned, and res means nothing.
func (s *Service) run(ctx context.Context, c *call, name string, args []byte, h nats.Header) (res tool.Result, kept bool) {
	if s.cfg.callContext != nil {
		cctx, err := s.cfg.callContext(withRequest(ctx, Request{Subject: c.req.Subject(), Reply: c.reply, Data: args}), h)
		if err != nil {
			return tool.Result{IsError: true, Kind: tool.KindDenied, Error: err.Error()}, true
		}
		ctx = cctx
	}
	ctx = tool.WithProgress(ctx, c.progress)
	select {
	case s.running <- struct{}{}:
	default:
		select {
		case s.running <- struct{}{}:
		case <-ctx.Done():
			kind := tool.KindCanceled
			if errors.Is(context.Cause(ctx), tool.ErrTimeout) {
				kind = tool.KindTimeout
			}
			return tool.Result{IsError: true, Kind: kind, Error: fmt.Sprintf("tool %q did not start: every slot of the worker was busy until the call's time ran out", name)}, true
		}
	}
	res, kept = s.reg.ExecuteHere(ctx, name, args, c.abandoned)
	if kept {
		<-s.running
	}
	return res, kept
}

// onCancel cancels the call whose reply subject the message names, if
// this worker runs it and the message gives the call's cancel secret
// (see [CancelMark]): the reply subject alone is no proof, since anyone
// who sees the call sees it. Any other cancel of a call of this worker
// is ignored and logged.
func (s *Service) onCancel(m *nats.Msg) {
	data := m.Data
	sp := bytes.LastIndexByte(data, ' ')
	reply, secret := data, []byte(nil)
	if sp >= 0 {
		reply, secret = data[:sp], data[sp+1:]
	}
	s.mu.Lock()
	c := s.inFlight[string(reply)]
	s.mu.Unlock()
	if c == nil {
		return // not a call of this worker
	}
	want, ok := parseCancelDigest(c.reply)
	var got [cancelSecretBytes]byte
	if len(secret) != cancelDigestChars {
		ok = false // checked before decoding: got holds no more
	} else if n, err := base64.RawURLEncoding.Decode(got[:], secret); err != nil || n != cancelSecretBytes {
		ok = false
	}
	sum := cancelDigest(got[:])
	if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
		why := "the message does not give the call's cancel secret (sent by someone other than its caller)"
		if _, has := parseCancelDigest(c.reply); !has {
			why = "the call's reply subject carries no cancel digest (a caller older than this worker): it ends at its deadline"
		}
		s.logger().Warn("natstool: cancel refused: "+why, "tool", c.name)
		return
	}
	c.cancel(errCallerCanceled)
}

// cancelAll cancels every call in flight, and those about to start.
func (s *Service) cancelAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.abandon = true
	for _, c := range s.inFlight {
		c.cancel(errAbandoned)
	}
}

// heartbeats tells the caller of every call in flight, once per
// heartbeat interval, that its call is still waiting or running, until
// the service stops. One ticker for the service rather than a timer per
// call: most calls end long before the first heartbeat, and then cost
// nothing. A call hears its first heartbeat within one interval; one that
// happens to be in flight at a tick hears one however short it is. The
// heartbeats go out under s.mu, which a call takes to leave inFlight
// before its result goes, so none follows a result.
func (s *Service) heartbeats() {
	defer close(s.beatsDone)
	t := time.NewTicker(s.cfg.heartbeat)
	defer t.Stop()
	var beat int64 // beats so far, the number a signed heartbeat carries
	for {
		select {
		case <-s.base.Done():
			return
		case <-t.C:
		}
		beat++
		s.mu.Lock()
		for reply, c := range s.inFlight {
			if k := s.cfg.replyKey; k != nil {
				// Signed, bound to the reply subject and the beat's number:
				// a caller takes only newer ones.
				s.publish(&nats.Msg{Subject: reply, Header: signedHeader(kindHeartbeat, k.sign(c.keyID, signHeartbeat, beat, 0, []byte(reply)))}, kindHeartbeat)
				continue
			}
			s.reply(reply, kindHeartbeat, nil)
		}
		s.mu.Unlock()
	}
}

// progress relays a progress report to the caller, at most one every
// 20 ms (reports in between are dropped, except that the latest is never
// older than that). It is the call's [tool.ProgressFunc].
func (c *call) progress(progress, total float64, message string) {
	c.mu.Lock()
	now := time.Now()
	if now.Sub(c.last) < 20*time.Millisecond {
		c.mu.Unlock()
		return
	}
	c.last = now
	c.seq++
	seq := c.seq
	c.mu.Unlock()
	b, _ := json.Marshal(progressReport{Progress: progress, Total: total, Message: message})
	if k := c.s.cfg.replyKey; k != nil {
		msg := &nats.Msg{Subject: c.reply, Data: b, Header: signedHeader(kindProgress, k.sign(c.keyID, signProgress, seq, 0, []byte(c.reply), b))}
		if err := c.s.nc.PublishMsg(msg); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			c.s.logger().Debug("natstool: could not reply", "kind", kindProgress, "err", err)
		}
		return
	}
	c.s.reply(c.reply, kindProgress, b)
}

// kindHeaders are the headers of each kind of message on a reply
// subject, built once: publishing only reads them.
var kindHeaders = map[string]nats.Header{
	kindHeartbeat: {HeaderKind: []string{kindHeartbeat}},
	kindProgress:  {HeaderKind: []string{kindProgress}},
	kindBusy:      {HeaderKind: []string{kindBusy}},
}

// reply publishes a message of the given kind on a call's reply subject.
func (s *Service) reply(subject, kind string, body []byte) {
	s.publish(&nats.Msg{Subject: subject, Data: body, Header: kindHeaders[kind]}, kind)
}

// publish sends msg, a reply of kind.
func (s *Service) publish(msg *nats.Msg, kind string) {
	if err := s.nc.PublishMsg(msg); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		s.logger().Debug("natstool: could not reply", "kind", kind, "err", err)
	}
}

// result sends a call's result, through the object store when it is too
// large for one message.
func (s *Service) result(req micro.Request, name string, res tool.Result) {
	enc := encoders.Get().(*resultEncoder)
	defer enc.release()
	body, err := enc.encode(res)
	if err != nil {
		body, _ = json.Marshal(tool.Result{IsError: true, Kind: tool.KindToolError, Error: fmt.Sprintf("tool %q returned a result that cannot be encoded: %v", name, err)})
	}
	// A result that fits goes without headers: a reply without
	// HeaderKind is a result, and headers cost both sides a parse.
	var opts []micro.RespondOpt
	var hdr micro.Headers
	if limit := s.maxPayload() - 1024; len(body) > limit {
		body, hdr = s.largeResult(req, name, body, limit)
	} else if k := s.cfg.replyKey; k != nil {
		id := k.keyFor(nats.Header(req.Headers()))
		hdr = micro.Headers{HeaderReplySignature: {k.sign(id, signResult, 0, 0, resultFields(req.Subject(), req.Reply(), req.Data(), body)...)}}
	}
	if hdr != nil {
		opts = append(opts, micro.WithHeaders(hdr))
	}
	// Publishing copies body into the connection's buffer, so the
	// encoder's buffer is free again once Respond returns.
	if err := req.Respond(body, opts...); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		s.logger().Warn("natstool: could not send a result", "tool", name, "err", err)
	}
}

// A resultEncoder encodes results into a buffer it keeps between calls.
type resultEncoder struct {
	raw []byte // for the plain results appendResult writes
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := new(resultEncoder)
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// encode returns res as JSON; the bytes are good until release.
func (e *resultEncoder) encode(res tool.Result) ([]byte, error) {
	var ok bool
	if e.raw, ok = appendResult(e.raw[:0], &res); ok {
		return e.raw, nil
	}
	e.buf.Reset()
	if err := e.enc.Encode(res); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")), nil
}

// release returns e to the pool, unless one large result grew its
// buffer: a pool of large buffers would hold on to memory for nothing.
func (e *resultEncoder) release() {
	if e.buf.Cap() <= 64<<10 && cap(e.raw) <= 64<<10 {
		encoders.Put(e)
	}
}

// largeResult puts an encoded result that does not fit in a message into
// the object store, bound to the call's reply subject (HeaderResultFor),
// and returns the reply that points at it. With a reply key, the reply
// is signed over the object's bytes (or the error that replaces it).
func (s *Service) largeResult(req micro.Request, name string, body []byte, limit int) ([]byte, micro.Headers) {
	reply := req.Reply()
	hdr := micro.Headers{HeaderKind: []string{kindResult}}
	if k := s.cfg.replyKey; k != nil {
		defer func() {
			id := k.keyFor(nats.Header(req.Headers()))
			hdr[HeaderReplySignature] = []string{k.sign(id, signResult, 0, 0, resultFields(req.Subject(), reply, req.Data(), body)...)}
		}()
	}
	fail := func(why string) ([]byte, micro.Headers) {
		b, _ := json.Marshal(tool.Result{IsError: true, Kind: tool.KindToolError,
			Error: fmt.Sprintf("the result of tool %q is %d bytes, more than one NATS message carries (%d bytes), and %s", name, len(body), limit, why)})
		body = b
		return b, hdr
	}
	if s.cfg.store == nil {
		return fail("the worker has no object store for large results")
	}
	key := "result-" + nuid.Next()
	ctx, cancel := context.WithTimeout(s.base, 30*time.Second)
	defer cancel()
	meta := jetstream.ObjectMeta{Name: key, Headers: nats.Header{HeaderResultFor: {reply}}}
	if _, err := s.cfg.store.Put(ctx, meta, bytes.NewReader(body)); err != nil {
		return fail("storing it failed: " + strings.TrimSpace(err.Error()))
	}
	hdr[HeaderObject] = []string{key}
	hdr[HeaderBucket] = []string{s.cfg.bucket}
	return nil, hdr
}
