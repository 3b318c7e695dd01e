package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// embeddingsAPI is a loopback OpenAI-compatible embeddings API whose
// vectors put convert_units nearest to any query about Tokyo and
// current_time farthest, so that a fused search ranks what BM25 alone
// would not. It records every text it embeds and the keys it was sent.
type fakeEmbeddings struct {
	*httptest.Server
	mu    sync.Mutex
	texts []string
	auth  []string
}

func newFakeEmbeddings(t *testing.T) *fakeEmbeddings {
	f := &fakeEmbeddings{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req) != nil || req.Model != "test-model" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.texts = append(f.texts, req.Input...)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.mu.Unlock()
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []item
		for i, text := range req.Input {
			v := []float32{0, 1}
			switch {
			case strings.Contains(text, "Tokyo"), strings.Contains(text, "Converts"):
				v = []float32{1, 0}
			case strings.Contains(text, "current date and time"):
				v = []float32{-1, 0}
			}
			data = append(data, item{i, v})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	}))
	t.Cleanup(f.Close)
	return f
}

// texts returns what was embedded since the last call, and forgets it.
func (f *fakeEmbeddings) take() (texts, auth []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	texts, auth, f.texts, f.auth = f.texts, f.auth, nil, nil
	return texts, auth
}

// TestSearchEmbeddings checks clawtool search --embeddings: the fused
// ranking puts first the tool the API's vectors favour (BM25 alone ranks
// it nowhere), the key comes from the environment as a bearer token, the
// tools' vectors are kept in the user cache directory so that a second
// search embeds only its query, and an API that fails leaves BM25's
// answer with a warning.
func TestSearchEmbeddings(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv(embeddingsKeyEnv, "sk-test")
	f := newFakeEmbeddings(t)
	search := func(base string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"search", "--embeddings", base, "--embeddings-model", "test-model", "-n", "3", "what", "time", "is", "it", "in", "Tokyo"}, strings.NewReader(""), &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	var bm25 bytes.Buffer
	run(context.Background(), []string{"search", "-n", "3", "what", "time", "is", "it", "in", "Tokyo"}, nil, &bm25, io.Discard)
	if lines := strings.Split(bm25.String(), "\n"); len(lines) < 2 || !strings.Contains(lines[1], "current_time") || strings.Contains(bm25.String(), "convert_units") {
		t.Fatalf("control: BM25 alone should rank current_time first and not convert_units:\n%s", &bm25)
	}

	out, errOut, code := search(f.URL + "/v1")
	lines := strings.Split(out, "\n")
	if code != exitOK || len(lines) < 2 || !strings.Contains(lines[1], "convert_units") || errOut != "" {
		t.Fatalf("fused: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	texts, auth := f.take()
	if len(texts) < 6 { // five built-in tools and the query
		t.Errorf("first search embedded %d texts, want the five tools and the query", len(texts))
	}
	for _, a := range auth {
		if a != "Bearer sk-test" {
			t.Errorf("Authorization %q, want the key from $%s", a, embeddingsKeyEnv)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(cache, "clawtool", "embeddings", "*")); len(files) == 0 {
		t.Errorf("nothing cached under %s", filepath.Join(cache, "clawtool", "embeddings"))
	}

	out2, _, _ := search(f.URL + "/v1")
	if out2 != out {
		t.Errorf("second search answered differently:\n%s\nwant\n%s", out2, out)
	}
	if texts, _ := f.take(); len(texts) != 1 || !strings.Contains(texts[0], "Tokyo") {
		t.Errorf("second search embedded %q, want only the query (the tools' vectors cached)", texts)
	}

	// An API that answers garbage: BM25's answer, and a warning.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "{not json")
	}))
	defer bad.Close()
	os.RemoveAll(filepath.Join(cache, "clawtool"))
	out, errOut, code = search(bad.URL + "/v1")
	if code != exitOK || out != bm25.String() || !strings.Contains(errOut, "semantic ranking not used, BM25 alone") {
		t.Errorf("failing API: exit %d\nstdout:\n%s\nstderr:\n%s\nwant BM25's answer and a warning", code, out, errOut)
	}
}

