package natstool

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/miniopenclaw/tool/policy"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of [Approvals].
const (
	DefaultApprovalBucket = "clawtool_approvals"
	// DefaultApprovalsTTL is how long the bucket keeps a record after
	// its last change: six times [policy.DefaultApprovalTTL], so that a
	// request answered just before it expires keeps its answer for the
	// whole approval TTL.
	DefaultApprovalsTTL = 6 * policy.DefaultApprovalTTL
)

// ApprovalsOptions configure [Approvals]. A nil *ApprovalsOptions, and
// every zero field, means the default.
type ApprovalsOptions struct {
	// Bucket names the key-value bucket ([DefaultApprovalBucket]).
	Bucket string
	// Max bounds the records kept, as [policy.FileApprovalStore.Max]
	// does ([policy.DefaultMaxApprovals]).
	Max int
	// TTL is how long the bucket keeps a record after its last change
	// ([DefaultApprovalsTTL]). It must be at least twice the approval
	// TTL of the Authorizers that use the store (a request lives one
	// approval TTL, its answer another): a shorter one loses answers
	// early, and the calls then ask again. Records also carry their own
	// expiry, which every method checks.
	TTL time.Duration
	// Replicas is how many servers of a JetStream cluster keep the
	// bucket (1; 3 survives the loss of a server).
	Replicas int
}

// Approvals is a [policy.ApprovalStore] in a JetStream key-value bucket,
// shared by every process that opens the bucket on one NATS system: a
// request any worker's policy asks is answered from any connection
// (clawtool approvals --nats, the inspector), and the call it is for
// runs once, on whichever worker makes it again.
//
// Each record is one key, r.ID, whose value is the record's JSON (with
// the whole arguments, as [policy.FileApprovalStore] keeps them),
// and each digest one key, d.SHA256(digest), naming the request of that
// call. Every change is a compare-and-swap on the key's last revision,
// so of two answers racing on one request one is kept and the other
// gets [policy.ErrApprovalAnswered], and of two workers racing to use an
// answer one gets it. The bucket keeps one revision per key, on file
// storage, refuses a value over [policy.MaxApprovalRecord] bytes, and
// holds at most about twice Max records' bytes: Put refuses a new
// request with [policy.ErrApprovalStoreFull] when Max live requests are
// kept (used and expired ones are purged first to make room); Puts racing
// from several connections may pass Max by the number of racers, never
// the byte bound. A value that is not a valid record makes the method
// that reads it fail with [policy.ErrApprovalStoreCorrupt], naming the
// bucket and key; a bucket that cannot be reached makes every method
// fail. An Authorizer refuses the call in every such case.
//
// Approvals is a [policy.ApprovalClaimer] too: an Authorizer's use of an
// answer records the worker (host, pid, process start), and the call's
// end is recorded on the record, each under compare-and-swap. A worker
// killed in between leaves the answer claimed; on the worker's machine
// it shows as interrupted ([policy.ApprovalRecord.Interrupted]) and a
// person may answer it again (on another machine it shows claimed and
// is not interrupted: whether that worker lives cannot be told). The
// claimed record is kept for the bucket's TTL at most (one hour by
// default, less than [policy.ApprovalClaimKeep]).
type Approvals struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	stream jetstream.Stream
	bucket string
	max    int
	ttl    time.Duration
}

var _ policy.ApprovalClaimer = (*Approvals)(nil)

