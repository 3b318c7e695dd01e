package toolsearch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool/internal/loopback"
)

// An Embedder turns texts into vectors whose cosine similarity says how
// alike the texts are in meaning. An [Index] made with an Embedder in its
// [Options] ranks by reciprocal rank fusion of BM25 and that similarity.
type Embedder interface {
	// Model names the model and its settings: vectors of different
	// Models are never mixed, and the disk cache is keyed by it.
	Model() string
	// Embed returns one vector per text, in order, all of one length.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Limits on embedding work.
const (
	// maxEmbedBatch bounds the texts sent in one Embed call.
	maxEmbedBatch = 64
	// maxEmbedDims bounds the length of a vector an Embedder returns.
	maxEmbedDims = 8192
	// maxEmbedTextBytes bounds the text of one tool sent to embed.
	maxEmbedTextBytes = 4 << 10
	// rrfK is the constant of reciprocal rank fusion (Cormack et al.,
	// 2009): a tool scores 1/(rrfK+rank) in each ranking.
	rrfK = 60
	// fuseDepth is how deep each ranking is read for fusion.
	fuseDepth = 50
	// defaultEmbedTimeout bounds the embedding work of one search when
	// Options.EmbedTimeout is zero.
	defaultEmbedTimeout = 30 * time.Second
)

// embedText is what is embedded for a tool: its name with identifiers
// split into words, title, description and parameters; for
// [WordVectors], without the parameters (a mean of word vectors drowns
// in their words: on the tuning halves, MRR 0.742 and 0.932 with them,
// 0.760 and 0.934 without).
func embedText(d *doc, emb Embedder) string {
	var b strings.Builder
	b.WriteString(strings.Join(splitWords(d.name), " "))
	params := strings.ReplaceAll(d.params, "\n", "; ")
	if _, ok := emb.(*WordVectors); ok {
		params = ""
	}
	for _, s := range []string{d.title, d.desc, params} {
		if s != "" {
			b.WriteString(". ")
			b.WriteString(s)
		}
	}
	return cutUTF8(b.String(), maxEmbedTextBytes)
}

// splitWords splits an identifier as appendTerms does, without stemming.
func splitWords(s string) []string {
	var out []string
	for _, w := range plainSplit(s) {
		out = append(out, strings.ToLower(w))
	}
	return out
}

// plainSplit splits s into words at non-alphanumerics and camelCase
// boundaries, keeping case.
func plainSplit(s string) []string {
	var out []string
	rs := []rune(s)
	start := -1
	isWord := func(r rune) bool {
		return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127
	}
	for i, r := range rs {
		if !isWord(r) {
			if start >= 0 {
				out = append(out, string(rs[start:i]))
				start = -1
			}
			continue
		}
		if start >= 0 && r >= 'A' && r <= 'Z' {
			prev := rs[i-1]
			if prev >= 'a' && prev <= 'z' || prev >= '0' && prev <= '9' ||
				prev >= 'A' && prev <= 'Z' && i+1 < len(rs) && rs[i+1] >= 'a' && rs[i+1] <= 'z' {
				out = append(out, string(rs[start:i]))
				start = i
			}
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, string(rs[start:]))
	}
	return out
}

// vectors holds the embeddings of tool definitions, by digest of model
// and text, in memory and, when dir is set, on disk.
type vectors struct {
	emb     Embedder
	dir     string // "" for memory only
	timeout time.Duration

	mu   sync.Mutex
	byID map[string][]float32 // unit length
	// bySlot[slot] is the vector of the index's tool in slot, or nil
	// when not looked up since the tool last changed. Written under the
	// index's write lock, or its read lock and mu; read under its read
	// lock and mu.
	bySlot [][]float32
}

// digest keys a text's vector: the model and the text.
func (v *vectors) digest(text string) string {
	h := sha256.New()
	h.Write([]byte(v.emb.Model()))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return hex.EncodeToString(h.Sum(nil))
}

func (v *vectors) path(id string) string { return filepath.Join(v.dir, id[:2], id+".f32") }

// get returns the vectors of texts, embedding those neither in memory nor
// on disk, in batches.
func (v *vectors) get(ctx context.Context, texts []string) ([][]float32, error) {
	ids := make([]string, len(texts))
	out := make([][]float32, len(texts))
	var missing []int
	v.mu.Lock()
	for i, t := range texts {
		ids[i] = v.digest(t)
		out[i] = v.byID[ids[i]]
	}
	v.mu.Unlock()
	for i := range texts {
		if out[i] == nil && v.dir != "" {
			if vec, err := readVector(v.dir, v.path(ids[i])); err == nil {
				out[i] = vec
				v.put(ids[i], vec, false)
			}
		}
		if out[i] == nil {
			missing = append(missing, i)
		}
	}
	for start := 0; start < len(missing); start += maxEmbedBatch {
		batch := missing[start:min(start+maxEmbedBatch, len(missing))]
		in := make([]string, len(batch))
		for k, i := range batch {
			in[k] = texts[i]
		}
		vecs, err := v.emb.Embed(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("toolsearch: embedding with %s: %w", v.emb.Model(), err)
		}
		if len(vecs) != len(in) {
			return nil, fmt.Errorf("toolsearch: embedding with %s: %d vectors for %d texts", v.emb.Model(), len(vecs), len(in))
		}
		for k, i := range batch {
			vec, err := normalize(vecs[k])
			if err != nil {
				return nil, fmt.Errorf("toolsearch: embedding with %s: %w", v.emb.Model(), err)
			}
			out[i] = vec
			v.put(ids[i], vec, true)
		}
	}
	return out, nil
}

func (v *vectors) put(id string, vec []float32, toDisk bool) {
	v.mu.Lock()
	v.byID[id] = vec
	v.mu.Unlock()
	if toDisk && v.dir != "" {
		// The cache is an optimization: a write that fails costs a
		// later embedding, nothing else.
		_ = writeVector(v.dir, v.path(id), vec)
	}
}

// forget drops vectors of texts no longer indexed, from memory only.
func (v *vectors) forget(keep map[string]bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for id := range v.byID {
		if !keep[id] {
			delete(v.byID, id)
		}
	}
}

// normalize checks a vector and scales it to unit length.
func normalize(vec []float32) ([]float32, error) {
	if len(vec) == 0 || len(vec) > maxEmbedDims {
		return nil, fmt.Errorf("vector of %d dimensions (want 1 to %d)", len(vec), maxEmbedDims)
	}
	var n float64
	for _, x := range vec {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, errors.New("vector with NaN or infinity")
		}
		n += float64(x) * float64(x)
	}
	out := make([]float32, len(vec))
	if n == 0 {
		return out, nil
	}
	n = math.Sqrt(n)
	for i, x := range vec {
		out[i] = float32(float64(x) / n)
	}
	return out, nil
}

