package toolsearch

import (
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/miniopenclaw/tool"
)

// Okapi BM25 parameters of the baseline: the usual defaults (Robertson
// and Zaragoza; Lucene's).
const (
	plainK1 = 1.2
	plainB  = 0.75
)

// plainBM25 is the baseline ranking: textbook Okapi BM25 over one bag of
// words per tool made of the same fields the index reads (name, title,
// description, parameter names and descriptions), with
// idf = ln(1 + (N - df + 0.5) / (df + 0.5)). Words are the lower-cased
// runs of letters and digits, identifiers split at camelCase as the index
// splits them (a whitespace tokenizer would make names unsearchable); no
// stemming, no stop words, no field weights, no synonyms.
type plainBM25 struct {
	names    []string
	postings map[string][]plainPosting
	length   []float64
	avg      float64
	score    []float64 // by tool, zero between searches; not safe for concurrent use
	touched  []int
}

type plainPosting struct {
	doc int
	tf  float64
}

// plainWords splits text as the baseline does.
func plainWords(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		// Reuse the index's identifier splitting, without its stemming
		// and stop words: split first, then lower.
		start := 0
		rs := []rune(w)
		for i := 1; i < len(rs); i++ {
			if unicode.IsUpper(rs[i]) && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) ||
				unicode.IsUpper(rs[i-1]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
				out = append(out, strings.ToLower(string(rs[start:i])))
				start = i
			}
		}
		out = append(out, strings.ToLower(string(rs[start:])))
	}
	return out
}

func newPlainBM25(tools []tool.Tool) *plainBM25 {
	b := &plainBM25{postings: make(map[string][]plainPosting)}
	total := 0.0
	for i, t := range tools {
		text := []string{t.Name(), tool.OptionsOf(t).Annotations.Title, t.Description()}
		eachParam(t.Parameters(), func(name, desc string) { text = append(text, name, desc) })
		tf := map[string]float64{}
		n := 0.0
		for _, w := range plainWords(strings.Join(text, " ")) {
			tf[w]++
			n++
		}
		for w, f := range tf {
			b.postings[w] = append(b.postings[w], plainPosting{i, f})
		}
		b.names = append(b.names, t.Name())
		b.length = append(b.length, n)
		total += n
	}
	b.avg = total / float64(max(len(tools), 1))
	return b
}

// search returns the names of the best 10 tools for query, best first,
// ties by name; each distinct query word counts once. Scores accumulate
// in an array by tool, and only the touched tools are sorted, as a
// careful implementation does.
func (b *plainBM25) search(query string) []string {
	if len(b.score) < len(b.names) {
		b.score = make([]float64, len(b.names))
	}
	touched := b.touched[:0]
	n := float64(len(b.names))
	seen := map[string]bool{}
	for _, w := range plainWords(query) {
		if seen[w] {
			continue
		}
		seen[w] = true
		p := b.postings[w]
		df := float64(len(p))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, e := range p {
			norm := 1 - plainB + plainB*b.length[e.doc]/b.avg
			if b.score[e.doc] == 0 {
				touched = append(touched, e.doc)
			}
			b.score[e.doc] += idf * e.tf * (plainK1 + 1) / (e.tf + plainK1*norm)
		}
	}
	slices.SortFunc(touched, func(x, y int) int {
		if b.score[x] != b.score[y] {
			if b.score[x] > b.score[y] {
				return -1
			}
			return 1
		}
		return strings.Compare(b.names[x], b.names[y])
	})
	out := make([]string, 0, 10)
	for _, d := range touched[:min(len(touched), 10)] {
		out = append(out, b.names[d])
	}
	for _, d := range touched {
		b.score[d] = 0
	}
	b.touched = touched
	return out
}
