package policy

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MinApprovalKeyBytes is the shortest key [WithApprovalKey] takes.
const MinApprovalKeyBytes = MinSignerKeyBytes

// WithApprovalKey makes the Authorizer seal every answer it keeps
// ([Authorizer.Answer], [Authorizer.Grant], an [Approver]'s) with an
// HMAC-SHA256 under key, and use an approval only when its seal verifies
// under key or one of accept (keys being rotated in or out): a store
// others may write (a NATS bucket any account with access to its
// subjects writes, unlike a file store's 0700 directory) held answers
// anyone could write, approving any request waiting there. The seal
// ([ApprovalRecord.Seal]) covers the request's id, digest, principal and
// tool, the answer (state, who, the answerer as judged, when) and the
// TTL, so it cannot be moved to another request or call, nor made to
// last longer; an approved answer without a seal that verifies is
// withdrawn when used, saying why, and the call asks anew. A key shorter
// than [MinApprovalKeyBytes] refuses every approval. Whoever may write
// the store can still delete answers, and mark a used one unused so that
// its call may run again before the answer expires: give its write
// access to the processes that hold the key.
func WithApprovalKey(key []byte, accept ...[]byte) Option {
	keys := append([][]byte{key}, accept...)
	return func(a *Authorizer) {
		a.approvalKeys = nil
		for _, k := range keys {
			a.approvalKeys = append(a.approvalKeys, append([]byte(nil), k...))
		}
	}
}

// sealVersion starts every seal.
const sealVersion = "v1"

// sealOf returns the seal of the answer ans, given at now, to the
// request rec under key.
func sealOf(key []byte, rec ApprovalRecord, ans ApprovalAnswer, now time.Time) (string, error) {
	mac, err := sealMAC(key, rec, ans.Approved, ans.By, ans.Answerer, now, rec.TTL)
	if err != nil {
		return "", err
	}
	return sealVersion + " k=" + KeyID(key) + " s=" + base64.RawURLEncoding.EncodeToString(mac), nil
}

// sealMAC is the MAC a seal carries.
func sealMAC(key []byte, rec ApprovalRecord, approved bool, by string, who *ApprovalAnswerer, answered time.Time, ttl time.Duration) ([]byte, error) {
	answerer, err := json.Marshal(who)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, key)
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		m.Write(n[:])
		m.Write([]byte(s))
	}
	field("clawtool approval answer " + sealVersion)
	field(rec.ID)
	field(rec.Digest)
	field(rec.Principal)
	field(rec.Tool)
	field(fmt.Sprint(approved))
	field(by)
	field(string(answerer))
	field(fmt.Sprint(answered.UnixNano()))
	field(fmt.Sprint(int64(ttl)))
	return m.Sum(nil), nil
}

// seal sets ans.Seal for an answer to rec given at now, when a holds
// approval keys.
func (a *Authorizer) seal(rec ApprovalRecord, ans *ApprovalAnswer, now time.Time) error {
	if len(a.approvalKeys) == 0 {
		return nil
	}
	if len(a.approvalKeys[0]) < MinApprovalKeyBytes {
		return fmt.Errorf("the approvals key is %d bytes, fewer than %d", len(a.approvalKeys[0]), MinApprovalKeyBytes)
	}
	s, err := sealOf(a.approvalKeys[0], rec, *ans, now)
	ans.Seal = s
	return err
}

// checkSeal returns nil when a holds no approval keys, or when the
// approved rec's seal verifies under one of them and its answer has not
// outlived its TTL; else why not.
func (a *Authorizer) checkSeal(rec ApprovalRecord, now time.Time) error {
	if len(a.approvalKeys) == 0 {
		return nil
	}
	if rec.Seal == "" {
		return errors.New("the answer carries no seal, and this process takes only answers sealed with the approvals key: it was written by one that does not hold the key")
	}
	rest, ok := strings.CutPrefix(rec.Seal, sealVersion+" k=")
	kid, sig, ok2 := strings.Cut(rest, " s=")
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if !ok || !ok2 || err != nil || len(mac) != sha256.Size {
		return fmt.Errorf("the answer's seal %q is malformed", printable(rec.Seal))
	}
	for _, k := range a.approvalKeys {
		if len(k) < MinApprovalKeyBytes || KeyID(k) != kid {
			continue
		}
		want, err := sealMAC(k, rec, rec.State == ApprovalApproved, rec.AnsweredBy, rec.Answerer, rec.Answered, rec.TTL)
		if err != nil {
			return fmt.Errorf("the answer's seal cannot be checked: %v", err)
		}
		if !hmac.Equal(mac, want) {
			return errors.New("the answer's seal does not match it: the record was changed by one that does not hold the approvals key")
		}
		if !now.Before(rec.Answered.Add(rec.TTL)) {
			return errors.New("the answer is older than its TTL")
		}
		return nil
	}
	return fmt.Errorf("the answer is sealed with key %q, which this process does not hold", printable(kid))
}