// OpenApprovals creates the approvals' bucket on nc's JetStream, or
// binds to it when it exists (updating its settings to opts).
func OpenApprovals(ctx context.Context, nc *nats.Conn, opts *ApprovalsOptions) (*Approvals, error) {
	var o ApprovalsOptions
	if opts != nil {
		o = *opts
	}
	bucket, max, ttl, replicas := DefaultApprovalBucket, policy.DefaultMaxApprovals, DefaultApprovalsTTL, 1
	nonEmpty(&bucket, o.Bucket)
	positive(&max, o.Max)
	positive(&ttl, o.TTL)
	positive(&replicas, o.Replicas)
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("natstool: approvals: %w", err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:       bucket,
		Description:  "clawtool approval requests",
		History:      1,
		TTL:          ttl,
		MaxValueSize: policy.MaxApprovalRecord,
		// A record, its digest key and their headers, twice over: the
		// hard bound, whatever the clients do.
		MaxBytes: int64(max) * 2 * (policy.MaxApprovalRecord + 512),
		Storage:  jetstream.FileStorage,
		Replicas: replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("natstool: approvals: bucket %s: %w", bucket, err)
	}
	stream, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return nil, fmt.Errorf("natstool: approvals: bucket %s: %w", bucket, err)
	}
	return &Approvals{js: js, kv: kv, stream: stream, bucket: bucket, max: max, ttl: ttl}, nil
}

const (
	recordPrefix = "r."
	digestPrefix = "d."
	casTries     = 8 // compare-and-swap attempts before giving up
)

func digestKey(digest string) string {
	sum := sha256.Sum256([]byte(digest))
	return digestPrefix + hex.EncodeToString(sum[:])
}

func (s *Approvals) failed(err error) error {
	return fmt.Errorf("approvals: NATS bucket %s: %w", s.bucket, err)
}

func (s *Approvals) corrupt(key, why string) error {
	return fmt.Errorf("approvals: NATS bucket %s, key %s: %w: %s (delete the key to start afresh; its request is then lost)", s.bucket, key, policy.ErrApprovalStoreCorrupt, why)
}

// checkID refuses what is not an approval id (24 lowercase hex digits),
// before it is used in a key.
func checkID(id string) error {
	ok := len(id) == 24
	for _, c := range []byte(id) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			ok = false
		}
	}
	if !ok {
		shown := id
		if len(shown) > 40 {
			shown = shown[:40] + "…"
		}
		return fmt.Errorf("approval %q: %w (an id is 24 hexadecimal digits)", shown, policy.ErrUnknownApproval)
	}
	return nil
}

// decode reads the record kept under key.
func (s *Approvals) decode(key string, data []byte) (policy.ApprovalRecord, error) {
	var r policy.ApprovalRecord
	if len(data) > policy.MaxApprovalRecord {
		return r, s.corrupt(key, fmt.Sprintf("%d bytes, more than %d", len(data), policy.MaxApprovalRecord))
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, s.corrupt(key, err.Error())
	}
	switch {
	case recordPrefix+r.ID != key:
		return r, s.corrupt(key, "the record's id is not its key's")
	case r.State != policy.ApprovalPending && r.State != policy.ApprovalApproved && r.State != policy.ApprovalDenied:
		return r, s.corrupt(key, fmt.Sprintf("the state %q", r.State))
	case r.Digest == "" || r.Expires.IsZero():
		return r, s.corrupt(key, "no digest or no expiry")
	}
	return r, nil
}

// get returns the record id and its revision; found is false when the
// bucket has no such key.
func (s *Approvals) get(ctx context.Context, id string) (r policy.ApprovalRecord, rev uint64, found bool, err error) {
	e, err := s.kv.Get(ctx, recordPrefix+id)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return r, 0, false, nil
	}
	if err != nil {
		return r, 0, false, s.failed(err)
	}
	r, err = s.decode(recordPrefix+id, e.Value())
	return r, e.Revision(), err == nil, err
}

// lookup is Get's part that also returns the revision.
func (s *Approvals) lookup(ctx context.Context, id string, now time.Time) (policy.ApprovalRecord, uint64, error) {
	if err := checkID(id); err != nil {
		return policy.ApprovalRecord{}, 0, err
	}
	r, rev, found, err := s.get(ctx, id)
	if err != nil {
		return policy.ApprovalRecord{}, 0, err
	}
	if !found {
		return policy.ApprovalRecord{}, 0, fmt.Errorf("approval %s: %w", id, policy.ErrUnknownApproval)
	}
	if !now.Before(r.Expires) {
		return r, rev, fmt.Errorf("approval %s: %w", id, policy.ErrExpiredApproval)
	}
	return r, rev, nil
}

