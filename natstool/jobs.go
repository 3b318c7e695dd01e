package natstool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Defaults of [Jobs].
const (
	DefaultJobStream  = "CLAWTOOL_JOBS"
	DefaultJobBucket  = "clawtool_jobs"
	DefaultJobSubject = "clawtool.job"
	DefaultAckWait    = 30 * time.Second
	DefaultMaxDeliver = 5
	DefaultJobTTL     = 24 * time.Hour

	// MaxIdempotencyKeyBytes bounds an idempotency key.
	MaxIdempotencyKeyBytes = 1024
)

// JobState is where a job is in its life.
type JobState string

// States of a job.
const (
	JobQueued  JobState = "queued"
	JobRunning JobState = "running"
	JobDone    JobState = "done"
	// JobCancelled: [Jobs.Cancel] ended the job before it was done. It
	// has no result, and no worker runs it again.
	JobCancelled JobState = "cancelled"
	// JobInputRequired: the job's call asked for input
	// ([JobsOptions.Ask]) and waits for [Jobs.Answer]; [Job].Input holds
	// the questions. No worker holds the job meanwhile: the answers and
	// the call to run again are in its record.
	JobInputRequired JobState = "input_required"
)

// Terminal reports whether s is done or cancelled: a job in such a state
// never changes again.
func (s JobState) Terminal() bool { return s == JobDone || s == JobCancelled }

// A Job is the record of a submitted call, kept in the jobs' key-value
// bucket under its ID.
type Job struct {
	ID    string   `json:"id"`
	Tool  string   `json:"tool"`
	State JobState `json:"state"`
	// Attempts counts the workers that took the job; more than one means
	// a worker died or stalled holding it and the job was redelivered.
	Attempts int `json:"attempts,omitempty"`
	// Worker names the worker that runs or ran the job.
	Worker string `json:"worker,omitempty"`
	// Result is set once State is JobDone.
	Result *tool.Result `json:"result,omitempty"`
	// Input holds the latest questions of a job whose call asked for
	// input: pending while State is JobInputRequired, answered once the
	// job is queued or running again.
	Input *JobInput `json:"input,omitempty"`
	// Owner is a digest of who submitted the job (see [JobsOptions.Owner]);
	// empty when jobs are not told apart by submitter.
	Owner     string    `json:"owner,omitempty"`
	Submitted time.Time `json:"submitted"`
	Updated   time.Time `json:"updated"`
}

// jobRequest is the message on the work queue.
type jobRequest struct {
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args,omitempty"`
	TimeoutMs int64           `json:"timeout_ms,omitempty"`
	// Round is the round of questions the run answers: 0 for the
	// submitted call, N after the answers to the Nth questions.
	Round int `json:"round,omitempty"`
}

// JobsOptions configure [Jobs]. A nil *JobsOptions, and every zero field,
// means the default.
type JobsOptions struct {
	// Stream, Bucket and Subject name the JetStream stream, the key-value
	// bucket and the subject prefix of the jobs ([DefaultJobStream],
	// [DefaultJobBucket], [DefaultJobSubject]).
	Stream, Bucket, Subject string
	// AckWait is how long a job waits for its worker to say it is still at
	// work before it is given to another worker ([DefaultAckWait]); a
	// worker says so every third of it. MaxDeliver bounds the workers a
	// job is given to ([DefaultMaxDeliver]); the last one records the
	// outcome whatever it is. A job whose every worker died is not
	// delivered again: its record stays queued or running, and
	// [Jobs.Wait] ends only with its context. Both take effect when a
	// worker starts consuming.
	AckWait    time.Duration
	MaxDeliver int
	// TTL is how long job records are kept, and how long a job may wait in
	// the queue for a worker ([DefaultJobTTL]); an idempotency key is
	// remembered as long as its job's record.
	TTL time.Duration
	// Replicas is how many servers of a JetStream cluster keep the work
	// queue and the job records (1; 3 survives the loss of a server). It
	// takes effect when they are created or updated.
	Replicas int
	// Headers, when set, gives the headers [Jobs.Submit] puts on each
	// job's message, given Submit's context, which carries the message's
	// [Request] ([RequestFrom]; [SignedHeaders] signs it): for example the principal the
	// job is submitted for (policy.Headers), which workers restore with
	// Context. The headers travel with the job to whichever worker takes
	// it, however long it waits.
	Headers func(ctx context.Context) nats.Header
	// Owner, when set, says whose a job is, given the context of
	// [Jobs.Submit], [Jobs.Wait] or [Jobs.Job]: for example the
	// principal's ID (policy.PrincipalFrom). A job belongs to the owner
	// that submitted it: its idempotency key is scoped to that owner (the
	// same key from another owner is another job), and Wait and Job find
	// it only for that owner; for any other they return [ErrJobNotFound],
	// as for a job that does not exist. Without Owner, the owner is what
	// Headers gives for the context (the headers a worker decides the job
	// by, so a job is only ever found by a caller it would be decided for
	// in the same way); with neither, every caller is the same owner. Keep
	// headers that change from call to call (trace ids) out of Headers, or
	// set Owner.
	Owner func(ctx context.Context) string
	// Context, when set, derives the context a worker runs each job with
	// from the headers of the job's message: for example, to restore with
	// policy.FromHeaders the principal Headers sent, so that the worker's
	// registry decides the job for whoever submitted it. An error is the
	// job's outcome, a result of kind denied with the error's message,
	// recorded like any other. A [Service] given these jobs
	// ([ServeOptions.Jobs]) uses its [ServeOptions.CallContext] for the
	// jobs it takes when Context is nil. The headers are a claim: see
	// policy.Headers for when a worker may trust them, and
	// [VerifiedJobContext] for jobs whose claims [SignedHeaders] signed.
	// Its context carries the job message's [Request] ([RequestFrom]).
	Context func(ctx context.Context, h nats.Header) (context.Context, error)
	// Logger receives workers' job events ([slog.Default] when nil).
	Logger *slog.Logger
	// Ask, when set, lets a job's call ask for input instead of ending:
	// see [JobAsk]. Without it every run ends the job.
	Ask JobAsk
	// CoveredHeaders names headers of a job's message, besides the
	// principal's claim, that a signed claim covers: headers the worker
	// acts on (a task's expiry), which Headers puts on the message and
	// passes to the signer with [WithCoveredHeaders]. A worker reads
	// their values from each message it takes into its [Request]
	// (Headers), which [VerifiedJobContext] checks against the
	// signature.
	CoveredHeaders []string
	// ReplyKey, when set, has workers sign each job's progress reports,
	// bound to the job's progress subject and the time they were sent
	// (see [ReplyKey]), and has [Jobs.Wait] and [Jobs.VerifyProgress]
	// drop and log every report that is not so signed, is older than
	// [ProgressMaxAge] or dated more than [ProgressSkew] ahead. Without
	// it, whoever can publish on the jobs' subjects can put text in any
	// job's progress.
	ReplyKey *ReplyKey
}

