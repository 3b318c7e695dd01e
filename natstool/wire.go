package natstool

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/miniopenclaw/tool"
)

// Headers of the messages between an importer and a worker. Their values
// are plain ASCII.
const (
	// HeaderKind says what a message on a call's reply subject is: see
	// the kind constants below. A reply without it is a result.
	HeaderKind = "Clawtool-Kind"

	// HeaderObject names the object, in the bucket named by
	// HeaderBucket, that holds a result too large for one message.
	HeaderObject = "Clawtool-Result-Object"

	// HeaderBucket names the JetStream object store bucket of
	// HeaderObject.
	HeaderBucket = "Clawtool-Result-Bucket"

	// HeaderResultFor is a header of the object that holds a large
	// result (its ObjectMeta's): the reply subject of the call it is the
	// result of. An importer reads, and then deletes, only an object
	// that names the reply subject of its own call.
	HeaderResultFor = "Clawtool-Result-For"
)

// ReplyTimeoutMark ends the last token of a call's reply subject, and is
// followed by the time the caller has left for the call, in decimal
// milliseconds (at most 13 digits, more than 0 and at most a year): a reply
// subject INBOX.7f~t30000 gives the call 30 s. It is the one way the
// deadline travels, so that a call needs no NATS headers at all, which
// cost both sides a parse and allocations. The worker runs the call with
// a context that ends then, whatever its own clock says. It reads the
// mark only from the last token, after the mark's last occurrence; a
// number that is missing, malformed, zero or too large makes the call's
// result an error of kind invalid_arguments. A reply subject without the
// mark gives the call no deadline from its caller. The mark is not
// in the alphabet of NATS inboxes (letters and digits), so a requester
// that does not know it never sends it by chance.
const ReplyTimeoutMark = "~t"

// Kinds of message on a call's reply subject.
const (
	kindResult    = "result"
	kindHeartbeat = "heartbeat"
	kindProgress  = "progress"
	kindBusy      = "busy"
)

// Metadata keys of a service's endpoints and of the service itself.
const (
	// MetadataTool holds an endpoint's tool definition, as JSON (see
	// [Definition]).
	MetadataTool = "clawtool.tool"

	// MetadataProtocol holds the version of this package's wire
	// protocol, on the service: a decimal number. Version 2 takes the
	// caller's deadline from the end of the reply subject
	// ([ReplyTimeoutMark]). Version 1, which took it from a header, is no
	// longer spoken: an importer leaves out the tools of a service with a
	// worker of version 1 (or one that does not say), and logs why.
	MetadataProtocol = "clawtool.protocol"

	protocolVersion = "2"

	// MetadataSignature holds, on a service whose worker has a
	// [ReplyKey], the signature of the service's name, version and every
	// endpoint's name, subject and [MetadataTool], one signature (in the
	// form of [HeaderReplySignature]) per key the worker holds, joined by
	// ';': an importer holding one of the keys imports only services so
	// signed ([ImportOptions.ReplyKey]).
	MetadataSignature = "clawtool.signature"
)

// protocolOf reads a service's MetadataProtocol; a value that is not a
// number counts as 1, the only protocol whose services may not say.
func protocolOf(v string) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// cancelSubject is where the workers of the service whose subjects start
// with base hear of calls whose callers gave up; the message is the call's
// reply subject, a space, and the call's cancel secret (see
// [CancelMark]). "$" cannot appear in a tool's name.
func cancelSubject(base string) string { return base + ".$cancel" }

// CancelMark goes, in the last token of a call's reply subject, before
// [ReplyTimeoutMark], and is followed by the digest of a secret only the
// caller holds, in 22 characters of unpadded base64url (16 bytes of the
// SHA-256 of a label and the secret): _INBOX.k3Xz.7f~cDIGEST~t30000. A
// worker ends a call on its service's cancel subject only for a message
// that gives the secret whose digest the call's reply subject carries,
// so that seeing a call's reply subject (any subscriber to the tool's
// subject sees it) is not enough to cancel it. A call whose reply
// subject carries no digest (a caller older than the mark) cannot be
// canceled by a message: it ends at its deadline.
const CancelMark = "~c"

// cancelSecretBytes is the length of a call's cancel secret.
const cancelSecretBytes = 16

// callCancelSecret is the cancel secret of the call seq of an importer
// whose own random secret is key.
func callCancelSecret(key *[32]byte, seq uint64) [cancelSecretBytes]byte {
	var b [40]byte
	copy(b[:], key[:])
	binary.BigEndian.PutUint64(b[32:], seq)
	sum := sha256.Sum256(b[:])
	return [cancelSecretBytes]byte(sum[:cancelSecretBytes])
}

// cancelDigest is the digest of a cancel secret that a reply subject
// carries.
func cancelDigest(secret []byte) [cancelSecretBytes]byte {
	h := sha256.New()
	h.Write([]byte("clawtool cancel v1\x00"))
	h.Write(secret)
	var sum [sha256.Size]byte
	return [cancelSecretBytes]byte(h.Sum(sum[:0])[:cancelSecretBytes])
}

// cancelDigestChars is the length of an encoded cancel digest.
var cancelDigestChars = base64.RawURLEncoding.EncodedLen(cancelSecretBytes)

