package toolsearch

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
)

// manyTools returns n tools made from the evaluation set: copies of its
// tools, each named and described as if served by a different server.
func manyTools(t testing.TB, n int) []tool.Tool {
	base := evalTools(t)
	out := make([]tool.Tool, 0, n)
	for i := 0; len(out) < n; i++ {
		b := base[i%len(base)]
		copyNo := i / len(base)
		out = append(out, echotool.New(fmt.Sprintf("%s_%d", b.Name(), copyNo),
			fmt.Sprintf("%s (server %d)", b.Description(), copyNo), string(b.Parameters())))
	}
	return out
}

// heapInUse returns the bytes of live heap objects after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// indexBytesPerTool measures what an index of tools adds to the heap,
// per tool: the registry and the tools themselves are not counted.
func indexBytesPerTool(t testing.TB, tools []tool.Tool) float64 {
	r := testRegistry(t, tools...)
	r.Definitions() // the registry's own caches, before measuring
	before := heapInUse()
	ix := New(r)
	after := heapInUse()
	runtime.KeepAlive(ix)
	return (float64(after) - float64(before)) / float64(len(tools))
}

// TestMemoryPerTool checks that an index of 10,000 tools costs at most
// 2 KiB a tool.
func TestMemoryPerTool(t *testing.T) {
	per := indexBytesPerTool(t, manyTools(t, 10000))
	t.Logf("%.0f bytes a tool", per)
	if per > 2048 {
		t.Errorf("index holds %.0f bytes a tool, want at most 2048", per)
	}
}

// BenchmarkSearch runs the evaluation queries over 10,000 tools, with the
// index, with textbook BM25 (plainBM25) and with the plain substring
// baseline, interleaved, and reports the median latency of each and the
// ratios.
func BenchmarkSearch(b *testing.B) {
	tools := manyTools(b, 10000)
	ix := New(testRegistry(b, tools...))
	base := substringSearch(tools)
	bm := newPlainBM25(tools)
	qs := evalQueries(b)
	var idx, sub, plain []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		q := qs[i%len(qs)].text
		start := time.Now()
		ix.Search(q, 10)
		mid := time.Now()
		if i%16 == 0 { // the baseline is slow: sample it
			base(q)
			sub = append(sub, time.Since(mid))
		}
		idx = append(idx, mid.Sub(start))
		if i%4 == 0 {
			start := time.Now()
			bm.search(q)
			plain = append(plain, time.Since(start))
		}
	}
	p50, p99 := percentile(idx, 50), percentile(idx, 99)
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	if len(sub) > 0 {
		bp50 := percentile(sub, 50)
		b.ReportMetric(float64(bp50.Microseconds()), "substring-p50-µs")
		b.ReportMetric(float64(bp50)/float64(max(p50, 1)), "x-faster")
	}
	if len(plain) > 0 {
		pp50 := percentile(plain, 50)
		b.ReportMetric(float64(pp50.Microseconds()), "bm25-p50-µs")
		b.ReportMetric(float64(pp50)/float64(max(p50, 1)), "x-bm25")
	}
}