// A JobAsk lets the calls of jobs ask for input and be run again with
// the answers, away from any caller: the questions and then the answers
// are kept in the job's record, so the job survives the restart of every
// process while it waits, and the run with the answers goes to whichever
// worker takes it.
//
// A worker calls it before each run with the job's message headers and,
// on a run after answers, the answered questions; it returns the context
// to run the call with, and a function the worker calls once the call
// returned, which gives the questions the call asked (nil when it asked
// none: the result stands), or an error that ends the job with an error
// result saying so.
type JobAsk func(ctx context.Context, h nats.Header, answered *JobInput) (context.Context, func() (*JobQuestion, error))

// JobQuestion is what a job's call asked for.
type JobQuestion struct {
	// Requests are the input requests by their IDs, each a JSON value,
	// at most [MaxJobQuestions] of them and [MaxJobInputBytes] in all.
	Requests map[string]json.RawMessage
	// State is carried to the run with the answers, at most
	// [MaxJobStateBytes].
	State string
	// Approval is the id of the approval request a question stands for,
	// if any (an MCP elicitation that asks for a policy's approval): a
	// store may resume the job once that request is answered elsewhere.
	Approval string
}

// Bounds of a job's questions and answers ([JobQuestion], [Jobs.Answer]).
const (
	MaxJobQuestions  = 16
	MaxJobInputBytes = 64 << 10
	MaxJobStateBytes = 4 << 10
)

// JobInput is what a job whose call asked for input keeps in its record.
type JobInput struct {
	// Round counts the questions the job asked: 1 for the first.
	Round int `json:"round"`
	// Requests are the questions by their IDs; Answers the answers given
	// so far, by the same IDs. Every request is answered once.
	Requests map[string]json.RawMessage `json:"requests"`
	Answers  map[string]json.RawMessage `json:"answers,omitempty"`
	// State is the call's state for its run with the answers.
	State string `json:"state,omitempty"`
	// Approval is JobQuestion.Approval.
	Approval string `json:"approval,omitempty"`
	// Asked is when the questions were asked.
	Asked time.Time `json:"asked"`
	// Args, Header and TimeoutMs are the call the answers run again: its
	// arguments and its message's headers (the principal's claim), as
	// the worker that asked received them.
	Args      json.RawMessage `json:"args,omitempty"`
	Header    nats.Header     `json:"header,omitempty"`
	TimeoutMs int64           `json:"timeout_ms,omitempty"`
}

// Pending returns the IDs of the requests not answered yet, sorted.
func (in *JobInput) Pending() []string {
	var out []string
	for k := range in.Requests {
		if _, ok := in.Answers[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

type jobsConfig struct {
	stream, bucket, subject string
	ackWait                 time.Duration
	maxDeliver              int
	ttl                     time.Duration
	replicas                int
	logger                  *slog.Logger
	headers                 func(context.Context) nats.Header
	owner                   func(context.Context) string
	jobContext              func(context.Context, nats.Header) (context.Context, error)
	ask                     JobAsk
	covered                 []string
	replyKey                *ReplyKey
}

// config is o with its defaults filled in.
func (o *JobsOptions) config() jobsConfig {
	cfg := jobsConfig{
		stream: DefaultJobStream, bucket: DefaultJobBucket, subject: DefaultJobSubject,
		ackWait: DefaultAckWait, maxDeliver: DefaultMaxDeliver, ttl: DefaultJobTTL, replicas: 1,
	}
	if o == nil {
		return cfg
	}
	nonEmpty(&cfg.stream, o.Stream)
	nonEmpty(&cfg.bucket, o.Bucket)
	nonEmpty(&cfg.subject, o.Subject)
	positive(&cfg.ackWait, o.AckWait)
	positive(&cfg.maxDeliver, o.MaxDeliver)
	positive(&cfg.ttl, o.TTL)
	positive(&cfg.replicas, o.Replicas)
	cfg.headers, cfg.owner, cfg.jobContext, cfg.logger, cfg.ask = o.Headers, o.Owner, o.Context, o.Logger, o.Ask
	cfg.covered = slices.Clone(o.CoveredHeaders)
	cfg.replyKey = o.ReplyKey
	return cfg
}

// ErrJobNotFound is wrapped by [Jobs.Job] and [Jobs.Wait] for a job that
// does not exist for the caller: never submitted, expired, removed, or
// submitted by another owner ([JobsOptions.Owner]).
var ErrJobNotFound = errors.New("job not found")

// ErrJobCancelled is wrapped by [Jobs.Wait] for a job that [Jobs.Cancel]
// ended.
var ErrJobCancelled = errors.New("job cancelled")

// ErrJobNotWaiting is wrapped by [Jobs.Answer] for a job that is not
// waiting for the answer given: not input_required, a request it did not
// ask, or one answered already.
var ErrJobNotWaiting = errors.New("job is not waiting for that input")

// OwnerOf returns the digest of the owner ctx speaks for
// ([JobsOptions.Owner]), as job records hold it in [Job].Owner; "" when
// jobs are not told apart.
func (j *Jobs) OwnerOf(ctx context.Context) string { return j.ownerOf(ctx) }

// ownerOf returns the digest of the owner ctx speaks for, "" when jobs
// are not told apart.
func (j *Jobs) ownerOf(ctx context.Context) string {
	var owner []byte
	switch {
	case j.cfg.owner != nil:
		owner = append([]byte("owner\x00"), j.cfg.owner(ctx)...)
	case j.cfg.headers != nil:
		if h := j.cfg.headers(ctx); len(h) > 0 {
			// encoding/json sorts the names: one encoding per header set.
			b, _ := json.Marshal(map[string][]string(h))
			owner = append([]byte("headers\x00"), b...)
		}
	}
	if owner == nil {
		return ""
	}
	sum := sha256.Sum256(owner)
	return hex.EncodeToString(sum[:])
}

// Jobs is a durable queue of tool calls on JetStream, for long-running
// tools: [Jobs.Submit] puts a call on a work queue stream and returns its
// job id at once; any worker consuming the queue ([Jobs.Work] or
// [ServeOptions.Jobs]) takes it; the outcome is stored in a key-value bucket, where
// [Jobs.Wait] and [Jobs.Job] read it. A worker reports that it is still at
// work while the call runs; one that dies or stalls for the ack wait
// ([JobsOptions.AckWait]) leaves the job to be delivered to another, and only the
// worker that holds the job last may record its outcome, so a job is
// completed once. Progress reports travel on [Jobs.ProgressSubject].
type Jobs struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	kv     jetstream.KeyValue
	cfg    jobsConfig

	// publish, when set (by a test), queues a job's message instead of
	// JetStream's PublishMsg with the job's id as the message id.
	publish func(ctx context.Context, msg *nats.Msg, id string) error
	// cancelChecked, when set (by a test), is told of each message on a
	// running job's cancel subject a worker checked, and whether the
	// job's record said it was cancelled.
	cancelChecked func(id string, honored bool)
}

// OpenJobs creates the jobs' stream and bucket on nc's JetStream, or binds
// to them when they exist.
func OpenJobs(ctx context.Context, nc *nats.Conn, opts *JobsOptions) (*Jobs, error) {
	cfg := opts.config()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("natstool: jobs: %w", err)
	}
	stream, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:       cfg.stream,
		Subjects:   []string{cfg.subject + ".run.>"},
		Retention:  jetstream.WorkQueuePolicy,
		MaxAge:     cfg.ttl,
		Duplicates: min(cfg.ttl, 10*time.Minute),
		Replicas:   cfg.replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("natstool: jobs: stream %s: %w", cfg.stream, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: cfg.bucket, TTL: cfg.ttl, History: 1, Replicas: cfg.replicas})
	if err != nil {
		return nil, fmt.Errorf("natstool: jobs: bucket %s: %w", cfg.bucket, err)
	}
	return &Jobs{nc: nc, js: js, stream: stream, kv: kv, cfg: cfg}, nil
}

