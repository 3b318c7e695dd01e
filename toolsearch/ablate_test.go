package toolsearch

import (
	"flag"
	"testing"
)

var ablate = flag.Bool("ablate", false, "TestAblation: print the tuning-half figures of every ranking variant")

// TestAblation measures variants of the ranking on the TUNING halves
// only (the hand set's queries.txt and the tuning half of the MCP set):
// the held-out halves must not choose the ranking. Without -ablate it
// measures the default and a ranking close to plain BM25 (no field
// weights, stop words, stemming, synonyms or coverage), and fails
// unless the default is at least as good on both by MRR; with -ablate it
// prints every variant, the figures the default was chosen by.
func TestAblation(t *testing.T) {
	mtune, _ := mcpQueries(t)
	hand, mcp := evalTools(t), mcpCatalog(t)
	hq := evalQueries(t)
	variants := ablationVariants()
	if !*ablate {
		variants = variants[:2]
	}
	var mrr [][2]float64
	for _, v := range variants {
		noStopwords, noStemming = v.noStop, v.noStem
		hix := newIndex(testRegistry(t, hand...), Options{MinConfidence: -1}, v.rk)
		mix := newIndex(testRegistry(t, mcp...), Options{MinConfidence: -1}, v.rk)
		hs := evaluate(hq, func(q string) []string { return names(hix.Search(q, 10)) }, nil)
		ms := evaluate(mtune, func(q string) []string { return names(mix.Search(q, 10)) }, nil)
		t.Logf("%-28s hand %.3f/%.3f/%.3f  mcp-tune %.3f/%.3f/%.3f", v.name, hs.recall1, hs.recall5, hs.mrr, ms.recall1, ms.recall5, ms.mrr)
		mrr = append(mrr, [2]float64{hs.mrr, ms.mrr})
		hix.Close()
		mix.Close()
	}
	noStopwords, noStemming = false, false
	if mrr[0][0] < mrr[1][0] || mrr[0][1] < mrr[1][1] {
		t.Errorf("default ranking below the plain one on a tuning half by MRR (hand, MCP): %v < %v", mrr[0], mrr[1])
	}
}

type variant struct {
	name           string
	rk             ranking
	noStop, noStem bool
}

func ablationVariants() []variant {
	d := defaultRanking
	plainish := ranking{name: 1, title: 1, desc: 1, paramName: 1, paramDesc: 1, k1: 1.2, b: 0.75}
	with := func(name string, f func(*ranking)) variant {
		r := d
		f(&r)
		return variant{name: name, rk: r}
	}
	return []variant{
		{name: "default", rk: d},
		{name: "plainish", rk: plainish, noStop: true, noStem: true},
		with("sum synonyms 0.5 (before)", func(r *ranking) { r.dismax, r.tie, r.synonym = false, 0, 0.5 }),
		with("no synonyms", func(r *ranking) { r.synonym = 0 }),
		with("tie 0", func(r *ranking) { r.tie = 0 }),
		with("tie 0.3", func(r *ranking) { r.tie = 0.3 }),
		with("synonym 0.5", func(r *ranking) { r.synonym = 0.5 }),
		with("synonym 1", func(r *ranking) { r.synonym = 1 }),
		{name: "no stop words", rk: d, noStop: true},
		{name: "no stemming", rk: d, noStem: true},
		with("no coverage", func(r *ranking) { r.coverage = 0 }),
		with("coverage 4", func(r *ranking) { r.coverage = 4 }),
		with("b 0.75", func(r *ranking) { r.b = 0.75 }),
		with("repeat 0 (before)", func(r *ranking) { r.repeat = 0 }),
		with("strong 0 (before)", func(r *ranking) { r.strong = 0 }),
		with("flat fields", func(r *ranking) {
			r.name, r.title, r.desc, r.paramName, r.paramDesc, r.annotation = 1, 1, 1, 1, 1, 0
		}),
	}
}
