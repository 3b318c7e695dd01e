package policy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/miniopenclaw/tool/internal/regularfile"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy/internal/residual"
)

// An AuditRecord is one decision as the audit log keeps it: one line of
// JSON. Records are hash-chained: Prev is the Hash of the record before
// (64 zeros for the first), and Hash is the SHA-256 of the record's line
// without its hash field, so that editing, removing or reordering
// records breaks the chain ([VerifyAudit]).
type AuditRecord struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Event is "decision" for a decision, made before the call runs, and
	// "outcome" for how an allowed call ended; an outcome shares its
	// decision's CallDigest.
	Event     string   `json:"event"`
	Principal string   `json:"principal"`
	Roles     []string `json:"roles,omitempty"`
	Tool      string   `json:"tool"`
	// ArgsDigest is the hex SHA-256 of the canonical arguments; the
	// arguments themselves are not recorded.
	ArgsDigest string `json:"args_digest"`
	// CallDigest binds principal, tool and arguments, as approvals do.
	CallDigest string `json:"call_digest"`
	// Args are the canonical arguments with secret fields redacted, in
	// decision records of an Authorizer made WithAuditArguments; else
	// absent. Arguments whose encoding is longer than [MaxAuditArgs] are
	// not kept whole: Args is then absent, ArgsPrefix holds the start of
	// their encoding, and Truncated says so.
	Args json.RawMessage `json:"args,omitempty"`
	// ArgsPrefix is, for arguments cut to fit the record, the first
	// bytes of their canonical encoding (cut between UTF-8 sequences).
	ArgsPrefix string   `json:"args_prefix,omitempty"`
	Effect     Effect   `json:"effect,omitempty"`
	Policies   []string `json:"policies,omitempty"`
	Approved   bool     `json:"approved,omitempty"`
	// Approval is, in a decision, the id of the approval request it made
	// (effect "ask") or used (a call a person approved or denied); see
	// [Decision.Approval]. [AuditStory] follows it.
	Approval string `json:"approval,omitempty"`
	// AnsweredBy, Answered and Note are, in a decision that used a
	// person's answer, who answered, when, and what they wrote: the
	// answer is kept in the chain with the call it let run or refused.
	AnsweredBy string    `json:"answered_by,omitempty"`
	Answered   time.Time `json:"answered,omitzero"`
	Note       string    `json:"note,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	// DecisionNanos is how long the decision took.
	DecisionNanos int64 `json:"decision_ns,omitempty"`
	// Outcome is, for an outcome, "ok" or the failed Result's Kind.
	Outcome string `json:"outcome,omitempty"`
	// DurationNanos is, for an outcome, how long the call took.
	DurationNanos int64 `json:"duration_ns,omitempty"`
	// Truncated lists the fields that were cut to keep the record within
	// its bound ([MaxAuditRecord]), each with the length and digest of
	// the whole value; absent when nothing was cut.
	Truncated []AuditTruncation `json:"truncated,omitempty"`
	Prev      string            `json:"prev"`
	Hash      string            `json:"hash"`
}

// An AuditTruncation says that one field of an [AuditRecord] holds less
// than the whole value: a prefix (a text field, or ArgsPrefix for
// "args"), or the first elements of a list.
type AuditTruncation struct {
	// Field is the field's JSON name: "args", "principal", "roles",
	// "tool", "policies", "reason", "outcome", "approval", "answered_by"
	// or "note".
	Field string `json:"field"`
	// Bytes is the length of the whole value's encoding: for "args" the
	// canonical arguments (redacted), for a text field its UTF-8 bytes,
	// for a list its JSON array.
	Bytes int `json:"bytes"`
	// SHA256 is the hex SHA-256 of those bytes, to check a value kept
	// elsewhere against the record.
	SHA256 string `json:"sha256"`
}

// Bounds of one audit record.
const (
	// MaxAuditRecord bounds one record's line, its newline included: an
	// [AuditLog] writes none longer, and [VerifyAudit] refuses a longer
	// one without reading past the bound.
	MaxAuditRecord = 1 << 20
	// MaxAuditArgs bounds the encoding of the arguments a record keeps
	// (Args, or ArgsPrefix once escaped in the record's line).
	MaxAuditArgs = 64 << 10
	// maxAuditText bounds the encoding of every other text a record
	// keeps: each of principal, tool, reason, outcome, approval, answered_by and note, and each role
	// and policy.
	maxAuditText = 4 << 10
	// maxAuditList bounds the encoding of each list (roles, policies).
	maxAuditList = 16 << 10
)

// genesis is the Prev of the first record.
var genesis = strings.Repeat("0", 64)

// An AuditLog appends hash-chained decision records, one JSON line each,
// to a writer. It is safe for concurrent use.
type AuditLog struct {
	mu       sync.Mutex
	w        io.Writer
	closer   io.Closer
	file     *os.File // the log's file, when OpenAuditFile opened it
	seq      uint64
	prev     string
	now      func() time.Time
	headFile string       // see WithHeadFile
	headLog  *slog.Logger // see WithHeadLogger
	// failed is the first write error: a write that failed may have put
	// part of a line in the log, so nothing is appended after it.
	failed error
}

// An AuditOption configures an [AuditLog].
type AuditOption func(*AuditLog)

// NewAuditLog returns an AuditLog that starts a new chain on w.
func NewAuditLog(w io.Writer, opts ...AuditOption) *AuditLog {
	l := &AuditLog{w: w, prev: genesis, now: time.Now}
	for _, o := range opts {
		o(l)
	}
	return l
}

// OpenAuditFile opens the audit log at path for appending, creating it
// if needed. An existing file is verified first and its chain continued;
// a file that does not verify is not written to, and the error says why.
// With [WithHeadFile], a head file that exists must name a record of the
// log ([VerifyAuditHead]): a log cut short since is not written to
// either. The head is then published at once. A log file (as opened, so
// a link by its target) or head file that users other than its owner
// may write, or whose owner is neither this process's user nor root, is
// refused (on Unix): whoever may write the log can rewrite it, chain and
// all, and whoever may write the head file can make it name their log.
func OpenAuditFile(path string, opts ...AuditOption) (*AuditLog, error) {
	// A named pipe blocked reading the chain, or every call once its
	// buffer was full: only a regular file is a log, judged as opened.
	f, fi, err := regularfile.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	// The chain is not keyed: whoever may write the file can rewrite it
	// whole, hashes and all, and it would verify.
	if err := checkUnshared(path, fi, "rewrite its records, chain and all"); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: %w", err)
	}
	l := NewAuditLog(f, opts...)
	l.closer, l.file = f, f
	want, err := l.keptHead()
	var sum AuditSummary
	if err == nil {
		sum, err = VerifyAuditHead(f, want)
	}
	if err == nil {
		l.seq, l.prev = uint64(sum.Records), sum.Head
		err = l.publish()
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit %s: %w", path, err)
	}
	return l, nil
}

// Close closes the file of a log opened with [OpenAuditFile].
func (l *AuditLog) Close() error {
	if l.closer == nil {
		return nil
	}
	return l.closer.Close()
}

// Record appends a record of d, a decision that took took.
func (l *AuditLog) Record(d Decision, took time.Duration) error {
	ad := sha256.Sum256(d.Args)
	rec := AuditRecord{
		Event: "decision", Time: l.now().UTC(), Principal: d.Principal.ID, Roles: d.Principal.Roles, Tool: d.Tool,
		ArgsDigest: hex.EncodeToString(ad[:]), CallDigest: d.Digest, Effect: d.Effect,
		Policies: d.Policies, Approved: d.Approved, Approval: d.Approval, DecisionNanos: took.Nanoseconds(),
	}
	if d.answer != nil {
		rec.AnsweredBy, rec.Note = d.answer.AnsweredBy, d.answer.Note
		rec.Answered = d.answer.Answered.UTC()
	}
	if d.Effect != Allow {
		rec.Reason = d.Reason
	}
	rec.Args = d.auditArgs
	return l.append(rec)
}

// RecordOutcome appends a record of how the call d allowed ended: res is
// what the model saw, took how long the call took.
func (l *AuditLog) RecordOutcome(d Decision, res tool.Result, took time.Duration) error {
	ad := sha256.Sum256(d.Args)
	rec := AuditRecord{
		Event: "outcome", Time: l.now().UTC(), Principal: d.Principal.ID, Roles: d.Principal.Roles, Tool: d.Tool,
		ArgsDigest: hex.EncodeToString(ad[:]), CallDigest: d.Digest, Outcome: "ok", DurationNanos: took.Nanoseconds(),
	}
	if res.IsError {
		rec.Outcome = string(res.Kind)
	}
	return l.append(rec)
}

func (l *AuditLog) append(rec AuditRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed != nil {
		return fmt.Errorf("audit: the log failed before and takes no more records: %w", l.failed)
	}
	rec.Seq = l.seq + 1
	rec.Prev = l.prev
	rec.bound()
	line, hash, err := sealRecord(rec)
	if err == nil && len(line) > MaxAuditRecord {
		err = fmt.Errorf("a record of %d bytes, more than %d", len(line), MaxAuditRecord) // the bounds above make it unreachable
	}
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if _, err := l.w.Write(line); err != nil {
		l.failed = err
		return fmt.Errorf("audit: %w", err)
	}
	l.seq, l.prev = rec.Seq, hash
	if err := l.publish(); err != nil {
		return fmt.Errorf("audit: record %d written, but %w", rec.Seq, err)
	}
	return nil
}

// bound cuts every field of rec that is longer than its bound (see
// [MaxAuditArgs]) and lists each cut in rec.Truncated, so that the
// record's line stays within [MaxAuditRecord] whatever the call held.
func (rec *AuditRecord) bound() {
	var cuts []AuditTruncation
	text := func(field string, s *string) {
		// encoding/json writes a byte that is not UTF-8 as an escaped
		// U+FFFD, which reads back as the rune and is then written
		// raw: the line would not match its hash. Write the rune.
		valid := strings.ToValidUTF8(*s, "\uFFFD")
		if cut, ok := cutText(valid, maxAuditText); ok {
			cuts = append(cuts, truncation(field, []byte(*s)))
			*s = cut
		} else {
			*s = valid
		}
	}
	list := func(field string, l *[]string) {
		var kept []string
		used, cut := 0, false
		for _, e := range *l {
			c, ok := cutText(strings.ToValidUTF8(e, "\uFFFD"), maxAuditText)
			n := encodedLen(c) + 3 // quotes and comma
			if used+n > maxAuditList {
				cut = true
				break
			}
			kept, used, cut = append(kept, c), used+n, cut || ok
		}
		if cut {
			whole, _ := json.Marshal(*l)
			cuts = append(cuts, truncation(field, whole))
		}
		if cut || !slices.Equal(kept, *l) {
			*l = kept
		}
	}
	text("principal", &rec.Principal)
	list("roles", &rec.Roles)
	text("tool", &rec.Tool)
	if len(rec.Args) > 0 && encodedLen(string(rec.Args)) > MaxAuditArgs {
		cuts = append(cuts, truncation("args", rec.Args))
		// The prefix is a JSON string: its quotes and backslashes are
		// escaped once more in the line.
		rec.ArgsPrefix, _ = cutText(string(rec.Args), MaxAuditArgs)
		rec.Args = nil
	}
	list("policies", &rec.Policies)
	text("reason", &rec.Reason)
	text("outcome", &rec.Outcome)
	text("approval", &rec.Approval)
	text("answered_by", &rec.AnsweredBy)
	text("note", &rec.Note)
	rec.Truncated = cuts
}

func truncation(field string, whole []byte) AuditTruncation {
	sum := sha256.Sum256(whole)
	return AuditTruncation{Field: field, Bytes: len(whole), SHA256: hex.EncodeToString(sum[:])}
}

// runeJSONLen is at least the length of r, of size bytes in a string,
// once encoded in a JSON string by encoding/json (which escapes HTML
// characters, control characters, and invalid UTF-8 as U+FFFD).
func runeJSONLen(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1, r < 0x20, r == '<', r == '>', r == '&', r == '\u2028', r == '\u2029':
		return 6
	case r == '"', r == '\\':
		return 2
	}
	return size
}

// encodedLen is at least the length of s encoded as a JSON string,
// without its quotes.
func encodedLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		n += runeJSONLen(r, size)
		i += size
	}
	return n
}

// cutText returns the longest prefix of s whose encoding in a JSON
// string is at most budget bytes, cut between UTF-8 sequences, and
// whether that is less than s.
func cutText(s string, budget int) (string, bool) {
	if len(s)*6 <= budget {
		return s, false
	}
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		n += runeJSONLen(r, size)
		if n > budget {
			return s[:i], true
		}
		i += size
	}
	return s, false
}

// sealRecord encodes rec without its hash, hashes that, and returns the
// line with the hash as its last field.
func sealRecord(rec AuditRecord) (line []byte, hash string, err error) {
	rec.Hash = ""
	body, err := json.Marshal(rec)
	if err != nil {
		return nil, "", err
	}
	body = bytes.TrimSuffix(body, []byte(`,"hash":""}`))
	body = append(body, '}')
	sum := sha256.Sum256(body)
	hash = hex.EncodeToString(sum[:])
	line = append(body[:len(body)-1:len(body)-1], `,"hash":"`+hash+"\"}\n"...)
	return line, hash, nil
}