// SubmitOptions configure one [Jobs.Submit]; nil means none.
type SubmitOptions struct {
	// IdempotencyKey, when set, makes the job's id a function of its owner
	// ([JobsOptions.Owner]), the tool's name and the key: the same owner
	// submitting the same tool again with the same key (while the first
	// job's record is kept, see [JobsOptions.TTL]) gets the first job's id
	// and runs nothing, so [Jobs.Wait] returns the first result. The
	// arguments of the later submissions are ignored. Another owner's key
	// is another job.
	IdempotencyKey string
	// Timeout, when above zero, bounds the job's run on a worker, on top
	// of the tool's own limit.
	Timeout time.Duration
}

// Submit queues a call of the tool name with args and returns its job id.
// The worker's registry validates the arguments when it runs the call; an
// invalid call is a job whose result says so. A Submit that returns an
// error leaves no job to run: when the queue's message may have been
// stored (its acknowledgement lost, or ctx ended while waiting for it),
// the job's record is removed unless a worker took the job meanwhile, in
// which case the job was submitted after all and Submit returns its id.
// Only when that removal fails too (the server away) does the error say
// the job may still run.
func (j *Jobs) Submit(ctx context.Context, name string, args json.RawMessage, opts *SubmitOptions) (string, error) {
	job, err := j.SubmitJob(ctx, name, args, opts)
	return job.ID, err
}

// SubmitJob is [Jobs.Submit] returning the job's record as it is once
// submitted: as Submit wrote it, or, for an idempotency key submitted
// before, as it is now. With no read after the submission, a caller
// that needs the record (its Submitted time) has no second step whose
// failure would leave a job it cannot tell its client of.
func (j *Jobs) SubmitJob(ctx context.Context, name string, args json.RawMessage, opts *SubmitOptions) (Job, error) {
	var sc SubmitOptions
	if opts != nil {
		sc = *opts
	}
	if !tool.ValidName(name) {
		return Job{}, fmt.Errorf("natstool: submit: %q is not a valid tool name: %w", name, tool.ErrInvalidName)
	}
	if len(sc.IdempotencyKey) > MaxIdempotencyKeyBytes {
		return Job{}, fmt.Errorf("natstool: submit: the idempotency key is %d bytes, more than %d", len(sc.IdempotencyKey), MaxIdempotencyKeyBytes)
	}
	owner := j.ownerOf(ctx)
	id := "j" + nuid.Next()
	if sc.IdempotencyKey != "" {
		sum := sha256.Sum256([]byte(owner + "\x00" + name + "\x00" + sc.IdempotencyKey))
		id = "k" + hex.EncodeToString(sum[:16])
	}
	now := time.Now().UTC()
	job := Job{ID: id, Tool: name, State: JobQueued, Owner: owner, Submitted: now, Updated: now}
	rec, _ := j.encodeRecord(job)
	rev, err := j.kv.Create(ctx, id, rec)
	if err != nil {
		if sc.IdempotencyKey != "" && errors.Is(err, jetstream.ErrKeyExists) {
			return j.Job(ctx, id) // submitted before: the first job stands
		}
		return Job{}, fmt.Errorf("natstool: submit: %w", err)
	}
	req, _ := json.Marshal(jobRequest{ID: id, Tool: name, Args: args, TimeoutMs: sc.Timeout.Milliseconds()})
	msg := &nats.Msg{Subject: j.cfg.subject + ".run." + name, Data: req}
	if j.cfg.headers != nil {
		msg.Header = maps.Clone(j.cfg.headers(withRequest(ctx, Request{Subject: msg.Subject, Data: req, Job: true})))
	}
	publish := j.publish
	if publish == nil {
		publish = func(ctx context.Context, msg *nats.Msg, id string) error {
			// The message id lets JetStream drop a publish retried after a lost ack.
			_, err := j.js.PublishMsg(ctx, msg, jetstream.WithMsgID(id))
			return err
		}
	}
	if err := publish(ctx, msg, id); err != nil {
		return j.unsubmit(ctx, job, rev, err)
	}
	return job, nil
}

