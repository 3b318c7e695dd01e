package dag

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuild(t *testing.T) {
	for _, tt := range []struct {
		name           string
		ids            []string
		deps           [][]string
		wantDeps       [][]int
		wantDependents [][]int
	}{
		{
			name:           "independent",
			ids:            []string{"a", "b", ""},
			wantDeps:       [][]int{nil, nil, nil},
			wantDependents: [][]int{nil, nil, nil},
		},
		{
			name:           "diamond, forward reference and repeats",
			ids:            []string{"d", "a", "b", "c"},
			deps:           [][]string{{"b", "c", "b"}, nil, {"a"}, {"a"}},
			wantDeps:       [][]int{{2, 3}, nil, {1}, {1}},
			wantDependents: [][]int{nil, {2, 3}, {0}, {0}},
		},
		{
			name:           "empty ID nobody depends on",
			ids:            []string{"", "", "x"},
			deps:           [][]string{{"x"}, {"x"}},
			wantDeps:       [][]int{{2}, {2}, nil},
			wantDependents: [][]int{nil, nil, {0, 1}},
		},
	} {
		for _, big := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/big=%v", tt.name, big), func(t *testing.T) {
				ids, wantDeps, wantDependents := tt.ids, tt.wantDeps, tt.wantDependents
				if big { // the same graph among nodes nobody depends on, found through the index
					ids, wantDeps, wantDependents = pad(ids), padNil(wantDeps), padNil(wantDependents)
				}
				g, err := Build(ids, tt.deps)
				if err != nil {
					t.Fatalf("Build: %v", err)
				}
				if diff := cmp.Diff(wantDeps, lists(g.Len(), g.Deps)); diff != "" {
					t.Errorf("Deps (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(wantDependents, lists(g.Len(), g.Dependents)); diff != "" {
					t.Errorf("Dependents (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// lists returns list(i) for each of n nodes, nil where it is empty.
func lists(n int, list func(int) []int) [][]int {
	out := make([][]int, n)
	for i := range out {
		if l := list(i); len(l) > 0 {
			out[i] = l
		}
	}
	return out
}

// pad returns ids followed by more IDs than a small graph has, so that
// a Builder finds them through its index.
func pad(ids []string) []string {
	out := append([]string(nil), ids...)
	for i := 0; len(out) <= SmallGraph; i++ {
		out = append(out, fmt.Sprint("pad", i))
	}
	return out
}

// padNil returns lists followed by nil lists up to the length of pad's.
func padNil(lists [][]int) [][]int {
	out := append([][]int(nil), lists...)
	for len(out) <= SmallGraph {
		out = append(out, nil)
	}
	return out
}

func TestBuildErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		ids  []string
		deps [][]string
		want string
	}{
		{"duplicate", []string{"a", "b", "a"}, nil, `duplicate call ID "a" (calls #0 and #2)`},
		{"unknown", []string{"a", "b"}, [][]string{nil, {"zz"}}, `"b" depends on "zz", which is not in the batch`},
		{"empty dependency", []string{"", "b"}, [][]string{nil, {""}}, `"b" depends on a call with an empty ID`},
		{"empty caller", []string{"a", ""}, [][]string{nil, {"q"}}, `call #1 depends on "q"`},
		{"self", []string{"a"}, [][]string{{"a"}}, `dependency cycle: "a" → "a"`},
		{"two", []string{"a", "b"}, [][]string{{"b"}, {"a"}}, `dependency cycle: "a" → "b" → "a"`},
		{"three behind a tail", []string{"t", "x", "y", "z"}, [][]string{{"z"}, {"y"}, {"z"}, {"x"}},
			`dependency cycle: "x" → "y" → "z" → "x"`},
	} {
		for _, big := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/big=%v", tt.name, big), func(t *testing.T) {
				ids := tt.ids
				if big {
					ids = pad(ids)
				}
				_, err := Build(ids, tt.deps)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("Build error = %v, want it to contain %q", err, tt.want)
				}
			})
		}
	}
}

// TestBuildLongChain checks that a long chain and a long cycle need no
// deep recursion.
func TestBuildLongChain(t *testing.T) {
	const n = 100000
	ids := make([]string, n)
	deps := make([][]string, n)
	for i := range n {
		ids[i] = fmt.Sprint(i)
		if i > 0 {
			deps[i] = []string{fmt.Sprint(i - 1)}
		}
	}
	if _, err := Build(ids, deps); err != nil {
		t.Fatalf("chain: %v", err)
	}
	deps[0] = []string{fmt.Sprint(n - 1)}
	_, err := Build(ids, deps)
	if err == nil || !strings.HasPrefix(err.Error(), `dependency cycle: "0" → "99999" → "99998"`) {
		t.Fatalf("cycle: got %.80v", err)
	}
}

// TestBuilderAdd checks that Add returns the node an ID names, counts a
// repeat once, and reports the first unknown ID at once.
func TestBuilderAdd(t *testing.T) {
	b, err := NewBuilder([]string{"a", "b", "c"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		node int
		id   string
		want int
	}{{1, "a", 0}, {1, "a", 0}, {2, "b", 1}, {2, "a", 0}, {2, "b", 1}} {
		if got, err := b.Add(tt.node, tt.id); err != nil || got != tt.want {
			t.Errorf("Add(%d, %q) = %d, %v; want %d", tt.node, tt.id, got, err, tt.want)
		}
	}
	if _, err := b.Add(2, "zz"); err == nil || err.Error() != `"c" depends on "zz", which is not in the batch` {
		t.Errorf("Add of an unknown ID: error %v", err)
	}
	g, err := b.Graph()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]int{nil, {0}, {1, 0}}, lists(g.Len(), g.Deps)); diff != "" {
		t.Errorf("Deps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]int{{1, 2}, {2}, nil}, lists(g.Len(), g.Dependents)); diff != "" {
		t.Errorf("Dependents (-want +got):\n%s", diff)
	}
}

func TestQuote(t *testing.T) {
	for _, tt := range []struct{ id, want string }{
		{"call_1", `"call_1"`},
		{"tab\there", `"tab\there"`},
		{strings.Repeat("x", 64), `"` + strings.Repeat("x", 64) + `"`},
		{strings.Repeat("x", 65), `"` + strings.Repeat("x", 64) + `…"`},
		{strings.Repeat("x", 63) + "é", `"` + strings.Repeat("x", 63) + `…"`}, // not cut inside a character
	} {
		if got := Quote(tt.id); got != tt.want {
			t.Errorf("Quote(%.20q…) = %s, want %s", tt.id, got, tt.want)
		}
	}
}

func TestSame(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"a", "a", true},
		{"call_1", "call_1", true},
		{"", "", false}, // empty IDs are never duplicates
		{"a", "b", false},
		{"ab", "a", false},
		{"xa", "ya", false}, // same length and last byte
		{"a", "ba", false},
	} {
		if got := Same(tt.a, tt.b); got != tt.want {
			t.Errorf("Same(%q, %q) = %v; want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
