package policy

import (
	"errors"
	"fmt"
	"io"
)

// MaxAuditStory bounds the records [AuditStory] returns.
const MaxAuditStory = 10_000

// ErrAuditStoryLong is wrapped by [AuditStory] when more than
// [MaxAuditStory] records belong to the story.
var ErrAuditStoryLong = errors.New("audit story too long")

// AuditStory reads an audit log, verifying its chain as [VerifyAudit]
// does, and returns the records that tell the story of one call, in the
// log's order. id is either an approval request's id (24 hex digits):
// the decision that asked, the decisions that used the person's answer
// (with who answered, when and the note), and the outcome that followed
// each decision the answer let run; or a call digest (64 hex digits):
// every decision and outcome of that call. A log that does not verify
// returns the error of [VerifyAudit] and the records read before it, so
// a story is never told from a broken chain without saying so.
func AuditStory(r io.Reader, id string) ([]AuditRecord, error) {
	byApproval := validApprovalID(id)
	if !byApproval && !lowerHex(id, 64) {
		return nil, fmt.Errorf("audit story: %.80q is neither an approval id (24 hex digits) nor a call digest (64)", id)
	}
	var story []AuditRecord
	ran := map[string]bool{} // call digests whose approved decision awaits its outcome
	var long bool
	keep := func(rec AuditRecord) {
		if len(story) == MaxAuditStory {
			long = true
			return
		}
		story = append(story, rec)
	}
	_, err := verifyAudit(r, func(rec AuditRecord) {
		switch {
		case !byApproval:
			if rec.CallDigest == id {
				keep(rec)
			}
		case rec.Approval == id:
			keep(rec)
			if rec.Event == "decision" && rec.Effect == Allow {
				ran[rec.CallDigest] = true
			}
		case rec.Event == "outcome" && ran[rec.CallDigest]:
			keep(rec)
			delete(ran, rec.CallDigest)
		}
	})
	if err != nil {
		return story, err
	}
	if long {
		return story, fmt.Errorf("audit story of %s: %w: more than %d records", id, ErrAuditStoryLong, MaxAuditStory)
	}
	return story, nil
}