func dot(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	// Four sums: independent additions pipeline (a third of the time of
	// one running sum over 100 dimensions).
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		a4, b4 := a[i:i+4:i+4], b[i:i+4:i+4]
		s0 += a4[0] * b4[0]
		s1 += a4[1] * b4[1]
		s2 += a4[2] * b4[2]
		s3 += a4[3] * b4[3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return float64((s0 + s1) + (s2 + s3))
}

// readVector reads a cached vector of the cache directory root:
// little-endian float32s.
func readVector(root, path string) ([]float32, error) {
	data, err := readCached(root, path, 4*maxEmbedDims)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 || len(data)%4 != 0 || len(data)/4 > maxEmbedDims {
		return nil, fmt.Errorf("toolsearch: cached vector %s: %d bytes", path, len(data))
	}
	vec := make([]float32, len(data)/4)
	for i := range vec {
		vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return normalize(vec)
}

// writeVector writes a vector of the cache directory root atomically: a
// reader sees all of it or none.
func writeVector(root, path string, vec []float32) error {
	data := make([]byte, 4*len(vec))
	for i, x := range vec {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
	}
	return writeCached(root, path, data)
}

// OpenAIEmbedder is an [Embedder] for any service that speaks the
// OpenAI embeddings API (POST {BaseURL}/embeddings with {"model","input"}):
// OpenAI itself, or a local server such as Ollama, vLLM, llama.cpp or
// LocalAI at a loopback BaseURL.
type OpenAIEmbedder struct {
	// BaseURL is the API's base, such as http://127.0.0.1:11434/v1;
	// "/embeddings" is appended.
	BaseURL string
	// ModelName is the model to ask for.
	ModelName string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// Dimensions, when positive, asks for vectors of that length
	// (models that support it).
	Dimensions int
	// Client makes the requests; nil means http.DefaultClient.
	Client *http.Client
}

// NewOpenAIEmbedder returns an [OpenAIEmbedder] for the API whose base URL
// is base, asking for model, with apiKey (may be empty) as its bearer
// token, after checking what a user typed: base must be an http or https
// URL with a host and no credentials, query or fragment, and a key is
// refused over plain http to anything but a loopback address, where it
// would cross the network in clear. The embedder follows no redirect: an
// embeddings API has no reason to send one, and following it could carry
// the key where these checks did not look (another host, or plain http on
// the same host, to which Go's client keeps the Authorization header).
func NewOpenAIEmbedder(base, model, apiKey string) (*OpenAIEmbedder, error) {
	u, err := url.Parse(base)
	switch {
	case err != nil:
		return nil, fmt.Errorf("toolsearch: embeddings API: %v", err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return nil, fmt.Errorf("toolsearch: embeddings API %q: want the http or https base URL of an OpenAI-compatible embeddings API", base)
	case u.User != nil:
		return nil, errors.New("toolsearch: embeddings API: a URL with credentials in it is refused; give the key apart")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("toolsearch: embeddings API %q: want a base URL without query or fragment (\"/embeddings\" is appended)", base)
	case strings.TrimSpace(model) == "":
		return nil, errors.New("toolsearch: embeddings API: no model named")
	case apiKey != "" && loopback.Cleartext(u):
		return nil, fmt.Errorf("toolsearch: embeddings API %q: the key would cross the network in clear; use https, or a loopback address", base)
	}
	client := &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
		return fmt.Errorf("the embeddings API at %s redirected to %s; redirects are not followed", base, req.URL.Redacted())
	}}
	return &OpenAIEmbedder{BaseURL: base, ModelName: model, APIKey: apiKey, Client: client}, nil
}

// maxEmbedResponseBytes bounds a response of the embeddings API.
const maxEmbedResponseBytes = 64 << 20

// Model returns the base URL, model and dimensions: a model served by
// two servers is keyed apart.
func (e *OpenAIEmbedder) Model() string {
	return fmt.Sprintf("openai-compatible %s %s dims=%d", strings.TrimRight(e.BaseURL, "/"), e.ModelName, e.Dimensions)
}

// Embed asks the API for the vectors of texts.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	body := map[string]any{"model": e.ModelName, "input": texts, "encoding_format": "float"}
	if e.Dimensions > 0 {
		body["dimensions"] = e.Dimensions
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(e.BaseURL, "/")+"/embeddings", bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	c := e.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxEmbedResponseBytes+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxEmbedResponseBytes {
		return nil, fmt.Errorf("embeddings response over %d bytes", maxEmbedResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("embeddings API: %s: %.200s", resp.Status, raw)
	}
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("embeddings response: %v", err)
	}
	if len(out.Data) != len(texts) {
		return nil, fmt.Errorf("embeddings response: %d vectors for %d texts", len(out.Data), len(texts))
	}
	vecs := make([][]float32, len(texts))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(texts) || vecs[d.Index] != nil {
			return nil, fmt.Errorf("embeddings response: bad or repeated index %d", d.Index)
		}
		vecs[d.Index] = d.Embedding
	}
	dims := len(vecs[0])
	for _, v := range vecs {
		if len(v) != dims {
			return nil, errors.New("embeddings response: vectors of different lengths")
		}
	}
	return vecs, nil
}

