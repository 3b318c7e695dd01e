package policy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/miniopenclaw/tool"
)

// An ApprovalState is where an approval request stands.
type ApprovalState string

// The states of an approval request. A request is made pending, is
// answered once (approved or denied), and its answer is used once.
const (
	ApprovalPending  ApprovalState = "pending"
	ApprovalApproved ApprovalState = "approved"
	ApprovalDenied   ApprovalState = "denied"
)

// An ApprovalRecord is one approval request as an [ApprovalStore] keeps
// it: the call it is for, who asked and why, and its answer.
type ApprovalRecord struct {
	// ID names the request: 24 lowercase hexadecimal digits.
	ID    string        `json:"id"`
	State ApprovalState `json:"state"`
	// Principal and Tool are who asked to call what; Annotations are the
	// tool's, which the policies deciding who may approve read.
	Principal   string           `json:"principal"`
	Tool        string           `json:"tool"`
	Annotations tool.Annotations `json:"annotations"`
	// Digest binds the request to the call (see [Decision.Digest]): the
	// answer is used by exactly the call with this digest.
	Digest string `json:"digest"`
	// Preview is the call's canonical arguments as the person deciding
	// reads them, at most [MaxApprovalPreview] bytes: whole when they
	// fit; else every argument's name, each value whole or cut with the
	// count of bytes not shown ("…(+N bytes)"), and past as many names as
	// fit the count of those left out. It is for the person deciding; the
	// digest binds.
	Preview string `json:"preview"`
	// Args are the whole canonical arguments, at most [MaxApprovalArgs]
	// bytes, which every store keeps (written as base64), so that the
	// person deciding can read all of what the approval lets run
	// (clawtool approvals show --args, the inspector's ?args=1): the
	// preview cuts long values. A record written before stores kept them
	// has none: it is shown by its preview alone, and says so.
	Args []byte `json:"args,omitempty"`
	// Policies are the ids of the policies that asked, and Reason why
	// (the first asking policy's @reason, or a generic message).
	Policies []string `json:"policies"`
	Reason   string   `json:"reason"`
	// Created is when the request was made. Expires is when the request,
	// once answered when the answer, stops being valid: a request is
	// answered before Expires, and its answer then holds for TTL.
	Created time.Time     `json:"created"`
	Expires time.Time     `json:"expires"`
	TTL     time.Duration `json:"ttl"`
	// AnsweredBy, Note and Answered say who answered, what they said and
	// when; Used is when the answer was used (the call ran, or was told
	// it was denied), zero while it waits.
	AnsweredBy string    `json:"answered_by,omitempty"`
	Note       string    `json:"note,omitempty"`
	Answered   time.Time `json:"answered,omitzero"`
	Used       time.Time `json:"used,omitzero"`
	// Answerer is who answered as the policies judged them, for an
	// answer given through [Authorizer.Answer]: the answer is judged
	// again, under the policies then in force, when it is used. Nil for
	// the host's own answers ([Authorizer.Grant], an [Approver]'s) and
	// for a record answered before stores kept it, which is judged by
	// AnsweredBy alone (no roles, no attributes).
	Answerer *ApprovalAnswerer `json:"answerer,omitempty"`
	// Seal is the answer's MAC under the approvals key, made by an
	// Authorizer given [WithApprovalKey], which uses only answers whose
	// seal verifies; empty otherwise.
	Seal string `json:"seal,omitempty"`
	// RequestSeal is the request's MAC under the approvals key, made
	// when it was asked by an Authorizer given [WithApprovalKey], over
	// what a person reads of it (principal, tool, annotations, digest,
	// preview, arguments, policies, reason, created, TTL): such an
	// Authorizer answers only a request whose seal verifies, so that
	// what was shown is what was asked. Empty otherwise.
	RequestSeal string `json:"request_seal,omitempty"`
	// Claim is the process that used the answer, and Done when it
	// recorded that the call ran, in a store that claims (see
	// [ApprovalClaimer]); nil and zero otherwise. Interrupts counts how
	// often an interrupted claim was answered again ([ApprovalClaimer.Rearm]).
	Claim      *ApprovalClaim `json:"claim,omitempty"`
	Done       time.Time      `json:"done,omitzero"`
	Interrupts int            `json:"interrupts,omitempty"`
}

