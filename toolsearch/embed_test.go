package toolsearch

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
)

// embeddingsAPI is a loopback server that plays the OpenAI embeddings API
// with a toy model: a text's vector is the sum of one pseudo-random
// vector per word, words of one meaning group (meaning) sharing one. It
// counts the texts it embedded.
type embeddingsAPI struct {
	*httptest.Server
	meaning map[string]string
	fail    bool

	mu    sync.Mutex
	texts []string
	auth  string
}

func newEmbeddingsAPI(t *testing.T, meaning map[string]string) *embeddingsAPI {
	a := &embeddingsAPI{meaning: meaning}
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.Close)
	return a
}

const toyDims = 64

func (a *embeddingsAPI) vector(text string) []float32 {
	v := make([]float32, toyDims)
	for _, w := range splitWords(text) {
		if m, ok := a.meaning[w]; ok {
			w = m
		}
		h := fnv.New64a()
		h.Write([]byte(w))
		x := h.Sum64()
		for i := range v {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			v[i] += float32(int64(x%2001)-1000) / 1000
		}
	}
	return v
}

func (a *embeddingsAPI) serve(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&in) != nil || in.Model != "toy" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.texts = append(a.texts, in.Input...)
	a.auth = r.Header.Get("Authorization")
	fail := a.fail
	a.mu.Unlock()
	if fail {
		http.Error(w, `{"error":"overloaded"}`, http.StatusServiceUnavailable)
		return
	}
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Data []item `json:"data"`
	}{}
	for i := len(in.Input) - 1; i >= 0; i-- { // out of order: the client must use index
		out.Data = append(out.Data, item{i, a.vector(in.Input[i])})
	}
	json.NewEncoder(w).Encode(out)
}

func (a *embeddingsAPI) embedded() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.texts)
}

func (a *embeddingsAPI) embedder() *OpenAIEmbedder {
	return &OpenAIEmbedder{BaseURL: a.URL + "/v1", ModelName: "toy", APIKey: "k"}
}

var embedTools = []tool.Tool{
	echotool.New("delete_file", "Delete a file from the file system permanently.", `{"type":"object","properties":{"path":{"type":"string"}}}`),
	echotool.New("read_file", "Read the contents of a file.", `{"type":"object","properties":{"path":{"type":"string"}}}`),
	echotool.New("slack_post_message", "Post a message to a Slack channel.", `{"type":"object"}`),
	echotool.New("get_weather", "Current weather for a location.", `{"type":"object"}`),
}

// TestEmbedderFusion: a query in words no tool uses ("obliterate",
// "scratch", "record") finds its tool through the semantic ranking,
// where BM25 alone finds nothing (the control).
func TestEmbedderFusion(t *testing.T) {
	api := newEmbeddingsAPI(t, map[string]string{"obliterate": "delete", "scratch": "temporary", "record": "file"})
	query := "obliterate the scratch record"
	lex := New(testRegistry(t, embedTools...))
	defer lex.Close()
	if got := names(lex.Search(query, 5)); slices.Contains(got, "delete_file") {
		t.Fatalf("control: BM25 alone found delete_file: %v", got)
	}
	ix := NewWithOptions(testRegistry(t, embedTools...), Options{Embedder: api.embedder()})
	defer ix.Close()
	got := ix.Search(query, 5)
	if err := ix.EmbedError(); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0].Name != "delete_file" || got[0].Similarity <= 0 {
		t.Fatalf("fused search: %v, want delete_file first with a similarity", got)
	}
	api.mu.Lock()
	auth := api.auth
	api.mu.Unlock()
	if a := auth; a != "Bearer k" {
		t.Errorf("Authorization %q, want the API key as a bearer token", a)
	}
	// A word BM25 knows still ranks its tool first.
	if got := names(ix.Search("slack", 1)); !slices.Equal(got, []string{"slack_post_message"}) {
		t.Errorf("fused search for slack: %v", got)
	}
}