// EmbedError returns why the last search could not use the Embedder and
// answered with BM25 alone, or nil.
func (ix *Index) EmbedError() error {
	ix.errMu.Lock()
	defer ix.errMu.Unlock()
	return ix.embedErr
}

// fused ranks query by reciprocal rank fusion of the BM25 ranking and the
// cosine similarity of the query's vector to each tool's.
func (ix *Index) fused(query string, limit int, visible func(string) bool) ([]Match, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ix.vec.timeout)
	defer cancel()
	query = cutUTF8(query, MaxQueryBytes)
	if strings.TrimSpace(query) == "" {
		return nil, nil
	}
	lex := ix.lexical(query, fuseDepth, visible, -1)

	// The vectors of the tools that have none yet: read the texts under
	// the lock, embed without it.
	ix.mu.RLock()
	var texts []string
	ix.vec.mu.Lock()
	for i := range ix.docs {
		d := &ix.docs[i]
		if d.tool == nil || ix.vec.bySlot[i] != nil {
			continue
		}
		if v := ix.vec.byID[d.embedID]; v != nil {
			ix.vec.bySlot[i] = v
		} else {
			texts = append(texts, d.embedText)
		}
	}
	live := len(ix.byName)
	stale := len(ix.vec.byID) > 2*live+64
	ix.vec.mu.Unlock()
	ix.mu.RUnlock()
	if _, err := ix.vec.get(ctx, texts); err != nil {
		return nil, err
	}
	// The query's vector is not cached: queries rarely repeat.
	qvs, err := ix.vec.emb.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("toolsearch: embedding the query with %s: %w", ix.vec.emb.Model(), err)
	}
	if len(qvs) != 1 {
		return nil, fmt.Errorf("toolsearch: embedding the query with %s: %d vectors for 1 text", ix.vec.emb.Model(), len(qvs))
	}
	qv, err := normalize(qvs[0])
	if err != nil {
		return nil, fmt.Errorf("toolsearch: embedding the query with %s: %w", ix.vec.emb.Model(), err)
	}

	type hit struct {
		slot uint32
		sim  float64
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	ix.vec.mu.Lock()
	var best []hit // the fuseDepth most similar, unordered
	worst := 0
	keep := map[string]bool{}
	for i := range ix.docs {
		d := &ix.docs[i]
		if d.tool == nil {
			continue
		}
		if stale {
			keep[d.embedID] = true
		}
		v := ix.vec.bySlot[i]
		if v == nil {
			v = ix.vec.byID[d.embedID]
			ix.vec.bySlot[i] = v
		}
		if v == nil || visible != nil && !visible(d.name) {
			continue // changed since the vectors were made: BM25 still ranks it
		}
		h := hit{uint32(i), dot(qv, v)}
		if len(best) < fuseDepth {
			best = append(best, h)
			if h.sim < best[worst].sim {
				worst = len(best) - 1
			}
			continue
		}
		if h.sim > best[worst].sim {
			best[worst] = h
			for k := range best {
				if best[k].sim < best[worst].sim {
					worst = k
				}
			}
		}
	}
	if stale {
		for id := range ix.vec.byID {
			if !keep[id] {
				delete(ix.vec.byID, id)
			}
		}
	}
	ix.vec.mu.Unlock()
	slices.SortFunc(best, func(a, b hit) int {
		if a.sim != b.sim {
			if a.sim > b.sim {
				return -1
			}
			return 1
		}
		return strings.Compare(ix.docs[a.slot].name, ix.docs[b.slot].name)
	})

	// Reciprocal rank fusion, or with SemanticWeight a linear fusion of
	// the BM25 score (over the best) and the similarity.
	lexScore := func(r int, m Match) float64 { return 1 / float64(rrfK+r+1) }
	semScore := func(r int, h hit) float64 { return 1 / float64(rrfK+r+1) }
	if ix.semW > 0 {
		top := 1.0
		if len(lex) > 0 && lex[0].Score > 0 {
			top = lex[0].Score
		}
		lexScore = func(_ int, m Match) float64 { return m.Score / top }
		semScore = func(_ int, h hit) float64 { return ix.semW * h.sim }
	}
	byName := make(map[string]*Match, len(lex)+len(best))
	order := make([]*Match, 0, len(lex)+len(best))
	for r, m := range lex {
		mm := m
		mm.Score = lexScore(r, m)
		byName[m.Name] = &mm
		order = append(order, &mm)
	}
	for r, h := range best {
		d := &ix.docs[h.slot]
		m := byName[d.name]
		if m == nil {
			m = &Match{Name: d.name, Tool: d.tool}
			byName[d.name] = m
			order = append(order, m)
		}
		m.Score += semScore(r, h)
		m.Similarity = h.sim
	}
	var matches []Match
	fits := ix.minConf <= 0 || ix.minSim <= 0
	for _, m := range order {
		// Nothing fits when neither ranking is sure of any tool: every
		// match below both bounds.
		fits = fits || m.Confidence >= ix.minConf || m.Similarity >= ix.minSim
		matches = keepBest(matches, *m, limit)
	}
	if !fits {
		return nil, nil
	}
	sortMatches(matches)
	return matches, nil
}

