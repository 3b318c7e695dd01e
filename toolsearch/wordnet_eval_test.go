package toolsearch

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var wordnetDir = flag.String("wordnet", "/usr/share/wordnet", "TestWordNetSynonyms: the WordNet 3.0 database directory (Debian's package wordnet-base)")

// wordnetRecords calls fn with the fields of each record of WordNet's
// file name in dir (lines starting with two spaces are its licence).
func wordnetRecords(t testing.TB, dir, name string, fn func(fields []string)) {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := sc.Text(); !strings.HasPrefix(l, "  ") {
			fn(strings.Fields(l))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// readWordNet returns, for every single-word lemma of WordNet's nouns,
// verbs and adjectives, the single-word lemmas that share one of its
// first senses (senses are listed most frequent first), as terms.
func readWordNet(t testing.TB, dir string, senses int) map[string][]string {
	synsets := make(map[string][]string) // pos+offset -> lemmas
	for _, pos := range []string{"noun", "verb", "adj"} {
		wordnetRecords(t, dir, "data."+pos, func(fs []string) {
			var n int
			for _, c := range fs[3] {
				n = n*16 + strings.IndexRune("0123456789abcdef", c)
			}
			var words []string
			for i := range n {
				words = append(words, strings.ToLower(fs[4+2*i]))
			}
			synsets[pos+fs[0]] = words
		})
	}
	m := make(map[string][]string)
	for _, pos := range []string{"noun", "verb", "adj"} {
		wordnetRecords(t, dir, "index."+pos, func(fs []string) {
			lemma := fs[0]
			if strings.ContainsAny(lemma, "_-") {
				return
			}
			lt := term(lemma)
			if lt == "" {
				return
			}
			var pointers int
			for _, c := range fs[3] {
				pointers = pointers*10 + int(c-'0')
			}
			offs := fs[4+pointers+2:]
			for _, off := range offs[:min(senses, len(offs))] {
				for _, w := range synsets[pos+off] {
					if strings.ContainsAny(w, "_-") {
						continue
					}
					wt := term(w)
					if wt == "" || wt == lt {
						continue
					}
					dup := false
					for _, o := range m[lt] {
						dup = dup || o == wt
					}
					if !dup {
						m[lt] = append(m[lt], wt)
					}
				}
			}
		})
	}
	return m
}

// TestWordNetSynonyms: could a synonym table that nobody here wrote,
// WordNet's (Princeton's lexical database of English, Debian's package
// wordnet-base), take the place of the hand-written one? A word's
// synonyms are the single-word lemmas sharing one of its first senses
// (WordNet lists a word's senses most frequent first). Each table is
// measured on the TUNING halves (the hand set's queries.txt, the MCP
// set's tuning half) and chosen by the mean of their MRRs; the held-out
// figures are printed beside them. Measured once: the hand table's
// tuning mean is 0.842, WordNet's first sense alone 0.719 (hand set
// 0.506, about what no synonyms give, 0.499), the two together 0.837;
// so the hand table stays and the test holds that decision. With
// -ablate it prints every table (1, 2 or 3 senses, alone and added to
// the hand table) at synonym weights 0.5 and 0.7. Without the database
// it is skipped, except in CI (CI=true), where it fails: .ci/run
// installs wordnet-base.
func TestWordNetSynonyms(t *testing.T) {
	if _, err := os.Stat(filepath.Join(*wordnetDir, "index.verb")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("WordNet: %v: CI must install wordnet-base", err)
		}
		t.Skipf("WordNet: %v (install wordnet-base)", err)
	}
	hand := synonyms
	t.Cleanup(func() { synonyms = hand })
	union := func(a, b map[string][]string) map[string][]string {
		m := make(map[string][]string, len(a)+len(b))
		for k, v := range a {
			m[k] = append(m[k], v...)
		}
		for k, v := range b {
			for _, w := range v {
				dup := false
				for _, o := range m[k] {
					dup = dup || o == w
				}
				if !dup {
					m[k] = append(m[k], w)
				}
			}
		}
		return m
	}
	type table struct {
		name string
		m    map[string][]string
	}
	tables := []table{{"hand", hand}}
	senses := []int{1}
	if *ablate {
		tables = append(tables, table{"none", nil})
		senses = []int{1, 2, 3}
	}
	for _, k := range senses {
		wn := readWordNet(t, *wordnetDir, k)
		t.Logf("wordnet %d senses: %d words", k, len(wn))
		if len(wn) < 10000 {
			t.Fatalf("WordNet in %s gave synonyms for %d words: not the database", *wordnetDir, len(wn))
		}
		tables = append(tables, table{fmtName("wordnet %d", k), wn}, table{fmtName("hand+wordnet %d", k), union(hand, wn)})
	}
	best := map[string]float64{}
	mtune, mheld := mcpQueries(t)
	htune := evalQueries(t)
	hheld := readQueries(t, "testdata/queries_heldout.txt")
	m2 := readQueries(t, "testdata/mcp2/queries_readme.txt")
	handR := testRegistry(t, evalTools(t)...)
	mcpR := testRegistry(t, mcpCatalog(t)...)
	bothR := testRegistry(t, append(mcpCatalog(t), mcp2Catalog(t)...)...)
	for _, tb := range tables {
		synonyms = tb.m
		weights := []float64{0.7}
		if *ablate {
			weights = []float64{0.5, 0.7}
		}
		for _, w := range weights {
			rk := defaultRanking
			rk.synonym = w
			if tb.m == nil {
				rk.synonym = 0
			}
			hix := newIndex(handR, Options{}, rk)
			mix := newIndex(mcpR, Options{}, rk)
			bix := newIndex(bothR, Options{}, rk)
			s := func(ix *Index) func(string) []string {
				return func(q string) []string { return names(ix.Search(q, 10)) }
			}
			ht, mt := evaluate(htune, s(hix), nil), evaluate(mtune, s(mix), nil)
			hh, mh, m2h := evaluate(hheld, s(hix), nil), evaluate(mheld, s(mix), nil), evaluate(m2, s(bix), nil)
			t.Logf("%-18s w%.1f TUNE hand %.3f/%.3f/%.3f mcp %.3f/%.3f/%.3f mean %.3f | HELD hand %.3f/%.3f/%.3f mcp %.3f/%.3f/%.3f mcp2 %.3f/%.3f/%.3f",
				tb.name, rk.synonym, ht.recall1, ht.recall5, ht.mrr, mt.recall1, mt.recall5, mt.mrr, (ht.mrr+mt.mrr)/2,
				hh.recall1, hh.recall5, hh.mrr, mh.recall1, mh.recall5, mh.mrr, m2h.recall1, m2h.recall5, m2h.mrr)
			best[tb.name] = max(best[tb.name], (ht.mrr+mt.mrr)/2)
			hix.Close()
			mix.Close()
			bix.Close()
			if tb.m == nil {
				break
			}
		}
	}
	for name, mean := range best {
		if mean > best["hand"] {
			t.Errorf("%s: tuning mean MRR %.3f above the hand table's %.3f: the decision to keep the hand table no longer holds", name, mean, best["hand"])
		}
	}
}
