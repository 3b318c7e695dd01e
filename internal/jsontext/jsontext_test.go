package jsontext

import (
	"strings"
	"testing"
)

func TestReadString(t *testing.T) {
	for _, tt := range []struct {
		in, want, err string
	}{
		{`"plain"`, "plain", ""},
		{`"a\"b\\c\/d\b\f\n\r\t"`, "a\"b\\c/d\b\f\n\r\t", ""},
		{`"\u00e9\ud83d\ude00"`, "é😀", ""},
		{"\"é😀\"", "é😀", ""},
		{`"\ud800"`, "", `lone surrogate \ud800`},
		{`"\udc00\ud800"`, "", `lone surrogate \udc00`},
		{`"\ud800\u0041"`, "", `lone surrogate \ud800`},
		{`"\x"`, "", `invalid escape \x`},
		{`"\u12"`, "", `invalid \u escape`},
		{"\"a\nb\"", "", "control character 0x0a"},
		{"\"\xff\"", "", "invalid UTF-8"},
		{"\"\xed\xa0\x80\"", "", "invalid UTF-8"}, // a surrogate encoded in UTF-8
		{`"open`, "", "unexpected end of input inside a string"},
		{`"open\`, "", "unexpected end of input inside a string"},
	} {
		got, next, err := ReadString([]byte(tt.in), 0, nil)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ReadString(%q) error = %v, want one containing %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || string(got) != tt.want || next != len(tt.in)):
			t.Errorf("ReadString(%q) = %q, %d, %v; want %q, %d, nil", tt.in, got, next, err, tt.want, len(tt.in))
		}
	}
}

func TestReadNumber(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // the literal read, or "" for an error
	}{
		{"0", "0"}, {"-0", "-0"}, {"12.5e-3,", "12.5e-3"}, {"1E+2]", "1E+2"},
		{"01", "0"}, // a leading zero ends the number; the caller sees the 1
		{"-", ""}, {"+1", ""}, {"1.", ""}, {".5", ""}, {"1e", ""}, {"NaN", ""}, {"-Infinity", ""},
	} {
		lit, _, err := ReadNumber([]byte(tt.in), 0)
		if got := string(lit); (tt.want == "") != (err != nil) || got != tt.want {
			t.Errorf("ReadNumber(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestIsInteger(t *testing.T) {
	for in, want := range map[string]bool{"3": true, "-0": true, "3.0": true, "1e2": true, "2.5": false, "1e-1": false, "123456789012345678901234567890": true} {
		if got := IsInteger([]byte(in)); got != want {
			t.Errorf("IsInteger(%s) = %v, want %v", in, got, want)
		}
	}
}

func TestSkipValue(t *testing.T) {
	for _, tt := range []struct {
		in  string
		err string
	}{
		{`{"a":[1,{"b":null}],"c":"d"}`, ""},
		{`{"a":1,"a":2}`, `duplicate key "a"`},
		{`{"a":{"b":1,"b":2}}`, `duplicate key "b"`},
		{`{"a":1,"\u0061":2}`, `duplicate key "a"`},
		{`{"\u0061":1,"b":2,"a":2}`, `duplicate key "a"`},
		// Past the first eight keys, which are kept apart from the rest.
		{`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10}`, ""},
		{`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k1":10}`, `duplicate key "k1"`},
		{`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k8":10}`, `duplicate key "k8"`},
		{`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k9":11}`, `duplicate key "k9"`},
		{`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"\u006b10":11}`, `duplicate key "k10"`},
		{strings.Repeat("[", 65) + strings.Repeat("]", 65), "nested too deeply (more than 64 levels)"},
		{strings.Repeat("[", 64) + strings.Repeat("]", 64), ""},
		{`[1,]`, "invalid character ']', expected a value"},
		{`{"a" 1}`, "expected ':'"},
		{`tru`, "unexpected end of input"},
		{`nul!`, "expected a value"},
	} {
		_, err := SkipValue([]byte(tt.in), 0, 0, 64)
		if (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("SkipValue(%.30q) error = %v, want %q", tt.in, err, tt.err)
		}
	}
}

// TestSkipValueAllocs checks that skipping an object of a few keys, the
// members of a usual request, allocates nothing.
func TestSkipValueAllocs(t *testing.T) {
	data := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"calc","arguments":{"expression":"2+3"}}}`)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := SkipValue(data, 0, 0, 64); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("SkipValue allocated %v times, want 0", n)
	}
}

func TestCheckFormat(t *testing.T) {
	for _, tt := range []struct {
		format, s string
		ok        bool
	}{
		{"date-time", "2026-12-24T10:00:00Z", true},
		{"date-time", "2026-12-24t10:00:00.5+01:00", true},
		{"date-time", "2026-12-24T10:00:00+24:00", false}, // time.Time parses it; RFC 3339 does not allow it
		{"date-time", "2026-12-24 10:00:00Z", false},
		{"date-time", "2026-02-30T10:00:00Z", false},
		{"date", "2024-02-29", true},
		{"date", "2026-02-29", false},
		{"time", "23:59:60Z", true}, // a leap second, at 23:59 UTC only
		{"time", "12:59:60Z", false},
		{"email", "a.b@example.com", true},
		{"email", "not an email", false},
		{"uuid", "123e4567-e89b-12d3-a456-426614174000", true},
		{"uuid", "123e4567e89b12d3a456426614174000", false},
		{"ipv4", "192.168.0.1", true},
		{"ipv4", "192.168.00.1", false},
		{"ipv6", "::1", true},
		{"ipv6", "fe80::1%eth0", false},
		{"uri", "https://example.com/a?b", true},
		{"uri", "/relative/path", false},
	} {
		known, ok := CheckFormat(tt.format, []byte(tt.s))
		if !known || ok != tt.ok {
			t.Errorf("CheckFormat(%q, %q) = %v, %v; want true, %v", tt.format, tt.s, known, ok, tt.ok)
		}
	}
	if known, ok := CheckFormat("hostname", []byte("anything")); known || !ok {
		t.Errorf("CheckFormat of an unasserted format = %v, %v; want false, true", known, ok)
	}
}
