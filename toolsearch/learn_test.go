package toolsearch

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"testing"
)

var learn = flag.Bool("learn", false, "TestLearnRanking, TestLearnConfidence: search the ranking's settings on the tuning halves")

// TestLearnRanking searches the settings of the lexical ranking by
// coordinate ascent on the TUNING halves only (the hand set's
// queries.txt and the MCP set's tuning half), maximizing the mean of
// their MRRs; it then prints the held-out figures of what it found
// beside the default's, which it never uses to choose. Only with
// -learn: it ranks both sets a few hundred times.
func TestLearnRanking(t *testing.T) {
	if !*learn {
		return
	}
	mtune, mheld := mcpQueries(t)
	hand, mcp := evalTools(t), mcpCatalog(t)
	hq := evalQueries(t)
	hheld := readQueries(t, "testdata/queries_heldout.txt")
	hreg, mreg := testRegistry(t, hand...), testRegistry(t, mcp...)
	measure := func(rk ranking, hqs, mqs []evalQuery) (scores, scores) {
		hix := newIndex(hreg, Options{MinConfidence: -1}, rk)
		mix := newIndex(mreg, Options{MinConfidence: -1}, rk)
		defer hix.Close()
		defer mix.Close()
		return evaluate(hqs, func(q string) []string { return names(hix.Search(q, 10)) }, nil),
			evaluate(mqs, func(q string) []string { return names(mix.Search(q, 10)) }, nil)
	}
	objective := func(rk ranking) float64 {
		h, m := measure(rk, hq, mtune)
		return (h.mrr + m.mrr) / 2
	}
	params := []struct {
		name string
		p    func(*ranking) *float64
	}{
		{"k1", func(r *ranking) *float64 { return &r.k1 }},
		{"b", func(r *ranking) *float64 { return &r.b }},
		{"coverage", func(r *ranking) *float64 { return &r.coverage }},
		{"synonym", func(r *ranking) *float64 { return &r.synonym }},
		{"tie", func(r *ranking) *float64 { return &r.tie }},
	}
	fparams := []struct {
		name string
		p    func(*ranking) *float32
	}{
		{"name", func(r *ranking) *float32 { return &r.name }},
		{"title", func(r *ranking) *float32 { return &r.title }},
		{"desc", func(r *ranking) *float32 { return &r.desc }},
		{"paramName", func(r *ranking) *float32 { return &r.paramName }},
		{"paramDesc", func(r *ranking) *float32 { return &r.paramDesc }},
	}
	steps := []float64{0.5, 0.75, 1.25, 1.5, 2}
	best := defaultRanking
	bestObj := objective(best)
	t.Logf("default: objective %.4f", bestObj)
	for round := 0; round < 3; round++ {
		improved := false
		for _, pr := range params {
			for _, s := range steps {
				rk := best
				v := pr.p(&rk)
				*v *= s
				if pr.name == "b" && *v > 1 || pr.name == "tie" && *v > 1 {
					continue
				}
				if o := objective(rk); o > bestObj+1e-9 {
					best, bestObj, improved = rk, o, true
					t.Logf("round %d: %s ×%.2f → %.4f", round, pr.name, s, o)
				}
			}
		}
		for _, pr := range fparams {
			for _, s := range steps {
				rk := best
				v := pr.p(&rk)
				*v *= float32(s)
				if o := objective(rk); o > bestObj+1e-9 {
					best, bestObj, improved = rk, o, true
					t.Logf("round %d: %s ×%.2f → %.4f", round, pr.name, s, o)
				}
			}
		}
		if !improved {
			break
		}
	}
	t.Logf("found: %+v", best)
	for _, c := range []struct {
		name string
		rk   ranking
	}{{"default", defaultRanking}, {"learned", best}} {
		ht, mt := measure(c.rk, hq, mtune)
		hh, mh := measure(c.rk, hheld, mheld)
		t.Logf("%-8s tuning: hand %v | mcp %v", c.name, ht, mt)
		t.Logf("%-8s held out: hand %v | mcp %v", c.name, hh, mh)
	}
}

// TestLearnConfidence compares ways of computing Confidence for the
// "nothing fits" answer: for each, the threshold is the highest that
// drops no answering tool from the first five matches of any tuning
// query (hand set and MCP tuning half), so that it costs recall@5
// nothing there, and the figure is the share of tuning queries answered
// "nothing" when their tools are hidden. The written "nothing fits"
// queries and the held-out halves are reported at that threshold,
// never used to choose. Only with -learn.
func TestLearnConfidence(t *testing.T) {
	if !*learn {
		return
	}
	mtune, mheld := mcpQueries(t)
	hand, mcp := evalTools(t), mcpCatalog(t)
	hq, hheld := evalQueries(t), readQueries(t, "testdata/queries_heldout.txt")
	var written []absentCase
	for _, line := range dataLines(t, "testdata/mcp/queries_nothing.txt") {
		written = append(written, absentCase{q: evalQuery{text: line}})
	}
	hreg, mreg := testRegistry(t, hand...), testRegistry(t, mcp...)
	type variant struct {
		name string
		f    func(*ranking)
	}
	variants := []variant{{"default", func(*ranking) {}}}
	for _, strong := range []float64{0, 0.5, 1, 1.25, 1.5, 1.75, 2, 3} {
		variants = append(variants, variant{fmtName("strong %.1f", strong), func(r *ranking) { r.strong = strong }})
	}
	for _, v := range variants {
		rk := defaultRanking
		v.f(&rk)
		hix := newIndex(hreg, Options{MinConfidence: -1}, rk)
		mix := newIndex(mreg, Options{MinConfidence: -1}, rk)
		// The threshold: the highest that drops no answer from the
		// first five of any tuning query (the confidence of the first
		// answer found there, least over the queries).
		th := math.Inf(1)
		for i, q := range append(hq[:len(hq):len(hq)], mtune...) {
			ix := hix
			if i >= len(hq) {
				ix = mix
			}
			for _, m := range ix.Search(q.text, 5) {
				if slices.Contains(q.answers, m.Name) {
					th = min(th, m.Confidence)
					break
				}
			}
		}
		tuneAbs := append(hideAnswers(hq, hand), hideAnswers(mtune, mcp)...)
		right := 0
		for i, c := range tuneAbs {
			ix := hix
			if i >= len(hq) {
				ix = mix
			}
			if topConfidence(ix, c.q.text, func(n string) bool { return !c.hidden[n] }) < th {
				right++
			}
		}
		w := measureAbstention(mix, append(mtune[:len(mtune):len(mtune)], mheld...), written, th)
		hh := measureAbstention(hix, hheld, hideAnswers(hheld, hand), th)
		mh := measureAbstention(mix, mheld, hideAnswers(mheld, mcp), th)
		t.Logf("%-12s threshold %.3f: tuning 'nothing fits' recall %.3f | written: %v | hand held out: %v | MCP held out: %v", v.name, th, float64(right)/float64(len(tuneAbs)), w, hh, mh)
		hix.Close()
		mix.Close()
	}
}

func fmtName(f string, a ...any) string { return fmt.Sprintf(f, a...) }