// TestEmbeddingCache: tool definitions are embedded once; a new index
// over the same CacheDir embeds none of them again, only queries; a
// changed definition is embedded again, alone.
func TestEmbeddingCache(t *testing.T) {
	api := newEmbeddingsAPI(t, nil)
	dir := t.TempDir()
	ix := NewWithOptions(testRegistry(t, embedTools...), Options{Embedder: api.embedder(), CacheDir: dir})
	ix.Search("delete a file", 3)
	ix.Search("read a file", 3)
	ix.Close()
	if got := len(api.embedded()); got != len(embedTools)+2 {
		t.Fatalf("first index embedded %d texts, want %d tools and 2 queries", got, len(embedTools))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.f32"))
	if len(files) != len(embedTools) {
		t.Fatalf("%d cached vectors, want %d", len(files), len(embedTools))
	}

	changed := slices.Clone(embedTools)
	changed[3] = echotool.New("get_weather", "Weather forecast for a city.", `{"type":"object"}`)
	r := testRegistry(t, changed...)
	ix = NewWithOptions(r, Options{Embedder: api.embedder(), CacheDir: dir})
	defer ix.Close()
	before := len(api.embedded())
	ix.Search("rain tomorrow", 3)
	got := api.embedded()[before:]
	if len(got) != 2 || !strings.Contains(got[0], "Weather forecast") || got[1] != "rain tomorrow" {
		t.Fatalf("second index embedded %q, want the changed tool and the query", got)
	}

	// A corrupt cache file is not trusted: the tool is embedded again.
	// Every vector of the first index is corrupted: one of them belongs to
	// the old get_weather, which the registry no longer holds, so which
	// single file a glob lists first cannot say whether it is in use.
	for _, f := range files {
		if err := os.WriteFile(f, []byte("xyz"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ix2 := NewWithOptions(r, Options{Embedder: api.embedder(), CacheDir: dir})
	defer ix2.Close()
	before = len(api.embedded())
	ix2.Search("rain", 3)
	// The tools left unchanged (all but one) and the query; the changed
	// tool's vector, written by the second index, is intact.
	if n, want := len(api.embedded())-before, len(embedTools)-1+1; n != want {
		t.Errorf("after corrupting the first index's cached vectors, %d texts embedded, want %d", n, want)
	}
}

// TestEmbedderFailure: when the embeddings API fails, a search answers
// with BM25 alone and EmbedError says why; the next search that succeeds
// clears it.
func TestEmbedderFailure(t *testing.T) {
	api := newEmbeddingsAPI(t, nil)
	api.fail = true
	ix := NewWithOptions(testRegistry(t, embedTools...), Options{Embedder: api.embedder()})
	defer ix.Close()
	if got := names(ix.Search("post a message to slack", 3)); len(got) == 0 || got[0] != "slack_post_message" {
		t.Fatalf("fallback search: %v", got)
	}
	if err := ix.EmbedError(); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("EmbedError %v, want the API's 503", err)
	}
	api.mu.Lock()
	api.fail = false
	api.mu.Unlock()
	ix.Search("post a message to slack", 3)
	if err := ix.EmbedError(); err != nil {
		t.Fatalf("EmbedError after a success: %v", err)
	}
}

// TestEmbedderTimeout: an embeddings API that accepts a request and
// never answers holds a search no longer than Options.EmbedTimeout; the
// search answers with BM25 alone and EmbedError says the deadline passed.
func TestEmbedderTimeout(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first: no handler outlives the test
	ix := NewWithOptions(testRegistry(t, embedTools...), Options{Embedder: &OpenAIEmbedder{BaseURL: srv.URL, ModelName: "m"}, EmbedTimeout: 50 * time.Millisecond})
	defer ix.Close()
	if got := names(ix.Search("post a message to slack", 3)); len(got) == 0 || got[0] != "slack_post_message" {
		t.Fatalf("search past the timeout: %v, want BM25's answer", got)
	}
	if err := ix.EmbedError(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("EmbedError %v, want the deadline", err)
	}
}

// TestOpenAIEmbedderBadResponses: answers that do not fit the request
// are errors, not vectors.
func TestOpenAIEmbedderBadResponses(t *testing.T) {
	for _, tt := range []struct{ name, body string }{
		{"too few", `{"data":[{"index":0,"embedding":[1,2]}]}`},
		{"repeated index", `{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[1,2]}]}`},
		{"index out of range", `{"data":[{"index":0,"embedding":[1,2]},{"index":5,"embedding":[1,2]}]}`},
		{"lengths differ", `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}]}`},
		{"not JSON", `<html>`},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(tt.body)) }))
		e := &OpenAIEmbedder{BaseURL: srv.URL, ModelName: "m"}
		if _, err := e.Embed(context.Background(), []string{"a", "b"}); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
		srv.Close()
	}
	// A vector over maxEmbedDims is refused when it is used.
	if _, err := normalize(make([]float32, maxEmbedDims+1)); err == nil {
		t.Error("normalize accepted an oversized vector")
	}
}