// An ApprovalAnswer is a person's answer to a request.
type ApprovalAnswer struct {
	Approved bool
	By       string // who answered
	Note     string // at most [MaxApprovalNote] bytes
	// Answerer is the principal who answered, as [Authorizer.Answer]
	// judged it; every store keeps it in [ApprovalRecord.Answerer].
	Answerer *ApprovalAnswerer
	// Seal is the answer's seal (see [WithApprovalKey]); every store
	// keeps it in [ApprovalRecord.Seal].
	Seal string
}

// An ApprovalAnswerer is the principal who answered an approval request
// as the policies judged it when it answered: its id, roles and
// attributes (see [Principal]), kept with the answer so that the answer
// is judged again when it is used. Its JSON form, with its attributes,
// is at most [MaxApprovalAnswerer] bytes.
type ApprovalAnswerer struct {
	ID    string         `json:"id"`
	Roles []string       `json:"roles,omitempty"`
	Attrs map[string]any `json:"attrs,omitempty"`
}

// UnmarshalJSON reads a kept answerer with its numbers as written
// (json.Number), so that an attribute is judged again as the whole
// number it was, not as a float64.
func (w *ApprovalAnswerer) UnmarshalJSON(data []byte) error {
	type plain ApprovalAnswerer
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*w = ApprovalAnswerer(p)
	return nil
}

// principal returns the answerer as a [Principal].
func (w *ApprovalAnswerer) principal() Principal {
	return Principal{ID: w.ID, Roles: w.Roles, Attrs: w.Attrs}
}

// Bounds of what an [ApprovalStore] keeps.
const (
	// MaxApprovalPreview bounds [ApprovalRecord.Preview].
	MaxApprovalPreview = 512
	// MaxApprovalNote bounds an answer's note.
	MaxApprovalNote = 1024
	// MaxApprovalArgs bounds [ApprovalRecord.Args]: a call whose
	// canonical arguments are longer is not put to a person (a store
	// refuses it with [ErrApprovalTooLarge], and the [Authorizer] denies
	// the call saying so), since no one could read all of what they
	// would approve.
	MaxApprovalArgs = 64 << 10
	// MaxApprovalAnswerer bounds [ApprovalRecord.Answerer] as JSON: a
	// principal whose roles and attributes are longer answers nothing,
	// since its answer could not be judged again when used.
	MaxApprovalAnswerer = 4096
	// MaxApprovalRecord bounds one record as a [FileApprovalStore] (and
	// natstool's store) writes it: the fields other than Args and
	// Answerer in 4 KiB, Answerer in [MaxApprovalAnswerer], and Args in
	// base64; a larger one is refused with [ErrApprovalTooLarge].
	MaxApprovalRecord = 4096 + MaxApprovalAnswerer + (MaxApprovalArgs+2)/3*4
)

// Errors of an [ApprovalStore]. [ErrUnknownApproval] and
// [ErrExpiredApproval] are also its errors.
var (
	ErrApprovalAnswered     = errors.New("approval request already answered")
	ErrApprovalStoreFull    = errors.New("too many approval requests are waiting")
	ErrApprovalTooLarge     = errors.New("approval request too large to keep")
	ErrApprovalStoreCorrupt = errors.New("approval store is corrupt")
)