// BenchmarkSearchRegexp matches a pattern against 10,000 tools.
func BenchmarkSearchRegexp(b *testing.B) {
	ix := New(testRegistry(b, manyTools(b, 10000)...))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ix.SearchRegexp(`(?i)slack.*message`, 10); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRegister replaces tools of a 10,000-tool registry, with and
// without an index following it, and reports what the index adds to a
// registration.
func BenchmarkRegister(b *testing.B) {
	tools := manyTools(b, 10000)
	plain := testRegistry(b, tools...)
	indexed := testRegistry(b, tools...)
	ix := New(indexed)
	defer ix.Close()
	var with, without time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t := tools[i%len(tools)]
		start := time.Now()
		// Replace, as a reload does: Register would log a warning per
		// replacement into the benchmark's output.
		if _, err := plain.Replace(t); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := indexed.Replace(t); err != nil {
			b.Fatal(err)
		}
		with += time.Since(mid)
		without += mid.Sub(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64((with-without).Nanoseconds())/n/1e3, "index-µs/op")
	b.ReportMetric(float64(without.Nanoseconds())/n/1e3, "registry-µs/op")
}

// BenchmarkMemory reports the bytes an index of 10,000 tools holds per
// tool. It measures once, whatever b.N.
func BenchmarkMemory(b *testing.B) {
	per := indexBytesPerTool(b, manyTools(b, 10000))
	for b.Loop() {
	}
	b.ReportMetric(per, "B/tool")
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// toyEmbedder embeds in-process like the loopback API of embed_test.go,
// so that BenchmarkSearchFused measures the fusion, not HTTP.
type toyEmbedder struct{ api *embeddingsAPI }

func (toyEmbedder) Model() string { return "toy" }
func (e toyEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = e.api.vector(t)
	}
	return out, nil
}

// BenchmarkSearchFused runs the evaluation queries over 10,000 tools
// with an Embedder of 64 dimensions (in-process, so the model's own cost
// is left out), interleaved with the BM25-only index, and reports the
// median of each and the vectors' heap per tool.
func BenchmarkSearchFused(b *testing.B) {
	tools := manyTools(b, 10000)
	r := testRegistry(b, tools...)
	lex := New(r)
	defer lex.Close()
	before := heapInUse()
	ix := NewWithOptions(r, Options{Embedder: toyEmbedder{&embeddingsAPI{}}})
	defer ix.Close()
	ix.Search("warm up: embed every tool", 5)
	perTool := (float64(heapInUse()) - float64(before)) / float64(len(tools))
	fused, plain := interleaveSearches(b, ix, lex)
	b.ReportMetric(float64(percentile(fused, 50).Microseconds()), "fused-p50-µs")
	b.ReportMetric(float64(percentile(plain, 50).Microseconds()), "bm25-index-p50-µs")
	b.ReportMetric(perTool, "fused-B/tool")
}

// BenchmarkSearchWordVectors runs the evaluation queries over 10,000
// tools fused with the real word vectors (CLAWTOOL_WORD_VECTORS, see
// wordvec_eval_test.go), interleaved with the BM25-only index, and
// reports the median of each, the vectors' heap per tool, and the load
// of the table from its converted form: time and heap.
func BenchmarkSearchWordVectors(b *testing.B) {
	realWordVectors(b) // converts once, or skips without the file
	cache := os.Getenv(wordVectorsCacheEnv)
	if cache == "" {
		cache = WordVectorsCacheDir()
	}
	before := heapInUse()
	start := time.Now()
	wv, err := LoadWordVectors(os.Getenv(wordVectorsEnv), cache)
	if err != nil {
		b.Fatal(err)
	}
	load := time.Since(start)
	table := float64(heapInUse()) - float64(before)

	tools := manyTools(b, 10000)
	r := testRegistry(b, tools...)
	lex := New(r)
	defer lex.Close()
	before = heapInUse()
	ix := NewWithOptions(r, Options{}.UseWordVectors(wv))
	defer ix.Close()
	start = time.Now()
	ix.Search("warm up: embed every tool", 5)
	embedAll := time.Since(start)
	perTool := (float64(heapInUse()) - float64(before)) / float64(len(tools))
	fused, plain := interleaveSearches(b, ix, lex)
	b.ReportMetric(float64(percentile(fused, 50).Microseconds()), "fused-p50-µs")
	b.ReportMetric(float64(percentile(fused, 99).Microseconds()), "fused-p99-µs")
	b.ReportMetric(float64(percentile(plain, 50).Microseconds()), "bm25-index-p50-µs")
	b.ReportMetric(perTool, "fused-B/tool")
	b.ReportMetric(float64(load.Milliseconds()), "load-ms")
	b.ReportMetric(table/(1<<20), "table-MiB")
	b.ReportMetric(float64(embedAll.Milliseconds()), "embed-10k-ms")
	runtime.KeepAlive(wv)
}

// interleaveSearches runs the evaluation queries in turn through ix and
// then lex until b's loop ends, timing each search, and returns the
// times of each index in order.
func interleaveSearches(b *testing.B, ix, lex *Index) (fused, plain []time.Duration) {
	qs := evalQueries(b)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		q := qs[i%len(qs)].text
		start := time.Now()
		ix.Search(q, 10)
		mid := time.Now()
		lex.Search(q, 10)
		fused = append(fused, mid.Sub(start))
		plain = append(plain, time.Since(mid))
	}
	return fused, plain
}
