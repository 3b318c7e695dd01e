// Package mcptasks keeps the tasks of an MCP server ([mcptool.TaskStore])
// as durable jobs on JetStream ([natstool.Jobs]): a task survives the
// restart of the process that serves it, runs on whichever worker takes
// its job, and goes to another worker when its worker dies. Each state of
// the job is a state of the task:
//
//	job queued     → task working (statusMessage "queued: waiting for a worker")
//	job running    → task working ("running, attempt N"; N > 1 after a redelivery)
//	job done       → task completed with the tool's result (an isError result
//	                 included); a tool that panicked → task failed
//	job cancelled  → task cancelled (tasks/cancel)
//	job input_required → task input_required with the questions not
//	                 answered yet (an elicitation, a policy's ask)
//	job queued after answers → task working ("queued: answered, waiting
//	                 for a worker"); the call runs again with the answers
//	record expired → tasks/* answer as for an unknown task (-32602)
//
// A call that asks for input ([mcptool.RequestInput], or an
// [mcptool.ElicitApprover] asking for a policy's approval) leaves its
// questions in the job's record, and its worker lets go of the job:
// tasks/update (tasks/result in the 2025-11-25 form) on any serving
// process records the answers there ([natstool.Jobs.Answer]), and once
// every question is answered any worker runs the call again with them.
// So a task that waits survives the restart of every process. See
// docs/mcp.md for the bounds, and for the JetStream settings the
// durability claim needs.
package mcptasks

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/natstool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of the stream, bucket and subject prefix of the tasks' jobs:
// apart from natstool's default jobs, whose TTL differs.
const (
	DefaultStream  = "CLAWTOOL_TASKS"
	DefaultBucket  = "clawtool_tasks"
	DefaultSubject = "clawtool.task"
)

// maxIDBytes bounds a task ID looked up: the store's IDs are 33 bytes.
const maxIDBytes = 64

// Options configure [Open]. A nil *Options means the defaults.
type Options struct {
	// Jobs configures the jobs the tasks are kept as: Stream, Bucket and
	// Subject (default [DefaultStream], [DefaultBucket],
	// [DefaultSubject]), AckWait, MaxDeliver, Replicas, and Headers and
	// Context, which carry the principal to the worker (see
	// natstool.JobsOptions). Its TTL and Owner are the store's: TTL is
	// Limits.TTL, and the owner is the task's.
	Jobs natstool.JobsOptions
	// Limits bound the tasks: TTL, MaxTasks, MaxTotal (with the share of
	// mcptool.TaskLimits.Admits) and PollInterval are applied here (the
	// defaults of mcptool.TaskLimits when zero).
	// MaxResultBytes and the polling rate are the Server's to apply.
	Limits mcptool.TaskLimits
	// Approvals, when set, is the approval store of the policy that
	// decides the workers' calls (policy.WithApprovalStore): a task that
	// waits for the answer to a policy's ask (an ElicitApprover's
	// question) runs again as soon as that request is answered in the
	// store (clawtool approvals, a host's Grant), the next time the task
	// is read; the call then finds that answer, and the client's own
	// answer, if it comes later, is refused as for a task not waiting.
	Approvals policy.ApprovalStore
}

// capsHeader carries a task's client capabilities to its worker.
const capsHeader = "Clawtool-Task-Capabilities"

type capsKey struct{}

// expiresHeader carries the time a task expires (RFC 3339, nanoseconds)
// to its worker, whose run of the call ends then: past it, tasks/*
// answer as for an unknown task, so no client could cancel the run.
const expiresHeader = "Clawtool-Task-Expires"

type expiresKey struct{}

// withExpiry returns ctx saying that the task whose job's headers are
// made with it expires at t.
func withExpiry(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, expiresKey{}, t)
}

// errExpired ends the run of a task whose TTL has passed.
var errExpired = errors.New("mcptasks: the task expired (its TTL passed), so its run ended")

// untilExpiry returns ctx ending when the task of a job message with
// headers h expires, and its cancel function. Headers that do not say
// when (a job message of another writer) end it at once: a run that
// could outlive its task is not started.
func untilExpiry(ctx context.Context, h nats.Header) (context.Context, context.CancelFunc) {
	at, err := time.Parse(time.RFC3339Nano, h.Get(expiresHeader))
	if err != nil {
		c, cancel := context.WithCancelCause(ctx)
		cancel(fmt.Errorf("mcptasks: the job's message does not say when its task expires (header %s), so it is not run", expiresHeader))
		return c, func() {}
	}
	return context.WithDeadlineCause(ctx, at, errExpired)
}