// parseCancelDigest reads the cancel digest of a reply subject: after
// the last CancelMark of its last token, up to its ReplyTimeoutMark.
func parseCancelDigest(reply string) (d [cancelSecretBytes]byte, ok bool) {
	last := reply[strings.LastIndexByte(reply, '.')+1:]
	i := strings.LastIndex(last, CancelMark)
	j := strings.LastIndex(last, ReplyTimeoutMark)
	if i < 0 || j != i+len(CancelMark)+cancelDigestChars {
		return d, false
	}
	n, err := base64.RawURLEncoding.Decode(d[:], []byte(last[i+len(CancelMark):j]))
	return d, err == nil && n == cancelSecretBytes
}

// ChangeSubject is where a [Service] announces that it started, changed
// its tools, or stopped, so that importers resync at once rather than at
// their next periodic scan. The message is a JSON [Announcement].
const ChangeSubject = "clawtool.changed"

// An Announcement is published on [ChangeSubject].
type Announcement struct {
	// Service and ID identify the micro service instance.
	Service string `json:"service"`
	ID      string `json:"id"`
	// Stopped is set when the instance stopped serving.
	Stopped bool `json:"stopped,omitempty"`
	// Replaces is the id of the instance this one replaced when the
	// service's tools changed; that instance no longer serves.
	Replaces string `json:"replaces,omitempty"`
}

// A Definition is what a service says about one of its tools, in the
// metadata of the tool's endpoint.
type Definition struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Annotations  annotations     `json:"annotations,omitzero"`
	// TimeoutMs is the tool's own time limit on the worker, in
	// milliseconds; 0 when it has none of its own.
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
}

// annotations is the wire form of tool.Annotations.
type annotations struct {
	Title       string `json:"title,omitempty"`
	ReadOnly    bool   `json:"read_only,omitempty"`
	Destructive bool   `json:"destructive,omitempty"`
	Idempotent  bool   `json:"idempotent,omitempty"`
	OpenWorld   bool   `json:"open_world,omitempty"`
}

// definitionOf describes t for the endpoint metadata.
func definitionOf(t tool.Tool) Definition {
	o := tool.OptionsOf(t)
	a := o.Annotations
	d := Definition{
		Name:         t.Name(),
		Description:  t.Description(),
		InputSchema:  t.Parameters(),
		OutputSchema: o.OutputSchema,
		Annotations: annotations{
			Title: a.Title, ReadOnly: a.ReadOnly, Destructive: a.Destructive,
			Idempotent: a.Idempotent, OpenWorld: a.OpenWorld,
		},
	}
	if o.Timeout > 0 {
		d.TimeoutMs = o.Timeout.Milliseconds()
	}
	return d
}

// toolAnnotations returns the definition's annotations as the core type.
func (d *Definition) toolAnnotations() tool.Annotations {
	a := d.Annotations
	return tool.Annotations{Title: a.Title, ReadOnly: a.ReadOnly, Destructive: a.Destructive, Idempotent: a.Idempotent, OpenWorld: a.OpenWorld}
}

// timeoutMs is the time left before a deadline as sent to a worker,
// after ReplyTimeoutMark: at least 1 ms, so that an
// exhausted budget still reads as a limit, and at most the year a worker
// accepts.
func timeoutMs(left time.Duration) int64 {
	return min(max(left.Milliseconds(), 1), maxTimeoutMs)
}

// maxTimeoutMs bounds the time a caller may give a call: a year.
const maxTimeoutMs = int64(24*time.Hour/time.Millisecond) * 365

// maxTimeoutDigits bounds the digits after [ReplyTimeoutMark]: enough
// for maxTimeoutMs, and with a leading zero or two to spare.
const maxTimeoutDigits = 13

// parseReplyTimeout reads the time left that ends the last token of a
// reply subject after [ReplyTimeoutMark]; ok is false when there is no
// mark. It reads at most maxTimeoutDigits bytes after the mark, so its
// work is bounded whatever the subject's length.
func parseReplyTimeout(reply string) (d time.Duration, ok bool, err error) {
	last := reply[strings.LastIndexByte(reply, '.')+1:]
	i := strings.LastIndex(last, ReplyTimeoutMark)
	if i < 0 {
		return 0, false, nil
	}
	digits := last[i+len(ReplyTimeoutMark):]
	fail := func() (time.Duration, bool, error) {
		shown := digits
		if len(shown) > maxTimeoutDigits+3 {
			shown = shown[:maxTimeoutDigits+3] + "…"
		}
		return 0, false, fmt.Errorf("reply subject: %q after the deadline mark %q is not a positive number of milliseconds of at most %d digits", shown, ReplyTimeoutMark, maxTimeoutDigits)
	}
	if len(digits) == 0 || len(digits) > maxTimeoutDigits {
		return fail()
	}
	var ms int64
	for j := 0; j < len(digits); j++ {
		c := digits[j]
		if c < '0' || c > '9' {
			return fail()
		}
		ms = ms*10 + int64(c-'0') // 13 digits cannot overflow
	}
	if ms <= 0 || ms > maxTimeoutMs {
		return fail()
	}
	return time.Duration(ms) * time.Millisecond, true, nil
}

// progressReport is the body of a progress message.
type progressReport struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}