// An AuditSummary describes a verified audit log; its JSON is what a
// head file holds ([WithHeadFile]).
type AuditSummary struct {
	// Records is how many records the log holds.
	Records int `json:"records"`
	// Head is the hash of the last record (64 zeros for an empty log).
	// Keep it elsewhere to detect records cut from the end, which a
	// chain alone cannot show ([VerifyAuditHead]).
	Head string `json:"head"`
}

// ErrAuditBroken is wrapped by [VerifyAudit] when the chain is broken.
var ErrAuditBroken = errors.New("audit log chain broken")

// VerifyAudit reads an audit log and checks its chain: each line must be
// a record whose hash matches its content, whose Prev is the hash of the
// line before, and whose Seq follows it. It returns an error wrapping
// [ErrAuditBroken] naming the first line that does not verify: an edited
// record fails its hash, a removed or reordered one breaks the links.
func VerifyAudit(r io.Reader) (AuditSummary, error) {
	return verifyAudit(r, nil)
}

// verifyAudit is VerifyAudit, calling seen with each record that
// verifies.
func verifyAudit(r io.Reader, seen func(AuditRecord)) (AuditSummary, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	sum := AuditSummary{Head: genesis}
	for n := 1; ; n++ {
		line, err := readLine(br)
		if err == io.EOF {
			return sum, nil
		}
		if err != nil {
			return sum, fmt.Errorf("line %d: %w", n, err)
		}
		var rec AuditRecord
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return sum, fmt.Errorf("line %d: %w: not a record: %v", n, ErrAuditBroken, err)
		}
		sealed, hash, err := sealRecord(rec)
		if err != nil || !bytes.Equal(bytes.TrimSuffix(sealed, []byte("\n")), line) || hash != rec.Hash {
			return sum, fmt.Errorf("line %d: %w: the record does not match its hash (edited)", n, ErrAuditBroken)
		}
		if rec.Prev != sum.Head {
			return sum, fmt.Errorf("line %d: %w: it does not follow the record before (removed or reordered records)", n, ErrAuditBroken)
		}
		if rec.Seq != uint64(sum.Records)+1 {
			return sum, fmt.Errorf("line %d: %w: sequence %d, want %d", n, ErrAuditBroken, rec.Seq, sum.Records+1)
		}
		sum.Records++
		sum.Head = rec.Hash
		if seen != nil {
			seen(rec)
		}
	}
}

