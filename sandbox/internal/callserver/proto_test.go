package callserver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var validRequests = []Request{
	{Seq: 1, UID: 65534, GID: 65534, Dir: "/workspace", Argv: []string{"true"}},
	{Seq: 2, UID: 1000, GID: 1000, Stdin: true, Dir: "/tmp", Argv: []string{"sh", "-c", "echo hi"}, Env: []string{"A=1", "PATH=/bin", "EMPTY="}},
	{Seq: 1 << 31, UID: 1, GID: 2, Dir: "/", Argv: []string{"/bin/x", "", "ü"}},
}

func TestRequestRoundTrip(t *testing.T) {
	for _, q := range validRequests {
		got, err := DecodeRequest(q.Encode())
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if diff := cmp.Diff(q, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("round trip (-sent +decoded):\n%s", diff)
		}
	}
}

// payload builds a Run payload field by field, so that a test can write
// what Encode never would.
func payload(fields ...any) []byte {
	var b []byte
	for _, f := range fields {
		switch v := f.(type) {
		case uint32:
			b = binary.BigEndian.AppendUint32(b, v)
		case byte:
			b = append(b, v)
		case string:
			b = appendString(b, v)
		case []string:
			b = appendStrings(b, v)
		case []byte:
			b = append(b, v...)
		}
	}
	return b
}

func TestDecodeRequestRejects(t *testing.T) {
	ok := func(extra ...any) []byte {
		return payload(append([]any{uint32(1), uint32(65534), uint32(65534), byte(0), "/w", []string{"true"}, []string{"A=1"}}, extra...)...)
	}
	for _, tc := range []struct {
		name string
		p    []byte
		want string
	}{
		{"empty", nil, "truncated"},
		{"truncated", ok()[:10], "truncated"},
		{"trailing bytes", ok([]byte{0}), "trailing"},
		{"string longer than the payload", payload(uint32(1), uint32(1), uint32(1), byte(0), uint32(1<<31)), "truncated"},
		{"string count larger than the payload", payload(uint32(1), uint32(1), uint32(1), byte(0), "/", uint32(1<<30)), "string count"},
		{"too many strings", payload(uint32(1), uint32(1), uint32(1), byte(0), "/", make([]string, MaxStrings), []string{"A=1"}), "more than"},
		{"unknown flag", payload(uint32(1), uint32(1), uint32(1), byte(2), "/", []string{"true"}, []string{}), "unknown flags"},
		{"no command", payload(uint32(1), uint32(1), uint32(1), byte(0), "/", []string{}, []string{}), "no command"},
		{"empty command", payload(uint32(1), uint32(1), uint32(1), byte(0), "/", []string{""}, []string{}), "no command"},
		{"root user", payload(uint32(1), uint32(0), uint32(1), byte(0), "/", []string{"true"}, []string{}), "root"},
		{"root group", payload(uint32(1), uint32(1), uint32(0), byte(0), "/", []string{"true"}, []string{}), "root"},
		{"relative directory", payload(uint32(1), uint32(1), uint32(1), byte(0), "w", []string{"true"}, []string{}), "not absolute"},
		{"NUL in an argument", payload(uint32(1), uint32(1), uint32(1), byte(0), "/", []string{"true", "a\x00b"}, []string{}), "NUL"},
		{"NUL in the directory", payload(uint32(1), uint32(1), uint32(1), byte(0), "/a\x00", []string{"true"}, []string{}), "NUL"},
		{"environment without =", payload(uint32(1), uint32(1), uint32(1), byte(0), "/", []string{"true"}, []string{"A"}), "NAME=value"},
		{"environment without a name", payload(uint32(1), uint32(1), uint32(1), byte(0), "/", []string{"true"}, []string{"=1"}), "NAME=value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRequest(tc.p)
			if !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("DecodeRequest: %v, want an ErrFrame saying %q", err, tc.want)
			}
		})
	}
}