// An ApprovalStore keeps approval requests until they are answered and
// their answers used. Every method takes the time now that decides
// expiry: a record whose Expires is not after now is gone. Each method
// is atomic, also between the processes that share a store when the
// store says so ([FileApprovalStore] does). An error other than the
// ones each method names means the store cannot be read or written: the
// caller must then refuse what it was doing (fail closed).
type ApprovalStore interface {
	// Put keeps rec as a pending request and returns it. When a pending,
	// unexpired request for the same Digest is kept, it returns that one
	// instead and keeps nothing new. It returns an error wrapping
	// [ErrApprovalStoreFull] when the store holds as many records as it
	// may, and [ErrApprovalTooLarge] for a record over its bound.
	Put(ctx context.Context, rec ApprovalRecord, now time.Time) (ApprovalRecord, error)
	// Get returns the record id. It returns an error wrapping
	// [ErrUnknownApproval] for an id that is not one of the store's (not
	// an id at all, never made, or gone) and [ErrExpiredApproval] for one
	// that expired.
	Get(ctx context.Context, id string, now time.Time) (ApprovalRecord, error)
	// Pending returns the pending, unexpired requests, oldest first.
	Pending(ctx context.Context, now time.Time) ([]ApprovalRecord, error)
	// Answer answers the pending request id, once: its State becomes
	// approved or denied, and its Expires now plus its TTL. It returns
	// the answered record; for a request already answered, an error
	// wrapping [ErrApprovalAnswered] with the record as it stands, and
	// Get's errors for an id it cannot answer.
	Answer(ctx context.Context, id string, ans ApprovalAnswer, now time.Time) (ApprovalRecord, error)
	// Consume uses the answer for the call with digest, once: it returns
	// the answered, unused, unexpired record for digest, marked used,
	// and true; false when there is none.
	Consume(ctx context.Context, digest string, now time.Time) (ApprovalRecord, bool, error)
}

// validApprovalID reports whether id has the form of an approval id:
// 24 lowercase hexadecimal digits.
func validApprovalID(id string) bool { return lowerHex(id, 24) }

// lowerHex reports whether s is n lowercase hexadecimal digits.
func lowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// checkApprovalID returns the error for an id that is not an approval id.
func checkApprovalID(id string) error {
	if !validApprovalID(id) {
		return fmt.Errorf("approval %q: %w (an id is 24 hexadecimal digits)", printable(id), ErrUnknownApproval)
	}
	return nil
}

// printable cuts and quotes-proofs an id for an error message.
func printable(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	if !utf8.ValidString(s) {
		return fmt.Sprintf("%x", s)
	}
	return s
}

// Preview returns what a person deciding reads of the canonical
// arguments args, as [ApprovalRecord.Preview] holds it (see preview).
func Preview(args []byte) string { return preview(args) }

