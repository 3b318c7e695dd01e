// Package toolsearch finds the tools of a [tool.Registry] that answer a
// request, so that a model with thousands of tools at hand is shown the
// few it needs.
//
// An [Index] ranks tools for a natural-language query with BM25 over each
// tool's name, title, description, parameter names and descriptions and
// annotations, with identifiers split at underscores and camelCase
// boundaries, light stemming and a small table of synonyms; or it matches
// a regular expression (RE2 syntax) against the same text. It follows the
// registry: tools registered, replaced or removed are found, found anew or
// no longer found as soon as the change returns.
//
// [NewTool] makes the meta-tool a model calls to search, and [Loading]
// says which tools are sent from the start and which wait to be found;
// the agent package uses both to load tools on demand (see
// agent.WithToolSearch).
package toolsearch

import (
	"math"
	"math/bits"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/jsontext"
	"github.com/miniopenclaw/tool/internal/recost"
)

// Limits on the work one query or one tool may cause.
const (
	// MaxQueryBytes bounds a query: longer text is cut, at a character
	// boundary, before it is read.
	MaxQueryBytes = 1024
	// MaxQueryTerms bounds the words of a query that count.
	MaxQueryTerms = 32
	// MaxPatternBytes bounds a regular expression given to
	// [Index.SearchRegexp].
	MaxPatternBytes = 256
	// MaxPatternInsts bounds the program such a regular expression
	// compiles to, as estimated before it is built: a counted repetition
	// makes a short pattern a large program ((?:…250 bytes…){1000} is a
	// quarter of a million instructions, 27 MB), and matching works per
	// byte of text for each instruction it tracks ([a-z]{1000}! takes
	// about a thousand steps a byte over every tool's text).
	MaxPatternInsts = 1024
	// MaxPatternWork bounds the work of matching one regular expression
	// against the tools' text, in steps charged as a schema's pattern is
	// (for each byte read, one step and one more for each 8 instructions
	// of the program or 32 bytes of the pattern): [a-z ]{300}[0-9],
	// within MaxPatternInsts, over 1,000 tools of 8 KB took a minute of
	// CPU. A search that would pass it fails with a [PatternError].
	MaxPatternWork = 1 << 25
	// MaxResults bounds the matches one search returns.
	MaxResults = 50
	// maxDocTerms bounds the words of one tool that are indexed.
	maxDocTerms = 512
	// maxDescBytes bounds the part of a description that is indexed.
	maxDescBytes = 8 << 10
	// maxParams bounds the parameters of one tool that are indexed.
	maxParams = 64
)

// ranking holds the settings of the lexical ranking: the weight of a
// word by where it appears in a tool (BM25F: weighted term frequencies
// and lengths), the BM25 parameters, how much answering more of the
// query's words counts, and the weight of a synonym.
type ranking struct {
	name, title, desc, paramName, paramDesc, annotation float32

	k1, b float64
	// dismax scores each query word by the best of its own term and its
	// synonyms in a tool, rather than their sum.
	dismax bool
	// tie is the weight, with dismax, of a query word's other terms
	// found in a tool beside the best one.
	tie float64
	// coverage is how much more a tool scores for matching every word
	// of a query (or a synonym of it) than for matching none.
	coverage float64
	// synonym is the weight of a term a query gains through a synonym,
	// relative to a word of the query itself; 0 turns synonyms off.
	synonym float64
	// repeat is how much more a query word counts for each time the
	// query repeats it (BM25's query term frequency); 0 counts a word
	// once.
	repeat float64
	// strong, when positive (with dismax), is the weighted term
	// frequency at which a query word, or a synonym of it, counts fully
	// for Confidence in a tool; below it counts in proportion (a word
	// met once in a parameter's description counts less than one in
	// the name). 0 counts any match fully.
	strong float64
}

// defaultRanking is the ranking an Index uses.
var defaultRanking = ranking{
	name: 3, title: 2, desc: 1, paramName: 0.6, paramDesc: 0.4, annotation: 0.3,
	k1: 1.2, b: 0.9,
	coverage: 16,
	synonym:  0.7,
	dismax:   true,
	tie:      0.1,
	repeat:   1,
	strong:   1.5,
}