// requestMAC is the MAC a request's seal carries.
func requestMAC(key []byte, r ApprovalRecord) ([]byte, error) {
	an, err := json.Marshal(r.Annotations)
	if err != nil {
		return nil, err
	}
	pol, err := json.Marshal(r.Policies)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, key)
	for _, s := range []string{"clawtool approval request " + sealVersion, r.ID, r.Principal, r.Tool, string(an), r.Digest,
		r.Preview, string(r.Args), string(pol), r.Reason, fmt.Sprint(r.Created.UnixNano()), fmt.Sprint(int64(r.TTL))} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		m.Write(n[:])
		m.Write([]byte(s))
	}
	return m.Sum(nil), nil
}

// sealRequest sets r.RequestSeal when a holds approval keys.
func (a *Authorizer) sealRequest(r *ApprovalRecord) error {
	if len(a.approvalKeys) == 0 {
		return nil
	}
	if len(a.approvalKeys[0]) < MinApprovalKeyBytes {
		return fmt.Errorf("the approvals key is %d bytes, fewer than %d", len(a.approvalKeys[0]), MinApprovalKeyBytes)
	}
	mac, err := requestMAC(a.approvalKeys[0], *r)
	if err != nil {
		return err
	}
	r.RequestSeal = sealVersion + " k=" + KeyID(a.approvalKeys[0]) + " s=" + base64.RawURLEncoding.EncodeToString(mac)
	return nil
}

// VerifyRequest returns nil when a holds no approval keys (see
// [WithApprovalKey]), or when rec's request seal verifies under one of
// them: what rec shows of the call (principal, tool, arguments, reason…)
// is what was asked. Else it says why not: a store others may write
// held a request whose arguments shown were not the call's.
func (a *Authorizer) VerifyRequest(rec ApprovalRecord) error {
	if len(a.approvalKeys) == 0 {
		return nil
	}
	return VerifyApprovalRequest(rec, a.approvalKeys...)
}

// VerifyApprovalRequest returns nil when rec's request seal verifies
// under one of keys (see [WithApprovalKey]), and else why not; with no
// keys, an error. It is what a display holding the key checks before a
// person reads a request.
func VerifyApprovalRequest(rec ApprovalRecord, keys ...[]byte) error {
	if len(keys) == 0 {
		return errors.New("no approvals key to check the request's seal with")
	}
	if rec.RequestSeal == "" {
		return errors.New("the request carries no seal, and this process takes only requests sealed with the approvals key: it was written by one that does not hold the key")
	}
	rest, ok := strings.CutPrefix(rec.RequestSeal, sealVersion+" k=")
	kid, sig, ok2 := strings.Cut(rest, " s=")
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if !ok || !ok2 || err != nil || len(mac) != sha256.Size {
		return fmt.Errorf("the request's seal %q is malformed", printable(rec.RequestSeal))
	}
	for _, k := range keys {
		if len(k) < MinApprovalKeyBytes || KeyID(k) != kid {
			continue
		}
		want, err := requestMAC(k, rec)
		if err != nil {
			return fmt.Errorf("the request's seal cannot be checked: %v", err)
		}
		if !hmac.Equal(mac, want) {
			return errors.New("the request's seal does not match it: what it shows (arguments, principal, tool, reason) was changed by one that does not hold the approvals key")
		}
		return nil
	}
	return fmt.Errorf("the request is sealed with key %q, which this process does not hold", printable(kid))
}
