package policy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool"
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
	// absent.
	Args     json.RawMessage `json:"args,omitempty"`
	Effect   Effect          `json:"effect,omitempty"`
	Policies []string        `json:"policies,omitempty"`
	Approved bool            `json:"approved,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	// DecisionNanos is how long the decision took.
	DecisionNanos int64 `json:"decision_ns,omitempty"`
	// Outcome is, for an outcome, "ok" or the failed Result's Kind.
	Outcome string `json:"outcome,omitempty"`
	// DurationNanos is, for an outcome, how long the call took.
	DurationNanos int64  `json:"duration_ns,omitempty"`
	Prev          string `json:"prev"`
	Hash          string `json:"hash"`
}

// genesis is the Prev of the first record.
var genesis = strings.Repeat("0", 64)

// maxAuditLine bounds one record's line when reading a log.
const maxAuditLine = 1 << 20

// An AuditLog appends hash-chained decision records, one JSON line each,
// to a writer. It is safe for concurrent use.
type AuditLog struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
	seq    uint64
	prev   string
	now    func() time.Time
}

// NewAuditLog returns an AuditLog that starts a new chain on w.
func NewAuditLog(w io.Writer) *AuditLog {
	return &AuditLog{w: w, prev: genesis, now: time.Now}
}

// OpenAuditFile opens the audit log at path for appending, creating it
// if needed. An existing file is verified first and its chain continued;
// a file that does not verify is not written to, and the error says why.
func OpenAuditFile(path string) (*AuditLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	sum, err := VerifyAudit(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit %s: %w", path, err)
	}
	return &AuditLog{w: f, closer: f, seq: uint64(sum.Records), prev: sum.Head, now: time.Now}, nil
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
		Policies: d.Policies, Approved: d.Approved, DecisionNanos: took.Nanoseconds(),
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
	rec.Seq = l.seq + 1
	rec.Prev = l.prev
	line, hash, err := sealRecord(rec)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if _, err := l.w.Write(line); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	l.seq, l.prev = rec.Seq, hash
	return nil
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

// An AuditSummary describes a verified audit log.
type AuditSummary struct {
	// Records is how many records the log holds.
	Records int
	// Head is the hash of the last record (64 zeros for an empty log).
	// Keep it elsewhere to detect records cut from the end, which a
	// chain alone cannot show.
	Head string
}

// ErrAuditBroken is wrapped by [VerifyAudit] when the chain is broken.
var ErrAuditBroken = errors.New("audit log chain broken")

// VerifyAudit reads an audit log and checks its chain: each line must be
// a record whose hash matches its content, whose Prev is the hash of the
// line before, and whose Seq follows it. It returns an error wrapping
// [ErrAuditBroken] naming the first line that does not verify: an edited
// record fails its hash, a removed or reordered one breaks the links.
func VerifyAudit(r io.Reader) (AuditSummary, error) {
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
	}
}

// readLine returns the next line without its newline, refusing lines
// longer than maxAuditLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxAuditLine {
			return nil, fmt.Errorf("%w: line longer than %d bytes", ErrAuditBroken, maxAuditLine)
		}
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
	m, _, err := decodeArgs(args)
	if err != nil {
		return nil
	}
	var walk func(v any, depth int) any
	walk = func(v any, depth int) any {
		if depth > maxValueDepth {
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