// unseenWeight is the weight, for Confidence, of a query word no tool
// has, relative to the rarest word that a tool has: such words are often
// arguments ("tomorrow", "London") rather than what the tool does.
// Chosen with DefaultMinConfidence on the tuning halves. A word with a
// digit in it ("10", "3pm", "2025") that no tool has weighs nothing: it
// is a value, never a capability, and function-calling requests are full
// of them.
const unseenWeight = 0.6

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if '0' <= s[i] && s[i] <= '9' {
			return true
		}
	}
	return false
}

// A Match is a tool found by a search.
type Match struct {
	Name string
	// Tool is the tool as it was registered when the index last saw it.
	Tool tool.Tool
	// Score orders matches: higher is better. Scores compare only within
	// one search.
	Score float64
	// Confidence, from 0 to 1, is the share of the query the tool
	// answers: the informativeness (idf) of the query words it matches,
	// or matches through a synonym, over that of all the query's words;
	// a word no tool has counts 0.6 of the rarest. A word counts in full
	// when the tool states it strongly (in its name or title, or twice
	// in its description or parameters), and in proportion when less
	// (once in the description: two thirds; once in a parameter's
	// description: 0.27). Unlike Score it compares
	// across searches, and [Options.MinConfidence] is a bound on it. A
	// regular-expression match has Confidence 1.
	Confidence float64
	// Similarity is the cosine similarity of the query's and the tool's
	// vectors, with an [Options.Embedder]; 0 without one.
	Similarity float64
}

// DefaultMinConfidence is the [Match.Confidence] that at least one match
// must reach for a search to answer, when [Options.MinConfidence] is
// zero. It was chosen on the
// tuning halves of the evaluation sets (see docs/many-tools.md), over
// queries whose tool was removed from the catalog ("nothing fits") and
// queries whose tool is there.
//
// It is the highest value that the first answering tool among the
// first five matches of each of the 315 tuning queries reaches (the rule
// it was chosen by when the bound dropped matches one by one; now that it
// only decides whether anything fits, that rule leaves a margin). The lexical signal separates
// poorly: at this value "nothing fits" is answered for only a few
// queries whose tool is missing.
const DefaultMinConfidence = 0.165

// Options configure an [Index] made with [NewWithOptions]. The zero
// Options is what [New] uses.
type Options struct {
	// MinConfidence is the bound of "nothing fits": a search none of
	// whose matches has a [Match.Confidence] at or above it answers no
	// tool, rather than the least bad tools. When one match reaches it,
	// the search returns the best matches as ranked, those below the
	// bound included, so the bound never costs a found tool its place.
	// Zero means [DefaultMinConfidence]; a negative value always answers.
	// With an Embedder, nothing fits only when every match is below
	// both this bound and MinSimilarity.
	MinConfidence float64

	// Embedder, when set, adds a semantic ranking: tools and queries are
	// embedded, and the BM25 ranking and the cosine-similarity ranking
	// are fused by reciprocal rank fusion. A tool's definition is
	// embedded once per change of its text, when a search first needs
	// it. If embedding fails, the search answers with BM25 alone
	// ([Index.EmbedError] tells why).
	Embedder Embedder
	// CacheDir, when set with Embedder, keeps the vectors of tool
	// definitions on disk, one file per definition keyed by the SHA-256
	// of the model and the embedded text, so a restart embeds nothing
	// that did not change. A file is read only when no one but this
	// process's user or root may change it, nor the directories from
	// CacheDir down to it (whoever may write a vector decides where its
	// tool ranks); any other file is a miss and the definition is
	// embedded again.
	CacheDir string
	// EmbedTimeout bounds the embedding work of one search; zero means
	// 30 seconds.
	EmbedTimeout time.Duration
	// MinSimilarity is the cosine similarity at or above which, with an
	// Embedder, a tool is kept even below MinConfidence: a tool is
	// dropped ("nothing fits") only below both. It depends on the model,
	// so there is no default: zero keeps every tool the semantic ranking
	// finds, and the fused path then never answers "nothing fits".
	MinSimilarity float64
	// SemanticWeight, when positive, fuses the two rankings linearly
	// instead of by reciprocal rank fusion: a tool scores its BM25 score
	// over the best BM25 score of the search, plus SemanticWeight times
	// its cosine similarity. A weak semantic ranker (such as
	// [WordVectors], for which [WordVectorsSemanticWeight] was chosen)
	// then corrects BM25's order without overturning it. Zero means
	// reciprocal rank fusion.
	SemanticWeight float64
}

