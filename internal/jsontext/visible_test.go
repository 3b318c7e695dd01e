package jsontext

import (
	"strings"
	"testing"
)

func TestVisible(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"a\x1b[31mb", `a\u001B[31mb`},
		{"bell\x07 nul\x00 del\x7f", `bell\u0007 nul\u0000 del\u007F`},
		{"tab\tnewline\n", `tab\u0009newline\u000A`},
		{"rtl\u202eevil", `rtl\u202Eevil`},
		{"zero\u200bwidth", `zero\u200Bwidth`},
		{"c1\u0085", `c1\u0085`},
		{"tag\U000E0041", `tag\U000E0041`},
		{"line\u2028separator", `line\u2028separator`},
		{"private\ue000use", `private\uE000use`},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"ünïcödé ſ K", "ünïcödé ſ K"},
	} {
		if got := Visible(tc.in); got != tc.want {
			t.Errorf("Visible(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestShorten(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "ab…"},
		{"ſſſ", 3, "ſſſ"},
		{"ſſſſ", 3, "ſſ…"},
		{"", 3, ""},
	} {
		if got := Shorten(tc.in, tc.n); got != tc.want {
			t.Errorf("Shorten(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestAppendPointerToken(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"a/b~c", "a~1b~0c"},
		{"\x1b", `\u001B`},
		{strings.Repeat("k", 1000), strings.Repeat("k", MaxPointerToken-1) + "…"},
		{strings.Repeat("/", 100), strings.Repeat("~1", MaxPointerToken-1) + "…"},
	} {
		if got := string(AppendPointerToken(nil, tc.key)); got != tc.want {
			t.Errorf("AppendPointerToken(%.20q…) = %q, want %q", tc.key, got, tc.want)
		}
	}
	if got := ShortKey([]byte(strings.Repeat("ſ", 1<<20))); got != strings.Repeat("ſ", MaxPointerToken-1)+"…" {
		t.Errorf("ShortKey of a long key = %q", got)
	}
}
