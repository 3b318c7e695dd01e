package toolsearch

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
)

var vocabulary = strings.Fields("send read write list delete create message file issue repository calendar event weather stock price user channel database query browser page")

// marker returns a word that occurs in no other description: the n-th
// version of a description carries marker(n).
func marker(n int) string {
	var b strings.Builder
	b.WriteString("qz")
	for {
		b.WriteByte(byte('a' + n%26))
		n /= 26
		if n == 0 {
			return b.String()
		}
	}
}

// checkIndex checks ix against the registered descriptions want (name to
// description) and the markers of versions that were replaced or removed.
func checkIndex(t *testing.T, ix *Index, want map[string]string, gone []string, rng *rand.Rand) {
	t.Helper()
	if ix.Len() != len(want) {
		t.Fatalf("index holds %d tools, registry %d", ix.Len(), len(want))
	}
	for name, desc := range want {
		mark := desc[strings.LastIndexByte(desc, ' ')+1:]
		got := ix.Search(mark, 5)
		if len(got) != 1 || got[0].Name != name {
			t.Fatalf("search for the marker of %s (%q) = %q", name, desc, names(got))
		}
		if re, err := ix.SearchRegexp(mark+"$", 5); err != nil || len(re) != 1 || re[0].Name != name {
			t.Fatalf("regexp search for the marker of %s = %q, %v", name, names(re), err)
		}
	}
	for _, mark := range gone {
		if got := ix.Search(mark, 5); len(got) != 0 {
			t.Fatalf("search for the marker %q of a replaced or removed version = %q", mark, names(got))
		}
	}
	for range 5 {
		q := vocabulary[rng.IntN(len(vocabulary))] + " " + vocabulary[rng.IntN(len(vocabulary))]
		for _, m := range ix.Search(q, MaxResults) {
			desc, ok := want[m.Name]
			if !ok {
				t.Fatalf("search %q found %s, which is not registered", q, m.Name)
			}
			if m.Tool.Description() != desc {
				t.Fatalf("search %q found %s with description %q, want the latest %q", q, m.Name, m.Tool.Description(), desc)
			}
		}
	}
}

// TestPropertyRegistryChanges applies random sequences of registrations,
// replacements and removals and checks after each step that searches find
// exactly the registered tools, with their latest descriptions.
func TestPropertyRegistryChanges(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 15))
			r := tool.NewRegistry()
			// Some tools exist before the index does.
			want := map[string]string{}
			var gone []string
			version := 0
			register := func() {
				name := fmt.Sprintf("tool_%d", rng.IntN(12))
				if old, ok := want[name]; ok {
					gone = append(gone, old[strings.LastIndexByte(old, ' ')+1:])
				}
				desc := vocabulary[rng.IntN(len(vocabulary))] + " " + vocabulary[rng.IntN(len(vocabulary))] + " " + marker(version)
				version++
				if err := r.Register(echotool.New(name, desc, `{"type":"object"}`)); err != nil {
					t.Fatal(err)
				}
				want[name] = desc
			}
			for range rng.IntN(5) {
				register()
			}
			ix := New(r)
			defer ix.Close()
			checkIndex(t, ix, want, gone, rng)
			for range 60 {
				if rng.IntN(3) == 0 {
					name := fmt.Sprintf("tool_%d", rng.IntN(12))
					if old, ok := want[name]; ok {
						gone = append(gone, old[strings.LastIndexByte(old, ' ')+1:])
					}
					r.Remove(name)
					delete(want, name)
				} else {
					register()
				}
				checkIndex(t, ix, want, gone, rng)
			}
		})
	}
}

// TestConcurrentChanges changes a registry from several goroutines at
// once while searching it, then checks that the index agrees with the
// registry.
func TestConcurrentChanges(t *testing.T) {
	r := tool.NewRegistry()
	ix := New(r)
	defer ix.Close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range 200 {
				name := fmt.Sprintf("tool_%d", rng.IntN(8))
				switch rng.IntN(4) {
				case 0:
					r.Remove(name)
				case 1:
					ix.Search("message file", 10)
				default:
					desc := "send message " + marker(g*1000+i)
					if err := r.Register(echotool.New(name, desc, `{"type":"object"}`)); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	want := map[string]string{}
	for _, tl := range r.List() {
		want[tl.Name()] = tl.Description()
	}
	checkIndex(t, ix, want, nil, rand.New(rand.NewPCG(0, 0)))
}
