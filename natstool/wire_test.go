package natstool

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseReplyTimeout(t *testing.T) {
	const year = 365 * 24 * time.Hour
	tests := []struct {
		name, reply string
		want        time.Duration
		ok, bad     bool
	}{
		{"no mark", "_INBOX.abc.7f", 0, false, false},
		{"plain inbox", "_INBOX.abcdefghijklmnopqrstuv", 0, false, false},
		{"empty", "", 0, false, false},
		{"mark in an earlier token only", "_INBOX.a~t5.7f", 0, false, false},
		{"deadline", "_INBOX.abc.7f~t30000", 30 * time.Second, true, false},
		{"one token subject", "7f~t1", time.Millisecond, true, false},
		{"leading zeros", "_INBOX.abc.7f~t0000000000250", 250 * time.Millisecond, true, false},
		{"a year", "_INBOX.abc.7f~t" + strconv.FormatInt(maxTimeoutMs, 10), year, true, false},
		{"last mark counts", "_INBOX.abc.7~t99~t5", 5 * time.Millisecond, true, false},
		{"nothing after the mark", "_INBOX.abc.7f~t", 0, false, true},
		{"zero", "_INBOX.abc.7f~t0", 0, false, true},
		{"negative", "_INBOX.abc.7f~t-5", 0, false, true},
		{"plus sign", "_INBOX.abc.7f~t+5", 0, false, true},
		{"exponent", "_INBOX.abc.7f~t1e3", 0, false, true},
		{"fraction", "_INBOX.abc.7f~t1.5", 0, false, false}, // "5" is the last token: no mark
		{"letters", "_INBOX.abc.7f~tabc", 0, false, true},
		{"unicode digits", "_INBOX.abc.7f~t١٢", 0, false, true},
		{"more than a year", "_INBOX.abc.7f~t" + strconv.FormatInt(maxTimeoutMs+1, 10), 0, false, true},
		{"too many digits", "_INBOX.abc.7f~t00000000000001", 0, false, true},
		{"overflows int64", "_INBOX.abc.7f~t99999999999999999999999", 0, false, true},
		{"huge", "_INBOX.abc.7f~t" + strings.Repeat("9", 1<<20), 0, false, true},
		{"trailing junk", "_INBOX.abc.7f~t5x", 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok, err := parseReplyTimeout(tt.reply)
			if (err != nil) != tt.bad || ok != tt.ok || d != tt.want {
				t.Fatalf("parseReplyTimeout(%.40q) = %v, %v, %v; want %v, %v, error %v", tt.reply, d, ok, err, tt.want, tt.ok, tt.bad)
			}
			if err != nil && len(err.Error()) > 200 {
				t.Errorf("the error repeats the hostile subject: %d bytes", len(err.Error()))
			}
		})
	}
}

// What the importer writes, the worker reads back, for every time left.
func TestReplyTimeoutRoundTrip(t *testing.T) {
	for _, left := range []time.Duration{-time.Second, 0, time.Microsecond, time.Millisecond, 1500 * time.Millisecond, time.Hour, 10 * 365 * 24 * time.Hour} {
		ms := timeoutMs(left)
		reply := "_INBOX.abc." + strconv.FormatUint(12345, 36) + ReplyTimeoutMark + strconv.FormatInt(ms, 10)
		d, ok, err := parseReplyTimeout(reply)
		if err != nil || !ok || d != time.Duration(ms)*time.Millisecond {
			t.Errorf("left %v: sent %q, read %v, %v, %v", left, reply, d, ok, err)
		}
	}
}

// FuzzReplyTimeout feeds the worker's parser any reply subject: it never
// panics, reads a deadline only when the last token ends with the mark
// and a number in range, and accepts exactly what strconv reads as one.
func FuzzReplyTimeout(f *testing.F) {
	for _, s := range []string{
		"", "_INBOX.a.1", "_INBOX.a.1~t5", "~t", "~t0", "~t-1", "a.b~t99999999999999", "x~t~t1",
		"_INBOX.a.1~t31536000000", "_INBOX.a.1~t31536000001", "a~t1.b", "a~t 1", "~t\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		d, ok, err := parseReplyTimeout(reply)
		last := reply[strings.LastIndexByte(reply, '.')+1:]
		i := strings.LastIndex(last, ReplyTimeoutMark)
		if i < 0 {
			if ok || err != nil {
				t.Fatalf("%q has no mark in its last token, read %v, %v, %v", reply, d, ok, err)
			}
			return
		}
		digits := last[i+len(ReplyTimeoutMark):]
		ms, perr := strconv.ParseUint(digits, 10, 64)
		valid := perr == nil && len(digits) <= maxTimeoutDigits && ms > 0 && ms <= uint64(maxTimeoutMs)
		if valid != (err == nil) || valid != ok {
			t.Fatalf("%q: read %v, %v, %v; strconv says %d, %v", reply, d, ok, err, ms, perr)
		}
		if ok && d != time.Duration(ms)*time.Millisecond {
			t.Fatalf("%q: read %v, want %d ms", reply, d, ms)
		}
	})
}

func TestProtocolOf(t *testing.T) {
	for v, want := range map[string]int{"": 1, "1": 1, "2": 2, "3": 3, "0": 1, "-2": 1, "x": 1, "2.0": 1} {
		if got := protocolOf(v); got != want {
			t.Errorf("protocolOf(%q) = %d, want %d", v, got, want)
		}
	}
}