// Get implements [policy.ApprovalStore]. A used record is kept, marked
// used, until the bucket's TTL or a sweep for room removes it; an
// expired one is reported expired until then.
func (s *Approvals) Get(ctx context.Context, id string, now time.Time) (policy.ApprovalRecord, error) {
	r, _, err := s.lookup(ctx, id, now)
	return r, err
}

// entry is one key of the bucket as a scan found it.
type entry struct {
	key string
	rev uint64
	rec policy.ApprovalRecord
	id  string // of a digest key: the request it names
}

// scan reads every key of the bucket, bounded: more keys than the
// bucket can hold make it fail.
func (s *Approvals) scan(ctx context.Context) ([]entry, error) {
	w, err := s.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, s.failed(err)
	}
	defer w.Stop()
	limit := 4*s.max + 16
	var out []entry
	for {
		select {
		case <-ctx.Done():
			return nil, s.failed(ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, s.failed(errors.New("the watch ended early"))
			}
			if e == nil {
				return out, nil
			}
			if len(out) == limit {
				return nil, s.corrupt(e.Key(), fmt.Sprintf("more than %d keys", limit))
			}
			switch k := e.Key(); {
			case strings.HasPrefix(k, recordPrefix):
				r, err := s.decode(k, e.Value())
				if err != nil {
					return nil, err
				}
				out = append(out, entry{key: k, rev: e.Revision(), rec: r})
			case strings.HasPrefix(k, digestPrefix):
				out = append(out, entry{key: k, rev: e.Revision(), id: string(e.Value())})
			default:
				return nil, s.corrupt(k, "a key that is neither a record nor a digest")
			}
		}
	}
}

// Pending implements [policy.ApprovalStore].
func (s *Approvals) Pending(ctx context.Context, now time.Time) ([]policy.ApprovalRecord, error) {
	es, err := s.scan(ctx)
	if err != nil {
		return nil, err
	}
	var out []policy.ApprovalRecord
	for _, e := range es {
		if e.key[:2] == recordPrefix && e.rec.State == policy.ApprovalPending && now.Before(e.rec.Expires) {
			out = append(out, e.rec)
		}
	}
	sortRecords(out)
	return out, nil
}

