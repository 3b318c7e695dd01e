package policy

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/miniopenclaw/tool/internal/regularfile"
	"hash"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HeaderPrincipalSignature is the message header a [HeaderSigner] adds
// next to [HeaderPrincipal]: "v2 k=KEYID t=MILLIS n=NONCE s=MAC", where
// KEYID names the key the MAC is made with (see [SignerKey]), MILLIS is
// the issue time in Unix milliseconds, NONCE 16 random bytes and MAC the
// HMAC-SHA256, both in unpadded base64url. The MAC covers the key id, the
// principal header's exact value (empty when the call carries none), the
// call's subject and reply subject, the SHA-256 of its body, the issue
// time and the nonce, so that a signed claim is only ever good for the
// call it was made for, and only under the key it names.
//
// A call that gives headers to cover ([SignedCall].Headers) is signed in
// the form "v3 k=KEYID t=MILLIS n=NONCE s=MAC", whose MAC covers those
// headers' values too, under another domain label: a verifier that
// relies on such headers takes only a v3 signature over the values it
// got, and refuses the v2 and v1 forms of an older signer, which cover
// none (see [HeaderSigner.FromHeaders]).
//
// The earlier form "v1 t=MILLIS n=NONCE s=MAC" (no key id, a MAC over the
// same fields less the key id, under another domain label) is still
// verified, and only by a verifier that holds exactly one key: with
// several, a signature must name its key.
const HeaderPrincipalSignature = "Clawtool-Principal-Signature"

// MinSignerKeyBytes is the least length of a [HeaderSigner]'s key.
const MinSignerKeyBytes = 32

// MaxSignerKeyID is the longest key id ([SignerKey.ID]).
const MaxSignerKeyID = 64

// Defaults of [HeaderSignerOptions].
const (
	// DefaultSignatureMaxAge is how old a signature may be.
	DefaultSignatureMaxAge = 2 * time.Minute
	// DefaultSignatureSkew is how far in the future a signature's issue
	// time may be (the signer's clock ahead of the verifier's).
	DefaultSignatureSkew = 30 * time.Second
	// DefaultSignatureNonces is how many nonces a verifier remembers.
	DefaultSignatureNonces = 1 << 16
)

// maxSignatureHeader bounds the signature header: the longest well-formed
// one (a 64-byte key id, a 20-digit time) is well under it.
const maxSignatureHeader = 256

// ErrPrincipalSignature is wrapped by every error of
// [HeaderSigner.FromHeaders]: the call's principal claim is missing its
// signature, or the signature is malformed, wrong, made with a key the
// verifier does not hold, expired, from the future, or already used.
var ErrPrincipalSignature = errors.New("principal claim refused")

// ErrNonceUsed is what a [NonceStore] returns (wrapped) for a nonce it
// already holds: the signature was already used.
var ErrNonceUsed = errors.New("the signature was already used: a signed call runs once")

// NonceStore remembers the nonces of the signatures verifiers took, so
// that a signed call runs once. [HeaderSigner] keeps one in memory by
// default, for itself alone; a store shared by every worker of a service
// (such as the JetStream bucket of natstool.OpenNonces) makes a signed
// call run once across all of them.
type NonceStore interface {
	// Claim records nonce as used until expires (a time at most the
	// verifier's MaxAge plus Skew after now, on the verifier's clock). It
	// returns nil only when nonce was not recorded before and now is:
	// an error wrapping [ErrNonceUsed] when it was, and any other error
	// when it cannot tell or cannot record it (a full store, a store out
	// of reach). The verifier refuses the call on every error. A nonce is
	// 22 characters of unpadded base64url (16 bytes). Claim is called
	// concurrently, and only for signatures whose MAC and age verified.
	Claim(ctx context.Context, nonce string, expires, now time.Time) error
}

// SignerKey is one key of a [HeaderSigner]'s keyring.
type SignerKey struct {
	// ID names the key in the signatures made with it: 1 to
	// [MaxSignerKeyID] characters of A-Z, a-z, 0-9, '-', '_' and '.'.
	// Empty means [KeyID] of the secret.
	ID string
	// Secret is the key: at least [MinSignerKeyBytes] bytes.
	Secret []byte
}

// KeyID returns the id a key has when none is given: the first 16
// characters (96 bits) of the unpadded base64url SHA-256 of a fixed label
// and the key. Signers and verifiers that read the same key file agree on
// it with nothing else configured. It tells nothing that a signature
// made with the key does not already: both let whoever sees them test a
// guessed key, which a key of 32 random bytes makes hopeless.
func KeyID(secret []byte) string {
	h := sha256.New()
	h.Write([]byte("clawtool principal key id\x00"))
	h.Write(secret)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))[:16]
}