// resumeGrace is how long a task answered in full may stay queued before
// a read queues its run again (the process that recorded the answers may
// have died before it queued the run; a second copy within JetStream's
// duplicate window is dropped).
const resumeGrace = 5 * time.Second

// Store is an [mcptool.TaskStore] of durable tasks. Give it to a server
// with mcptool.WithTaskStore, and run its calls with workers started by
// Jobs().Work, in this process or any other on the same JetStream.
//
// The bounds on task counts are kept in this process from a watch of the
// jobs' bucket, so each Store sees the tasks of every process; two
// processes creating tasks at the same moment may each admit one that
// together pass a bound by the number of processes.
type Store struct {
	jobs      *natstool.Jobs
	lim       mcptool.TaskLimits
	approvals policy.ApprovalStore

	watch jetstream.KeyWatcher
	prog  *nats.Subscription
	done  chan struct{} // closed when the watch loop ends
	// stopSweep ends the loop that ends the jobs of expired tasks, and
	// swept is closed when it has ended.
	stopSweep, swept chan struct{}

	// afterSubmit, when set (by a test), is called by Create once the
	// job is submitted.
	afterSubmit func()
	// workerBehind, set by a test, is how far the clock of the workers
	// is behind the store's: the expiry a job's message says is that
	// much later.
	workerBehind time.Duration

	mu       sync.Mutex
	closed   bool
	index    map[string]*entry // job id → what the bounds need
	perOwner map[string]int    // owner digest → tasks in index
	pending  map[string]int    // owner digest → tasks being created
	toExpire []string          // expired tasks dropped from index whose jobs may run
	pendingN int
}

// entry is what the store knows of a task without reading its record.
type entry struct {
	owner     string
	submitted time.Time
	progress  *mcptool.TaskProgress
	// terminal is set once the job's record says done or cancelled.
	terminal bool
	// progressAt is when the worker signed progress (zero without a
	// reply key): an older report is a replay.
	progressAt time.Time
}

type ownerKey struct{}

