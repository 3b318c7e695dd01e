package policy

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// An ApprovalClaim says which process used an answer: the call it let
// run is that process's to run. A claim is completed ([ApprovalRecord.Done])
// once the call has run; a claim whose process is gone without it is
// interrupted (see [ApprovalRecord.Interrupted]).
type ApprovalClaim struct {
	// Host is the name of the machine, PID the process id and Start when
	// the process started (on Linux the boot id and the start time in
	// clock ticks, which tell a process from a later one given the same
	// id; "" where it cannot be read).
	Host  string `json:"host"`
	PID   int    `json:"pid"`
	Start string `json:"start,omitempty"`
}

// An ApprovalClaimer is an [ApprovalStore] that keeps an approval
// through a crash of the process that used it: the [Authorizer] then
// uses answers with Claim instead of Consume, records with Complete that
// the call ran, and lets a person answer an interrupted claim again
// (Rearm). [FileApprovalStore] is one, and so is natstool's Approvals.
// Exactly once across a crash cannot be promised: a process killed
// after it used an answer may have run the call or not, and only the
// tool's world knows which. So the store never runs it again by itself;
// it shows the claim as interrupted, and a person who checked decides.
type ApprovalClaimer interface {
	ApprovalStore
	// Claim is Consume that also records who used the answer. The used
	// record is kept, claimed, until Complete, or for
	// [ApprovalClaimKeep] when its process dies first. A denied answer
	// is complete when it is used.
	Claim(ctx context.Context, digest string, who ApprovalClaim, now time.Time) (ApprovalRecord, bool, error)
	// Complete records that the call whose answer id was claimed ran.
	Complete(ctx context.Context, id string, now time.Time) error
	// Claimed returns the records whose answer was claimed and whose
	// call has not been recorded as run, oldest first.
	Claimed(ctx context.Context, now time.Time) ([]ApprovalRecord, error)
	// Rearm answers again the request id whose claim is interrupted (see
	// [ApprovalRecord.Interrupted]), as Answer answers a pending one: the
	// claim is cleared and the new answer may be used once. It returns an
	// error wrapping [ErrApprovalAnswered] for a record that is not
	// interrupted (its process may still run the call).
	Rearm(ctx context.Context, id string, ans ApprovalAnswer, now time.Time) (ApprovalRecord, error)
}

// ApprovalClaimKeep is how long an [ApprovalClaimer] keeps a claimed
// answer whose call was not recorded as run, for a person to see it
// interrupted and answer again.
const ApprovalClaimKeep = 7 * 24 * time.Hour

// Interrupted reports whether r's answer was claimed by a process that
// is gone, on this machine, without recording that the call ran: the
// call may or may not have run. A claim made on another machine, or by
// a process that may still run, is not interrupted.
func (r ApprovalRecord) Interrupted() bool {
	if r.Claim == nil || r.Used.IsZero() || !r.Done.IsZero() {
		return false
	}
	host, err := os.Hostname()
	if err != nil || host != r.Claim.Host {
		return false
	}
	me := thisProcess()
	if r.Claim.PID == me.PID && r.Claim.Start == me.Start {
		return false
	}
	return processGone(*r.Claim)
}

var (
	selfOnce  sync.Once
	selfClaim ApprovalClaim
)

// thisProcess returns the claim of this process.
func thisProcess() ApprovalClaim {
	selfOnce.Do(func() {
		host, _ := os.Hostname()
		selfClaim = ApprovalClaim{Host: host, PID: os.Getpid(), Start: processStart(os.Getpid())}
	})
	return selfClaim
}

// consume uses the answer for digest: claimed, with a store that
// claims, and the claim remembered until the call's outcome completes
// it; consumed otherwise.
func (a *Authorizer) consume(ctx context.Context, digest string, now time.Time) (ApprovalRecord, bool, error) {
	c, ok := a.store.(ApprovalClaimer)
	if !ok {
		return a.store.Consume(ctx, digest, now)
	}
	rec, found, err := c.Claim(ctx, digest, thisProcess(), now)
	if err == nil && found && rec.State == ApprovalApproved {
		a.claims.add(digest, rec.ID)
	}
	return rec, found, err
}

// complete records that the call with digest ran, when its answer was
// claimed by this process.
func (a *Authorizer) complete(ctx context.Context, digest string) {
	id, ok := a.claims.take(digest)
	if !ok {
		return
	}
	if err := a.store.(ApprovalClaimer).Complete(ctx, id, a.now()); err != nil && a.logger != nil {
		a.logger.ErrorContext(ctx, "approval store failed to record that an approved call ran; it will show as interrupted once this process ends", "approval", id, "error", err)
	}
}

// claims are the answers this process claimed whose call has not ended.
type claims struct {
	n    atomic.Int64 // read without the lock, on every call's outcome
	mu   sync.Mutex
	byDg map[string][]string
}

func (c *claims) add(digest, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byDg == nil {
		c.byDg = map[string][]string{}
	}
	c.byDg[digest] = append(c.byDg[digest], id)
	c.n.Add(1)
}

func (c *claims) any() bool { return c.n.Load() > 0 }

func (c *claims) take(digest string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := c.byDg[digest]
	if len(ids) == 0 {
		return "", false
	}
	id := ids[0]
	if len(ids) == 1 {
		delete(c.byDg, digest)
	} else {
		c.byDg[digest] = ids[1:]
	}
	c.n.Add(-1)
	return id, true
}

// interruptedMessage says what an interrupted record means and how a
// person answers it again.
func interruptedMessage(r ApprovalRecord) string {
	return fmt.Sprintf("approval %s: interrupted: its answer (%s by %s) was used at %s by process %d on %s, which ended before recording that the call ran; the call may or may not have run. Check, then approve or deny it again (clawtool approvals approve %s) to let it run once more",
		r.ID, r.State, r.AnsweredBy, r.Used.UTC().Format("2006-01-02T15:04:05Z"), r.Claim.PID, r.Claim.Host, r.ID)
}
