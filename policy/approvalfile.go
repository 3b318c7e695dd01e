package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/miniopenclaw/tool/internal/regularfile"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/miniopenclaw/tool/internal/atomicfile"
	"github.com/miniopenclaw/tool/internal/fileowner"
	"github.com/miniopenclaw/tool/internal/statedir"
)

// DefaultMaxApprovals is how many records a [FileApprovalStore] keeps
// unless its Max says otherwise.
const DefaultMaxApprovals = 512

// approvalFileVersion is the version of the store file's layout.
const approvalFileVersion = 1

// A FileApprovalStore is an [ApprovalStore] in a directory, shared by
// the processes of one machine: every method takes an exclusive lock
// (flock) on the file approvals.lock in Dir for its whole
// read-modify-write of approvals.json, which is written to a temporary
// file in Dir, synced and renamed over the old one, so a reader sees the
// store before or after a change, never half of one, and a crash leaves
// one or the other. Dir is made with mode 0700; one that other users
// may write is refused. It keeps at most Max records (pending, answered
// and not yet used, or used and not yet expired; used ones are dropped
// first when a new request needs room), each of at most
// [MaxApprovalRecord] bytes, with the whole arguments (see
// [ApprovalRecord.Args]; records written before it kept them have their
// preview only, and still work). A store file that cannot be read as one
// (not JSON, another version, a record without a valid id, two records
// with one id, larger than Max records could be) makes every method
// return an error wrapping [ErrApprovalStoreCorrupt] that names the file:
// the store refuses rather than guesses. A method waits for the lock
// until its context ends, and then fails. It works on Unix only; elsewhere
// every method returns an error.
type FileApprovalStore struct {
	// Dir is the directory of the store; see [DefaultApprovalDir].
	Dir string
	// Max bounds the records kept; 0 means [DefaultMaxApprovals].
	Max int
}

// DefaultApprovalDir returns the directory approvals are kept in by
// default: on Linux and the BSDs clawtool/approvals under
// $XDG_STATE_HOME, or ~/.local/state when that is not set; on macOS and
// Windows clawtool/approvals under [os.UserConfigDir].
func DefaultApprovalDir() (string, error) {
	d, err := statedir.Dir("approvals")
	if err != nil {
		return "", fmt.Errorf("approvals: %w", err)
	}
	return d, nil
}

// approvalFile is the layout of approvals.json.
type approvalFile struct {
	Version int              `json:"version"`
	Records []ApprovalRecord `json:"records"`
}

func (s *FileApprovalStore) max() int {
	if s.Max > 0 {
		return s.Max
	}
	return DefaultMaxApprovals
}

// File returns the file that holds the records.
func (s *FileApprovalStore) File() string { return filepath.Join(s.Dir, "approvals.json") }

// with runs f on the records under the lock, waiting for it until ctx
// ends; when f reports a change, the records are written back.
func (s *FileApprovalStore) with(ctx context.Context, now time.Time, f func(recs *[]ApprovalRecord) (bool, error)) error {
	if s.Dir == "" {
		return errors.New("approvals: the store has no directory")
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	fi, err := os.Lstat(s.Dir)
	if err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("approvals: %s is not a directory only its owner may write (chmod 700 it)", s.Dir)
	}
	if uid, other := fileowner.Other(fi); other {
		return fmt.Errorf("approvals: %s belongs to another user (uid %d), who could write answers into it; use a directory of your own", s.Dir, uid)
	}
	unlock, err := lockFile(ctx, filepath.Join(s.Dir, "approvals.lock"))
	if err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	defer unlock()
	recs, err := s.read()
	if err != nil {
		return err
	}
	// f sees the expired records, to tell an expired id from an unknown
	// one; they are then dropped.
	changed, err := f(&recs)
	n := len(recs)
	recs = deleteExpired(recs, now)
	if changed || len(recs) != n {
		if werr := s.write(recs); werr != nil {
			return werr
		}
	}
	return err
}

func deleteExpired(recs []ApprovalRecord, now time.Time) []ApprovalRecord {
	out := recs[:0]
	for _, r := range recs {
		if now.Before(r.Expires) {
			out = append(out, r)
		}
	}
	return out
}

func (s *FileApprovalStore) corrupt(why string) error {
	return fmt.Errorf("approvals: %s: %w: %s (move it away to start afresh; its requests are then lost)", s.File(), ErrApprovalStoreCorrupt, why)
}