// Open creates the tasks' stream and bucket on nc's JetStream, or binds to
// them, and starts following them. ctx bounds the opening only.
func Open(ctx context.Context, nc *nats.Conn, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	lim := o.Limits.WithDefaults()
	jo := o.Jobs
	jo.Stream = cmp.Or(jo.Stream, DefaultStream)
	jo.Bucket = cmp.Or(jo.Bucket, DefaultBucket)
	jo.Subject = cmp.Or(jo.Subject, DefaultSubject)
	jo.TTL = lim.TTL
	jo.Owner = func(ctx context.Context) string {
		o, _ := ctx.Value(ownerKey{}).(string)
		return o
	}
	userHeaders := jo.Headers
	// The task's headers are covered by a signed claim (SignedHeaders):
	// a publisher who resends the job's message cannot extend the run or
	// change the capabilities its call believes.
	jo.CoveredHeaders = append(slices.Clone(jo.CoveredHeaders), capsHeader, expiresHeader)
	jo.Headers = func(ctx context.Context) nats.Header {
		task := nats.Header{capsHeader: nil, expiresHeader: nil} // nil: absent
		if caps, _ := ctx.Value(capsKey{}).(string); caps != "" {
			task.Set(capsHeader, caps)
		}
		if exp, ok := ctx.Value(expiresKey{}).(time.Time); ok {
			task.Set(expiresHeader, exp.UTC().Format(time.RFC3339Nano))
		}
		var h nats.Header
		if userHeaders != nil {
			h = userHeaders(natstool.WithCoveredHeaders(ctx, task))
		}
		h = maps.Clone(h)
		if h == nil {
			h = nats.Header{}
		}
		for k, v := range task {
			if v == nil {
				delete(h, k) // absent, as signed
			} else {
				h[k] = v
			}
		}
		if len(h) == 0 {
			return nil
		}
		return h
	}
	jo.Ask = func(ctx context.Context, h nats.Header, answered *natstool.JobInput) (context.Context, func() (*natstool.JobQuestion, error)) {
		var answers map[string]json.RawMessage
		state := ""
		if answered != nil {
			answers, state = answered.Answers, answered.State
		}
		ctx, stop := untilExpiry(ctx, h)
		c, asked := mcptool.TaskInput(ctx, json.RawMessage(h.Get(capsHeader)), answers, state)
		return c, func() (*natstool.JobQuestion, error) {
			defer stop()
			q, err := asked()
			if q == nil || err != nil {
				return nil, err
			}
			return &natstool.JobQuestion{Requests: q.Requests, State: q.State, Approval: q.Approval}, nil
		}
	}
	jobs, err := natstool.OpenJobs(ctx, nc, &jo)
	if err != nil {
		return nil, fmt.Errorf("mcptasks: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("mcptasks: %w", err)
	}
	kv, err := js.KeyValue(ctx, jo.Bucket)
	if err != nil {
		return nil, fmt.Errorf("mcptasks: bucket %s: %w", jo.Bucket, err)
	}
	s := &Store{jobs: jobs, lim: lim, approvals: o.Approvals, done: make(chan struct{}),
		index: map[string]*entry{}, perOwner: map[string]int{}, pending: map[string]int{}}
	// The watch lives as long as the store, not as Open's ctx.
	s.watch, err = kv.WatchAll(context.WithoutCancel(ctx))
	if err != nil {
		return nil, fmt.Errorf("mcptasks: bucket %s: %w", jo.Bucket, err)
	}
	loaded := make(chan struct{})
	go s.follow(loaded)
	select {
	case <-loaded:
	case <-ctx.Done():
		s.watch.Stop()
		<-s.done
		return nil, fmt.Errorf("mcptasks: reading the tasks: %w", context.Cause(ctx))
	}
	prefix := strings.TrimSuffix(jobs.ProgressSubject("*"), "*")
	s.prog, err = nc.Subscribe(prefix+"*", func(m *nats.Msg) {
		// With the jobs' ReplyKey, only reports a worker signed for this
		// task, and newer than the one kept (not a replay).
		at, err := jobs.VerifyProgress(m)
		if err != nil {
			return
		}
		var p mcptool.TaskProgress
		if json.Unmarshal(m.Data, &p) != nil {
			return
		}
		id := strings.TrimPrefix(m.Subject, prefix)
		s.mu.Lock()
		if e := s.index[id]; e != nil && !at.Before(e.progressAt) {
			e.progress, e.progressAt = &p, at
		}
		s.mu.Unlock()
	})
	if err != nil {
		s.watch.Stop()
		<-s.done
		return nil, fmt.Errorf("mcptasks: %w", err)
	}
	s.stopSweep, s.swept = make(chan struct{}), make(chan struct{})
	go s.sweepExpired(context.WithoutCancel(ctx))
	return s, nil
}

// sweepExpired ends the jobs of the tasks whose TTL passed on this
// store's clock, until Close: the store's clock rules a task's expiry,
// since it is the store that then answers tasks/* as for an unknown
// task. The worker also ends the run at the expiry its job's message
// says, on its own clock; a worker whose clock is behind would run it
// on past the TTL, with no client able to cancel it, without this.
// While no store runs, the workers' clocks alone end the runs.
func (s *Store) sweepExpired(ctx context.Context) {
	defer close(s.swept)
	t := time.NewTicker(min(max(s.lim.TTL/10, 100*time.Millisecond), 5*time.Second))
	defer t.Stop()
	for {
		select {
		case <-s.stopSweep:
			return
		case <-t.C:
		}
		now := time.Now()
		s.mu.Lock()
		due := s.toExpire
		s.toExpire = nil
		for id, e := range s.index {
			if !e.terminal && s.expired(e.submitted, now) {
				due = append(due, id)
			}
		}
		s.mu.Unlock()
		for _, id := range due {
			ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := s.jobs.Expire(ectx, id)
			cancel()
			if err != nil && !errors.Is(err, natstool.ErrJobNotFound) {
				// Tried again at the next tick.
				s.mu.Lock()
				if s.index[id] == nil && len(s.toExpire) < s.lim.MaxTotal {
					s.toExpire = append(s.toExpire, id)
				}
				s.mu.Unlock()
				continue
			}
			s.mu.Lock()
			if e := s.index[id]; e != nil {
				e.terminal = true
			}
			s.mu.Unlock()
		}
	}
}

// Jobs returns the jobs the tasks are kept as, to start workers with
// (Jobs().Work) or to read a task's job record.
func (s *Store) Jobs() *natstool.Jobs { return s.jobs }

// follow keeps the index from the bucket's watch until it stops, closing
// loaded once the records that existed at Open are in.
func (s *Store) follow(loaded chan struct{}) {
	defer close(s.done)
	once := sync.OnceFunc(func() { close(loaded) })
	defer once()
	for e := range s.watch.Updates() {
		if e == nil {
			once()
			continue
		}
		s.mu.Lock()
		if e.Operation() == jetstream.KeyValuePut {
			// With the jobs' ReplyKey, only records signed for their job:
			// forged ones would count against an owner's bound.
			if job, err := s.jobs.ReadRecord(e.Key(), e.Value()); err == nil {
				s.addLocked(e.Key(), job.Owner, job.Submitted)
				s.index[e.Key()].terminal = job.State.Terminal()
			}
		} else {
			s.dropLocked(e.Key())
		}
		s.mu.Unlock()
	}
}

func (s *Store) addLocked(id, owner string, submitted time.Time) {
	if _, ok := s.index[id]; ok {
		return
	}
	s.index[id] = &entry{owner: owner, submitted: submitted}
	s.perOwner[owner]++
}

func (s *Store) dropLocked(id string) {
	e, ok := s.index[id]
	if !ok {
		return
	}
	delete(s.index, id)
	if s.perOwner[e.owner]--; s.perOwner[e.owner] <= 0 {
		delete(s.perOwner, e.owner)
	}
}

// sweepLocked drops the tasks older than the TTL from the index (their
// records expire in the bucket too).
func (s *Store) sweepLocked(now time.Time) {
	for id, e := range s.index {
		if s.expired(e.submitted, now) {
			if !e.terminal {
				s.toExpire = append(s.toExpire, id) // its job still to end
			}
			s.dropLocked(id)
		}
	}
}

func (s *Store) expired(submitted, now time.Time) bool {
	return !now.Before(submitted.Add(s.lim.TTL))
}

// as returns ctx speaking for owner, for the jobs.
func as(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// Create submits call as a job and returns its task, working (queued).
// The job's ID is derived from 128 random bits, so task IDs are
// unguessable. When mcptool.TaskLimits.Admits refuses (beyond MaxTasks of
// the owner or MaxTotal in all, or into the last quarter of MaxTotal, kept
// for owners holding few) it returns an error wrapping
// mcptool.ErrTooManyTasks.
func (s *Store) Create(ctx context.Context, call mcptool.TaskCall) (mcptool.TaskRecord, error) {
	octx := as(ctx, call.Owner)
	owner := s.jobs.OwnerOf(octx)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return mcptool.TaskRecord{}, fmt.Errorf("mcptasks: the store is closed: %w", mcptool.ErrTooManyTasks)
	}
	// mcptool's share: the per-owner and total bounds, and the last
	// quarter of the total kept for owners holding few, so that a few
	// owners cannot take every slot (TestDurableTaskShareLeavesRoomForOthers).
	admits := func() bool { return s.lim.Admits(s.perOwner[owner]+s.pending[owner], len(s.index)+s.pendingN) }
	if !admits() {
		s.sweepLocked(time.Now())
	}
	if !admits() {
		s.mu.Unlock()
		return mcptool.TaskRecord{}, mcptool.ErrTooManyTasks
	}
	s.pending[owner]++
	s.pendingN++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.pending[owner]--; s.pending[owner] <= 0 {
			delete(s.pending, owner)
		}
		s.pendingN--
		s.mu.Unlock()
	}()
	var key [16]byte
	rand.Read(key[:]) // never fails (crypto/rand)
	// Taken before the job's record is: the run ends no later than the
	// TTL from the record's Submitted, which tasks/* go by.
	octx = withExpiry(octx, time.Now().Add(s.lim.TTL+s.workerBehind))
	if caps := compactCaps(call.Capabilities); caps != "" {
		octx = context.WithValue(octx, capsKey{}, caps)
	}
	// The record comes back from the submission itself: a second step
	// (a read of it) could fail, or end with the request, after the job
	// was queued, and the client would be told of no task while its
	// call ran. A Submit that fails leaves no job to run.
	job, err := s.jobs.SubmitJob(octx, call.Tool, call.Args, &natstool.SubmitOptions{IdempotencyKey: hex.EncodeToString(key[:])})
	if err != nil {
		return mcptool.TaskRecord{}, fmt.Errorf("mcptasks: %w", err)
	}
	if s.afterSubmit != nil {
		s.afterSubmit()
	}
	s.mu.Lock()
	s.addLocked(job.ID, owner, job.Submitted)
	s.mu.Unlock()
	return s.record(job), nil
}

