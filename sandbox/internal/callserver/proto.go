// Package callserver is the call server of the container backend's warm
// containers, and the protocol the backend speaks to it.
//
// A warm container's main process is the host program's own binary,
// bind-mounted read-only into the container and started with [helper.Env]
// set to [Mode]. This package's init function sees that, connects to the
// unix socket named by [SocketEnv] and serves calls until the connection
// ends; it never returns to the rest of the program's initialisation. A
// call is then a fork and exec inside the container instead of an engine
// exec, which costs tens of milliseconds per call.
//
// The protocol is a stream of frames, each a type byte, a 4-byte
// big-endian payload length and the payload, in both directions. Frames are
// bounded ([MaxFrame]) and so is everything decoded from them: a malformed
// or hostile frame is an error, never a panic or an allocation larger
// than the frame.
//
// Host to server: [Run] starts a call ([Request]); [Stdin] carries a chunk
// of its standard input, at most one unacknowledged at a time; [StdinEOF]
// closes it; [Kill] kills the call's whole process tree. Server to host:
// [Hello] first, once; then per call [Started] or [Failed]; [Stdout] and
// [Stderr] chunks; [StdinAck] for each Stdin chunk; and [Exited]
// ([Exit]) last. Every call frame starts with the call's sequence number,
// and a frame of another call is ignored, so that a late frame of an
// ended call cannot reach the next one.
package callserver

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Mode is the value of the helper's environment variable that makes the
// binary a call server.
const Mode = "callserver"

// Environment of the server process; the server removes these from the
// environment its calls inherit.
const (
	// SocketEnv names the unix socket the server connects to.
	SocketEnv = "CLAWTOOL_CALLSERVER_SOCKET"
	// TokenEnv is a secret the server sends back in its Hello, so that the
	// host knows the connection is the server it started.
	TokenEnv = "CLAWTOOL_CALLSERVER_TOKEN"
)

// Version is the protocol version a Hello carries.
const Version = 1

// Bounds of the protocol.
const (
	// MaxFrame is the largest payload a frame may declare.
	MaxFrame = 1 << 20
	// MaxStrings bounds the number of argument and environment strings of
	// a Request together.
	MaxStrings = 1 << 15
	// Chunk is the largest piece of output or input one frame carries.
	Chunk = 32 << 10
	// MaxMessage bounds the text of a Failed frame.
	MaxMessage = 4 << 10
)

// Frame types.
const (
	Run      byte = 'R' // host: Request
	Stdin    byte = 'I' // host: seq, bytes
	StdinEOF byte = 'C' // host: seq
	Kill     byte = 'K' // host: seq

	Hello    byte = 'H' // server: version, token
	Started  byte = 'S' // server: seq, pid
	Failed   byte = 'F' // server: seq, reason byte, message
	Stdout   byte = 'O' // server: seq, bytes
	Stderr   byte = 'E' // server: seq, bytes
	StdinAck byte = 'A' // server: seq
	Exited   byte = 'X' // server: Exit
)

// Reasons of a Failed frame.
const (
	FailedOther    byte = 0
	FailedNotFound byte = 1 // the command is not in the call's PATH
)

// ErrFrame reports a frame that breaks the protocol.
var ErrFrame = errors.New("callserver: malformed frame")

// A Reader reads frames from a stream.
type Reader struct {
	r   io.Reader
	hdr [5]byte
	buf []byte
}

// NewReader returns a Reader of r. It buffers what it reads from r (a
// frame's header and payload usually arrive in one read rather than two),
// so it must be r's only reader.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 64<<10)} }

// Next reads one frame and returns its type and payload. The payload is
// valid until the next call. A frame declaring more than [MaxFrame] bytes
// is an error wrapping [ErrFrame], and nothing of it is allocated; a
// stream ending inside a frame is [io.ErrUnexpectedEOF], and one ending
// between frames [io.EOF].
func (r *Reader) Next() (byte, []byte, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(r.hdr[1:])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("%w: %d-byte payload, at most %d", ErrFrame, n, MaxFrame)
	}
	if cap(r.buf) < int(n) {
		r.buf = make([]byte, n)
	}
	r.buf = r.buf[:n]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return r.hdr[0], r.buf, nil
}