// SentenceEncoderSemanticWeight is the [Options.SemanticWeight] chosen on
// the tuning halves of the evaluation sets for the sentence encoder that
// toolsearch/embedserver serves (docs/many-tools.md): the linear fusion
// won over reciprocal rank fusion at every weight tried, best at 1.
const SentenceEncoderSemanticWeight = 1.0

// UseEmbedder returns o set to fuse BM25 with emb as the sentence encoder
// was measured: emb as the Embedder, [SentenceEncoderSemanticWeight] when
// o.SemanticWeight is zero, and, when o.MinSimilarity is zero, an infinite
// MinSimilarity, so that "nothing fits" is answered exactly when BM25
// alone would answer it. The weight was chosen for that encoder; a
// stronger model may deserve a larger one (measure it on your catalog).
func (o Options) UseEmbedder(emb Embedder) Options {
	o.Embedder = emb
	if o.SemanticWeight == 0 {
		o.SemanticWeight = SentenceEncoderSemanticWeight
	}
	if o.MinSimilarity == 0 {
		o.MinSimilarity = math.Inf(1)
	}
	return o
}

// EmbeddingsCacheDir returns the directory clawtool keeps the vectors of
// tool definitions in ([Options.CacheDir]): clawtool/embeddings under the
// user's cache directory, or "" (no cache) when there is none.
func EmbeddingsCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "clawtool", "embeddings")
}