// job returns owner's job id, or an error wrapping
// mcptool.ErrTaskNotFound when there is none for owner (unknown, expired,
// another owner's, or an ID that cannot be one).
func (s *Store) job(ctx context.Context, owner, id string) (natstool.Job, error) {
	if id == "" || len(id) > maxIDBytes {
		return natstool.Job{}, mcptool.ErrTaskNotFound
	}
	job, err := s.jobs.Job(as(ctx, owner), id)
	if errors.Is(err, natstool.ErrJobNotFound) {
		return natstool.Job{}, mcptool.ErrTaskNotFound
	}
	if err != nil {
		return natstool.Job{}, err
	}
	if s.expired(job.Submitted, time.Now()) {
		return natstool.Job{}, mcptool.ErrTaskNotFound
	}
	return job, nil
}

// compactCaps is the client capabilities raw as one header line, or ""
// when there are none or they are larger than 16 KiB (the call then
// cannot ask the client).
func compactCaps(raw json.RawMessage) string {
	if len(raw) == 0 || len(raw) > 16<<10 {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return ""
	}
	return b.String()
}

// Get returns owner's task id. A task that waits for a policy's approval
// answered meanwhile in the approvals store (Options.Approvals) is
// resumed first, and one answered in full whose run is not queued is
// queued again.
func (s *Store) Get(ctx context.Context, owner, id string) (mcptool.TaskRecord, error) {
	job, err := s.job(ctx, owner, id)
	if err != nil {
		return mcptool.TaskRecord{}, err
	}
	if in := job.Input; in != nil && (job.State == natstool.JobInputRequired && s.settled(ctx, in.Approval) ||
		job.State == natstool.JobQueued && time.Since(job.Updated) > resumeGrace) {
		if resumed, err := s.jobs.Resume(withExpiry(as(ctx, owner), job.Submitted.Add(s.lim.TTL)), id, in.Round); err == nil {
			job = resumed
		}
	}
	return s.record(job), nil
}