// sortRecords sorts records oldest first.
func sortRecords(out []policy.ApprovalRecord) {
	slices.SortFunc(out, func(a, b policy.ApprovalRecord) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// purge removes key's revisions up to rev, and none after: a key changed
// since it was judged stays as it is now.
func (s *Approvals) purge(ctx context.Context, key string, rev uint64) error {
	return s.stream.Purge(ctx, jetstream.WithPurgeSubject("$KV."+s.bucket+"."+key), jetstream.WithPurgeSequence(rev+1))
}

// room makes sure a new request may be kept: fewer than max live
// requests (pending, or answered and unused or claimed and not done, and
// unexpired). It purges
// used and expired records, and digest keys naming none, when the bucket
// holds enough keys that it might be full.
func (s *Approvals) room(ctx context.Context, now time.Time) error {
	st, err := s.kv.Status(ctx)
	if err != nil {
		return s.failed(err)
	}
	if st.Values() < uint64(2*s.max) { // a record and its digest key each
		return nil
	}
	es, err := s.scan(ctx)
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, e := range es {
		if e.id == "" && (e.rec.Used.IsZero() || claimOpen(e.rec)) && now.Before(e.rec.Expires) {
			live[e.rec.ID] = true
		}
	}
	for _, e := range es {
		if (e.id == "" && !live[e.rec.ID]) || (e.id != "" && !live[e.id]) {
			if err := s.purge(ctx, e.key, e.rev); err != nil {
				return s.failed(err)
			}
		}
	}
	if len(live) >= s.max {
		return fmt.Errorf("approvals: %w (%d kept in NATS bucket %s)", policy.ErrApprovalStoreFull, s.max, s.bucket)
	}
	return nil
}

// Put implements [policy.ApprovalStore]. It keeps rec.Args whole (at
// most [policy.MaxApprovalArgs] bytes) and rec.Preview.
func (s *Approvals) Put(ctx context.Context, rec policy.ApprovalRecord, now time.Time) (policy.ApprovalRecord, error) {
	if err := checkID(rec.ID); err != nil {
		return policy.ApprovalRecord{}, err
	}
	if err := policy.CheckApprovalArgs(rec.Args); err != nil {
		return policy.ApprovalRecord{}, err
	}
	rec.State = policy.ApprovalPending
	data, err := json.Marshal(rec)
	if err != nil || len(data) > policy.MaxApprovalRecord {
		return policy.ApprovalRecord{}, fmt.Errorf("approvals: a request of %d bytes: %w (at most %d)", len(data), policy.ErrApprovalTooLarge, policy.MaxApprovalRecord)
	}
	dkey := digestKey(rec.Digest)
	for range casTries {
		// The request already waiting for this call, if any.
		var drev uint64
		e, err := s.kv.Get(ctx, dkey)
		switch {
		case err == nil:
			drev = e.Revision()
			id := string(e.Value())
			if checkID(id) != nil {
				return policy.ApprovalRecord{}, s.corrupt(dkey, "not an approval id")
			}
			r, _, found, err := s.get(ctx, id)
			if err != nil {
				return policy.ApprovalRecord{}, err
			}
			if found && r.State == policy.ApprovalPending && now.Before(r.Expires) {
				return r, nil
			}
		case !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted):
			return policy.ApprovalRecord{}, s.failed(err)
		}
		if err := s.room(ctx, now); err != nil {
			return policy.ApprovalRecord{}, err
		}
		if _, err := s.kv.Create(ctx, recordPrefix+rec.ID, data); err != nil {
			if errors.Is(err, jetstream.ErrKeyExists) {
				return policy.ApprovalRecord{}, fmt.Errorf("approvals: %s is taken", rec.ID)
			}
			return policy.ApprovalRecord{}, s.full(err)
		}
		if drev == 0 {
			_, err = s.kv.Create(ctx, dkey, []byte(rec.ID))
		} else {
			_, err = s.kv.Update(ctx, dkey, []byte(rec.ID), drev)
		}
		if err == nil {
			return rec, nil
		}
		// Another request for this call was made meanwhile, or the digest
		// key could not be written: this one goes.
		if perr := s.kv.Purge(context.WithoutCancel(ctx), recordPrefix+rec.ID); perr != nil {
			return policy.ApprovalRecord{}, s.failed(perr)
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return policy.ApprovalRecord{}, s.full(err)
		}
	}
	return policy.ApprovalRecord{}, s.failed(errors.New("too many requests racing for one call"))
}

// full maps the server's refusal of a write over the bucket's bounds to
// [policy.ErrApprovalStoreFull].
func (s *Approvals) full(err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && strings.Contains(apiErr.Description, "maximum") {
		return fmt.Errorf("approvals: %w (NATS bucket %s: %s)", policy.ErrApprovalStoreFull, s.bucket, apiErr.Description)
	}
	return s.failed(err)
}

// Answer implements [policy.ApprovalStore].
func (s *Approvals) Answer(ctx context.Context, id string, ans policy.ApprovalAnswer, now time.Time) (policy.ApprovalRecord, error) {
	for range casTries {
		r, rev, err := s.lookup(ctx, id, now)
		if err != nil {
			return r, err
		}
		if len(ans.Note) > policy.MaxApprovalNote {
			return r, fmt.Errorf("approval %s: the note is %d bytes, more than %d: %w", id, len(ans.Note), policy.MaxApprovalNote, policy.ErrApprovalTooLarge)
		}
		if r.State != policy.ApprovalPending {
			return r, fmt.Errorf("approval %s: %w (%s by %s)", id, policy.ErrApprovalAnswered, r.State, r.AnsweredBy)
		}
		r.State = policy.ApprovalDenied
		if ans.Approved {
			r.State = policy.ApprovalApproved
		}
		r.AnsweredBy, r.Note, r.Answered, r.Expires = ans.By, ans.Note, now, now.Add(r.TTL)
		r.Answerer, r.Seal = ans.Answerer, ans.Seal // judged and checked again when the answer is used
		data, err := json.Marshal(r)
		if err != nil || len(data) > policy.MaxApprovalRecord {
			return r, fmt.Errorf("approval %s: the answered record is %d bytes: %w (at most %d)", id, len(data), policy.ErrApprovalTooLarge, policy.MaxApprovalRecord)
		}
		_, err = s.kv.Update(ctx, recordPrefix+id, data, rev)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return r, s.failed(err)
		}
		// Another answer came first: the next lookup says whose.
	}
	return policy.ApprovalRecord{}, s.failed(errors.New("too many answers racing for one request"))
}

