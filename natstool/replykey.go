package natstool

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miniopenclaw/tool/policy"
	"github.com/nats-io/nats.go"
)

// HeaderReplySignature carries a worker's signature of what it sends
// back: a call's result and progress reports, a job's progress reports.
// Its value is "v1 k=KEYID q=SEQ t=MILLIS s=MAC": KEYID names the key
// (policy.KeyID of the shared secret), SEQ a sequence number and MILLIS
// the signer's Unix milliseconds (each 0 when the message has none), MAC
// the HMAC-SHA256, unpadded base64url, under a key derived from the
// secret for this use alone, of the message's kind, SEQ, MILLIS and what
// the message is bound to (see [ReplyKey]).
const HeaderReplySignature = "Clawtool-Reply-Signature"

// ErrReplySignature is wrapped by the errors of a reply refused because
// it is not signed with a key the reader holds for that very message.
var ErrReplySignature = errors.New("reply not signed by a worker holding the key")

// Limits of a job's progress reports as a reader holding a key takes
// them: older than ProgressMaxAge, or dated more than ProgressSkew
// ahead of the reader's clock, a signed report is dropped.
const (
	ProgressMaxAge = 2 * time.Minute
	ProgressSkew   = 30 * time.Second
)

// maxReplySignature bounds the header a reader parses.
const maxReplySignature = 256

// A ReplyKey authenticates what workers send back to callers, with the
// secret shared by the callers and the workers (the principal key,
// --principal-key): a worker given one ([ServeOptions.ReplyKey],
// [JobsOptions.ReplyKey]) signs
//
//   - each call's result, bound to the call's subject, reply subject,
//     arguments and the result's bytes (for a large result, the object's);
//   - each call's progress report, bound to the reply subject and a
//     sequence number that grows within the call;
//   - each call's heartbeat, bound to the reply subject and the number
//     of the beat, which grows; and a busy reply, bound to the call's
//     subject and reply subject;
//   - each job's progress report, bound to its subject (which names the
//     job), and to the time it was sent.
//
// A reader given one ([ImportOptions.ReplyKey], and [Jobs.Wait] and
// [Jobs.VerifyProgress] of jobs opened with one) drops, and logs, every
// such message that is unsigned, signed with a key it does not hold, or
// for another message, so that a publisher who knows a call's inbox or a
// job's id can neither answer the call nor put words in its progress.
// Without a key nothing is authenticated: whoever can publish on those
// subjects can do both, and only the NATS server's permissions stop them.
type ReplyKey struct {
	id   string            // of the signing key
	keys map[string][]byte // key id -> derived key, the signer's included
}

// NewReplyKey returns a key that signs with the derived key of secret
// and verifies with it and with those of accept (keys being rotated).
// Each secret must be at least policy.MinSignerKeyBytes long.
func NewReplyKey(secret []byte, accept ...[]byte) (*ReplyKey, error) {
	k := &ReplyKey{keys: map[string][]byte{}}
	for i, s := range append([][]byte{secret}, accept...) {
		if len(s) < policy.MinSignerKeyBytes {
			return nil, fmt.Errorf("natstool: reply key %d: %d bytes, want at least %d", i, len(s), policy.MinSignerKeyBytes)
		}
		id := policy.KeyID(s)
		m := hmac.New(sha256.New, s)
		m.Write([]byte("clawtool reply signing key v1"))
		k.keys[id] = m.Sum(nil)
		if i == 0 {
			k.id = id
		}
	}
	return k, nil
}

// Kinds of signed replies: each has its own domain in the MAC.
const (
	signResult      = "result"
	signProgress    = "progress"
	signJobProgress = "job-progress"
	signDefinitions = "definitions"
	signJobRecord   = "job-record"
	signHeartbeat   = "heartbeat"
	signBusy        = "busy"
)

// endpointDef is what a service's signature covers of one endpoint.
type endpointDef struct{ name, subject, meta string }

// definitionFields are what a service's signature covers: its name and
// version, and each endpoint's name, subject and definition, in the
// order of their names.
func definitionFields(service, version string, eps []endpointDef) [][]byte {
	eps = slices.Clone(eps)
	slices.SortFunc(eps, func(a, b endpointDef) int { return strings.Compare(a.name, b.name) })
	f := make([][]byte, 0, 2+3*len(eps))
	f = append(f, []byte(service), []byte(version))
	for _, ep := range eps {
		f = append(f, []byte(ep.name), []byte(ep.subject), []byte(ep.meta))
	}
	return f
}