// An Index finds the tools of a registry by query. It is safe for
// concurrent use. Make one with [New].
type Index struct {
	reg     *tool.Registry
	stop    func()
	minConf float64
	minSim  float64
	semW    float64 // Options.SemanticWeight
	rank    ranking
	vec     *vectors // nil without an Embedder

	errMu    sync.Mutex
	embedErr error // the last embedding failure, nil after a success

	update sync.Mutex // serializes updates: read the registry, then apply

	mu       sync.RWMutex
	termIDs  map[string]uint32
	postings [][]posting // by term id, in no order
	docs     []doc       // by slot
	free     []uint32    // empty slots
	byName   map[string]uint32
	totalLen float64 // sum of the live documents' lengths
}

// A posting says how much a term weighs in one tool.
type posting struct {
	slot uint32
	tf   float32
}

// doc is one indexed tool.
type doc struct {
	tool   tool.Tool // nil for an empty slot
	name   string
	title  string
	desc   string
	params string // parameter names and descriptions, one per line
	length float32
	terms  []uint32 // distinct term ids
	pos    []uint32 // pos[k]: where this tool is in the postings of terms[k]

	embedText, embedID string // with an Embedder: what is embedded, and its digest
}

// New returns an Index of the tools of r that follows r's changes until
// [Index.Close] is called.
func New(r *tool.Registry) *Index { return NewWithOptions(r, Options{}) }

// NewWithOptions is [New] with settings.
func NewWithOptions(r *tool.Registry, o Options) *Index {
	return newIndex(r, o, defaultRanking)
}

func newIndex(r *tool.Registry, o Options, rk ranking) *Index {
	minConf := o.MinConfidence
	if minConf == 0 {
		minConf = DefaultMinConfidence
	}
	ix := &Index{reg: r, rank: rk, minConf: minConf, minSim: o.MinSimilarity, semW: o.SemanticWeight, termIDs: make(map[string]uint32), byName: make(map[string]uint32)}
	if o.Embedder != nil {
		timeout := o.EmbedTimeout
		if timeout <= 0 {
			timeout = defaultEmbedTimeout
		}
		ix.vec = &vectors{emb: o.Embedder, dir: o.CacheDir, timeout: timeout, byID: make(map[string][]float32)}
	}
	ix.stop = r.OnChange(ix.refresh)
	for _, t := range r.List() {
		ix.refresh(t.Name())
	}
	return ix
}

// Close stops following the registry. The index keeps answering with
// the tools it holds.
func (ix *Index) Close() { ix.stop() }

// Len returns the number of indexed tools.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.byName)
}

// refresh re-reads the tool called name from the registry. Reading and
// applying happen under ix.update, so that the last of several racing
// refreshes of a name applies the registry's latest state.
func (ix *Index) refresh(name string) {
	ix.update.Lock()
	defer ix.update.Unlock()
	t, ok := ix.reg.Get(name)
	if !ok {
		ix.mu.Lock()
		ix.removeLocked(name)
		ix.mu.Unlock()
		return
	}
	d, tf := analyze(t, &ix.rank)
	if ix.vec != nil {
		d.embedText = embedText(&d, ix.vec.emb)
		d.embedID = ix.vec.digest(d.embedText)
	}
	ix.mu.Lock()
	ix.removeLocked(name)
	ix.addLocked(d, tf)
	ix.mu.Unlock()
}