func (s *FileApprovalStore) read() ([]ApprovalRecord, error) {
	fi, err := os.Lstat(s.File())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, s.corrupt("not a regular file")
	}
	f, _, err := regularfile.Open(s.File()) // judged as opened too
	if regularfile.IsNotRegular(err) {
		return nil, s.corrupt("not a regular file")
	}
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	defer f.Close()
	limit := int64(s.max())*(MaxApprovalRecord+1) + 64
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, s.corrupt(fmt.Sprintf("larger than %d records could be", s.max()))
	}
	var file approvalFile
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, s.corrupt(err.Error())
	}
	if file.Version != approvalFileVersion {
		return nil, s.corrupt(fmt.Sprintf("version %d, not %d", file.Version, approvalFileVersion))
	}
	if len(file.Records) > s.max() {
		return nil, s.corrupt(fmt.Sprintf("%d records, more than %d", len(file.Records), s.max()))
	}
	seen := make(map[string]bool, len(file.Records))
	for _, r := range file.Records {
		if !validApprovalID(r.ID) || seen[r.ID] {
			return nil, s.corrupt(fmt.Sprintf("a record has the id %q, invalid or twice", printable(r.ID)))
		}
		switch r.State {
		case ApprovalPending, ApprovalApproved, ApprovalDenied:
		default:
			return nil, s.corrupt(fmt.Sprintf("record %s has the state %q", r.ID, r.State))
		}
		if r.Digest == "" {
			return nil, s.corrupt(fmt.Sprintf("record %s has no digest", r.ID))
		}
		seen[r.ID] = true
	}
	return file.Records, nil
}

func (s *FileApprovalStore) write(recs []ApprovalRecord) error {
	if recs == nil {
		recs = []ApprovalRecord{}
	}
	data, err := json.Marshal(approvalFile{Version: approvalFileVersion, Records: recs})
	if err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	if err := atomicfile.WriteSynced(s.File(), data); err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	return nil
}

// Put implements [ApprovalStore]. It keeps rec.Args whole (at most
// [MaxApprovalArgs] bytes) and rec.Preview.
func (s *FileApprovalStore) Put(ctx context.Context, rec ApprovalRecord, now time.Time) (ApprovalRecord, error) {
	if err := checkApprovalID(rec.ID); err != nil {
		return ApprovalRecord{}, err
	}
	if err := CheckApprovalArgs(rec.Args); err != nil {
		return ApprovalRecord{}, err
	}
	rec.State = ApprovalPending
	if b, err := json.Marshal(rec); err != nil || len(b) > MaxApprovalRecord {
		return ApprovalRecord{}, fmt.Errorf("approvals: a request of %d bytes: %w (at most %d)", len(b), ErrApprovalTooLarge, MaxApprovalRecord)
	}
	out := rec
	err := s.with(ctx, now, func(recs *[]ApprovalRecord) (bool, error) {
		live := 0
		for _, r := range *recs {
			if r.ID == rec.ID {
				return false, fmt.Errorf("approvals: %s is taken", rec.ID)
			}
			if !now.Before(r.Expires) {
				continue
			}
			live++
			if r.State == ApprovalPending && r.Digest == rec.Digest {
				out = r
				return false, nil
			}
		}
		if live >= s.max() {
			// Used records are kept only to tell who answered them: they
			// make room before a request is refused. A claimed answer
			// whose call did not end is kept for a person to see.
			kept := (*recs)[:0]
			for _, r := range *recs {
				if (r.Used.IsZero() || claimOpen(r)) && now.Before(r.Expires) {
					kept = append(kept, r)
				}
			}
			live, *recs = len(kept), kept
		}
		if live >= s.max() {
			return false, fmt.Errorf("approvals: %w (%d kept in %s)", ErrApprovalStoreFull, s.max(), s.Dir)
		}
		*recs = append(*recs, rec)
		return true, nil // also when only used records were dropped
	})
	if err != nil {
		return ApprovalRecord{}, err
	}
	return out, nil
}

// find returns the index of id in recs, or Get's error.
func find(recs []ApprovalRecord, id string, now time.Time) (int, error) {
	for i, r := range recs {
		if r.ID == id {
			if !now.Before(r.Expires) {
				return i, fmt.Errorf("approval %s: %w", id, ErrExpiredApproval)
			}
			return i, nil
		}
	}
	return -1, fmt.Errorf("approval %s: %w", id, ErrUnknownApproval)
}

// Get implements [ApprovalStore]. An expired record is dropped on the
// first use of the store after it expired: its id is then unknown.
func (s *FileApprovalStore) Get(ctx context.Context, id string, now time.Time) (ApprovalRecord, error) {
	if err := checkApprovalID(id); err != nil {
		return ApprovalRecord{}, err
	}
	var out ApprovalRecord
	err := s.with(ctx, now, func(recs *[]ApprovalRecord) (bool, error) {
		i, err := find(*recs, id, now)
		if i >= 0 {
			out = (*recs)[i]
		}
		return false, err
	})
	return out, err
}

// Pending implements [ApprovalStore].
func (s *FileApprovalStore) Pending(ctx context.Context, now time.Time) ([]ApprovalRecord, error) {
	return s.list(ctx, now, func(r ApprovalRecord) bool { return r.State == ApprovalPending })
}