// mac is the HMAC under key of kind, seq, millis and fields, each
// length-prefixed.
func replyMAC(key []byte, kind string, seq, millis int64, fields ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	var n [8]byte
	put := func(h hash.Hash, b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	put(m, []byte(kind))
	binary.BigEndian.PutUint64(n[:], uint64(seq))
	m.Write(n[:])
	binary.BigEndian.PutUint64(n[:], uint64(millis))
	m.Write(n[:])
	for _, f := range fields {
		put(m, f)
	}
	return m.Sum(nil)
}

// digest is the SHA-256 of b, a field a MAC covers.
func digest(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// sign returns the header value that signs a message of kind with the
// key id (see keyFor).
func (k *ReplyKey) sign(id, kind string, seq, millis int64, fields ...[]byte) string {
	mac := replyMAC(k.keys[id], kind, seq, millis, fields...)
	return "v1 k=" + id + " q=" + strconv.FormatInt(seq, 10) + " t=" + strconv.FormatInt(millis, 10) +
		" s=" + base64.RawURLEncoding.EncodeToString(mac)
}

// maxSignatures bounds the signatures of one value signAll makes that
// verifyAny reads.
const maxSignatures = 8

// signAll returns the signatures of a message of kind with each key k
// holds (at most maxSignatures, the signing key's first), joined by
// ';': what a reader holding any one of the keys verifies (verifyAny),
// so that during a rotation a caller on the old key or the new one
// reads it.
func (k *ReplyKey) signAll(kind string, fields ...[]byte) string {
	ids := []string{k.id}
	for id := range k.keys {
		if id != k.id {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids[1:])
	sigs := make([]string, 0, min(len(ids), maxSignatures))
	for _, id := range ids[:min(len(ids), maxSignatures)] {
		sigs = append(sigs, k.sign(id, kind, 0, 0, fields...))
	}
	return strings.Join(sigs, ";")
}

// verifyAny verifies the signature, among those of v (signAll's), made
// with a key k holds; the first it holds decides.
func (k *ReplyKey) verifyAny(v, kind string, fields ...[]byte) error {
	parts := strings.SplitN(v, ";", maxSignatures+1)
	if len(parts) > maxSignatures {
		return fmt.Errorf("%w: more than %d signatures", ErrReplySignature, maxSignatures)
	}
	for _, p := range parts {
		id, _, _ := strings.Cut(strings.TrimPrefix(p, "v1 k="), " ")
		if _, held := k.keys[id]; held {
			_, _, err := k.verify(nats.Header{HeaderReplySignature: {p}}, kind, fields...)
			return err
		}
	}
	// None made with a key held: verify the first, for its error.
	var h nats.Header
	if v != "" {
		h = nats.Header{HeaderReplySignature: {parts[0]}}
	}
	_, _, err := k.verify(h, kind, fields...)
	return err
}

// keyFor returns the id of the key a reply to a request with headers h
// is signed with: the key its caller signed its principal claim with
// (policy.HeaderPrincipalSignature names it), when this key holds it,
// so that a caller still on the old key of a rotation (the worker
// accepting it) can read the reply; else the signing key.
func (k *ReplyKey) keyFor(h nats.Header) string {
	v := h.Get(policy.HeaderPrincipalSignature)
	if len(v) > maxReplySignature {
		return k.id
	}
	for _, f := range strings.Fields(v) {
		if id, ok := strings.CutPrefix(f, "k="); ok {
			if _, held := k.keys[id]; held {
				return id
			}
			break
		}
	}
	return k.id
}

// verify checks h's signature of a message of kind bound to fields, and
// returns its sequence number and time.
func (k *ReplyKey) verify(h nats.Header, kind string, fields ...[]byte) (seq, millis int64, err error) {
	vals := h.Values(HeaderReplySignature)
	if len(vals) != 1 {
		if len(vals) == 0 {
			return 0, 0, fmt.Errorf("%w: no %s header (a publisher other than a worker, or a worker without the key)", ErrReplySignature, HeaderReplySignature)
		}
		return 0, 0, fmt.Errorf("%w: %d %s headers", ErrReplySignature, len(vals), HeaderReplySignature)
	}
	v := vals[0]
	bad := func(why string) (int64, int64, error) {
		return 0, 0, fmt.Errorf("%w: %s", ErrReplySignature, why)
	}
	if len(v) > maxReplySignature {
		return bad("the signature header is too long")
	}
	f := strings.Fields(v)
	if len(f) != 5 || f[0] != "v1" || !strings.HasPrefix(f[1], "k=") || !strings.HasPrefix(f[2], "q=") ||
		!strings.HasPrefix(f[3], "t=") || !strings.HasPrefix(f[4], "s=") {
		return bad("the signature header is malformed")
	}
	key := k.keys[f[1][2:]]
	if key == nil {
		id := f[1][2:]
		if !validID(id) {
			return bad("signed with a key id that is not one")
		}
		return bad("signed with key id " + id + ", which this reader does not hold (the worker and this process hold different keys: give both the same --principal-key)")
	}
	seq, err1 := strconv.ParseInt(f[2][2:], 10, 64)
	millis, err2 := strconv.ParseInt(f[3][2:], 10, 64)
	got, err3 := base64.RawURLEncoding.DecodeString(f[4][2:])
	if err1 != nil || err2 != nil || err3 != nil || seq < 0 || millis < 0 {
		return bad("the signature header is malformed")
	}
	if !hmac.Equal(got, replyMAC(key, kind, seq, millis, fields...)) {
		return bad("the signature is not for this message (forged, or for another call)")
	}
	return seq, millis, nil
}

// validID reports whether id may be a key id (policy.SignerKey.ID):
// what an error may show of it.
func validID(id string) bool {
	if id == "" || len(id) > policy.MaxSignerKeyID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// signedHeader returns a header holding only the signature sig, and the
// kind, if any.
func signedHeader(kind, sig string) nats.Header {
	h := nats.Header{HeaderReplySignature: []string{sig}}
	if kind != "" {
		h[HeaderKind] = []string{kind}
	}
	return h
}

// resultFields are what a call's result is bound to.
func resultFields(subject, reply string, args, body []byte) [][]byte {
	return [][]byte{[]byte(subject), []byte(reply), digest(args), digest(body)}
}

// checkTime refuses a time outside [now-ProgressMaxAge, now+ProgressSkew].
func checkTime(millis int64, now time.Time) error {
	t := time.UnixMilli(millis)
	switch {
	case t.Before(now.Add(-ProgressMaxAge)):
		return fmt.Errorf("%w: the report is older than %s (replayed?)", ErrReplySignature, ProgressMaxAge)
	case t.After(now.Add(ProgressSkew)):
		return fmt.Errorf("%w: the report is dated more than %s ahead", ErrReplySignature, ProgressSkew)
	}
	return nil
}