func (ix *Index) removeLocked(name string) {
	slot, ok := ix.byName[name]
	if !ok {
		return
	}
	d := &ix.docs[slot]
	for k, id := range d.terms {
		// Move the list's last posting into this one's place, and tell
		// its tool where it went.
		p := ix.postings[id]
		i, last := d.pos[k], len(p)-1
		if int(i) != last {
			moved := p[last]
			p[i] = moved
			md := &ix.docs[moved.slot]
			md.pos[slices.Index(md.terms, id)] = i
		}
		ix.postings[id] = p[:last]
	}
	ix.totalLen -= float64(d.length)
	*d = doc{}
	delete(ix.byName, name)
	ix.free = append(ix.free, slot)
}

func (ix *Index) addLocked(d doc, tf map[string]float32) {
	var slot uint32
	if n := len(ix.free); n > 0 {
		slot = ix.free[n-1]
		ix.free = ix.free[:n-1]
	} else {
		slot = uint32(len(ix.docs))
		ix.docs = append(ix.docs, doc{})
	}
	d.terms = make([]uint32, 0, len(tf))
	d.pos = make([]uint32, 0, len(tf))
	for t, w := range tf {
		id, ok := ix.termIDs[t]
		if !ok {
			id = uint32(len(ix.postings))
			ix.termIDs[t] = id
			ix.postings = append(ix.postings, nil)
		}
		d.terms = append(d.terms, id)
		d.pos = append(d.pos, uint32(len(ix.postings[id])))
		ix.postings[id] = append(ix.postings[id], posting{slot, w})
	}
	ix.docs[slot] = d
	if ix.vec != nil {
		for len(ix.vec.bySlot) <= int(slot) {
			ix.vec.bySlot = append(ix.vec.bySlot, nil)
		}
		ix.vec.bySlot[slot] = nil
	}
	ix.byName[d.name] = slot
	ix.totalLen += float64(d.length)
}

// analyze reads what the index keeps of t and the weight of each of its
// terms.
func analyze(t tool.Tool, rk *ranking) (doc, map[string]float32) {
	opts := tool.OptionsOf(t)
	d := doc{tool: t, name: t.Name(), title: opts.Annotations.Title, desc: t.Description()}
	if len(d.desc) > maxDescBytes {
		d.desc = cutUTF8(d.desc, maxDescBytes)
	}
	tf := make(map[string]float32)
	var buf []string
	add := func(text string, w float32) {
		buf = appendTerms(buf[:0], text, maxDocTerms)
		for _, t := range buf {
			if _, ok := tf[t]; ok || len(tf) < maxDocTerms {
				tf[t] += w
				d.length += w
			}
		}
	}
	add(d.name, rk.name)
	add(d.title, rk.title)
	add(d.desc, rk.desc)
	var params strings.Builder
	eachParam(t.Parameters(), func(name, desc string) {
		params.WriteString(name)
		params.WriteByte('\n')
		if desc != "" {
			params.WriteString(desc)
			params.WriteByte('\n')
		}
		add(name, rk.paramName)
		add(desc, rk.paramDesc)
	})
	d.params = params.String()
	a := opts.Annotations
	for _, on := range []struct {
		set   bool
		words string
	}{{a.ReadOnly, "read only"}, {a.Destructive, "destructive"}, {a.Idempotent, "idempotent"}, {a.OpenWorld, "open world"}} {
		if on.set {
			add(on.words, rk.annotation)
		}
	}
	return d, tf
}

// eachParam calls fn for the properties of a JSON Schema, nested ones
// (under "properties" and "items") included, parents first, up to
// maxParams of them. It reads the schema in one pass without decoding it
// into values, and stops at what it cannot read.
func eachParam(schema []byte, fn func(name, desc string)) {
	w := paramWalker{data: schema, fn: fn}
	w.schema(0, 0, "")
}

type paramWalker struct {
	data []byte
	n    int // properties reported
	fn   func(name, desc string)
}

const maxSchemaDepth = 4