func TestReaderBounds(t *testing.T) {
	header := func(t byte, n uint32) []byte { return binary.BigEndian.AppendUint32([]byte{t}, n) }
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"nothing", nil, io.EOF},
		{"half a header", []byte{'O', 0, 0}, io.ErrUnexpectedEOF},
		{"payload cut short", append(header('O', 10), "abc"...), io.ErrUnexpectedEOF},
		{"header only, payload missing", header('O', 10), io.ErrUnexpectedEOF},
		{"declared over the maximum", header('O', MaxFrame+1), ErrFrame},
		{"declared 4 GiB", header('O', 1<<32-1), ErrFrame},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(bytes.NewReader(tc.in))
			_, _, err := r.Next()
			if !errors.Is(err, tc.want) {
				t.Errorf("Next: %v, want %v", err, tc.want)
			}
			if errors.Is(tc.want, ErrFrame) && cap(r.buf) != 0 {
				t.Errorf("a refused frame allocated %d bytes", cap(r.buf))
			}
		})
	}
	// Frames in a row, the largest allowed included.
	big := bytes.Repeat([]byte{'x'}, MaxFrame)
	stream := Append(Append(Append(nil, Stdout, []byte("a")), Stderr, big), Exited)
	r := NewReader(bytes.NewReader(stream))
	for _, want := range []struct {
		t byte
		n int
	}{{Stdout, 1}, {Stderr, MaxFrame}, {Exited, 0}} {
		typ, p, err := r.Next()
		if err != nil || typ != want.t || len(p) != want.n {
			t.Fatalf("Next = %q, %d bytes, %v; want %q, %d bytes", typ, len(p), err, want.t, want.n)
		}
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Errorf("after the last frame: %v, want EOF", err)
	}
}

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status uint32
		code   int
		sig    int
	}{
		{"exit 0", 0, 0, 0},
		{"exit 3", 3 << 8, 3, 0},
		{"exit 255", 255 << 8, 255, 0},
		{"killed", 9, -1, 9},
		{"segfault with core", 0x80 | 11, -1, 11},
	} {
		e := Exit{Seq: 4, Status: tc.status, CPU: 12345, Flags: ExitOOM | ExitRetire}
		got, err := DecodeExit(e.Encode())
		if err != nil || got != e {
			t.Fatalf("%s: round trip %+v, %v", tc.name, got, err)
		}
		if got.ExitCode() != tc.code || got.Signaled() != tc.sig {
			t.Errorf("%s: code %d signal %d, want %d %d", tc.name, got.ExitCode(), got.Signaled(), tc.code, tc.sig)
		}
	}
	if _, err := DecodeExit(make([]byte, 19)); !errors.Is(err, ErrFrame) {
		t.Errorf("short exit: %v", err)
	}
	if _, err := DecodeExit(make([]byte, 21)); !errors.Is(err, ErrFrame) {
		t.Errorf("long exit: %v", err)
	}
}

func TestFailedAndHello(t *testing.T) {
	seq, reason, msg, err := DecodeFailed(EncodeFailed(9, FailedNotFound, strings.Repeat("m", 2*MaxMessage)))
	if err != nil || seq != 9 || reason != FailedNotFound || len(msg) != MaxMessage {
		t.Errorf("failed: %d %d %d bytes %v", seq, reason, len(msg), err)
	}
	if _, _, _, err := DecodeFailed(append(EncodeFailed(9, 0, ""), strings.Repeat("m", MaxMessage+1)...)); !errors.Is(err, ErrFrame) {
		t.Errorf("oversized failure message: %v", err)
	}
	v, tok, err := DecodeHello(EncodeHello("secret"))
	if err != nil || v != Version || tok != "secret" {
		t.Errorf("hello: %d %q %v", v, tok, err)
	}
	if _, _, err := DecodeHello(append(EncodeHello("secret"), 0)); !errors.Is(err, ErrFrame) {
		t.Errorf("hello with trailing bytes: %v", err)
	}
}

// FuzzReader feeds arbitrary streams to the frame reader and every
// payload to every decoder: nothing panics, nothing allocates past the
// frame bound, and a request that decodes encodes back to the same bytes.
func FuzzReader(f *testing.F) {
	for _, q := range validRequests {
		f.Add(Append(nil, Run, q.Encode()))
	}
	e := Exit{Seq: 1, Status: 9}
	f.Add(Append(Append(nil, Stdout, Seq(1), []byte("out")), Exited, e.Encode()))
	f.Add(Append(nil, Hello, EncodeHello("t")))
	f.Add(Append(nil, Failed, EncodeFailed(1, FailedNotFound, "x: not found")))
	f.Add([]byte{'R', 0xff, 0xff, 0xff, 0xff})
	f.Add(payload(byte('R'), uint32(17), uint32(1), uint32(1), uint32(1), byte(0), uint32(1<<30)))
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := NewReader(bytes.NewReader(stream))
		for {
			_, p, err := r.Next()
			if err != nil {
				break
			}
			if len(p) > MaxFrame || cap(r.buf) > MaxFrame {
				t.Fatalf("payload of %d bytes, buffer of %d", len(p), cap(r.buf))
			}
			if q, err := DecodeRequest(p); err == nil {
				if again := q.Encode(); !bytes.Equal(again, p) {
					t.Fatalf("request %+v encodes to %x, decoded from %x", q, again, p)
				}
			}
			DecodeExit(p)
			DecodeHello(p)
			DecodeFailed(p)
			SplitSeq(p)
		}
	})
}
