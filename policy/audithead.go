package policy

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/miniopenclaw/tool/internal/regularfile"
	"io"
	"log/slog"
	"os"

	"github.com/miniopenclaw/tool/internal/atomicfile"
	"github.com/miniopenclaw/tool/internal/boundedfile"
)

// ErrAuditCut is wrapped by [VerifyAuditHead] when a log does not hold
// the head kept elsewhere: records were cut from its end (or it is
// another log). It wraps [ErrAuditBroken].
var ErrAuditCut = fmt.Errorf("%w: records cut from its end", ErrAuditBroken)

// maxHeadFile bounds a head file read.
const maxHeadFile = 4 << 10

// WithHeadFile makes the log publish its head, after each record it
// appends and when [OpenAuditFile] opens it: path then holds the JSON of
// an [AuditSummary], {"records":N,"head":"…"}, replaced atomically (a
// temporary file in the same directory, synced, then renamed over path;
// the log's own file is synced first, so the head never names a record
// the disk may lack). That costs two syncs per record. Keep path, or a
// copy of it, where whoever may edit the log cannot write:
// [VerifyAuditHead] (clawtool audit verify --head-file) then detects
// records cut from the log's end, which the chain alone cannot show. A
// head that cannot be published makes the record's append return an
// error, after the record was written.
//
// [OpenAuditFile] reads a head file that exists first, and refuses to
// continue a log that does not hold its head.
func WithHeadFile(path string) AuditOption {
	return func(l *AuditLog) { l.headFile = path }
}

// WithHeadLogger makes the log log its head after each record it
// appends, at Info, as "audit head" with the attributes records and
// head: a log collector kept apart from the log then holds checkpoints
// for [VerifyAuditHead].
func WithHeadLogger(logger *slog.Logger) AuditOption {
	return func(l *AuditLog) { l.headLog = logger }
}

// keptHead returns the head the head file holds, the genesis head when
// there is no head file or it does not exist yet.
func (l *AuditLog) keptHead() (AuditSummary, error) {
	none := AuditSummary{Head: genesis}
	if l.headFile == "" {
		return none, nil
	}
	data, err := readHeadFile(l.headFile)
	if errors.Is(err, os.ErrNotExist) {
		return none, nil
	}
	if err != nil {
		return none, err
	}
	return ParseAuditHead(data)
}

// readHeadFile reads at most maxHeadFile bytes of path, refusing a file
// that others may write or that another user owns (checkUnshared): they
// could put the head of a log they rewrote there.
func readHeadFile(path string) ([]byte, error) {
	// Opened without waiting on a named pipe, and judged as opened.
	f, fi, err := regularfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := checkUnshared(path, fi, "replace the head kept to check the log with that of a log they rewrote"); err != nil {
		return nil, err
	}
	data, err := boundedfile.ReadAll(f, path, maxHeadFile)
	if _, ok := errors.AsType[*boundedfile.TooLargeError](err); ok {
		return nil, fmt.Errorf("head file %w", err)
	}
	return data, err
}

// publish publishes the head where the options say. l.mu is held, or l
// is not shared yet.
func (l *AuditLog) publish() error {
	head := AuditSummary{Records: int(l.seq), Head: l.prev}
	if l.headLog != nil {
		l.headLog.Info("audit head", slog.Int("records", head.Records), slog.String("head", head.Head))
	}
	if l.headFile == "" {
		return nil
	}
	if l.file != nil {
		if err := l.file.Sync(); err != nil {
			return fmt.Errorf("its head could not be published: %w", err)
		}
	}
	data, _ := json.Marshal(head)
	if err := atomicfile.WriteSynced(l.headFile, append(data, '\n')); err != nil {
		return fmt.Errorf("its head could not be published: %w", err)
	}
	return nil
}

// ReadAuditHeadFile reads the head kept in the file path (as
// [WithHeadFile] writes it, or a bare head hash; see [ParseAuditHead]),
// reading at most 4 KiB. On Unix a file that users other than its owner
// may write, or whose owner is neither this process's user nor root, is
// refused: whoever may write it could put there the head of a log they
// cut or rewrote, and a check against it would prove nothing.
func ReadAuditHeadFile(path string) (AuditSummary, error) {
	data, err := readHeadFile(path)
	if err != nil {
		return AuditSummary{}, err
	}
	return ParseAuditHead(data)
}

// ParseAuditHead reads a head kept elsewhere: the JSON of an
// [AuditSummary] as [WithHeadFile] writes it, or a bare head hash (64
// lowercase hex digits, as clawtool audit verify prints it), whose
// Records is then 0 (unknown). Space around it is ignored.
func ParseAuditHead(data []byte) (AuditSummary, error) {
	data = bytes.TrimSpace(data)
	var h AuditSummary
	if len(data) > 0 && data[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&h); err != nil || dec.More() {
			return h, fmt.Errorf("audit head: not {\"records\":N,\"head\":\"HASH\"}: %v", err)
		}
	} else {
		h.Head = string(data)
	}
	if b, err := hex.DecodeString(h.Head); err != nil || len(b) != 32 || hex.EncodeToString(b) != h.Head {
		return h, fmt.Errorf("audit head %.80q: not a head hash (64 lowercase hex digits)", h.Head)
	}
	if h.Records < 0 || (h.Head == genesis && h.Records != 0) {
		return h, fmt.Errorf("audit head: %d records for head %s", h.Records, h.Head)
	}
	return h, nil
}

// VerifyAuditHead verifies the log as [VerifyAudit] does, and checks it
// against a head kept elsewhere (a checkpoint): the log must hold the
// record whose hash is want.Head, as its record number want.Records when
// that is not 0. Records appended after the checkpoint are fine; a log
// that lacks it gets an error wrapping [ErrAuditCut] that says what was
// kept and where the log ends. The genesis head (64 zeros) is held by
// every log.
func VerifyAuditHead(r io.Reader, want AuditSummary) (AuditSummary, error) {
	found := want.Head == genesis
	at := 0
	sum, err := verifyAudit(r, func(rec AuditRecord) {
		if rec.Hash == want.Head {
			found, at = true, int(rec.Seq)
		}
	})
	if err != nil {
		return sum, err
	}
	if !found {
		kept := "the kept head " + want.Head
		if want.Records > 0 {
			kept += fmt.Sprintf(" (record %d)", want.Records)
		}
		return sum, fmt.Errorf("%w: %s is not in the log, which ends at record %d with head %s", ErrAuditCut, kept, sum.Records, sum.Head)
	}
	if want.Records > 0 && at != want.Records {
		return sum, fmt.Errorf("%w: the kept head %s is record %d of the log, not record %d", ErrAuditBroken, want.Head, at, want.Records)
	}
	return sum, nil
}