// schema reads the schema at data[i], reports it as property name (if
// name is not empty), then walks its properties and items. It returns the
// index just past the schema.
func (w *paramWalker) schema(i, depth int, name string) (next int, ok bool) {
	i = jsontext.SkipSpace(w.data, i)
	if i >= len(w.data) || w.data[i] != '{' || depth > maxSchemaDepth {
		next, err := jsontext.SkipValue(w.data, i, 0, 64)
		return next, err == nil
	}
	desc := ""
	props, items := -1, -1
	next, ok = w.members(i, func(key []byte, at int) (int, bool) {
		switch string(key) {
		case "description":
			if w.data[at] == '"' {
				s, next, err := jsontext.ReadString(w.data, at, nil)
				desc = cutUTF8(string(s), 1024)
				return next, err == nil
			}
		case "properties":
			props = at
		case "items":
			items = at
		}
		next, err := jsontext.SkipValue(w.data, at, 0, 64)
		return next, err == nil
	})
	if !ok {
		return next, false
	}
	if name != "" {
		if w.n >= maxParams {
			return next, false
		}
		w.n++
		w.fn(name, desc)
	}
	if props >= 0 && w.data[props] == '{' {
		if _, ok := w.members(props, func(key []byte, at int) (int, bool) {
			return w.schema(at, depth+1, string(key))
		}); !ok {
			return next, false
		}
	}
	if items >= 0 {
		if _, ok := w.schema(items, depth+1, ""); !ok {
			return next, false
		}
	}
	return next, true
}

// members calls member for each member of the object at data[i] with its
// key and the index of its value; member returns the index just past the
// value. members returns the index just past the object.
func (w *paramWalker) members(i int, member func(key []byte, at int) (int, bool)) (next int, ok bool) {
	data := w.data
	i = jsontext.SkipSpace(data, i+1) // past '{'
	for i < len(data) && data[i] != '}' {
		key, next, err := jsontext.ReadString(data, i, nil)
		if err != nil {
			return i, false
		}
		i = jsontext.SkipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return i, false
		}
		i = jsontext.SkipSpace(data, i+1)
		if i >= len(data) {
			return i, false
		}
		if i, ok = member(key, i); !ok {
			return i, false
		}
		i = jsontext.SkipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = jsontext.SkipSpace(data, i+1)
		}
	}
	return i + 1, i < len(data)
}

// Search returns up to limit tools that match query, best first, for a
// query in natural language ("send a message to a channel") or made of
// identifiers ("slack_post_message"). limit is capped at [MaxResults];
// limit <= 0 means 5. A tool matches when it shares a term with the query
// or with a synonym of a query term. Ties are broken by name.
func (ix *Index) Search(query string, limit int) []Match {
	return ix.search(query, limit, nil)
}

// A Query is a search with all its settings, for [Index.Find].
type Query struct {
	// Text is the query: words, or a regular expression when Regexp is
	// set.
	Text string
	// Regexp selects [Index.SearchRegexp] over [Index.Search].
	Regexp bool
	// Limit bounds the matches, as for Search.
	Limit int
	// Visible, when not nil, reports whether a tool may be found: a
	// search never returns a tool for which it reports false, and such
	// tools do not take the places of others within Limit. It is called
	// while the index is locked for reading and must not call the
	// Index.
	Visible func(name string) bool
}

// Find runs q. It fails only for a regular expression SearchRegexp
// refuses.
func (ix *Index) Find(q Query) ([]Match, error) {
	if q.Regexp {
		return ix.searchRegexp(q.Text, q.Limit, q.Visible)
	}
	return ix.search(q.Text, q.Limit, q.Visible), nil
}

func (ix *Index) search(query string, limit int, visible func(string) bool) []Match {
	limit = clampLimit(limit)
	if ix.vec != nil {
		ms, err := ix.fused(query, limit, visible)
		ix.errMu.Lock()
		ix.embedErr = err
		ix.errMu.Unlock()
		if err == nil {
			return ms
		}
	}
	return ix.lexical(query, limit, visible, ix.minConf)
}

