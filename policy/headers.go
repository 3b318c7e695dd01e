package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/miniopenclaw/tool/policy/internal/residual"
)

// HeaderPrincipal is the message header [Headers] writes and
// [FromHeaders] reads: the principal as a JSON object
// {"id", "roles", "attrs"}.
const HeaderPrincipal = "Clawtool-Principal"

// MaxPrincipalHeader bounds the size of the principal header, in bytes;
// [FromHeaders] refuses a longer one.
const MaxPrincipalHeader = 8 << 10

// wirePrincipal is a Principal in HeaderPrincipal.
type wirePrincipal struct {
	ID    string         `json:"id"`
	Roles []string       `json:"roles,omitempty"`
	Attrs map[string]any `json:"attrs,omitempty"`
}

// Headers returns the message headers that carry the principal ctx
// carries to another process, as a map from header name to values (the
// shape of the header types of net/http and of NATS), or nil when ctx
// carries none or the principal does not fit in [MaxPrincipalHeader]
// bytes. The receiver restores the principal with [FromHeaders].
//
// The headers are a claim, not a proof: a receiver must trust them only
// when it trusts every sender that can reach it, such as the clients of
// a NATS server that authenticates its connections and lets only trusted
// accounts publish on the receiver's subjects. Otherwise sign them with
// a [HeaderSigner], whose FromHeaders refuses a claim not signed with
// the shared key for the call it travels with.
func Headers(ctx context.Context) map[string][]string {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return nil
	}
	b, err := json.Marshal(wirePrincipal{ID: p.ID, Roles: p.Roles, Attrs: p.Attrs})
	if err != nil || len(b) > MaxPrincipalHeader {
		return nil
	}
	return map[string][]string{HeaderPrincipal: {string(b)}}
}

// FromHeaders returns ctx carrying the principal h names in
// [HeaderPrincipal], as [Headers] wrote it. When h has no such header it
// returns ctx unchanged: the call is decided for whatever principal ctx
// already carries, or the anonymous one. A header that is repeated,
// longer than [MaxPrincipalHeader], not the JSON object described, not
// JSON every parser reads alike (two keys equal, or equal but for case,
// invalid UTF-8, a lone surrogate escape, nesting past 64 levels), or
// that names an empty user is an error, so that a malformed claim is
// refused rather than decided as someone else.
//
// See [Headers] for when the header may be trusted.
func FromHeaders(ctx context.Context, h map[string][]string) (context.Context, error) {
	vs, ok := h[HeaderPrincipal]
	if !ok || len(vs) == 0 {
		return ctx, nil
	}
	if len(vs) > 1 {
		return ctx, fmt.Errorf("header %s: given %d times, want once", HeaderPrincipal, len(vs))
	}
	if len(vs[0]) > MaxPrincipalHeader {
		return ctx, fmt.Errorf("header %s: %d bytes, more than the %d allowed", HeaderPrincipal, len(vs[0]), MaxPrincipalHeader)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(vs[0])))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var w wirePrincipal
	if err := dec.Decode(&w); err != nil {
		return ctx, fmt.Errorf("header %s: %w", HeaderPrincipal, err)
	}
	if dec.More() {
		return ctx, fmt.Errorf("header %s: data after the JSON object", HeaderPrincipal)
	}
	// Read as every parser reads it, or not at all: encoding/json keeps
	// the last of two equal keys, binds "ID" to id, and reads invalid
	// UTF-8 as U+FFFD, where a gateway that inspected the header may have
	// read another principal.
	if err := residual.Strict([]byte(vs[0])); err != nil {
		msg := err.Error()
		if se, ok := errors.AsType[*residual.StrictError](err); ok {
			msg = se.Msg
		}
		return ctx, fmt.Errorf("header %s: not JSON every parser reads alike: %s", HeaderPrincipal, msg)
	}
	if w.ID == "" {
		return ctx, fmt.Errorf("header %s: %w", HeaderPrincipal, errors.New(`"id" is empty`))
	}
	return WithPrincipal(ctx, Principal{ID: w.ID, Roles: w.Roles, Attrs: w.Attrs}), nil
}