// list returns the records not expired at now that keep selects, sorted.
func (s *FileApprovalStore) list(ctx context.Context, now time.Time, keep func(ApprovalRecord) bool) ([]ApprovalRecord, error) {
	var out []ApprovalRecord
	err := s.with(ctx, now, func(recs *[]ApprovalRecord) (bool, error) {
		for _, r := range *recs {
			if keep(r) && now.Before(r.Expires) {
				out = append(out, r)
			}
		}
		return false, nil
	})
	sortRecords(out)
	return out, err
}

// Answer implements [ApprovalStore].
func (s *FileApprovalStore) Answer(ctx context.Context, id string, ans ApprovalAnswer, now time.Time) (ApprovalRecord, error) {
	return s.change(ctx, id, now, func(r *ApprovalRecord) error { return answerRecord(r, ans, now) })
}

// change applies f to the record id under the store's lock and saves it
// when f succeeds; f leaves the record as it was when it fails. It returns
// the record as it then is (as it was, on an error about the record).
func (s *FileApprovalStore) change(ctx context.Context, id string, now time.Time, f func(*ApprovalRecord) error) (ApprovalRecord, error) {
	if err := checkApprovalID(id); err != nil {
		return ApprovalRecord{}, err
	}
	var out ApprovalRecord
	err := s.with(ctx, now, func(recs *[]ApprovalRecord) (bool, error) {
		i, err := find(*recs, id, now)
		if i >= 0 {
			out = (*recs)[i]
		}
		if err != nil {
			return false, err
		}
		r := &(*recs)[i]
		if err := f(r); err != nil {
			return false, err
		}
		out = *r
		return true, nil
	})
	return out, err
}

// Consume implements [ApprovalStore]. A used record stays, marked used,
// until it expires or its room is needed for a new request, so that Get
// can tell who answered it.
func (s *FileApprovalStore) Consume(ctx context.Context, digest string, now time.Time) (ApprovalRecord, bool, error) {
	return s.use(ctx, digest, now, func(r *ApprovalRecord) { r.Used = now })
}

// use applies f to the unused, unexpired answer for digest under the
// store's lock and saves it; found is false when there is none.
func (s *FileApprovalStore) use(ctx context.Context, digest string, now time.Time, f func(*ApprovalRecord)) (ApprovalRecord, bool, error) {
	var out ApprovalRecord
	var found bool
	err := s.with(ctx, now, func(recs *[]ApprovalRecord) (bool, error) {
		for i := range *recs {
			r := &(*recs)[i]
			if r.Digest == digest && r.State != ApprovalPending && r.Used.IsZero() && now.Before(r.Expires) {
				f(r)
				out, found = *r, true
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return ApprovalRecord{}, false, err
	}
	return out, found, nil
}

// claimOpen reports whether r's answer is claimed and its call not
// recorded as run.
func claimOpen(r ApprovalRecord) bool {
	return r.Claim != nil && !r.Used.IsZero() && r.Done.IsZero()
}

// Claim implements [ApprovalClaimer]. The claimed record is kept until
// Complete, or for [ApprovalClaimKeep] after the claim.
func (s *FileApprovalStore) Claim(ctx context.Context, digest string, who ApprovalClaim, now time.Time) (ApprovalRecord, bool, error) {
	return s.use(ctx, digest, now, func(r *ApprovalRecord) {
		c := who
		r.Used, r.Claim = now, &c
		if r.State == ApprovalApproved {
			r.Expires = now.Add(ApprovalClaimKeep)
		} else {
			r.Done = now // a denial runs nothing
		}
	})
}

// Complete implements [ApprovalClaimer]. The record then stays, done,
// until the answer's TTL after the claim, as a used record does.
func (s *FileApprovalStore) Complete(ctx context.Context, id string, now time.Time) error {
	return s.with(ctx, now, func(recs *[]ApprovalRecord) (bool, error) {
		i, err := find(*recs, id, now)
		if err != nil {
			return false, err
		}
		r := &(*recs)[i]
		if !claimOpen(*r) {
			return false, nil
		}
		r.Done = now
		r.Expires = r.Used.Add(r.TTL)
		return true, nil
	})
}

// Claimed implements [ApprovalClaimer].
func (s *FileApprovalStore) Claimed(ctx context.Context, now time.Time) ([]ApprovalRecord, error) {
	return s.list(ctx, now, claimOpen)
}

// Rearm implements [ApprovalClaimer]. Whether the claim is interrupted
// is decided under the store's lock, so two people answering at once end
// with one answer.
func (s *FileApprovalStore) Rearm(ctx context.Context, id string, ans ApprovalAnswer, now time.Time) (ApprovalRecord, error) {
	return s.change(ctx, id, now, func(r *ApprovalRecord) error {
		if !r.Interrupted() {
			return fmt.Errorf("approval %s: %w (%s by %s, and not interrupted)", id, ErrApprovalAnswered, r.State, r.AnsweredBy)
		}
		again := *r
		again.State, again.Used, again.Claim, again.Done = ApprovalPending, time.Time{}, nil, time.Time{}
		if err := answerRecord(&again, ans, now); err != nil {
			return err
		}
		again.Interrupts++
		*r = again
		return nil
	})
}
