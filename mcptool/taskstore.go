package mcptool

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/miniopenclaw/tool/policy"
)

// TaskLimits bound the tasks a [Server] keeps in memory. The zero value of
// a field means its default.
type TaskLimits struct {
	// TTL is how long a task and its result stay readable after the task
	// was created; afterwards tasks/* answer as for an unknown ID.
	// Default 10 minutes.
	TTL time.Duration
	// MaxTasks bounds the tasks of one principal that are live or kept
	// (default 64); MaxTotal bounds those of all principals (default
	// 1024), and the last quarter is kept for principals that hold few
	// (see [TaskLimits.Admits]). A tools/call beyond them runs
	// synchronously if the tool allows it and is refused otherwise;
	// expired tasks are dropped first.
	MaxTasks, MaxTotal int
	// MaxResultBytes bounds a kept result's JSON; a larger result fails
	// the task with an error that says so. Default 1 MiB.
	MaxResultBytes int
	// PollInterval is the polling interval suggested to clients. Default
	// 500 ms.
	PollInterval time.Duration
	// PollsPerSecond and PollBurst rate-limit tasks/get per principal (a
	// token bucket); a poll beyond them gets CodeRateLimited. Defaults
	// 20 and 40.
	PollsPerSecond float64
	PollBurst      int
	// MaxInputRequests bounds the input requests a task may wait for at
	// once (default 16).
	MaxInputRequests int
	// MaxAnswerBytes bounds the answers to a task's pending input
	// requests it keeps together (their JSON); a tasks/update that would
	// pass it is refused and keeps nothing. Default 1 MiB.
	MaxAnswerBytes int
}

// Admits reports whether a principal that holds held tasks may have one
// more in a store that holds total. It may while it holds fewer than
// MaxTasks, the store fewer than MaxTotal, and more tasks are free than
// it holds; and the last quarter of MaxTotal is kept for principals that
// hold fewer than a sixteenth of MaxTasks (at least one). With the
// defaults: 64 tasks of one principal, 1,024 in all, the last 256 for
// principals with fewer than 4. With the first two bounds alone, 16
// principals filled the store and every other one was refused until
// their tasks expired; now any principal still gets 4 until some 80
// principals hold tasks. l's zero fields are not defaulted here: call
// it on [TaskLimits.WithDefaults].
func (l TaskLimits) Admits(held, total int) bool {
	if held >= l.MaxTasks || total >= l.MaxTotal || l.MaxTotal-total <= held {
		return false
	}
	return total < l.MaxTotal-l.MaxTotal/4 || held < max(1, l.MaxTasks/16)
}

// WithDefaults returns l with each zero or negative field set to its
// default, as a Server applies them.
func (l TaskLimits) WithDefaults() TaskLimits { return l.withDefaults() }

func (l TaskLimits) withDefaults() TaskLimits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.TTL <= 0 {
		l.TTL = 10 * time.Minute
	}
	if l.PollInterval <= 0 {
		l.PollInterval = 500 * time.Millisecond
	}
	if l.PollsPerSecond <= 0 {
		l.PollsPerSecond = 20
	}
	def(&l.MaxTasks, 64)
	def(&l.MaxTotal, 1024)
	def(&l.MaxResultBytes, 1<<20)
	def(&l.PollBurst, 40)
	def(&l.MaxInputRequests, 16)
	def(&l.MaxAnswerBytes, 1<<20)
	return l
}

// Errors of the task store. Each becomes a JSON-RPC error (taskError).
var (
	// errTaskNotFound: unknown, expired or another principal's task.
	errTaskNotFound = ErrTaskNotFound
	// errTaskNotWaiting: tasks/update on a task that is not input_required.
	errTaskNotWaiting = ErrTaskNotWaiting
	// errTooManyTasks: a bound of TaskLimits is reached.
	errTooManyTasks = ErrTooManyTasks
	// errPollLimit: tasks/get beyond the principal's rate.
	errPollLimit = errors.New("tasks/get rate limit exceeded")
	// errAnswersTooLarge: tasks/update past TaskLimits.MaxAnswerBytes.
	errAnswersTooLarge = errors.New("the answers are larger than this server keeps for a task")
)

