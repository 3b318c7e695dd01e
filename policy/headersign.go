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
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HeaderPrincipalSignature is the message header a [HeaderSigner] adds
// next to [HeaderPrincipal]: "v1 t=MILLIS n=NONCE s=MAC", where MILLIS is
// the issue time in Unix milliseconds, NONCE 16 random bytes and MAC the
// HMAC-SHA256, both in unpadded base64url. The MAC covers the principal
// header's exact value (empty when the call carries none), the call's
// subject and reply subject, the SHA-256 of its body, the issue time and
// the nonce, so that a signed claim is only ever good for the call it
// was made for.
const HeaderPrincipalSignature = "Clawtool-Principal-Signature"

// MinSignerKeyBytes is the least length of a [HeaderSigner]'s key.
const MinSignerKeyBytes = 32

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
// one is well under it.
const maxSignatureHeader = 256

// ErrPrincipalSignature is wrapped by every error of
// [HeaderSigner.FromHeaders]: the call's principal claim is missing its
// signature, or the signature is malformed, wrong, expired, from the
// future, or already used.
var ErrPrincipalSignature = errors.New("principal claim refused")

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
}

// HeaderSignerOptions configure a [HeaderSigner]. A nil
// *HeaderSignerOptions, and every zero field, means the default.
type HeaderSignerOptions struct {
	// MaxAge is how old a signature [HeaderSigner.FromHeaders] takes may
	// be ([DefaultSignatureMaxAge]).
	MaxAge time.Duration
	// Skew is how far ahead of the verifier's clock a signature's issue
	// time may be ([DefaultSignatureSkew]).
	Skew time.Duration
	// MaxNonces bounds the nonces remembered to refuse a signature used
	// twice ([DefaultSignatureNonces]). While that many unexpired ones
	// are remembered, new calls are refused (fail closed) until some
	// expire.
	MaxNonces int
	// Repeats, when set, takes the same signature more than once: no
	// nonce is remembered. For the claims of durable jobs, whose message
	// is delivered again after its worker dies, and whose job record
	// stops a run of a job already done; never for calls.
	Repeats bool
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// HeaderSigner signs principal claims with a key shared by the processes
// that send calls and those that decide them, and verifies them. It is
// safe for concurrent use. Verification remembers the nonces of the
// signatures it took until they expire, and refuses one seen before: the
// same signed call delivered twice to one verifier runs once. Verifiers
// in other processes keep their own memory.
type HeaderSigner struct {
	key            []byte
	maxAge, skew   time.Duration
	maxNonces      int
	repeats        bool
	now            func() time.Time
	mu             sync.Mutex
	nonces         map[string]time.Time // nonce -> when it may be forgotten
	nextPrune      time.Time
	randRead       func([]byte) (int, error)
	encodedMACSize int
}

// NewHeaderSigner returns a signer with key, which must be at least
// [MinSignerKeyBytes] long. The key is copied.
func NewHeaderSigner(key []byte, o *HeaderSignerOptions) (*HeaderSigner, error) {
	if len(key) < MinSignerKeyBytes {
		return nil, fmt.Errorf("principal signing key: %d bytes, want at least %d", len(key), MinSignerKeyBytes)
	}
	s := &HeaderSigner{key: append([]byte(nil), key...), maxAge: DefaultSignatureMaxAge, skew: DefaultSignatureSkew,
		maxNonces: DefaultSignatureNonces, now: time.Now, nonces: map[string]time.Time{}, randRead: rand.Read,
		encodedMACSize: base64.RawURLEncoding.EncodedLen(sha256.Size)}
	if o != nil {
		if o.MaxAge > 0 {
			s.maxAge = o.MaxAge
		}
		if o.Skew > 0 {
			s.skew = o.Skew
		}
		if o.MaxNonces > 0 {
			s.maxNonces = o.MaxNonces
		}
		if o.Now != nil {
			s.now = o.Now
		}
		s.repeats = o.Repeats
	}
	return s, nil
}

// Headers returns the headers that carry the principal ctx carries
// (as [Headers] writes them, none when it carries none or it is too
// large) and a signature of that claim bound to call. A call without a
// principal is signed too: it says the sender holds the key and claims
// no one. Nil only when no random nonce could be drawn.
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
	mac := s.mac(claim, call, t, nonce[:])
	h[HeaderPrincipalSignature] = []string{"v1 t=" + strconv.FormatInt(t, 10) +
		" n=" + base64.RawURLEncoding.EncodeToString(nonce[:]) +
		" s=" + base64.RawURLEncoding.EncodeToString(mac)}
	return h
}