// lexical ranks with BM25 alone. When minConf is positive and no match
// reaches it, nothing fits and it returns none; otherwise it returns the
// best limit matches, those below minConf included.
func (ix *Index) lexical(query string, limit int, visible func(string) bool, minConf float64) []Match {
	q := queryTerms(query, ix.rank.synonym, ix.rank.repeat)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := len(ix.byName)
	if n == 0 || len(q) == 0 {
		return nil
	}
	avg := ix.totalLen / float64(n)
	rk := &ix.rank
	acc := accumulators.Get().(*accumulator)
	defer accumulators.Put(acc)
	acc.reset(len(ix.docs))
	concepts := 0
	for _, qt := range q {
		concepts = max(concepts, qt.concept+1)
	}
	// The weight of a query word for Confidence: the idf of the word,
	// or of a word no tool has when no tool has it.
	var conceptIDF [64]float64
	unseen := unseenWeight * math.Log(1+(float64(n)+0.5)/0.5)
	for _, qt := range q {
		if qt.weight == 1 && !hasDigit(qt.term) {
			conceptIDF[qt.concept%64] = unseen
		}
	}
	if rk.dismax {
		slices.SortStableFunc(q, func(a, b queryTerm) int { return a.concept - b.concept })
	}
	flush := func(concept int) {
		for _, slot := range acc.cur {
			acc.add(slot, acc.best[slot]+rk.tie*(acc.rest[slot]), concept)
			acc.credit[slot] += conceptIDF[concept%64] * acc.bestCredit[slot]
			acc.best[slot], acc.rest[slot], acc.bestCredit[slot] = 0, 0, 0
		}
		acc.cur = acc.cur[:0]
	}
	for i, qt := range q {
		if rk.dismax && i > 0 && q[i-1].concept != qt.concept {
			flush(q[i-1].concept)
		}
		id, ok := ix.termIDs[qt.term]
		if !ok {
			continue
		}
		p := ix.postings[id]
		df := float64(len(p))
		idf := math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
		if qt.weight == 1 {
			conceptIDF[qt.concept%64] = idf
		}
		for _, e := range p {
			// Weighted term frequency, normalized by the tool's length.
			tf := float64(e.tf) / (1 - rk.b + rk.b*float64(ix.docs[e.slot].length)/avg)
			sc := qt.weight * qt.boost * idf * tf * (rk.k1 + 1) / (tf + rk.k1)
			if rk.strong > 0 && rk.dismax {
				acc.bestCredit[e.slot] = max(acc.bestCredit[e.slot], min(1, float64(e.tf)/rk.strong))
			}
			if !rk.dismax {
				acc.add(e.slot, sc, qt.concept)
			} else if b := acc.best[e.slot]; sc > b {
				if b == 0 {
					acc.cur = append(acc.cur, e.slot)
				}
				acc.best[e.slot] = sc
				acc.rest[e.slot] += b
			} else {
				acc.rest[e.slot] += sc
			}
		}
	}
	if rk.dismax && len(q) > 0 {
		flush(q[len(q)-1].concept)
	}
	totalIDF := 0.0
	for c := range min(concepts, 64) {
		totalIDF += conceptIDF[c]
	}
	matches := make([]Match, 0, min(limit, len(acc.touched)))
	fits := minConf <= 0
	for _, slot := range acc.touched {
		if visible != nil && !visible(ix.docs[slot].name) {
			continue
		}
		// A tool that answers more of the query's words ranks higher
		// than one that answers one word many times.
		covered := float64(bits.OnesCount64(acc.concepts[slot])) / float64(concepts)
		conf := 0.0
		if rk.strong > 0 && rk.dismax {
			conf = acc.credit[slot]
		} else {
			for c, set := 0, acc.concepts[slot]; set != 0; c, set = c+1, set>>1 {
				if set&1 != 0 {
					conf += conceptIDF[c]
				}
			}
		}
		if totalIDF > 0 {
			conf /= totalIDF
		}
		fits = fits || conf >= minConf
		m := Match{Name: ix.docs[slot].name, Tool: ix.docs[slot].tool, Score: acc.score[slot] * (1 + ix.rank.coverage*covered), Confidence: conf}
		matches = keepBest(matches, m, limit)
	}
	if !fits {
		return nil // nothing fits: no tool reaches minConf
	}
	sortMatches(matches)
	return matches
}

