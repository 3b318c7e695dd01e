package protected

import (
	"slices"
	"strings"
	"testing"
)

// TestShellWords: the words of the command lines the look at git's
// configuration judges, and the refusal of what it does not model.
func TestShellWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want [][]string // nil: refused
	}{
		{"less -FRX", [][]string{{"less", "-FRX"}}},
		{"sh 'a b' \"c d\"", [][]string{{"sh", "a b", "c d"}}},
		{"git fetch && git rebase; ./x.sh | y", [][]string{{"git", "fetch"}, {"git", "rebase"}, {"./x.sh"}, {"y"}}},
		{"git log \"$@\" $1", [][]string{{"git", "log", "$@", "$1"}}},
		{"f() { sh ./r.sh; }; f", [][]string{{"f()"}, {"{"}, {"sh", "./r.sh"}, {"}"}, {"f"}}},
		{"LD_PRELOAD=./x.so git", [][]string{{"LD_PRELOAD=./x.so", "git"}}},
		{"sh \"$(cat x)\"", nil},
		{"sh $HOME/x", nil},
		{"sh x$1", nil},
		{"sh `x`", nil},
		{"sh < x", nil},
		{"sh x*", nil},
		{"sh x\\ y", nil},
		{"sh 'x", nil},
		{"(sh x)", nil},
		{"f(){ x;}", [][]string{{"f()"}, {"{"}, {"x"}, {"}"}}},
		{"sh x{a,b}", nil},
		{"sh # x", nil},
	} {
		got, err := shellWords(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%q: %q, want refused", tc.in, got)
			}
			continue
		}
		if err != nil || !slices.EqualFunc(got, tc.want, slices.Equal[[]string]) {
			t.Errorf("%q: %q %v, want %q", tc.in, got, err, tc.want)
		}
	}
}

// FuzzShellWords: any command line is split or refused, never a panic,
// and the words stay bounded.
func FuzzShellWords(f *testing.F) {
	for _, s := range []string{"less -FRX", "!f() { sh ./r.sh \"$@\"; }; f", "a 'b' \"c $1\" && d | e ; f", "x=\"$@\"", "{", "}", "f()", "'", "\"", "$", strings.Repeat("a ", 2000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs, err := shellWords(s)
		if err != nil {
			return
		}
		n := 0
		for _, w := range segs {
			n += len(w)
		}
		if n > maxCommandWords {
			t.Fatalf("%d words, over the bound %d", n, maxCommandWords)
		}
	})
}