// Consume implements [policy.ApprovalStore]. The used record stays,
// marked used, so that Get can tell who answered it.
func (s *Approvals) Consume(ctx context.Context, digest string, now time.Time) (policy.ApprovalRecord, bool, error) {
	return s.use(ctx, digest, nil, now)
}

// use marks the answer for digest used, and claimed by who when who is
// not nil, under compare-and-swap.
func (s *Approvals) use(ctx context.Context, digest string, who *policy.ApprovalClaim, now time.Time) (policy.ApprovalRecord, bool, error) {
	dkey := digestKey(digest)
	for range casTries {
		e, err := s.kv.Get(ctx, dkey)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return policy.ApprovalRecord{}, false, nil
		}
		if err != nil {
			return policy.ApprovalRecord{}, false, s.failed(err)
		}
		id := string(e.Value())
		if checkID(id) != nil {
			return policy.ApprovalRecord{}, false, s.corrupt(dkey, "not an approval id")
		}
		r, rev, found, err := s.get(ctx, id)
		if err != nil {
			return policy.ApprovalRecord{}, false, err
		}
		if !found || r.Digest != digest {
			if found {
				return policy.ApprovalRecord{}, false, s.corrupt(dkey, "names a request for another call")
			}
			return policy.ApprovalRecord{}, false, nil
		}
		if r.State == policy.ApprovalPending || !r.Used.IsZero() || !now.Before(r.Expires) {
			return policy.ApprovalRecord{}, false, nil
		}
		r.Used = now
		if who != nil {
			c := *who
			r.Claim = &c
			if r.State == policy.ApprovalApproved {
				r.Expires = now.Add(s.claimKeep())
			} else {
				r.Done = now // a denial runs nothing
			}
		}
		data, err := json.Marshal(r)
		if err != nil {
			return policy.ApprovalRecord{}, false, s.failed(err)
		}
		_, err = s.kv.Update(ctx, recordPrefix+id, data, rev)
		if err == nil {
			return r, true, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return policy.ApprovalRecord{}, false, s.failed(err)
		}
		// Another worker used it first: the next look finds it used.
	}
	return policy.ApprovalRecord{}, false, s.failed(errors.New("too many workers racing for one answer"))
}

// claimKeep is how long a claimed answer is kept: [policy.ApprovalClaimKeep],
// or the bucket's TTL when that is shorter (the bucket drops a key its
// TTL after its last change, whatever the record says).
func (s *Approvals) claimKeep() time.Duration {
	return min(policy.ApprovalClaimKeep, s.ttl)
}

// claimOpen reports whether r's answer is claimed and its call not
// recorded as run.
func claimOpen(r policy.ApprovalRecord) bool {
	return r.Claim != nil && !r.Used.IsZero() && r.Done.IsZero()
}

// update changes the record id with f under compare-and-swap, reading
// it again when another change came first. f returns false to leave the
// record as it is.
func (s *Approvals) update(ctx context.Context, id string, now time.Time, f func(r *policy.ApprovalRecord) (bool, error)) (policy.ApprovalRecord, error) {
	for range casTries {
		r, rev, err := s.lookup(ctx, id, now)
		if err != nil {
			return r, err
		}
		was := r
		change, err := f(&r)
		if err != nil || !change {
			return was, err
		}
		data, err := json.Marshal(r)
		if err != nil || len(data) > policy.MaxApprovalRecord {
			return was, fmt.Errorf("approval %s: the changed record is %d bytes: %w (at most %d)", id, len(data), policy.ErrApprovalTooLarge, policy.MaxApprovalRecord)
		}
		_, err = s.kv.Update(ctx, recordPrefix+id, data, rev)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return was, s.failed(err)
		}
	}
	return policy.ApprovalRecord{}, s.failed(errors.New("too many changes racing on one request"))
}