// TestSearchEmbeddingsFlags checks the refusals of --embeddings: each is
// a usage error naming what to change, made before any request.
func TestSearchEmbeddingsFlags(t *testing.T) {
	f := newFakeEmbeddings(t)
	for _, tc := range []struct {
		name string
		args []string
		key  string
		want string
	}{
		{"no model", []string{"--embeddings", f.URL + "/v1"}, "", "needs --embeddings-model"},
		{"model alone", []string{"--embeddings-model", "m"}, "", "needs --embeddings URL"},
		{"two rankings", []string{"--embeddings", f.URL + "/v1", "--embeddings-model", "m", "--word-vectors", "x.json"}, "", "give one"},
		{"not http", []string{"--embeddings", "file:///etc/passwd", "--embeddings-model", "m"}, "", "want the http or https base URL"},
		{"no host", []string{"--embeddings", "http:///v1", "--embeddings-model", "m"}, "", "want the http or https base URL"},
		{"credentials in the URL", []string{"--embeddings", "http://user:secret@127.0.0.1:1/v1", "--embeddings-model", "m"}, "", "credentials"},
		{"query in the URL", []string{"--embeddings", f.URL + "/v1?x=1", "--embeddings-model", "m"}, "", "without query"},
		{"key over plain http off loopback", []string{"--embeddings", "http://192.0.2.1/v1", "--embeddings-model", "m"}, "sk-test", "in clear"},
		{"sentence encoder and embeddings", []string{"--sentence-encoder", t.TempDir(), "--embeddings", f.URL + "/v1", "--embeddings-model", "m"}, "", "give one"},
		{"sentence encoder and word vectors", []string{"--sentence-encoder", t.TempDir(), "--word-vectors", "x.json"}, "", "give one"},
		{"sentence encoder with a model", []string{"--sentence-encoder", t.TempDir(), "--embeddings-model", "m"}, "", "needs --embeddings URL"},
		{"sentence encoder not installed", []string{"--sentence-encoder", t.TempDir()}, "", "sentence-encoder.sh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(embeddingsKeyEnv, tc.key)
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"search"}, tc.args...), "send", "mail")
			code := run(context.Background(), args, nil, &stdout, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), exitUsage, tc.want)
			}
		})
	}
	if texts, _ := f.take(); len(texts) != 0 {
		t.Errorf("a refused flag still sent %d texts to the API", len(texts))
	}
	// A key over plain http to a loopback address is allowed.
	t.Setenv(embeddingsKeyEnv, "sk-test")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"search", "--embeddings", f.URL + "/v1", "--embeddings-model", "test-model", "time", "in", "Tokyo"}, nil, &stdout, &stderr); code != exitOK {
		t.Errorf("loopback with a key: exit %d, stderr %q", code, &stderr)
	}
}

// failingEmbedder fails every call.
type failingEmbedder struct{ calls int }

func (*failingEmbedder) Model() string { return "failing" }
func (f *failingEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	f.calls++
	return nil, io.ErrUnexpectedEOF
}

// TestWarnEmbedder checks the warning chat prints when its embeddings
// fail: once, however many searches fail, with the error, and the
// failure still returned (the index then answers with BM25 alone).
func TestWarnEmbedder(t *testing.T) {
	var stderr bytes.Buffer
	inner := &failingEmbedder{}
	e := &warnEmbedder{Embedder: inner, w: &stderr, cmd: "chat"}
	for range 3 {
		if _, err := e.Embed(context.Background(), []string{"x"}); err == nil {
			t.Fatal("the failure was swallowed")
		}
	}
	if inner.calls != 3 || strings.Count(stderr.String(), "semantic ranking not used") != 1 || !strings.Contains(stderr.String(), "unexpected EOF") {
		t.Errorf("calls %d, stderr %q; want 3 calls and one warning naming the error", inner.calls, &stderr)
	}
	if e.Model() != "failing" {
		t.Errorf("Model %q: the wrapper must keep the cache key of what it wraps", e.Model())
	}
}

// TestChatEmbeddingsFlags checks that chat refuses what search refuses,
// before the conversation starts.
func TestChatEmbeddingsFlags(t *testing.T) {
	getenv := localModelEnv("http://127.0.0.1:1")
	var stdout, stderr bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
	if code := chat(context.Background(), e, []string{"--embeddings", "ftp://127.0.0.1/v1", "--embeddings-model", "m", "hello"}, getenv); code != exitUsage || !strings.Contains(stderr.String(), "http or https") {
		t.Errorf("exit %d, stderr %q; want a usage error", code, &stderr)
	}
	stderr.Reset()
	if code := chat(context.Background(), e, []string{"--sentence-encoder", t.TempDir(), "hello"}, getenv); code != exitUsage || !strings.Contains(stderr.String(), "sentence-encoder.sh") {
		t.Errorf("--sentence-encoder of an empty directory: exit %d, stderr %q; want a usage error saying how to install it", code, &stderr)
	}
}

// TestSearchEmbeddingsNoRedirect checks that --embeddings follows no
// redirect: the key is checked against the URL given, so an API that
// answers 307 to another address (here a second loopback server, which
// counts what reaches it) gets no request sent there, and the search
// answers with BM25 alone and says why.
func TestSearchEmbeddingsNoRedirect(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv(embeddingsKeyEnv, "sk-test")
	target := newFakeEmbeddings(t)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"search", "--embeddings", redirect.URL + "/v1", "--embeddings-model", "test-model", "what", "time", "is", "it", "in", "Tokyo"}, nil, &stdout, &stderr)
	if code != exitOK || !strings.Contains(stderr.String(), "redirects are not followed") {
		t.Errorf("exit %d, stderr %q; want BM25's answer and the refused redirect", code, &stderr)
	}
	if texts, auth := target.take(); len(texts) != 0 || len(auth) != 0 {
		t.Errorf("the redirect was followed: %d texts and keys %q reached its target", len(texts), auth)
	}
}