// Append appends a frame of type t whose payload is the concatenation of
// parts to b. A payload over [MaxFrame] is a programming error and panics.
func Append(b []byte, t byte, parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n > MaxFrame {
		panic("callserver: frame payload too large")
	}
	b = append(b, t)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// Seq encodes a call's sequence number, the first field of every call
// frame.
func Seq(seq uint32) []byte { return binary.BigEndian.AppendUint32(nil, seq) }

// SplitSeq returns the sequence number that starts a call frame's payload
// and the rest of it.
func SplitSeq(p []byte) (uint32, []byte, error) {
	if len(p) < 4 {
		return 0, nil, fmt.Errorf("%w: no sequence number", ErrFrame)
	}
	return binary.BigEndian.Uint32(p), p[4:], nil
}

// A Request asks the server to run a command.
type Request struct {
	// Seq numbers the call; frames of other calls are ignored.
	Seq uint32
	// UID and GID are the user and group the command runs as; never 0.
	UID, GID uint32
	// Stdin says that Stdin frames follow; otherwise the command's
	// standard input is empty.
	Stdin bool
	// Dir is the absolute working directory.
	Dir string
	// Argv is the command; Argv[0] is looked up in the PATH of Env.
	Argv []string
	// Env is added to the server's own environment (the image's, with the
	// server's variables removed), replacing variables of the same name.
	Env []string
}

// Encode returns the Run payload of q.
func (q *Request) Encode() []byte {
	b := binary.BigEndian.AppendUint32(nil, q.Seq)
	b = binary.BigEndian.AppendUint32(b, q.UID)
	b = binary.BigEndian.AppendUint32(b, q.GID)
	flags := byte(0)
	if q.Stdin {
		flags = 1
	}
	b = append(b, flags)
	b = appendString(b, q.Dir)
	b = appendStrings(b, q.Argv)
	return appendStrings(b, q.Env)
}

// DecodeRequest decodes and checks a Run payload: the command must be
// given, the strings free of NUL bytes, the directory absolute, the user
// and group not root, and the environment NAME=value pairs.
func DecodeRequest(p []byte) (Request, error) {
	d := decoder{p: p}
	q := Request{Seq: d.u32(), UID: d.u32(), GID: d.u32()}
	flags := d.byte()
	q.Stdin = flags&1 != 0
	q.Dir = d.str()
	q.Argv = d.strs()
	q.Env = d.strs()
	if d.err == nil && len(d.p) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return Request{}, d.err
	}
	switch {
	case flags&^1 != 0:
		return Request{}, fmt.Errorf("%w: unknown flags %#x", ErrFrame, flags)
	case len(q.Argv) == 0 || q.Argv[0] == "":
		return Request{}, fmt.Errorf("%w: no command", ErrFrame)
	case q.UID == 0 || q.GID == 0:
		return Request{}, fmt.Errorf("%w: refusing to run a call as root", ErrFrame)
	case !strings.HasPrefix(q.Dir, "/"):
		return Request{}, fmt.Errorf("%w: working directory %q is not absolute", ErrFrame, q.Dir)
	}
	if hasNUL(q.Dir) || slices.ContainsFunc(q.Argv, hasNUL) || slices.ContainsFunc(q.Env, hasNUL) {
		return Request{}, fmt.Errorf("%w: a string holds a NUL byte", ErrFrame)
	}
	for _, kv := range q.Env {
		if i := strings.IndexByte(kv, '='); i <= 0 {
			return Request{}, fmt.Errorf("%w: environment entry %q is not NAME=value", ErrFrame, kv)
		}
	}
	return q, nil
}

// Flags of an Exit.
const (
	// ExitOOM: the container's memory cgroup counted an OOM kill during
	// the call.
	ExitOOM = 1 << iota
	// ExitPIDsMax: the container's pids cgroup refused a fork during the
	// call.
	ExitPIDsMax
	// ExitLeftover: a process of the call could not be reaped after it
	// was killed; the container should not run further calls.
	ExitLeftover
	// ExitRetire: the server is near a limit of its own (its CPU time
	// counts against the container's RLIMIT_CPU) and should be replaced.
	ExitRetire
)

// An Exit is how a call ended: the Exited payload.
type Exit struct {
	Seq uint32
	// Status is the command's wait status as Linux encodes it.
	Status uint32
	// CPU is the user and system CPU time of the command and the
	// descendants it waited for, in nanoseconds.
	CPU uint64
	// Flags are Exit* bits.
	Flags uint32
}

