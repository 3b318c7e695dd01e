package showtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "hello\n\tworld", "hello\n\tworld"},
		{"ansi colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"osc 52 clipboard", "\x1b]52;c;cm0=\x07", `\x1b]52;c;cm0=\x07`},
		{"nul and bell", "a\x00b\x07", `a\x00b\x07`},
		{"carriage return overwrite", "safe\rEVIL", `safe\rEVIL`},
		{"delete", "a\x7f", `a\x7f`},
		{"invalid utf8", "a\xff\xfeb", `a\xff\xfeb`},
		{"replacement character kept", "a\uFFFDb", "a\uFFFDb"},
		{"c1 control", "a\u009bb", `a\u009bb`},
		{"bidi override", "x\u202ey", `x\u202ey`},
		{"bidi isolate", "x\u2066y", `x\u2066y`},
		{"zero width space", "x\u200by", `x\u200by`},
		{"byte order mark", "\ufeffx", `\ufeffx`},
		{"line separator", "x\u2028y\u2029", `x\u2028y\u2029`},
		{"tag character", "x\U000E0041", `x\U000e0041`},
		{"private use", "x\ue000", `x\ue000`},
		{"unassigned", "x\U0010FFFF", `x\U0010ffff`},
		{"unicode kept", "héllo 世界 ſ K\u00a0", "héllo 世界 ſ K\u00a0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in); got != tc.want {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestLine(t *testing.T) {
	if got, want := Line("a\nb\tc\x1b"), `a\nb\tc\x1b`; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
	if got := Line("plain text"); got != "plain text" {
		t.Errorf("Line(plain) = %q", got)
	}
}

func TestTextDoesNotAllocateWhenNothingIsEscaped(t *testing.T) {
	s := strings.Repeat("plain ünïcödé line\n", 100)
	if n := testing.AllocsPerRun(100, func() { _ = Text(s) }); n != 0 {
		t.Errorf("Text of shown text allocated %v times", n)
	}
}

// FuzzText: whatever the input, the result is valid UTF-8 whose every
// character is shown as itself, a newline or a tab, and text that needs
// no escape comes back unchanged.
func FuzzText(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J", "\xff", "\u202e", "a\r\nb", "\U000E0041"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Text(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Text(%q) = %q, not valid UTF-8", s, got)
		}
		for _, r := range got {
			if !Shown(r) && r != '\n' && r != '\t' {
				t.Fatalf("Text(%q) = %q holds %U", s, got, r)
			}
		}
		if firstEscaped(s, true) < 0 && got != s {
			t.Fatalf("Text(%q) = %q changed text that needs no escape", s, got)
		}
		line := Line(s)
		if strings.ContainsAny(line, "\n\t") {
			t.Fatalf("Line(%q) = %q holds a newline or tab", s, line)
		}
	})
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc…"},
		{"aé", 2, "a…"}, // é is two bytes: the cut backs off to a rune start
		{"ééé", 4, "éé…"},
		{"é", 0, "…"},
	} {
		if got := Cut(tc.in, tc.n); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