// task is one task of the store. Its fields are guarded by the store's
// mutex.
type task struct {
	id, owner, tool  string
	status           TaskStatus
	message          string
	created, updated time.Time
	progress         *TaskProgress
	result           json.RawMessage // completed
	err              *TaskError      // failed
	// inputs are the pending input requests (input_required), answers
	// those answered so far; when every request is answered, resume gets
	// the answers.
	inputs  map[string]json.RawMessage
	answers map[string]json.RawMessage
	resume  chan resumed
	cancel  context.CancelFunc
	done    chan struct{} // closed when terminal
}

// resumed is what a task waiting for input gets when its last request is
// answered: the answers, and the principal of the tasks/update request
// that completed them (ok false: the anonymous principal), whose roles
// and attributes decide the call's next run.
type resumed struct {
	answers map[string]json.RawMessage
	by      policy.Principal
	ok      bool
}

// context returns ctx carrying the principal of r.
func (r resumed) context(ctx context.Context) context.Context {
	if r.ok {
		return policy.WithPrincipal(ctx, r.by)
	}
	return policy.WithoutPrincipal(ctx)
}

// taskStore keeps tasks in memory, bound to the principal (owner key) that
// created them.
type taskStore struct {
	lim     TaskLimits
	noShare bool // Admits' share not applied, for the attack test's control

	mu      sync.Mutex
	tasks   map[string]*task
	perUser map[string]int
	buckets map[string]*bucket
}

// bucket is a token bucket of one principal's tasks/get.
type bucket struct {
	tokens float64
	last   time.Time
}

func newTaskStore(lim TaskLimits) *taskStore {
	return &taskStore{lim: lim.withDefaults(), tasks: map[string]*task{}, perUser: map[string]int{}, buckets: map[string]*bucket{}}
}

// newTaskID returns 128 random bits, base64url-encoded.
func newTaskID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (s *taskStore) admits(held, total int) bool {
	if s.noShare {
		return held < s.lim.MaxTasks && total < s.lim.MaxTotal
	}
	return s.lim.Admits(held, total)
}

// create adds a working task for owner whose run is ended by cancel.
func (s *taskStore) create(owner string, cancel context.CancelFunc) (*task, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.admits(s.perUser[owner], len(s.tasks)) {
		s.sweepLocked(now)
	}
	if !s.admits(s.perUser[owner], len(s.tasks)) {
		return nil, errTooManyTasks // after close, MaxTotal is 0
	}
	t := &task{id: newTaskID(), owner: owner, status: StatusWorking, created: now, updated: now,
		cancel: cancel, done: make(chan struct{})}
	s.tasks[t.id] = t
	s.perUser[owner]++
	return t, nil
}

// sweepLocked drops the expired tasks. A live task that expires is
// cancelled first.
func (s *taskStore) sweepLocked(now time.Time) {
	for id, t := range s.tasks {
		if s.expired(t, now) {
			s.dropLocked(id, t)
		}
	}
}

func (s *taskStore) expired(t *task, now time.Time) bool {
	return !now.Before(t.created.Add(s.lim.TTL))
}

func (s *taskStore) dropLocked(id string, t *task) {
	if !t.status.Terminal() {
		t.cancel()
	}
	delete(s.tasks, id)
	if s.perUser[t.owner]--; s.perUser[t.owner] <= 0 {
		delete(s.perUser, t.owner)
	}
}