// unsubmit settles a submission whose message perr says was not queued,
// though it may have been (its acknowledgement lost, or ctx ended while
// waiting for it): it removes the job's record at the revision Submit
// wrote, so that a worker given the message finds no job and drops it.
// A worker that took the job first moved the revision: the job runs, so
// it was submitted after all.
func (j *Jobs) unsubmit(ctx context.Context, job Job, rev uint64, perr error) (Job, error) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := j.kv.Delete(dctx, job.ID, jetstream.LastRevision(rev))
	switch {
	case err == nil:
		return Job{}, fmt.Errorf("natstool: submit: %w", perr)
	case wrongRevision(err):
		if now, gerr := j.Job(dctx, job.ID); gerr == nil {
			return now, nil
		}
		return job, nil // taken by a worker: it runs
	}
	return Job{}, fmt.Errorf("natstool: submit: %w; job %s may still run: its record could not be removed: %v", perr, job.ID, err)
}

// wrongRevision reports a conditional write refused because the key's
// revision moved (code 10071, or 10164 on replicated streams).
func wrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// Job returns the record of the job id of ctx's owner ([JobsOptions.Owner]),
// or an error wrapping [ErrJobNotFound] when there is none.
func (j *Jobs) Job(ctx context.Context, id string) (Job, error) {
	e, err := j.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
		return Job{}, fmt.Errorf("natstool: job %s: %w", id, ErrJobNotFound)
	}
	if err != nil {
		return Job{}, fmt.Errorf("natstool: job %s: %w", id, err)
	}
	return j.ownRecord(ctx, id, e.Value())
}

// ownRecord decodes the record of job id for the owner of ctx.
func (j *Jobs) ownRecord(ctx context.Context, id string, data []byte) (Job, error) {
	job, err := j.decodeRecord(id, data)
	if err != nil {
		return Job{}, err
	}
	if job.Owner != j.ownerOf(ctx) {
		return Job{}, fmt.Errorf("natstool: job %s: %w", id, ErrJobNotFound)
	}
	return job, nil
}

// recordSigMark opens the signature a record of jobs with a ReplyKey
// ends with, as its last JSON field.
const recordSigMark = `,"signature":"`

// encodeRecord returns job's record as stored: its JSON and, with a
// [JobsOptions.ReplyKey], the signature of that JSON bound to the job's
// id, as the last field. A reader without the key ignores the field.
func (j *Jobs) encodeRecord(job Job) ([]byte, error) {
	rec, err := json.Marshal(job)
	k := j.cfg.replyKey
	if err != nil || k == nil {
		return rec, err
	}
	sig := k.sign(k.id, signJobRecord, 0, 0, []byte(job.ID), rec)
	out := make([]byte, 0, len(rec)+len(recordSigMark)+len(sig)+2)
	out = append(out, rec[:len(rec)-1]...)
	out = append(out, recordSigMark...)
	out = append(out, sig...)
	return append(out, '"', '}'), nil
}

// ReadRecord decodes data, a record of job id as the jobs' bucket holds
// it. With a [JobsOptions.ReplyKey], only a record signed for job id
// with a key of the jobs' is read: any other (written by a process
// without the key, or by someone else, or another job's copied) is an
// error wrapping [ErrReplySignature]. Without a key any record is read:
// whoever may write to the bucket can write them.
func (j *Jobs) ReadRecord(id string, data []byte) (Job, error) { return j.decodeRecord(id, data) }

// decodeRecord is ReadRecord.
func (j *Jobs) decodeRecord(id string, data []byte) (Job, error) {
	if k := j.cfg.replyKey; k != nil {
		i := bytes.LastIndex(data, []byte(recordSigMark))
		if i < 0 || !bytes.HasSuffix(data, []byte(`"}`)) || i+len(recordSigMark) > len(data)-2 {
			return Job{}, fmt.Errorf("natstool: job %s: %w: the record carries no signature (written by a process without the key, or by someone else)", id, ErrReplySignature)
		}
		sig := string(data[i+len(recordSigMark) : len(data)-2])
		body := append(data[:i:i], '}') // a copy: data is not changed
		if _, _, err := k.verify(nats.Header{HeaderReplySignature: {sig}}, signJobRecord, []byte(id), body); err != nil {
			return Job{}, fmt.Errorf("natstool: job %s: the record: %w", id, err)
		}
		data = body
	}
	var job Job
	if err := json.Unmarshal(data, &job); err != nil {
		return Job{}, fmt.Errorf("natstool: job %s: the record cannot be read: %w", id, err)
	}
	return job, nil
}

// ProgressSubject is the subject the job's progress reports are published
// on, as JSON {"progress","total","message"}, at most one every 20 ms.
func (j *Jobs) ProgressSubject(id string) string { return j.cfg.subject + ".progress." + id }

// VerifyProgress checks a message on a job's progress subject. With a
// [JobsOptions.ReplyKey], it returns the time the worker signed it at,
// or an error wrapping [ErrReplySignature], which it logs, for a report
// not signed for this subject with a key of the jobs', or outside the
// window of [ProgressMaxAge] and [ProgressSkew]; a reader that keeps
// the latest report drops one older than it holds (a replay). Without
// a key it returns the zero time and no error: nothing can be
// authenticated. The report's body is the JSON {"progress", "total",
// "message"}.
func (j *Jobs) VerifyProgress(m *nats.Msg) (time.Time, error) {
	k := j.cfg.replyKey
	if k == nil {
		return time.Time{}, nil
	}
	_, millis, err := k.verify(m.Header, signJobProgress, []byte(m.Subject), m.Data)
	if err == nil {
		err = checkTime(millis, time.Now())
	}
	if err != nil {
		j.logger().Warn("natstool: job progress refused", "subject", m.Subject, "err", err)
		return time.Time{}, err
	}
	return time.UnixMilli(millis), nil
}

// CancelSubject is the subject a job's cancellation is announced on, to
// the worker that runs it.
func (j *Jobs) CancelSubject(id string) string { return j.cfg.subject + ".cancel." + id }

// Cancel ends the job id of ctx's owner ([JobsOptions.Owner]) unless it
// is done or cancelled already, and returns its record as it is then. A
// queued job is never run; a running one has its context cancelled on its
// worker, and whatever it returns is not recorded. A job that is not
// ctx's owner's is an error wrapping [ErrJobNotFound].
func (j *Jobs) Cancel(ctx context.Context, id string) (Job, error) {
	return j.cancel(ctx, id, true)
}

// Expire ends the job id whatever its owner, as [Jobs.Cancel] does, for
// the keeper of the jobs' records when a job outlived its time on the
// keeper's clock (a durable task past its TTL): it is recorded
// cancelled, and a worker running it ends the run. A job done or
// cancelled already is left as it is.
func (j *Jobs) Expire(ctx context.Context, id string) (Job, error) {
	return j.cancel(ctx, id, false)
}