// preview returns what a person deciding reads of args: the whole when
// it fits in MaxApprovalPreview bytes. A longer object shows every
// argument's name, in order, and each value whole or, when it is long,
// its start and how many bytes are not shown ("…(+N bytes)"): the
// budget goes first to the short values, then in equal shares to the
// long ones. A byte prefix of the canonical arguments, which sort their
// keys, hid every argument after a long one: write_file's path after its
// content, or anything after a padding field named "a…". Past as many
// names as fit, it says how many arguments it leaves out. Anything but
// an object is cut at the end, with the count.
func preview(args []byte) string {
	if len(args) <= MaxApprovalPreview {
		return string(args)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil || len(obj) == 0 {
		return cutShown(string(args), MaxApprovalPreview-len("…(+0000000000 bytes)"))
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	const maxKey = 64
	names := make([]string, len(keys))
	for i, k := range keys {
		kb, _ := json.Marshal(k)
		names[i] = cutShown(string(kb), maxKey) + ":"
	}
	budget := MaxApprovalPreview - len("{}") - len("…(+00000 more arguments)")
	// Each name shown keeps room for at least a cut value.
	const minVal = len("…(+0000000000 bytes)")
	shown := 0
	for shown < len(keys) && budget-len(names[shown])-len(",")-minVal >= 0 {
		budget -= len(names[shown]) + len(",") + minVal
		shown++
	}
	budget += shown * minVal
	// Water-fill the rest among the shown values.
	vals := make([]string, shown)
	long := []int{}
	for i := range shown {
		long = append(long, i)
	}
	for len(long) > 0 {
		share := budget / len(long)
		var still []int
		for _, i := range long {
			if v := obj[keys[i]]; len(v) <= share {
				vals[i] = string(v)
				budget -= len(v)
			} else {
				still = append(still, i)
			}
		}
		if len(still) == len(long) {
			for _, i := range still {
				vals[i] = cutShown(string(obj[keys[i]]), max(share, minVal)-minVal)
			}
			break
		}
		long = still
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := range shown {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(names[i])
		b.WriteString(vals[i])
	}
	if shown < len(keys) {
		fmt.Fprintf(&b, ",…(+%d more arguments)", len(keys)-shown)
	}
	b.WriteByte('}')
	return b.String()
}

// cutShown is s cut to at most n bytes on a character boundary, followed,
// when cut, by how many bytes are not shown.
func cutShown(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…(+%d bytes)", len(s)-cut)
}

// CheckApprovalArgs returns an error wrapping [ErrApprovalTooLarge] for
// arguments longer than [MaxApprovalArgs]: every [ApprovalStore]'s Put
// refuses such a record.
func CheckApprovalArgs(args []byte) error {
	if len(args) > MaxApprovalArgs {
		return fmt.Errorf("approvals: the call's arguments are %d bytes, more than the %d an approval request keeps whole for the person deciding (MaxApprovalArgs): %w", len(args), MaxApprovalArgs, ErrApprovalTooLarge)
	}
	return nil
}

// answerRecord applies ans to the pending r, in place.
func answerRecord(r *ApprovalRecord, ans ApprovalAnswer, now time.Time) error {
	if len(ans.Note) > MaxApprovalNote {
		return fmt.Errorf("approval %s: the note is %d bytes, more than %d: %w", r.ID, len(ans.Note), MaxApprovalNote, ErrApprovalTooLarge)
	}
	if r.State != ApprovalPending {
		return fmt.Errorf("approval %s: %w (%s by %s)", r.ID, ErrApprovalAnswered, r.State, r.AnsweredBy)
	}
	r.State = ApprovalDenied
	if ans.Approved {
		r.State = ApprovalApproved
	}
	r.AnsweredBy, r.Note, r.Answered = ans.By, ans.Note, now
	r.Answerer, r.Seal = ans.Answerer.clone(), ans.Seal
	r.Expires = now.Add(r.TTL)
	return nil
}

// clone returns a copy of w that shares nothing it may change.
func (w *ApprovalAnswerer) clone() *ApprovalAnswerer {
	if w == nil {
		return nil
	}
	c := *w
	c.Roles = slices.Clone(w.Roles)
	c.Attrs = maps.Clone(w.Attrs)
	return &c
}

// MaxMemoryApprovalBytes bounds the bytes of arguments a
// [MemoryApprovalStore] keeps in all: a thousand requests of
// [MaxApprovalArgs] each.
const MaxMemoryApprovalBytes = 1000 * MaxApprovalArgs

// MemoryApprovalStore is the [ApprovalStore] an [Authorizer] uses when
// none is given: it keeps records in memory, for one process, and loses
// them when the process ends. It keeps at most 10000 records, holding at
// most [MaxMemoryApprovalBytes] of arguments in all (10000 records of
// [MaxApprovalArgs] were 640 MiB); past either, Put refuses with
// [ErrApprovalStoreFull]. The zero value is not ready; use
// [NewMemoryApprovalStore].
type MemoryApprovalStore struct {
	mu       sync.Mutex
	byID     map[string]*ApprovalRecord
	pending  map[string]string // digest → id of its pending request
	answered map[string]string // digest → id of its unused answer
	max      int
	maxBytes int // of Args in all; 0: unbounded (the tests' control)
	bytes    int // of Args kept
}

// NewMemoryApprovalStore returns an empty in-memory store.
func NewMemoryApprovalStore() *MemoryApprovalStore {
	return &MemoryApprovalStore{byID: map[string]*ApprovalRecord{}, pending: map[string]string{}, answered: map[string]string{}, max: maxApprovals, maxBytes: MaxMemoryApprovalBytes}
}

func (s *MemoryApprovalStore) sweepLocked(now time.Time) {
	for id, r := range s.byID {
		if !now.Before(r.Expires) || !r.Used.IsZero() {
			s.removeLocked(id, r)
		}
	}
}

func (s *MemoryApprovalStore) removeLocked(id string, r *ApprovalRecord) {
	if _, ok := s.byID[id]; ok {
		s.bytes -= len(r.Args)
	}
	delete(s.byID, id)
	if s.pending[r.Digest] == id {
		delete(s.pending, r.Digest)
	}
	if s.answered[r.Digest] == id {
		delete(s.answered, r.Digest)
	}
}

// Put implements [ApprovalStore].
func (s *MemoryApprovalStore) Put(_ context.Context, rec ApprovalRecord, now time.Time) (ApprovalRecord, error) {
	if err := checkApprovalID(rec.ID); err != nil {
		return ApprovalRecord{}, err
	}
	if err := CheckApprovalArgs(rec.Args); err != nil {
		return ApprovalRecord{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.pending[rec.Digest]; ok {
		if r := s.byID[id]; now.Before(r.Expires) {
			return *r, nil
		}
	}
	over := func() bool { return s.maxBytes > 0 && s.bytes+len(rec.Args) > s.maxBytes }
	if len(s.byID) >= s.max || over() {
		s.sweepLocked(now)
		if len(s.byID) >= s.max {
			return ApprovalRecord{}, fmt.Errorf("%w (%d kept)", ErrApprovalStoreFull, s.max)
		}
		if over() {
			return ApprovalRecord{}, fmt.Errorf("%w (%d bytes of arguments kept, at most %d)", ErrApprovalStoreFull, s.bytes, s.maxBytes)
		}
	}
	if _, taken := s.byID[rec.ID]; taken {
		return ApprovalRecord{}, fmt.Errorf("approvals: %s is taken", rec.ID)
	}
	rec.State = ApprovalPending
	r := rec
	s.byID[rec.ID] = &r
	s.bytes += len(r.Args)
	s.pending[rec.Digest] = rec.ID
	return rec, nil
}

func (s *MemoryApprovalStore) getLocked(id string, now time.Time) (*ApprovalRecord, error) {
	if err := checkApprovalID(id); err != nil {
		return nil, err
	}
	r, ok := s.byID[id]
	if !ok {
		return nil, fmt.Errorf("approval %s: %w", id, ErrUnknownApproval)
	}
	if !now.Before(r.Expires) {
		s.removeLocked(id, r)
		return r, fmt.Errorf("approval %s: %w", id, ErrExpiredApproval)
	}
	return r, nil
}

// Get implements [ApprovalStore].
func (s *MemoryApprovalStore) Get(_ context.Context, id string, now time.Time) (ApprovalRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.getLocked(id, now)
	if r == nil {
		return ApprovalRecord{}, err
	}
	return *r, err
}

// Pending implements [ApprovalStore].
func (s *MemoryApprovalStore) Pending(_ context.Context, now time.Time) ([]ApprovalRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ApprovalRecord
	for _, id := range s.pending {
		if r := s.byID[id]; now.Before(r.Expires) {
			out = append(out, *r)
		}
	}
	sortRecords(out)
	return out, nil
}

// Answer implements [ApprovalStore].
func (s *MemoryApprovalStore) Answer(_ context.Context, id string, ans ApprovalAnswer, now time.Time) (ApprovalRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.getLocked(id, now)
	if err != nil {
		if r == nil {
			return ApprovalRecord{}, err
		}
		return *r, err
	}
	if err := answerRecord(r, ans, now); err != nil {
		return *r, err
	}
	delete(s.pending, r.Digest)
	s.answered[r.Digest] = id
	return *r, nil
}

// Consume implements [ApprovalStore].
func (s *MemoryApprovalStore) Consume(_ context.Context, digest string, now time.Time) (ApprovalRecord, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.answered[digest]
	if !ok {
		return ApprovalRecord{}, false, nil
	}
	r := s.byID[id]
	s.removeLocked(id, r)
	if !now.Before(r.Expires) {
		return ApprovalRecord{}, false, nil
	}
	r.Used = now
	return *r, true, nil
}

func sortRecords(rs []ApprovalRecord) {
	slices.SortFunc(rs, func(a, b ApprovalRecord) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}