// lookupLocked returns owner's task id, or errTaskNotFound when there is
// none, it is another owner's, or it expired (then it is dropped).
func (s *taskStore) lookupLocked(owner, id string, now time.Time) (*task, error) {
	t, ok := s.tasks[id]
	if !ok || t.owner != owner {
		return nil, errTaskNotFound
	}
	if s.expired(t, now) {
		s.dropLocked(id, t)
		return nil, errTaskNotFound
	}
	return t, nil
}

// allowPoll takes a token from owner's tasks/get bucket.
func (s *taskStore) allowPoll(owner string) error {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[owner]
	if b == nil {
		if len(s.buckets) >= s.lim.MaxTotal {
			// Bounded: forget full buckets, which are as new ones.
			for k, v := range s.buckets {
				if v.tokens+now.Sub(v.last).Seconds()*s.lim.PollsPerSecond >= float64(s.lim.PollBurst) {
					delete(s.buckets, k)
				}
			}
		}
		b = &bucket{tokens: float64(s.lim.PollBurst), last: now}
		s.buckets[owner] = b
	}
	b.tokens = min(float64(s.lim.PollBurst), b.tokens+now.Sub(b.last).Seconds()*s.lim.PollsPerSecond)
	b.last = now
	if b.tokens < 1 {
		return errPollLimit
	}
	b.tokens--
	return nil
}

// snapshot is a copy of a task's state, for answering tasks/get.
type snapshot struct {
	Task
	tool     string
	inputs   map[string]json.RawMessage
	result   json.RawMessage
	err      *TaskError
	progress *TaskProgress
}

func (s *taskStore) snapshotLocked(t *task) snapshot {
	ttl := s.lim.TTL.Milliseconds()
	sn := snapshot{Task: Task{TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: stamp(t.created), LastUpdatedAt: stamp(t.updated), TTLMs: &ttl,
		PollIntervalMs: s.lim.PollInterval.Milliseconds()},
		tool: t.tool, result: t.result, err: t.err, progress: t.progress}
	if t.status == StatusInputRequired {
		sn.inputs = make(map[string]json.RawMessage, len(t.inputs))
		for k, v := range t.inputs {
			if _, answered := t.answers[k]; !answered {
				sn.inputs[k] = v
			}
		}
	}
	if sn.progress != nil {
		p := *sn.progress
		sn.progress = &p
	}
	return sn
}

// stamp formats t as the task timestamps are: RFC 3339, UTC, milliseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// get returns owner's task id.
func (s *taskStore) get(owner, id string) (snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.lookupLocked(owner, id, time.Now())
	if err != nil {
		return snapshot{}, err
	}
	return s.snapshotLocked(t), nil
}

// list returns owner's live and kept tasks (legacy tasks/list), in no
// particular order; at most MaxTasks of them.
func (s *taskStore) list(owner string) []snapshot {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []snapshot
	for id, t := range s.tasks {
		if t.owner != owner {
			continue
		}
		if s.expired(t, now) {
			s.dropLocked(id, t)
			continue
		}
		out = append(out, s.snapshotLocked(t))
	}
	return out
}

// cancel ends owner's task id if it is live; a terminal task is left as
// it is (tasks/cancel is idempotent).
func (s *taskStore) cancel(owner, id string) (snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.lookupLocked(owner, id, time.Now())
	if err != nil {
		return snapshot{}, err
	}
	if !t.status.Terminal() {
		s.finishLocked(t, StatusCancelled, "cancelled by the client", nil, nil)
		t.cancel()
	}
	return s.snapshotLocked(t), nil
}

// finishLocked moves t to the terminal status st, unless it is terminal
// already.
func (s *taskStore) finishLocked(t *task, st TaskStatus, msg string, result json.RawMessage, terr *TaskError) {
	if t.status.Terminal() {
		return
	}
	t.status, t.message, t.result, t.err = st, msg, result, terr
	t.inputs, t.answers, t.resume = nil, nil, nil
	t.updated = time.Now()
	close(t.done)
}