// cancel records the job id cancelled, for ctx's owner only when owned.
func (j *Jobs) cancel(ctx context.Context, id string, owned bool) (Job, error) {
	for range 8 { // each round loses only to a worker's update
		e, err := j.kv.Get(ctx, id)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
			return Job{}, fmt.Errorf("natstool: job %s: %w", id, ErrJobNotFound)
		}
		if err != nil {
			return Job{}, fmt.Errorf("natstool: job %s: %w", id, err)
		}
		var job Job
		if owned {
			job, err = j.ownRecord(ctx, id, e.Value())
		} else {
			job, err = j.decodeRecord(id, e.Value())
		}
		if err != nil || job.State.Terminal() {
			return job, err
		}
		job.State, job.Updated = JobCancelled, time.Now().UTC()
		rec, _ := j.encodeRecord(job)
		if _, err := j.kv.Update(ctx, id, rec, e.Revision()); err != nil {
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue // a worker updated it meanwhile: look again
			}
			return Job{}, fmt.Errorf("natstool: job %s: %w", id, err)
		}
		j.nc.Publish(j.CancelSubject(id), nil)
		return job, nil
	}
	return Job{}, fmt.Errorf("natstool: job %s: its record kept changing; try again", id)
}

// Answer records answers to the questions of the job id of ctx's owner
// ([JobsOptions.Owner]), which waits for input ([JobInputRequired]), by
// the IDs of its requests. Each request is answered once: an answer to a
// request the job did not ask, or asked and had answered already, is an
// error wrapping [ErrJobNotWaiting], and nothing of that Answer is kept,
// as for a job that is not waiting. Once every request is answered the
// job is queued again, and any worker runs its call with the answers.
// The answers together are bounded by [MaxJobInputBytes]. A job that is
// not ctx's owner's is an error wrapping [ErrJobNotFound]. With
// [JobsOptions.Headers], the run goes on with the headers of ctx, the
// answering request's, not those the job was submitted with.
func (j *Jobs) Answer(ctx context.Context, id string, answers map[string]json.RawMessage) (Job, error) {
	if len(answers) == 0 {
		return Job{}, fmt.Errorf("natstool: job %s: no answers", id)
	}
	for range 8 { // each round loses only to another update
		e, err := j.kv.Get(ctx, id)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
			return Job{}, fmt.Errorf("natstool: job %s: %w", id, ErrJobNotFound)
		}
		if err != nil {
			return Job{}, fmt.Errorf("natstool: job %s: %w", id, err)
		}
		job, err := j.ownRecord(ctx, id, e.Value())
		if err != nil {
			return Job{}, err
		}
		if job.State != JobInputRequired || job.Input == nil {
			return Job{}, fmt.Errorf("natstool: job %s is %s: %w", id, job.State, ErrJobNotWaiting)
		}
		in := *job.Input
		in.Answers = maps.Clone(in.Answers)
		if in.Answers == nil {
			in.Answers = map[string]json.RawMessage{}
		}
		size := 0
		for _, v := range in.Answers {
			size += len(v)
		}
		for _, k := range slices.Sorted(maps.Keys(answers)) {
			if _, asked := in.Requests[k]; !asked {
				return Job{}, fmt.Errorf("natstool: job %s: no input request %q in round %d: %w", id, shortKey(k), in.Round, ErrJobNotWaiting)
			}
			if _, done := in.Answers[k]; done {
				return Job{}, fmt.Errorf("natstool: job %s: input request %q was answered already: %w", id, shortKey(k), ErrJobNotWaiting)
			}
			if !json.Valid(answers[k]) {
				return Job{}, fmt.Errorf("natstool: job %s: the answer to %q is not JSON", id, shortKey(k))
			}
			in.Answers[k] = answers[k]
			size += len(answers[k])
		}
		if size > MaxJobInputBytes {
			return Job{}, fmt.Errorf("natstool: job %s: the answers are %d bytes, more than %d", id, size, MaxJobInputBytes)
		}
		j.runAs(ctx, job, &in)
		job.Input, job.Updated = &in, time.Now().UTC()
		complete := len(in.Pending()) == 0
		if complete {
			job.State = JobQueued
		}
		rec, _ := j.encodeRecord(job)
		if len(rec) > int(j.nc.MaxPayload())-1024 {
			return Job{}, fmt.Errorf("natstool: job %s: with the answers the record is %d bytes, more than it holds", id, len(rec))
		}
		if _, err := j.kv.Update(ctx, id, rec, e.Revision()); err != nil {
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue // updated meanwhile: look again
			}
			return Job{}, fmt.Errorf("natstool: job %s: %w", id, err)
		}
		if complete {
			if err := j.publishRound(ctx, job); err != nil {
				// Queued with its answers: Resume publishes it again.
				return job, fmt.Errorf("natstool: job %s: answered, but its run was not queued (Resume queues it): %w", id, err)
			}
		}
		return job, nil
	}
	return Job{}, fmt.Errorf("natstool: job %s: its record kept changing; try again", id)
}

// Resume has the call of the job id of ctx's owner run again without
// waiting for more answers, when it waits for the input of round (see
// [JobInput].Round), or queues its run again when it is queued after
// that round's answers (a process that recorded the answers may have died
// before it queued the run; JetStream drops a second copy within its
// duplicate window). A host uses it when a question was settled
// elsewhere, such as an approval request answered in the approvals
// store: the call, run again, finds that answer; with
// [JobsOptions.Headers], it runs with the headers of ctx. It returns the
// record as it is then; a job in another state or round is left as it
// is.
func (j *Jobs) Resume(ctx context.Context, id string, round int) (Job, error) {
	for range 8 {
		e, err := j.kv.Get(ctx, id)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
			return Job{}, fmt.Errorf("natstool: job %s: %w", id, ErrJobNotFound)
		}
		if err != nil {
			return Job{}, fmt.Errorf("natstool: job %s: %w", id, err)
		}
		job, err := j.ownRecord(ctx, id, e.Value())
		if err != nil || job.Input == nil || job.Input.Round != round {
			return job, err
		}
		switch job.State {
		case JobQueued:
			return job, j.publishRound(ctx, job)
		case JobInputRequired:
		default:
			return job, nil
		}
		in := *job.Input
		j.runAs(ctx, job, &in)
		job.Input, job.State, job.Updated = &in, JobQueued, time.Now().UTC()
		rec, _ := j.encodeRecord(job)
		if _, err := j.kv.Update(ctx, id, rec, e.Revision()); err != nil {
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
			return Job{}, fmt.Errorf("natstool: job %s: %w", id, err)
		}
		return job, j.publishRound(ctx, job)
	}
	return Job{}, fmt.Errorf("natstool: job %s: its record kept changing; try again", id)
}