// readLine returns the next line without its newline, refusing lines
// longer than MaxAuditRecord (newline included).
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxAuditRecord {
			// Refused before it is kept: reading a line costs at most
			// the bound, whatever the file holds.
			return nil, fmt.Errorf("%w: line longer than %d bytes", ErrAuditBroken, MaxAuditRecord)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return slices.Clip(bytes.TrimSuffix(line, []byte("\n"))), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(line) > 0:
			return nil, fmt.Errorf("%w: last line has no newline (cut short)", ErrAuditBroken)
		default:
			return nil, err
		}
	}
}

// redactedValue replaces the value of a secret field in audited arguments.
const redactedValue = "[redacted]"

// redact returns the canonical encoding of args with the values of the
// fields named in secret, at any depth, replaced by redactedValue.
func redact(args []byte, secret map[string]bool) json.RawMessage {
	m, _, err := residual.DecodeArgs(args)
	if err != nil {
		return nil
	}
	var walk func(v any, depth int) any
	walk = func(v any, depth int) any {
		if depth > residual.MaxDepth {
			return redactedValue
		}
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if secret[k] {
					v[k] = redactedValue
				} else {
					v[k] = walk(e, depth+1)
				}
			}
		case []any:
			for i, e := range v {
				v[i] = walk(e, depth+1)
			}
		}
		return v
	}
	out, err := json.Marshal(walk(m, 0))
	if err != nil {
		return nil
	}
	return out
}