// complete ends t with the tool's result, or fails it when the result is
// larger than MaxResultBytes.
func (s *taskStore) complete(t *task, result json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(result) > s.lim.MaxResultBytes {
		s.finishLocked(t, StatusFailed, "", nil, &TaskError{Code: -32603,
			Message: fmt.Sprintf("the result is %d bytes, more than the %d this server keeps", len(result), s.lim.MaxResultBytes)})
		return
	}
	s.finishLocked(t, StatusCompleted, "", result, nil)
}

// fail ends t with a protocol-level error.
func (s *taskStore) fail(t *task, code int, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finishLocked(t, StatusFailed, "", nil, &TaskError{Code: code, Message: msg})
}

// setProgress records t's latest progress.
func (s *taskStore) setProgress(t *task, p TaskProgress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !t.status.Terminal() {
		t.progress, t.updated = &p, time.Now()
	}
}

// ask puts t into input_required with requests (keyed by their IDs) and
// waits until the client answered every one of them through update, or
// ctx ends. It returns the answers, with who gave the last of them.
func (s *taskStore) ask(ctx context.Context, t *task, requests map[string]json.RawMessage) (resumed, error) {
	if len(requests) == 0 || len(requests) > s.lim.MaxInputRequests {
		return resumed{}, fmt.Errorf("a task may wait for 1 to %d input requests, not %d", s.lim.MaxInputRequests, len(requests))
	}
	resume := make(chan resumed, 1)
	s.mu.Lock()
	if t.status.Terminal() {
		s.mu.Unlock()
		return resumed{}, context.Canceled
	}
	t.status, t.inputs, t.answers, t.resume, t.updated = StatusInputRequired, requests, map[string]json.RawMessage{}, resume, time.Now()
	s.mu.Unlock()
	select {
	case r := <-resume:
		return r, nil
	case <-ctx.Done():
		return resumed{}, context.Cause(ctx)
	}
}

// update records owner's answers to the pending input requests of task
// id, given by the principal of ctx. Answers to IDs the task is not
// waiting for are ignored (SEP-2322: a server ignores what it does not
// recognise); when every pending request is answered, the task works
// again, for the principal of the request that answered last (the same
// user as the task's, owner says so, with the roles and attributes of
// its own credential). A task that is not input_required gets
// errTaskNotWaiting.
func (s *taskStore) update(ctx context.Context, owner, id string, answers map[string]json.RawMessage) error {
	by, ok := policy.PrincipalFrom(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.lookupLocked(owner, id, time.Now())
	if err != nil {
		return err
	}
	if t.status != StatusInputRequired {
		return errTaskNotWaiting
	}
	// The answers kept until the last comes are bounded together: an
	// update that would pass the bound keeps nothing.
	size := 0
	for k, v := range t.answers {
		if _, replaced := answers[k]; !replaced {
			size += len(v)
		}
	}
	for k, v := range answers {
		if _, pending := t.inputs[k]; pending {
			size += len(v)
		}
	}
	if size > s.lim.MaxAnswerBytes {
		return fmt.Errorf("%w: %d bytes, more than %d", errAnswersTooLarge, size, s.lim.MaxAnswerBytes)
	}
	for k, v := range answers {
		if _, pending := t.inputs[k]; pending {
			t.answers[k] = v
		}
	}
	if len(t.answers) < len(t.inputs) {
		return nil
	}
	t.resume <- resumed{answers: t.answers, by: by, ok: ok} // buffered: ask's receive may come later
	t.status, t.inputs, t.answers, t.resume, t.updated = StatusWorking, nil, nil, nil, time.Now()
	return nil
}

// close cancels every live task (they end as cancelled) and refuses new
// ones; the kept tasks stay readable until they expire.
func (s *taskStore) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lim.MaxTotal = 0
	for _, t := range s.tasks {
		if !t.status.Terminal() {
			s.finishLocked(t, StatusCancelled, "the server closed", nil, nil)
			t.cancel()
		}
	}
}