// runAs makes the next run of in's call the one of ctx's request: with
// [JobsOptions.Headers], the headers of ctx (the principal's claim of
// the request that answered, or resumed, the job: the owner's, with the
// roles of its own credential) replace those of the message that asked,
// so a role the owner lost since the job was submitted is not used.
func (j *Jobs) runAs(ctx context.Context, job Job, in *JobInput) {
	if j.cfg.headers != nil {
		subject, data := j.roundMessage(job.ID, job.Tool, in)
		in.Header = maps.Clone(j.cfg.headers(withRequest(ctx, Request{Subject: subject, Data: data, Job: true})))
	}
}

// roundMessage is the subject and body of the message that runs round
// in of job id of tool: the message publishRound sends, and whose body a
// signed claim made by runAs covers.
func (j *Jobs) roundMessage(id, tool string, in *JobInput) (subject string, data []byte) {
	data, _ = json.Marshal(jobRequest{ID: id, Tool: tool, Args: in.Args, TimeoutMs: in.TimeoutMs, Round: in.Round})
	return j.cfg.subject + ".run." + tool, data
}

// publishRound queues the run of job with the answers of its latest
// questions. The message id makes a second publish of the same round
// one message.
func (j *Jobs) publishRound(ctx context.Context, job Job) error {
	in := job.Input
	subject, req := j.roundMessage(job.ID, job.Tool, in)
	msg := &nats.Msg{Subject: subject, Data: req, Header: maps.Clone(in.Header)}
	_, err := j.js.PublishMsg(ctx, msg, jetstream.WithMsgID(fmt.Sprintf("%s.r%d", job.ID, in.Round)))
	return err
}

// shortKey is k cut for an error message.
func shortKey(k string) string {
	if len(k) > 64 {
		return k[:64] + "…"
	}
	return k
}

// Wait waits until the job is done and returns its result. Meanwhile the
// job's progress reports go to ctx's [tool.ProgressFunc], if any. It
// returns ctx's error if ctx ends first; the job goes on. A job that is
// not ctx's owner's ([JobsOptions.Owner]), or does not exist, is an error
// wrapping [ErrJobNotFound], at once.
func (j *Jobs) Wait(ctx context.Context, id string) (tool.Result, error) {
	if _, err := j.Job(ctx, id); err != nil {
		return tool.Result{}, err
	}
	var last time.Time // of the latest report relayed: older ones are replays
	sub, err := j.nc.Subscribe(j.ProgressSubject(id), func(m *nats.Msg) {
		at, err := j.VerifyProgress(m)
		if err != nil || at.Before(last) {
			return
		}
		last = at
		var p progressReport
		if json.Unmarshal(m.Data, &p) == nil {
			tool.ReportProgress(ctx, p.Progress, p.Total, p.Message)
		}
	})
	if err != nil {
		return tool.Result{}, fmt.Errorf("natstool: job %s: %w", id, err)
	}
	defer sub.Unsubscribe()
	w, err := j.kv.Watch(ctx, id)
	if err != nil {
		return tool.Result{}, fmt.Errorf("natstool: job %s: %w", id, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return tool.Result{}, context.Cause(ctx)
		case e, ok := <-w.Updates():
			if !ok {
				return tool.Result{}, fmt.Errorf("natstool: job %s: the watch ended", id)
			}
			if e == nil {
				continue // the initial values were all delivered
			}
			if e.Operation() != jetstream.KeyValuePut {
				return tool.Result{}, fmt.Errorf("natstool: job %s: the record was removed", id)
			}
			job, err := j.ownRecord(ctx, id, e.Value())
			if errors.Is(err, ErrJobNotFound) || errors.Is(err, ErrReplySignature) {
				return tool.Result{}, err
			}
			if err == nil && job.State == JobDone && job.Result != nil {
				return *job.Result, nil
			}
			if err == nil && job.State == JobCancelled {
				return tool.Result{}, fmt.Errorf("natstool: job %s: %w", id, ErrJobCancelled)
			}
		}
	}
}

// A JobWorker consumes jobs for one registry; see [Jobs.Work].
type JobWorker struct {
	jobs       *Jobs
	reg        *tool.Registry
	name       string
	jobContext func(context.Context, nats.Header) (context.Context, error)
	cons       jetstream.Consumer
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

// Work starts taking jobs from the queue and running them through reg,
// at most slots at once. Every worker of a queue shares one durable
// consumer, so each job goes to one of them. name identifies the worker in
// job records. Stop it with [JobWorker.Stop].
//
// A worker whose registry lacks a job's tool hands the job back, to be
// offered again after a tenth of the ack wait: the workers of one queue
// may serve different tools (say, during a rolling upgrade that adds a
// tool). Each worker has one request for a job waiting at a time, and
// JetStream answers the oldest first, so the offers of a job go round the
// workers in turn. They are bounded by the maximum deliveries
// ([JobsOptions.AckWait]): a worker that lacks the tool at the last one records
// the job as done, with a result of kind unavailable that says no worker
// that took it serves the tool. So a job for a tool no worker serves
// (never did, or was removed since the submission) fails after about
// maxDeliver tenths of the ack wait rather than waiting for ever. Keep
// maxDeliver above the number of workers of the queue that lack a tool,
// or give such a tool a queue of its own ([JobsOptions.Stream]).
func (j *Jobs) Work(reg *tool.Registry, name string, slots int) (*JobWorker, error) {
	return j.work(reg, name, slots, j.cfg.jobContext)
}

// work is Work with the function that derives each job's context.
func (j *Jobs) work(reg *tool.Registry, name string, slots int, jobContext func(context.Context, nats.Header) (context.Context, error)) (*JobWorker, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := j.stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       "workers",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       j.cfg.ackWait,
		MaxDeliver:    j.cfg.maxDeliver,
		MaxAckPending: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("natstool: jobs: consumer: %w", err)
	}
	w := &JobWorker{jobs: j, reg: reg, name: name, cons: cons, jobContext: jobContext}
	var base context.Context
	base, w.cancel = context.WithCancel(context.Background())
	w.wg.Go(func() { w.fetch(base, max(slots, 1)) })
	return w, nil
}