// settled reports whether the approval request id is answered in the
// approvals store, or gone from it (expired: the call, run again, asks
// anew). A store that cannot be read settles nothing.
func (s *Store) settled(ctx context.Context, id string) bool {
	if s.approvals == nil || id == "" {
		return false
	}
	rec, err := s.approvals.Get(ctx, id, time.Now())
	switch {
	case errors.Is(err, policy.ErrUnknownApproval), errors.Is(err, policy.ErrExpiredApproval):
		return true
	case err != nil:
		return false
	}
	return rec.State != policy.ApprovalPending || !time.Now().Before(rec.Expires)
}

// Job returns the job record of owner's task id: which worker ran it,
// how many attempts it took. Another owner's task is
// mcptool.ErrTaskNotFound, as for Get.
func (s *Store) Job(ctx context.Context, owner, id string) (natstool.Job, error) {
	return s.job(ctx, owner, id)
}

// Update records answers to the questions owner's task id waits for
// (natstool.Jobs.Answer): each question is answered once, and an answer
// to a question the task did not ask, or had answered already, is an
// error wrapping mcptool.ErrTaskNotWaiting that keeps nothing of the
// update, as for a task that is not input_required. Once every question
// is answered the task works again.
func (s *Store) Update(ctx context.Context, owner, id string, answers map[string]json.RawMessage) error {
	job, err := s.job(ctx, owner, id)
	if err != nil {
		return err
	}
	_, err = s.jobs.Answer(withExpiry(as(ctx, owner), job.Submitted.Add(s.lim.TTL)), id, answers)
	switch {
	case errors.Is(err, natstool.ErrJobNotFound):
		return mcptool.ErrTaskNotFound
	case errors.Is(err, natstool.ErrJobNotWaiting):
		return fmt.Errorf("%w: %w", mcptool.ErrTaskNotWaiting, err)
	}
	return err
}

