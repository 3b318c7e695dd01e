package natstool

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/miniopenclaw/tool/policy"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of [Nonces].
const (
	DefaultNonceBucket = "clawtool_nonces"
	// DefaultNoncesTTL is how long the bucket keeps a nonce: twice the
	// longest a signature is taken with the default options
	// (policy.DefaultSignatureMaxAge plus policy.DefaultSignatureSkew).
	DefaultNoncesTTL = 2 * (policy.DefaultSignatureMaxAge + policy.DefaultSignatureSkew)
	// DefaultNoncesMaxBytes bounds the bucket's bytes: some 450,000
	// nonces of about 140 bytes each (TestNoncesFailClosed logs the
	// figure), 1,500 signed calls a second for DefaultNoncesTTL.
	DefaultNoncesMaxBytes = 64 << 20
	// DefaultNoncesTimeout bounds one Claim's round trip to the bucket.
	DefaultNoncesTimeout = 5 * time.Second
)

// maxNonceKey bounds a nonce's length; a HeaderSigner's are 22.
const maxNonceKey = 64

// NoncesOptions configure [Nonces]. A nil *NoncesOptions, and every zero
// field, means the default.
type NoncesOptions struct {
	// Bucket names the key-value bucket ([DefaultNonceBucket]).
	Bucket string
	// TTL is how long the bucket keeps a nonce ([DefaultNoncesTTL]): at
	// least the MaxAge plus Skew of every verifier that uses the store.
	// Claim refuses a nonce that must be kept longer.
	TTL time.Duration
	// MaxBytes bounds the bucket's bytes ([DefaultNoncesMaxBytes]); while
	// it is full of unexpired nonces, every Claim fails (the calls are
	// refused) until some expire.
	MaxBytes int64
	// Replicas is how many servers of a JetStream cluster keep the
	// bucket (1; 3 survives the loss of a server).
	Replicas int
	// Timeout bounds one Claim ([DefaultNoncesTimeout]).
	Timeout time.Duration
}

// Nonces is a [policy.NonceStore] in a JetStream key-value bucket, shared
// by every worker that opens the bucket on one NATS system: give it as
// policy.HeaderSignerOptions.Nonces to the verifier of each worker of a
// service, and a signed call runs once across them all, instead of once
// per worker (a captured message delivered whole to another worker of the
// queue group is refused there as already used).
//
// Each nonce is one key, created only if absent (a write that expects
// the key to have no revision): of two workers taking the same signed
// call at once, one creates the key and the other is refused. A create
// that fails because the key exists is a replay; any other failure (the
// bucket out of reach, full, too slow) refuses the call too: fail
// closed. The cost is one JetStream round trip per verified call (none
// for a call whose signature does not verify: the verifier asks the store
// last). The bucket keeps one revision per key, on file storage, for TTL,
// and MaxBytes at most.
//
// Whoever may write to the bucket can delete nonces and so let a
// captured call run again: give the bucket's subjects ($KV.BUCKET.>,
// and the JetStream API of its stream) to the workers' accounts only.
type Nonces struct {
	kv      jetstream.KeyValue
	bucket  string
	ttl     time.Duration
	timeout time.Duration
}

var _ policy.NonceStore = (*Nonces)(nil)

// OpenNonces creates the nonces' bucket on nc's JetStream, or binds to it
// when it exists, making its TTL longer when it is shorter than opts's
// (a shorter one is never set on an existing bucket, so that workers
// with longer windows keep theirs).
func OpenNonces(ctx context.Context, nc *nats.Conn, opts *NoncesOptions) (*Nonces, error) {
	var o NoncesOptions
	if opts != nil {
		o = *opts
	}
	bucket, ttl, maxBytes, replicas, timeout := DefaultNonceBucket, DefaultNoncesTTL, int64(DefaultNoncesMaxBytes), 1, DefaultNoncesTimeout
	nonEmpty(&bucket, o.Bucket)
	positive(&ttl, o.TTL)
	positive(&maxBytes, o.MaxBytes)
	positive(&replicas, o.Replicas)
	positive(&timeout, o.Timeout)
	fail := func(err error) (*Nonces, error) {
		return nil, fmt.Errorf("natstool: nonces: bucket %s: %w", bucket, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fail(err)
	}
	cfg := jetstream.KeyValueConfig{
		Bucket:       bucket,
		Description:  "clawtool: nonces of the principal signatures workers took",
		History:      1,
		TTL:          ttl,
		MaxValueSize: 256, // the stream counts the subject and headers too
		MaxBytes:     maxBytes,
		Storage:      jetstream.FileStorage,
		Replicas:     replicas,
	}
	kv, err := js.CreateKeyValue(ctx, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		if kv, err = js.KeyValue(ctx, bucket); err != nil {
			return fail(err)
		}
		var st jetstream.KeyValueStatus
		if st, err = kv.Status(ctx); err != nil {
			return fail(err)
		}
		if have := st.TTL(); have != 0 && have < ttl {
			kv, err = js.UpdateKeyValue(ctx, cfg)
		}
	}
	if err != nil {
		return fail(err)
	}
	return &Nonces{kv: kv, bucket: bucket, ttl: ttl, timeout: timeout}, nil
}

// Claim records nonce until expires: nil when the bucket did not hold
// it, an error wrapping [policy.ErrNonceUsed] when it did, and another
// error when nonce is not 1 to 64 characters of A-Z, a-z, 0-9, '-' and
// '_', must be kept longer than the bucket's TTL, or the bucket cannot
// record it within the timeout.
func (n *Nonces) Claim(ctx context.Context, nonce string, expires, now time.Time) error {
	if !validNonce(nonce) {
		return fmt.Errorf("nonce bucket %s: a nonce of %d bytes that is not 1 to %d of A-Z, a-z, 0-9, '-' and '_'", n.bucket, len(nonce), maxNonceKey)
	}
	if keep := expires.Sub(now); keep > n.ttl {
		return fmt.Errorf("nonce bucket %s keeps nonces for %s, less than this signature needs (%s): open it with a TTL of at least the verifier's MaxAge plus Skew", n.bucket, n.ttl, keep.Round(time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	_, err := n.kv.Create(ctx, nonce, strconv.AppendInt(nil, expires.UnixMilli(), 10))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrKeyExists):
		return fmt.Errorf("%w (nonce bucket %s)", policy.ErrNonceUsed, n.bucket)
	default:
		return fmt.Errorf("nonce bucket %s: %w: the nonce cannot be recorded, so the call is refused", n.bucket, err)
	}
}

// validNonce reports whether nonce may be a key of the bucket: base64url
// characters only, so that it is one plain token (no '.', no wildcard).
func validNonce(nonce string) bool {
	if nonce == "" || len(nonce) > maxNonceKey {
		return false
	}
	for i := 0; i < len(nonce); i++ {
		c := nonce[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