// Stop stops taking jobs and cancels the jobs running; they are not
// acknowledged, so they go to another worker after the ack wait.
func (w *JobWorker) Stop() {
	w.cancel()
	w.wg.Wait()
}

func (j *Jobs) logger() *slog.Logger {
	if j.cfg.logger != nil {
		return j.cfg.logger
	}
	return slog.Default()
}

// fetch takes a job whenever one of the worker's slots is free, and runs
// it in a goroutine of its own, until ctx ends. One pull at a time per
// worker rather than one per slot: JetStream hands a job to the oldest
// pull waiting, so a job one worker handed back goes to another worker
// next, instead of to the other slots of the worker that handed it back.
func (w *JobWorker) fetch(ctx context.Context, slots int) {
	free := make(chan struct{}, slots)
	for range slots {
		free <- struct{}{}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-free:
		}
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		msg, err := w.cons.Next(jetstream.FetchContext(fctx))
		cancel()
		if err != nil {
			free <- struct{}{}
			if ctx.Err() == nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
				// The server is away: do not spin.
				select {
				case <-ctx.Done():
				case <-time.After(250 * time.Millisecond):
				}
			}
			continue
		}
		w.wg.Go(func() {
			defer func() { free <- struct{}{} }()
			w.run(ctx, msg)
		})
	}
}

// run runs one delivered job and records its outcome.
func (w *JobWorker) run(ctx context.Context, msg jetstream.Msg) {
	j := w.jobs
	var req jobRequest
	if err := json.Unmarshal(msg.Data(), &req); err != nil || req.ID == "" {
		msg.Term() // not a job: nobody can run it
		return
	}
	meta, _ := msg.Metadata()
	lastTry := meta != nil && int(meta.NumDelivered) >= j.cfg.maxDeliver
	e, err := j.kv.Get(ctx, req.ID)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			msg.Term() // the record expired or was removed
		}
		return // otherwise it comes back after the ack wait
	}
	job, err := j.decodeRecord(req.ID, e.Value())
	if err != nil {
		// Unreadable, or (with a reply key) not signed for this job:
		// written by someone else. Not run.
		j.logger().Warn("natstool: a job's record refused: the job is not run", "job", req.ID, "err", err)
		msg.Term()
		return
	}
	if job.State.Terminal() {
		msg.Ack() // done or cancelled before (for done: the ack was lost)
		return
	}
	round := 0
	if job.Input != nil {
		round = job.Input.Round
	}
	if job.State == JobInputRequired || req.Round != round {
		// An earlier round's message whose ack was lost: the job waits
		// for answers, or runs a later round.
		msg.Ack()
		return
	}
	if job.State == JobRunning && meta != nil && meta.NumDelivered == 1 {
		// A worker runs this round from another copy of its message
		// (queued again after JetStream's duplicate window): a first
		// delivery never finds its own round running, a redelivery
		// after a worker died does.
		msg.Ack()
		return
	}
	var answered *JobInput
	if round > 0 {
		answered = job.Input
	}
	_, served := w.reg.Get(req.Tool)
	if !served && !lastTry {
		j.logger().Debug("natstool: a job's tool is not served here; handing the job back for another worker", "job", req.ID, "tool", req.Tool, "worker", w.name, "delivery", deliveries(meta))
		msg.NakWithDelay(j.cfg.ackWait / 10)
		return
	}
	// Take the job: the revision makes sure that of two workers that
	// both believe they hold it, only the later one can record it.
	job.State, job.Worker, job.Attempts, job.Updated = JobRunning, w.name, job.Attempts+1, time.Now().UTC()
	rec, _ := j.encodeRecord(job)
	rev, err := j.kv.Update(ctx, req.ID, rec, e.Revision())
	if err != nil {
		return // another worker took it meanwhile, or the server is away
	}

	var res tool.Result
	if served {
		var q *JobQuestion
		res, q = w.execute(ctx, msg, req, answered)
		if ctx.Err() != nil {
			return // stopping: leave the job to another worker
		}
		if q != nil {
			w.wait(ctx, msg, req, job, rev, q)
			return
		}
	} else {
		res = tool.Result{IsError: true, Kind: tool.KindUnavailable, Error: fmt.Sprintf(
			"no worker that took job %s serves tool %q: it was offered %d times; the tool may never have been served, or was removed after the job was submitted",
			req.ID, req.Tool, deliveries(meta))}
	}
	job.State, job.Result, job.Updated = JobDone, &res, time.Now().UTC()
	rec, err = j.encodeRecord(job)
	if err == nil && len(rec) > int(j.nc.MaxPayload())-1024 {
		err = fmt.Errorf("the result is %d bytes, more than a job record holds", len(rec))
	}
	if err != nil {
		job.Result = &tool.Result{IsError: true, Kind: tool.KindToolError, Error: fmt.Sprintf("tool %q: %v", req.Tool, err)}
		rec, _ = j.encodeRecord(job)
	}
	if _, err := j.kv.Update(context.WithoutCancel(ctx), req.ID, rec, rev); err != nil {
		if e, gerr := j.kv.Get(context.WithoutCancel(ctx), req.ID); gerr == nil {
			if now, err := j.decodeRecord(req.ID, e.Value()); err == nil && now.State == JobCancelled {
				msg.Ack() // cancelled while it ran: nothing to record
				return
			}
		}
		// Someone else holds the job now; their outcome counts.
		j.logger().Warn("natstool: a job's result was not recorded", "job", req.ID, "err", err)
		return
	}
	actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer acancel()
	msg.DoubleAck(actx)
}