// mac is the HMAC-SHA256 of the claim, call, issue time and nonce, each
// length-prefixed so that no two different tuples share an input.
func (s *HeaderSigner) mac(claim string, call SignedCall, t int64, nonce []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	body := sha256.Sum256(call.Body)
	var n [8]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		m.Write(n[:])
		m.Write(b)
	}
	field([]byte("clawtool principal v1"))
	field([]byte(claim))
	field([]byte(call.Subject))
	field([]byte(call.Reply))
	field(body[:])
	field(strconv.AppendInt(nil, t, 10))
	field(nonce)
	return m.Sum(nil)
}

// FromHeaders verifies the signature in h for the principal claim in h
// and call, and returns ctx carrying the principal as [FromHeaders]
// restores it (ctx unchanged when h claims no principal). It refuses,
// with an error wrapping [ErrPrincipalSignature], a signature that is
// missing, repeated, malformed, made with another key or for another
// claim or call, older than the maximum age, dated further ahead than
// the allowed skew, or whose nonce this signer already took (unless
// made with Repeats).
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
	t, nonce, mac, ok := s.parse(sigs[0])
	if !ok {
		return refuse(`header %s is malformed (want "v1 t=MILLIS n=NONCE s=MAC")`, HeaderPrincipalSignature)
	}
	if !hmac.Equal(mac, s.mac(claim, call, t, nonce)) {
		return refuse("the signature does not match the claim and the call (another key, or the claim, tool, or arguments changed)")
	}
	now := s.now()
	issued := time.UnixMilli(t)
	if issued.After(now.Add(s.skew)) {
		return refuse("the signature is dated %s ahead, more than the %s of clock skew allowed", issued.Sub(now).Round(time.Millisecond), s.skew)
	}
	if now.Sub(issued) > s.maxAge {
		return refuse("the signature is %s old, more than the %s allowed", now.Sub(issued).Round(time.Millisecond), s.maxAge)
	}
	if !s.repeats {
		if err := s.remember(string(nonce), issued.Add(s.maxAge), now); err != nil {
			return refuse("%v", err)
		}
	}
	if len(claims) == 0 {
		return ctx, nil
	}
	return FromHeaders(ctx, map[string][]string{HeaderPrincipal: claims})
}

// parse splits a signature header; ok is false unless it is exactly
// "v1 t=MILLIS n=NONCE s=MAC" with a 16-byte nonce and a 32-byte MAC.
func (s *HeaderSigner) parse(v string) (t int64, nonce, mac []byte, ok bool) {
	f := strings.Split(v, " ")
	if len(f) != 4 || f[0] != "v1" {
		return 0, nil, nil, false
	}
	ts, ok1 := strings.CutPrefix(f[1], "t=")
	ns, ok2 := strings.CutPrefix(f[2], "n=")
	ms, ok3 := strings.CutPrefix(f[3], "s=")
	if !ok1 || !ok2 || !ok3 || ts == "" || ts[0] == '+' || ts[0] == '-' {
		return 0, nil, nil, false
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return 0, nil, nil, false
	}
	nonce, err = base64.RawURLEncoding.Strict().DecodeString(ns)
	if err != nil || len(nonce) != 16 {
		return 0, nil, nil, false
	}
	if len(ms) != s.encodedMACSize {
		return 0, nil, nil, false
	}
	mac, err = base64.RawURLEncoding.Strict().DecodeString(ms)
	if err != nil || len(mac) != sha256.Size {
		return 0, nil, nil, false
	}
	return t, nonce, mac, true
}

// remember records nonce until forget, and fails when it is already
// recorded or when the memory is full of unexpired nonces.
func (s *HeaderSigner) remember(nonce string, forget, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if until, seen := s.nonces[nonce]; seen && now.Before(until) {
		return errors.New("the signature was already used: a signed call runs once")
	}
	if len(s.nonces) >= s.maxNonces || now.After(s.nextPrune) {
		for n, until := range s.nonces {
			if !now.Before(until) {
				delete(s.nonces, n)
			}
		}
		s.nextPrune = now.Add(s.maxAge / 4)
	}
	if len(s.nonces) >= s.maxNonces {
		return fmt.Errorf("more than %d signed calls within %s: try again later", s.maxNonces, s.maxAge)
	}
	s.nonces[nonce] = forget
	return nil
}

// MaxSignerKeyFileBytes bounds a key file [ReadSignerKeyFile] reads.
const MaxSignerKeyFileBytes = 4 << 10

// ReadSignerKeyFile reads the shared key of a [HeaderSigner] from the
// file name: its bytes, less one trailing newline ("\n" or "\r\n"), at
// least [MinSignerKeyBytes] of them. It refuses a file that is not a
// regular file, longer than [MaxSignerKeyFileBytes], or that users other
// than its owner may read or write (mode & 0o077): anyone who can read
// the key can sign any principal.
func ReadSignerKeyFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return nil, fmt.Errorf("%s may be read or written by other users (mode %04o): chmod 600 %s", name, m, name)
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