// Claim implements [policy.ApprovalClaimer]. The claimed record is kept
// until Complete, or for [policy.ApprovalClaimKeep] after the claim,
// at most for the bucket's TTL ([ApprovalsOptions.TTL]): the bucket
// drops a key that long after its last change, and an interrupted
// claim is then lost as an answer used by Consume would be.
func (s *Approvals) Claim(ctx context.Context, digest string, who policy.ApprovalClaim, now time.Time) (policy.ApprovalRecord, bool, error) {
	return s.use(ctx, digest, &who, now)
}

// Complete implements [policy.ApprovalClaimer]. The record then stays,
// done, until the answer's TTL after the claim, as a used record does.
func (s *Approvals) Complete(ctx context.Context, id string, now time.Time) error {
	_, err := s.update(ctx, id, now, func(r *policy.ApprovalRecord) (bool, error) {
		if !claimOpen(*r) {
			return false, nil
		}
		r.Done = now
		r.Expires = r.Used.Add(r.TTL)
		return true, nil
	})
	return err
}

// Claimed implements [policy.ApprovalClaimer].
func (s *Approvals) Claimed(ctx context.Context, now time.Time) ([]policy.ApprovalRecord, error) {
	es, err := s.scan(ctx)
	if err != nil {
		return nil, err
	}
	var out []policy.ApprovalRecord
	for _, e := range es {
		if e.id == "" && claimOpen(e.rec) && now.Before(e.rec.Expires) {
			out = append(out, e.rec)
		}
	}
	sortRecords(out)
	return out, nil
}

// Rearm implements [policy.ApprovalClaimer]. Whether the claim is
// interrupted is decided on the revision the new answer replaces, so of
// two people answering at once one is kept and the other gets
// [policy.ErrApprovalAnswered]. The call's digest key then names the
// re-armed request again (a request made for the call after the crash
// stays pending, as in [policy.FileApprovalStore]).
func (s *Approvals) Rearm(ctx context.Context, id string, ans policy.ApprovalAnswer, now time.Time) (policy.ApprovalRecord, error) {
	if len(ans.Note) > policy.MaxApprovalNote {
		return policy.ApprovalRecord{}, fmt.Errorf("approval %s: the note is %d bytes, more than %d: %w", id, len(ans.Note), policy.MaxApprovalNote, policy.ErrApprovalTooLarge)
	}
	r, err := s.update(ctx, id, now, func(r *policy.ApprovalRecord) (bool, error) {
		if !r.Interrupted() {
			return false, fmt.Errorf("approval %s: %w (%s by %s, and not interrupted)", id, policy.ErrApprovalAnswered, r.State, r.AnsweredBy)
		}
		r.Used, r.Claim, r.Done = time.Time{}, nil, time.Time{}
		r.State = policy.ApprovalDenied
		if ans.Approved {
			r.State = policy.ApprovalApproved
		}
		r.AnsweredBy, r.Note, r.Answered, r.Expires = ans.By, ans.Note, now, now.Add(r.TTL)
		r.Answerer, r.Seal = ans.Answerer, ans.Seal // judged and checked again when the answer is used
		r.Interrupts++
		return true, nil
	})
	if err != nil {
		return r, err
	}
	dkey := digestKey(r.Digest)
	for range casTries {
		e, err := s.kv.Get(ctx, dkey)
		switch {
		case err == nil && string(e.Value()) == id:
			return r, nil
		case err == nil:
			_, err = s.kv.Update(ctx, dkey, []byte(id), e.Revision())
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
			_, err = s.kv.Create(ctx, dkey, []byte(id))
		default:
			return r, s.failed(err)
		}
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
			return r, s.failed(err)
		}
	}
	return r, s.failed(errors.New("too many requests racing for one call"))
}