// wait records that the job's call asked q, and leaves the job waiting
// for the answers: no worker holds it until they are all in.
func (w *JobWorker) wait(ctx context.Context, msg jetstream.Msg, req jobRequest, job Job, rev uint64, q *JobQuestion) {
	j := w.jobs
	in := &JobInput{Round: req.Round + 1, Requests: q.Requests, State: q.State, Approval: q.Approval,
		Asked: time.Now().UTC(), Args: req.Args, Header: maps.Clone(nats.Header(msg.Headers())), TimeoutMs: req.TimeoutMs}
	job.State, job.Input, job.Result, job.Updated = JobInputRequired, in, nil, time.Now().UTC()
	rec, _ := j.encodeRecord(job)
	size := len(q.State)
	for _, v := range q.Requests {
		size += len(v)
	}
	var why string
	switch {
	case len(q.Requests) == 0 || len(q.Requests) > MaxJobQuestions:
		why = fmt.Sprintf("a job may ask 1 to %d input requests at once, not %d", MaxJobQuestions, len(q.Requests))
	case len(q.State) > MaxJobStateBytes:
		why = fmt.Sprintf("the state is %d bytes, more than %d", len(q.State), MaxJobStateBytes)
	case size > MaxJobInputBytes:
		why = fmt.Sprintf("the input requests are %d bytes, more than %d", size, MaxJobInputBytes)
	case len(rec) > int(j.nc.MaxPayload())-1024:
		why = fmt.Sprintf("with the input requests the record is %d bytes, more than it holds", len(rec))
	}
	if why != "" {
		res := tool.Result{IsError: true, Kind: tool.KindToolError, Error: fmt.Sprintf("tool %q asked for input this job cannot keep: %s", req.Tool, why)}
		job.State, job.Input, job.Result = JobDone, nil, &res
		rec, _ = j.encodeRecord(job)
	}
	if _, err := j.kv.Update(context.WithoutCancel(ctx), req.ID, rec, rev); err != nil {
		if e, gerr := j.kv.Get(context.WithoutCancel(ctx), req.ID); gerr == nil {
			if now, err := j.decodeRecord(req.ID, e.Value()); err == nil && now.State == JobCancelled {
				msg.Ack()
				return
			}
		}
		j.logger().Warn("natstool: a job's questions were not recorded", "job", req.ID, "err", err)
		return
	}
	actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer acancel()
	msg.DoubleAck(actx)
}

// execute runs a job the worker took, under the job's time limit, for
// the principal its headers name when the worker restores one, telling
// JetStream every third of the ack wait that the job is still at work.
// With [JobsOptions.Ask], the call may ask for input instead: q is then
// what it asked, and res is to be ignored.
func (w *JobWorker) execute(ctx context.Context, msg jetstream.Msg, req jobRequest, answered *JobInput) (res tool.Result, q *JobQuestion) {
	j := w.jobs
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if req.TimeoutMs > 0 {
		var c context.CancelFunc
		runCtx, c = context.WithTimeoutCause(runCtx, time.Duration(req.TimeoutMs)*time.Millisecond, fmt.Errorf("%w: the job's time ran out", tool.ErrTimeout))
		defer c()
	}
	// A Cancel of the job ends its run here: the message on its cancel
	// subject is a signal to look, not a proof, since anyone who may
	// publish there sends one; the run ends only once the job's record,
	// which Cancel changes for the job's owner alone, says it is
	// cancelled. Messages that come while one is checked are one check.
	look := make(chan struct{}, 1)
	if sub, err := j.nc.Subscribe(j.CancelSubject(req.ID), func(*nats.Msg) {
		select {
		case look <- struct{}{}:
		default:
		}
	}); err == nil {
		defer sub.Unsubscribe()
		// The subscription is the server's before the run starts: a
		// cancel published after that, from any connection, reaches it
		// (unflushed, the owner's Cancel right after the start could
		// reach the server first and be lost, and the run went on).
		j.nc.FlushTimeout(5 * time.Second)
	}
	go func(ctx context.Context) {
		for {
			select {
			case <-ctx.Done():
				return
			case <-look:
			}
			honored := j.cancelled(ctx, req.ID)
			if j.cancelChecked != nil {
				j.cancelChecked(req.ID, honored)
			}
			if honored {
				cancel()
				return
			}
		}
	}(runCtx)
	if w.jobContext != nil {
		r := Request{Subject: msg.Subject(), Data: msg.Data(), Job: true}
		if len(j.cfg.covered) > 0 {
			r.Headers = nats.Header{}
			for _, name := range j.cfg.covered {
				r.Headers[name] = msg.Headers()[name]
			}
		}
		c, err := w.jobContext(withRequest(runCtx, r), nats.Header(msg.Headers()))
		if err != nil {
			return tool.Result{IsError: true, Kind: tool.KindDenied, Error: err.Error()}, nil
		}
		runCtx = c
	}
	var asked func() (*JobQuestion, error)
	if j.cfg.ask != nil {
		runCtx, asked = j.cfg.ask(runCtx, nats.Header(msg.Headers()), answered)
	}
	var progressMu sync.Mutex
	var lastReport time.Time
	runCtx = tool.WithProgress(runCtx, func(progress, total float64, message string) {
		// At most one report every 20 ms, as for calls.
		progressMu.Lock()
		now := time.Now()
		if now.Sub(lastReport) < 20*time.Millisecond {
			progressMu.Unlock()
			return
		}
		lastReport = now
		progressMu.Unlock()
		b, _ := json.Marshal(progressReport{Progress: progress, Total: total, Message: message})
		msg := &nats.Msg{Subject: j.ProgressSubject(req.ID), Data: b}
		if k := j.cfg.replyKey; k != nil {
			msg.Header = signedHeader("", k.sign(k.id, signJobProgress, 0, now.UnixMilli(), []byte(msg.Subject), b))
		}
		j.nc.PublishMsg(msg)
	})
	stopBeats := make(chan struct{})
	beatsDone := make(chan struct{})
	go func() {
		defer close(beatsDone)
		t := time.NewTicker(j.cfg.ackWait / 3)
		defer t.Stop()
		for {
			select {
			case <-stopBeats:
				return
			case <-t.C:
				msg.InProgress()
			}
		}
	}()
	res = w.reg.Execute(runCtx, req.Tool, req.Args)
	close(stopBeats)
	<-beatsDone
	if asked != nil && ctx.Err() == nil {
		q, err := asked()
		if err != nil {
			return tool.Result{IsError: true, Kind: tool.KindToolError, Error: fmt.Sprintf("tool %q: %v", req.Tool, err)}, nil
		}
		if q != nil {
			return res, q
		}
	}
	return res, nil
}

// cancelled reports whether the record of job id says it is cancelled;
// a record that cannot be read says nothing (the run goes on, and its
// outcome is not recorded over a cancellation: see JobWorker.run).
func (j *Jobs) cancelled(ctx context.Context, id string) bool {
	e, err := j.kv.Get(ctx, id)
	if err != nil {
		return false
	}
	job, err := j.decodeRecord(id, e.Value())
	return err == nil && job.State == JobCancelled
}

// deliveries is how many times the job was delivered, as far as known.
func deliveries(meta *jetstream.MsgMetadata) uint64 {
	if meta == nil {
		return 0
	}
	return meta.NumDelivered
}