// SearchRegexp returns up to limit tools whose name, title, description,
// parameter names or parameter descriptions match the regular expression
// pattern (RE2 syntax; "(?i)" makes it ignore case). A match in the name
// ranks first, then the title, the description and the parameters; ties
// are broken by name. limit is capped at [MaxResults]; limit <= 0 means
// 5. It fails for a pattern over [MaxPatternBytes], one whose program
// would pass [MaxPatternInsts] instructions, or one that does not compile.
func (ix *Index) SearchRegexp(pattern string, limit int) ([]Match, error) {
	return ix.searchRegexp(pattern, limit, nil)
}

func (ix *Index) searchRegexp(pattern string, limit int, visible func(string) bool) ([]Match, error) {
	limit = clampLimit(limit)
	if len(pattern) > MaxPatternBytes {
		return nil, &PatternError{Pattern: cutUTF8(pattern, 64) + "…", Reason: "longer than " + strconv.Itoa(MaxPatternBytes) + " bytes"}
	}
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, &PatternError{Pattern: pattern, Reason: strings.TrimPrefix(err.Error(), "error parsing regexp: ")}
	}
	insts := recost.Insts(parsed, MaxPatternInsts)
	if insts > MaxPatternInsts {
		return nil, &PatternError{Pattern: pattern, Reason: "its program would hold more than " + strconv.Itoa(MaxPatternInsts) +
			" instructions (a counted repetition such as {100} repeats what it applies to); repeat less, or search with words"}
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, &PatternError{Pattern: pattern, Reason: strings.TrimPrefix(err.Error(), "error parsing regexp: ")}
	}
	lit, fold := requiredLiteral(pattern)
	perByte := 1 + max(len(pattern)/32, insts/8)
	span, bounded := recost.Span(parsed, MaxPatternInsts*utf8.UTFMax)
	work := 0
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var matches []Match
	for i := range ix.docs {
		d := &ix.docs[i]
		if d.tool == nil || visible != nil && !visible(d.name) {
			continue
		}
		score := 0.0
		for _, f := range []struct {
			text  string
			score float64
		}{{d.name, 8}, {d.title, 4}, {d.desc, 2}, {d.params, 1}} {
			// A text without the literal every match contains cannot
			// match: skip the regular expression, the slow part.
			if f.text == "" || lit != "" && !contains(f.text, lit, fold) {
				continue
			}
			n := len(f.text)
			if bounded {
				n = min(n, span+1) // the matcher stops there
			}
			if work += n * perByte; work > MaxPatternWork {
				return nil, &PatternError{Pattern: pattern, Reason: "matching it against the tools' text would take more than " +
					strconv.Itoa(MaxPatternWork) + " steps (each byte costs more the larger its program: repeat less), or search with words"}
			}
			if re.MatchString(f.text) {
				score += f.score
			}
		}
		if score > 0 {
			matches = keepBest(matches, Match{Name: d.name, Tool: d.tool, Score: score, Confidence: 1}, limit)
		}
	}
	sortMatches(matches)
	return matches, nil
}

// requiredLiteral returns a string every match of pattern contains, and
// whether it is to be compared ignoring ASCII case; "" when it finds none
// worth looking for.
func requiredLiteral(pattern string) (lit string, fold bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var walk func(re *syntax.Regexp, depth int) (string, bool)
	walk = func(re *syntax.Regexp, depth int) (string, bool) {
		if depth > 32 {
			return "", false
		}
		switch re.Op {
		case syntax.OpLiteral:
			return string(re.Rune), re.Flags&syntax.FoldCase != 0
		case syntax.OpCapture, syntax.OpPlus:
			return walk(re.Sub[0], depth+1)
		case syntax.OpRepeat:
			if re.Min >= 1 {
				return walk(re.Sub[0], depth+1)
			}
		case syntax.OpConcat:
			best, bestFold := "", false
			for _, sub := range re.Sub {
				if l, f := walk(sub, depth+1); len(l) > len(best) {
					best, bestFold = l, f
				}
			}
			return best, bestFold
		}
		return "", false
	}
	lit, fold = walk(re.Simplify(), 0)
	if len(lit) < 2 || fold && !isASCII(lit) {
		return "", false // too short to pay, or case folding beyond ASCII
	}
	if fold {
		lit = strings.ToLower(lit)
	}
	return lit, fold
}