// Cancel cancels owner's task id's job (natstool.Jobs.Cancel): a queued
// job never runs, a running one has its context cancelled on its worker.
func (s *Store) Cancel(ctx context.Context, owner, id string) (mcptool.TaskRecord, error) {
	if _, err := s.job(ctx, owner, id); err != nil {
		return mcptool.TaskRecord{}, err
	}
	job, err := s.jobs.Cancel(as(ctx, owner), id)
	if errors.Is(err, natstool.ErrJobNotFound) {
		return mcptool.TaskRecord{}, mcptool.ErrTaskNotFound
	}
	if err != nil {
		return mcptool.TaskRecord{}, err
	}
	return s.record(job), nil
}

// List returns owner's kept tasks, newest first: at most MaxTasks.
func (s *Store) List(ctx context.Context, owner string) ([]mcptool.TaskRecord, error) {
	digest := s.jobs.OwnerOf(as(ctx, owner))
	s.mu.Lock()
	var ids []string
	for id, e := range s.index {
		if e.owner == digest && len(ids) < s.lim.MaxTasks {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	out := make([]mcptool.TaskRecord, 0, len(ids))
	for _, id := range ids {
		rec, err := s.Get(ctx, owner, id)
		if errors.Is(err, mcptool.ErrTaskNotFound) {
			continue // expired meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b mcptool.TaskRecord) int {
		return cmp.Or(strings.Compare(b.CreatedAt, a.CreatedAt), strings.Compare(a.TaskID, b.TaskID))
	})
	return out, nil
}

// Close refuses new tasks and stops following the bucket. The tasks go
// on: their jobs are the workers'. It does not close the connection.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stopSweep)
	<-s.swept
	s.prog.Unsubscribe()
	s.watch.Stop()
	<-s.done
	return nil
}

// stamp formats t as task timestamps are: RFC 3339, UTC, milliseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// record is job as a task.
func (s *Store) record(job natstool.Job) mcptool.TaskRecord {
	ttl := s.lim.TTL.Milliseconds()
	rec := mcptool.TaskRecord{Task: mcptool.Task{TaskID: job.ID, CreatedAt: stamp(job.Submitted),
		LastUpdatedAt: stamp(job.Updated), TTLMs: &ttl, PollIntervalMs: s.lim.PollInterval.Milliseconds()}, Tool: job.Tool}
	switch job.State {
	case natstool.JobQueued:
		rec.Status, rec.StatusMessage = mcptool.StatusWorking, "queued: waiting for a worker"
		if job.Input != nil {
			rec.StatusMessage = "queued: answered, waiting for a worker"
		}
	case natstool.JobInputRequired:
		rec.Status, rec.StatusMessage = mcptool.StatusInputRequired, "waiting for input"
		if in := job.Input; in != nil {
			rec.InputRequests = map[string]json.RawMessage{}
			for _, k := range in.Pending() {
				rec.InputRequests[k] = in.Requests[k]
			}
		}
	case natstool.JobRunning:
		rec.Status, rec.StatusMessage = mcptool.StatusWorking, fmt.Sprintf("running, attempt %d", job.Attempts)
		s.mu.Lock()
		if e := s.index[job.ID]; e != nil && e.progress != nil {
			p := *e.progress
			rec.Progress = &p
		}
		s.mu.Unlock()
	case natstool.JobDone:
		rec.Status = mcptool.StatusCompleted
		if job.Result != nil {
			r := *job.Result
			rec.ToolResult = &r
		} else {
			rec.Status, rec.Error = mcptool.StatusFailed, &mcptool.TaskError{Code: -32603, Message: "the job is done without a result"}
		}
	case natstool.JobCancelled:
		rec.Status, rec.StatusMessage = mcptool.StatusCancelled, "cancelled by the client"
	default:
		rec.Status, rec.Error = mcptool.StatusFailed, &mcptool.TaskError{Code: -32603, Message: fmt.Sprintf("the job is in state %q, which this server does not know", job.State)}
	}
	return rec
}