// validKeyID reports whether id may name a key.
func validKeyID(id string) bool {
	if id == "" || len(id) > MaxSignerKeyID {
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

// SignedCall is what a principal claim is bound to besides the
// principal: the message it travels with.
type SignedCall struct {
	// Subject is the subject (or other name) the call is sent to: the
	// tool's.
	Subject string
	// Reply is the subject its result goes to ("" when none), so that a
	// replayed claim cannot have the result sent elsewhere.
	Reply string
	// Body is the call's request body (its arguments) as sent.
	Body []byte
	// Headers, when not nil, are message headers the signature covers
	// besides the claim, by name, with their values as sent: headers
	// the receiver acts on (a durable task's expiry). A name with no
	// values is absent, and a header covered must be as signed, present
	// or absent. The signer and the verifier give the same names: the
	// signer the values it sends, the verifier those it received. A
	// signature over headers is the v3 form; with Headers nil, v2.
	Headers map[string][]string
}

// HeaderSignerOptions configure a [HeaderSigner]. A nil
// *HeaderSignerOptions, and every zero field, means the default.
type HeaderSignerOptions struct {
	// KeyID names the signer's key (the one [NewHeaderSigner] is given)
	// in its signatures ([KeyID] of the key when empty); see
	// [SignerKey.ID] for the characters it may have.
	KeyID string
	// AcceptKeys are the keys [HeaderSigner.FromHeaders] verifies with
	// besides the signer's own, each under its id: the keyring that lets
	// keys be rotated without stopping anything (every verifier accepts
	// the new key, then every signer signs with it, then the old one is
	// dropped). Signatures are only ever made with the signer's key. No
	// two keys may have the same id.
	AcceptKeys []SignerKey
	// MaxAge is how old a signature [HeaderSigner.FromHeaders] takes may
	// be ([DefaultSignatureMaxAge]).
	MaxAge time.Duration
	// Skew is how far ahead of the verifier's clock a signature's issue
	// time may be ([DefaultSignatureSkew]).
	Skew time.Duration
	// MaxNonces bounds the nonces remembered in memory to refuse a
	// signature used twice ([DefaultSignatureNonces]). While that many
	// unexpired ones are remembered, new calls are refused (fail closed)
	// until some expire. Not used with Nonces.
	MaxNonces int
	// Nonces, when set, is where the nonces are remembered instead of
	// this signer's memory: a store shared by every worker of a service
	// makes a signed call run once across them all.
	Nonces NonceStore
	// Repeats, when set, takes the same signature more than once: no
	// nonce is remembered. For the claims of durable jobs, whose message
	// is delivered again after its worker dies, and whose job record
	// stops a run of a job already done; never for calls.
	Repeats bool
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// HeaderSigner signs principal claims with a key shared by the processes
// that send calls and those that decide them, and verifies them with a
// keyring: its own key and those of [HeaderSignerOptions.AcceptKeys],
// each found by the key id a signature names. It is safe for concurrent
// use. Verification records the nonce of each signature it takes in its
// [NonceStore] until the signature expires, and refuses one recorded
// before: the same signed call delivered twice to verifiers sharing a
// store runs once. The default store is this signer's memory; verifiers
// in other processes then keep their own.
type HeaderSigner struct {
	key, keyID     []byte
	keys           map[string][]byte // key id -> key, the signer's own included
	maxAge, skew   time.Duration
	repeats        bool
	now            func() time.Time
	nonces         NonceStore
	randRead       func([]byte) (int, error)
	encodedMACSize int
}

// NewHeaderSigner returns a signer with key, which must be at least
// [MinSignerKeyBytes] long, as must every key of o.AcceptKeys. Keys are
// copied.
func NewHeaderSigner(key []byte, o *HeaderSignerOptions) (*HeaderSigner, error) {
	var opt HeaderSignerOptions
	if o != nil {
		opt = *o
	}
	s := &HeaderSigner{maxAge: DefaultSignatureMaxAge, skew: DefaultSignatureSkew, now: time.Now, randRead: rand.Read,
		keys: map[string][]byte{}, encodedMACSize: base64.RawURLEncoding.EncodedLen(sha256.Size)}
	for i, k := range append([]SignerKey{{ID: opt.KeyID, Secret: key}}, opt.AcceptKeys...) {
		what := "principal signing key"
		if i > 0 {
			what = fmt.Sprintf("accepted key %d", i)
		}
		if len(k.Secret) < MinSignerKeyBytes {
			return nil, fmt.Errorf("%s: %d bytes, want at least %d", what, len(k.Secret), MinSignerKeyBytes)
		}
		id := k.ID
		if id == "" {
			id = KeyID(k.Secret)
		}
		if !validKeyID(id) {
			return nil, fmt.Errorf("%s: key id %q: want 1 to %d of A-Z, a-z, 0-9, '-', '_', '.'", what, id, MaxSignerKeyID)
		}
		if _, dup := s.keys[id]; dup {
			return nil, fmt.Errorf("%s: key id %s given twice (the same key twice?)", what, id)
		}
		s.keys[id] = bytes.Clone(k.Secret)
		if i == 0 {
			s.key, s.keyID = s.keys[id], []byte(id)
		}
	}
	if opt.MaxAge > 0 {
		s.maxAge = opt.MaxAge
	}
	if opt.Skew > 0 {
		s.skew = opt.Skew
	}
	if opt.Now != nil {
		s.now = opt.Now
	}
	s.repeats = opt.Repeats
	s.nonces = opt.Nonces
	if s.nonces == nil {
		maxNonces := DefaultSignatureNonces
		if opt.MaxNonces > 0 {
			maxNonces = opt.MaxNonces
		}
		s.nonces = &memoryNonces{max: maxNonces, prune: s.maxAge / 4, nonces: map[string]time.Time{}}
	}
	return s, nil
}

// KeyID returns the id of the key s signs with.
func (s *HeaderSigner) KeyID() string { return string(s.keyID) }

// Headers returns the headers that carry the principal ctx carries
// (as [Headers] writes them, none when it carries none or it is too
// large) and a signature of that claim bound to call, made with the
// signer's key and naming it. A call without a principal is signed too:
// it says the sender holds the key and claims no one. Nil only when no
// random nonce could be drawn.
func (s *HeaderSigner) Headers(ctx context.Context, call SignedCall) map[string][]string {
	h := Headers(ctx)
	claim := ""
	if h != nil {
		claim = h[HeaderPrincipal][0]
	} else {
		h = map[string][]string{}
	}
	var nonce [16]byte
	if _, err := s.randRead(nonce[:]); err != nil {
		return nil
	}
	t := s.now().UnixMilli()
	form, mac := "v2", macV2(s.key, s.keyID, claim, call, t, nonce[:])
	if call.Headers != nil {
		form, mac = "v3", macV3(s.key, s.keyID, claim, call, t, nonce[:])
	}
	h[HeaderPrincipalSignature] = []string{form + " k=" + string(s.keyID) + " t=" + strconv.FormatInt(t, 10) +
		" n=" + base64.RawURLEncoding.EncodeToString(nonce[:]) +
		" s=" + base64.RawURLEncoding.EncodeToString(mac)}
	return h
}

// macV2 is the HMAC-SHA256 under key of the key id, claim, call, issue
// time and nonce, each length-prefixed so that no two different tuples
// share an input.
func macV2(key, keyID []byte, claim string, call SignedCall, t int64, nonce []byte) []byte {
	m, field := macFields(key, "clawtool principal v2")
	field(keyID)
	callFields(field, claim, call, t, nonce)
	return m.Sum(nil)
}

// macV3 is macV2 over the headers the call covers too: each name that
// has values, in sorted order, with its number of values and each value.
func macV3(key, keyID []byte, claim string, call SignedCall, t int64, nonce []byte) []byte {
	m, field := macFields(key, "clawtool principal v3")
	field(keyID)
	callFields(field, claim, call, t, nonce)
	for _, name := range slices.Sorted(maps.Keys(call.Headers)) {
		vs := call.Headers[name]
		if len(vs) == 0 {
			continue // absent
		}
		field([]byte(name))
		field(strconv.AppendInt(nil, int64(len(vs)), 10))
		for _, v := range vs {
			field([]byte(v))
		}
	}
	return m.Sum(nil)
}

// macV1 is the MAC of the "v1" form, which names no key.
func macV1(key []byte, claim string, call SignedCall, t int64, nonce []byte) []byte {
	m, field := macFields(key, "clawtool principal v1")
	callFields(field, claim, call, t, nonce)
	return m.Sum(nil)
}

// macFields starts an HMAC-SHA256 under key with the domain label, and
// returns it with the function that writes one length-prefixed field.
func macFields(key []byte, label string) (hash.Hash, func([]byte)) {
	m := hmac.New(sha256.New, key)
	var n [8]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		m.Write(n[:])
		m.Write(b)
	}
	field([]byte(label))
	return m, field
}

// callFields writes the fields both forms sign.
func callFields(field func([]byte), claim string, call SignedCall, t int64, nonce []byte) {
	body := sha256.Sum256(call.Body)
	field([]byte(claim))
	field([]byte(call.Subject))
	field([]byte(call.Reply))
	field(body[:])
	field(strconv.AppendInt(nil, t, 10))
	field(nonce)
}

// FromHeaders verifies the signature in h for the principal claim in h
// and call, and returns ctx carrying the principal as [FromHeaders]
// restores it (ctx unchanged when h claims no principal). It refuses,
// with an error wrapping [ErrPrincipalSignature], a signature that is
// missing, repeated, malformed, made with a key id this signer does not
// hold or for another claim or call, in the key-less "v1" form while
// this signer holds more than one key, older than the maximum age, dated
// further ahead than the allowed skew, or whose nonce the signer's
// [NonceStore] already holds or cannot record (unless made with
// Repeats). The store is asked only once everything else verified.
//
// When call.Headers is not nil (the receiver acts on those headers), only
// a v3 signature over their values verifies: the v2 and v1 forms of an
// older signer cover no header, so any publisher who can resend the
// message could have changed them, and they are refused, saying so
// (upgrade the signers). A v3 signature is refused where call.Headers is
// nil: the verifier could not check what it covers.
func (s *HeaderSigner) FromHeaders(ctx context.Context, call SignedCall, h map[string][]string) (context.Context, error) {
	refuse := func(format string, a ...any) (context.Context, error) {
		return ctx, fmt.Errorf("%w: %s", ErrPrincipalSignature, fmt.Sprintf(format, a...))
	}
	sigs := h[HeaderPrincipalSignature]
	switch {
	case len(sigs) == 0:
		return refuse("header %s is missing: this worker decides only claims signed with its key", HeaderPrincipalSignature)
	case len(sigs) > 1:
		return refuse("header %s given %d times, want once", HeaderPrincipalSignature, len(sigs))
	case len(sigs[0]) > maxSignatureHeader:
		return refuse("header %s is %d bytes, more than %d", HeaderPrincipalSignature, len(sigs[0]), maxSignatureHeader)
	}
	claims := h[HeaderPrincipal]
	claim := ""
	switch {
	case len(claims) > 1:
		return refuse("header %s given %d times, want once", HeaderPrincipal, len(claims))
	case len(claims) == 1:
		claim = claims[0]
		if len(claim) > MaxPrincipalHeader {
			return refuse("header %s is %d bytes, more than %d", HeaderPrincipal, len(claim), MaxPrincipalHeader)
		}
	}
	sig, ok := s.parse(sigs[0])
	if !ok {
		return refuse(`header %s is malformed (want "v2 k=KEYID t=MILLIS n=NONCE s=MAC")`, HeaderPrincipalSignature)
	}
	switch {
	case call.Headers != nil && sig.form != "v3":
		return refuse("the signature (the %s form of an older signer) does not cover the headers %s, which this worker acts on: sign with a current clawtool", sig.form, strings.Join(slices.Sorted(maps.Keys(call.Headers)), ", "))
	case call.Headers == nil && sig.form == "v3":
		return refuse("the signature covers headers this worker was not told to check")
	}
	var want []byte
	if sig.form == "v1" {
		if len(s.keys) != 1 {
			return refuse("the signature names no key (the v1 form of an older signer) and this worker holds %d keys: sign with a current clawtool", len(s.keys))
		}
		want = macV1(s.key, claim, call, sig.t, sig.nonce)
	} else {
		key, known := s.keys[sig.keyID]
		if !known {
			return refuse("the signature is made with key id %s, which this worker does not hold", sig.keyID)
		}
		want = macV2(key, []byte(sig.keyID), claim, call, sig.t, sig.nonce)
		if sig.form == "v3" {
			want = macV3(key, []byte(sig.keyID), claim, call, sig.t, sig.nonce)
		}
	}
	if !hmac.Equal(sig.mac, want) {
		return refuse("the signature does not match the claim and the call (another key, or the claim, tool, arguments or covered headers changed)")
	}
	now := s.now()
	issued := time.UnixMilli(sig.t)
	if issued.After(now.Add(s.skew)) {
		return refuse("the signature is dated %s ahead, more than the %s of clock skew allowed", issued.Sub(now).Round(time.Millisecond), s.skew)
	}
	if now.Sub(issued) > s.maxAge {
		return refuse("the signature is %s old, more than the %s allowed", now.Sub(issued).Round(time.Millisecond), s.maxAge)
	}
	if !s.repeats {
		if err := s.nonces.Claim(ctx, base64.RawURLEncoding.EncodeToString(sig.nonce), issued.Add(s.maxAge), now); err != nil {
			return refuse("%v", err)
		}
	}
	if len(claims) == 0 {
		return ctx, nil
	}
	return FromHeaders(ctx, map[string][]string{HeaderPrincipal: claims})
}

// signature is a parsed signature header.
type signature struct {
	form       string // "v1", "v2" or "v3"
	keyID      string
	t          int64
	nonce, mac []byte
}

// parse splits a signature header; ok is false unless it is exactly
// "v2 k=KEYID t=MILLIS n=NONCE s=MAC" (or the same with "v3", or "v1
// t=MILLIS n=NONCE s=MAC") with a valid key id, a 16-byte nonce and a
// 32-byte MAC.
func (s *HeaderSigner) parse(v string) (sig signature, ok bool) {
	f := strings.Split(v, " ")
	switch {
	case len(f) == 5 && (f[0] == "v2" || f[0] == "v3"):
		id, ok := strings.CutPrefix(f[1], "k=")
		if !ok || !validKeyID(id) {
			return sig, false
		}
		sig.form, sig.keyID, f = f[0], id, f[2:]
	case len(f) == 4 && f[0] == "v1":
		sig.form, f = "v1", f[1:]
	default:
		return sig, false
	}
	ts, ok1 := strings.CutPrefix(f[0], "t=")
	ns, ok2 := strings.CutPrefix(f[1], "n=")
	ms, ok3 := strings.CutPrefix(f[2], "s=")
	if !ok1 || !ok2 || !ok3 || ts == "" || ts[0] == '+' || ts[0] == '-' {
		return sig, false
	}
	var err error
	if sig.t, err = strconv.ParseInt(ts, 10, 64); err != nil {
		return sig, false
	}
	sig.nonce, err = base64.RawURLEncoding.Strict().DecodeString(ns)
	if err != nil || len(sig.nonce) != 16 {
		return sig, false
	}
	if len(ms) != s.encodedMACSize {
		return sig, false
	}
	sig.mac, err = base64.RawURLEncoding.Strict().DecodeString(ms)
	if err != nil || len(sig.mac) != sha256.Size {
		return sig, false
	}
	return sig, true
}

// memoryNonces is the default [NonceStore]: one signer's memory, bounded
// to max unexpired nonces.
type memoryNonces struct {
	max       int
	prune     time.Duration // how often expired nonces are dropped
	mu        sync.Mutex
	nonces    map[string]time.Time // nonce -> when it may be forgotten
	nextPrune time.Time
}

// Claim records nonce until expires, and fails when it is already
// recorded or when the memory is full of unexpired nonces.
func (m *memoryNonces) Claim(_ context.Context, nonce string, expires, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if until, seen := m.nonces[nonce]; seen && now.Before(until) {
		return ErrNonceUsed
	}
	if len(m.nonces) >= m.max || now.After(m.nextPrune) {
		for n, until := range m.nonces {
			if !now.Before(until) {
				delete(m.nonces, n)
			}
		}
		m.nextPrune = now.Add(m.prune)
	}
	if len(m.nonces) >= m.max {
		return fmt.Errorf("more than %d signed calls within the signatures' age: try again later", m.max)
	}
	m.nonces[nonce] = expires
	return nil
}

// MaxSignerKeyFileBytes bounds a key file [ReadSignerKeyFile] reads.
const MaxSignerKeyFileBytes = 4 << 10

// ReadSignerKeyFile reads the shared key of a [HeaderSigner] from the
// file name: its bytes, less one trailing newline ("\n" or "\r\n"), at
// least [MinSignerKeyBytes] of them. It refuses a file that is not a
// regular file, longer than [MaxSignerKeyFileBytes], that users other
// than its owner may read or write (mode & 0o077), or whose owner is
// neither this process's (effective) user nor root (on systems without
// Unix owners, every file): anyone who can read the key can sign any
// principal, and the file's owner can read or replace it.
func ReadSignerKeyFile(name string) ([]byte, error) {
	// Opened without waiting on a named pipe, and judged as opened.
	f, fi, err := regularfile.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return nil, fmt.Errorf("%s may be read or written by other users (mode %04o): chmod 600 %s", name, m, name)
	}
	if err := checkKeyOwner(name, fi); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSignerKeyFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSignerKeyFileBytes {
		return nil, fmt.Errorf("%s: longer than %d bytes: not a key file", name, MaxSignerKeyFileBytes)
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	data = bytes.TrimSuffix(data, []byte("\r"))
	if len(data) < MinSignerKeyBytes {
		return nil, fmt.Errorf("%s: %d bytes, want at least %d (e.g. head -c 32 /dev/urandom | base64 > %s)", name, len(data), MinSignerKeyBytes, name)
	}
	return data, nil
}