// contains reports whether s contains lit, ignoring ASCII case when fold
// is set (lit is then lower-case ASCII).
func contains(s, lit string, fold bool) bool {
	if !fold {
		return strings.Contains(s, lit)
	}
	first := lit[0]
	upper := first
	if 'a' <= first && first <= 'z' {
		upper -= 'a' - 'A'
	}
	for i := 0; i+len(lit) <= len(s); i++ {
		if c := s[i]; c != first && c != upper {
			continue
		}
		if strings.EqualFold(s[i:i+len(lit)], lit) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// A PatternError reports a regular expression [Index.SearchRegexp] cannot
// use.
type PatternError struct {
	Pattern string
	Reason  string
}

func (e *PatternError) Error() string {
	return "toolsearch: pattern " + strconv.Quote(e.Pattern) + ": " + e.Reason
}

func clampLimit(limit int) int {
	if limit <= 0 {
		return 5
	}
	return min(limit, MaxResults)
}

// better reports whether a ranks before b.
func better(a, b Match) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Name < b.Name
}

// keepBest adds m to best, a list of at most limit matches, dropping the
// worst when it is full. best is a heap with its worst match first, so a
// match that does not enter costs one comparison (fusion reads 50 deep
// over thousands of matches); sortMatches orders it afterwards.
func keepBest(best []Match, m Match, limit int) []Match {
	if len(best) < limit {
		best = append(best, m)
		for i := len(best) - 1; i > 0; {
			p := (i - 1) / 2
			if !better(best[p], best[i]) {
				break
			}
			best[p], best[i] = best[i], best[p]
			i = p
		}
		return best
	}
	if limit == 0 || !better(m, best[0]) {
		return best
	}
	best[0] = m
	for i := 0; ; {
		w, l, r := i, 2*i+1, 2*i+2
		if l < len(best) && better(best[w], best[l]) {
			w = l
		}
		if r < len(best) && better(best[w], best[r]) {
			w = r
		}
		if w == i {
			return best
		}
		best[i], best[w] = best[w], best[i]
		i = w
	}
}

func sortMatches(ms []Match) {
	slices.SortFunc(ms, func(a, b Match) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
}

// accumulator holds the scores of one search, by slot.
type accumulator struct {
	score    []float64
	concepts []uint64 // bit i: the tool matched query word i or a synonym
	touched  []uint32
	best     []float64 // by slot: the best score for the current query word
	rest     []float64 // by slot: the sum of the others
	// bestCredit is, by slot, how fully the current query word is
	// answered, and credit the idf-weighted sum over the words before.
	bestCredit, credit []float64
	cur                []uint32 // the slots with a best score
}

var accumulators = sync.Pool{New: func() any { return new(accumulator) }}

func (a *accumulator) reset(n int) {
	for _, s := range a.touched {
		if int(s) < len(a.score) {
			a.score[s] = 0
			a.concepts[s] = 0
			a.credit[s] = 0
		}
	}
	a.touched = a.touched[:0]
	if len(a.score) < n {
		a.score = make([]float64, n)
		a.concepts = make([]uint64, n)
		a.best = make([]float64, n)
		a.rest = make([]float64, n)
		a.bestCredit = make([]float64, n)
		a.credit = make([]float64, n)
	}
}

func (a *accumulator) add(slot uint32, s float64, concept int) {
	if a.score[slot] == 0 {
		a.touched = append(a.touched, slot)
	}
	a.score[slot] += s
	a.concepts[slot] |= 1 << (concept % 64)
}

func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