// Encode returns the Exited payload of e.
func (e *Exit) Encode() []byte {
	b := binary.BigEndian.AppendUint32(nil, e.Seq)
	b = binary.BigEndian.AppendUint32(b, e.Status)
	b = binary.BigEndian.AppendUint64(b, e.CPU)
	return binary.BigEndian.AppendUint32(b, e.Flags)
}

// DecodeExit decodes an Exited payload.
func DecodeExit(p []byte) (Exit, error) {
	d := decoder{p: p}
	e := Exit{Seq: d.u32(), Status: d.u32(), CPU: d.u64(), Flags: d.u32()}
	if d.err == nil && len(d.p) != 0 {
		d.fail("trailing bytes")
	}
	return e, d.err
}

// Signaled and ExitCode read a wait status: the signal that ended the
// process (0 if none) and its exit status (-1 if a signal ended it).
func (e *Exit) Signaled() int {
	if e.Status&0x7f != 0 && e.Status&0x7f != 0x7f {
		return int(e.Status & 0x7f)
	}
	return 0
}

// ExitCode is the command's exit status, or -1 when a signal ended it.
func (e *Exit) ExitCode() int {
	if e.Signaled() != 0 {
		return -1
	}
	return int(e.Status>>8) & 0xff
}

// EncodeHello returns the Hello payload carrying token.
func EncodeHello(token string) []byte {
	b := binary.BigEndian.AppendUint32(nil, Version)
	return appendString(b, token)
}

// DecodeHello decodes a Hello payload into its version and token.
func DecodeHello(p []byte) (uint32, string, error) {
	d := decoder{p: p}
	v, tok := d.u32(), d.str()
	if d.err == nil && len(d.p) != 0 {
		d.fail("trailing bytes")
	}
	return v, tok, d.err
}

// EncodeFailed returns the Failed payload of call seq, cutting msg at
// [MaxMessage] bytes.
func EncodeFailed(seq uint32, reason byte, msg string) []byte {
	if len(msg) > MaxMessage {
		msg = msg[:MaxMessage]
	}
	b := binary.BigEndian.AppendUint32(nil, seq)
	return append(append(b, reason), msg...)
}

// DecodeFailed decodes a Failed payload.
func DecodeFailed(p []byte) (seq uint32, reason byte, msg string, err error) {
	d := decoder{p: p}
	seq, reason = d.u32(), d.byte()
	if d.err != nil {
		return 0, 0, "", d.err
	}
	if len(d.p) > MaxMessage {
		return 0, 0, "", fmt.Errorf("%w: failure message of %d bytes", ErrFrame, len(d.p))
	}
	return seq, reason, string(d.p), nil
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

// decoder reads fields off a payload; the first problem sticks in err and
// every later read returns zero values.
type decoder struct {
	p       []byte
	err     error
	strings int
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrFrame, what)
	}
	d.p = nil
}

func (d *decoder) need(n int) bool {
	if d.err != nil {
		return false
	}
	if len(d.p) < n {
		d.fail("truncated")
		return false
	}
	return true
}

func (d *decoder) byte() byte {
	if !d.need(1) {
		return 0
	}
	v := d.p[0]
	d.p = d.p[1:]
	return v
}

func (d *decoder) u32() uint32 {
	if !d.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(d.p)
	d.p = d.p[4:]
	return v
}

func (d *decoder) u64() uint64 {
	if !d.need(8) {
		return 0
	}
	v := binary.BigEndian.Uint64(d.p)
	d.p = d.p[8:]
	return v
}

func (d *decoder) str() string {
	n := d.u32()
	if !d.need(int(min(n, MaxFrame+1))) {
		return ""
	}
	s := string(d.p[:n])
	d.p = d.p[n:]
	return s
}

// strs reads a count and that many strings. The count is checked against
// what the payload can hold (4 bytes a string at least) and against
// MaxStrings before anything is allocated.
func (d *decoder) strs() []string {
	n := d.u32()
	if d.err != nil {
		return nil
	}
	if n > uint32(len(d.p)/4) {
		d.fail("string count larger than the payload")
		return nil
	}
	if d.strings += int(n); d.strings > MaxStrings {
		d.fail(fmt.Sprintf("more than %d strings", MaxStrings))
		return nil
	}
	out := make([]string, 0, n)
	for i := uint32(0); i < n && d.err == nil; i++ {
		out = append(out, d.str())
	}
	return out
}

// hasNUL reports whether s holds a NUL byte, which no C string can.
func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }
