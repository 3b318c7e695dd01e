package toolsearch

import (
	"testing"

	"github.com/miniopenclaw/tool"
)

// The second MCP set (testdata/mcp2, see PROVENANCE.md there): 190 tools
// of 8 more MCP server packages from npm and 43 queries from their
// READMEs, added after the ranking was tuned. All of it is held out:
// nothing in it was used to choose anything, and its misses are never
// printed.

// mcp2Catalog reads testdata/mcp2/catalog.json.
func mcp2Catalog(t testing.TB) []tool.Tool {
	t.Helper()
	return readCatalog(t, "testdata/mcp2/catalog.json")
}

// TestMCP2HeldOut ranks the queries of the second MCP set over both MCP
// catalogs together (551 tools), with the index and with plain BM25.
func TestMCP2HeldOut(t *testing.T) {
	tools := append(mcpCatalog(t), mcp2Catalog(t)...)
	qs := readQueries(t, "testdata/mcp2/queries_readme.txt")
	if len(tools) < 500 || len(qs) < 40 {
		t.Fatalf("MCP sets have %d tools and the second %d queries, want at least 500 and 40", len(tools), len(qs))
	}
	r := testRegistry(t, tools...)
	for _, q := range qs {
		if _, ok := r.Get(q.answers[0]); !ok {
			t.Errorf("query %q: answer %q is not a tool of the catalog", q.text, q.answers[0])
		}
	}
	ix := New(r)
	defer ix.Close()
	idx := evaluate(qs, func(q string) []string { return names(ix.Search(q, 10)) }, nil)
	bm := evaluate(qs, newPlainBM25(tools).search, nil)
	t.Logf("index:      held out    %v", idx)
	t.Logf("plain BM25: held out    %v", bm)
	// Measured once, after the ranking was chosen: the index finds more
	// answers in its first five (1.000 against 0.977) but puts two fewer
	// first (MRR 0.892 against 0.908; 0.881 with the summed synonyms of
	// before). The checks hold what was measured: recall@5 at least
	// BM25's, and MRR no lower than it was.
	if idx.recall5 < bm.recall5 || idx.mrr < 0.89 {
		t.Errorf("second MCP set: %v, want recall@5 at least plain BM25's (%v) and MRR at least 0.89", idx, bm)
	}
}

// TestNothingFitsWritten measures the "nothing fits" answer on queries
// written for it (testdata/mcp/queries_nothing.txt: capabilities no tool
// of the MCP catalog has, written before any score was seen), against
// the README queries whose tool is there: precision is the share of
// empty answers that were right.
func TestNothingFitsWritten(t *testing.T) {
	tools := mcpCatalog(t)
	var absent []absentCase
	for _, line := range dataLines(t, "testdata/mcp/queries_nothing.txt") {
		absent = append(absent, absentCase{q: evalQuery{text: line}})
	}
	if len(absent) < 40 {
		t.Fatalf("%d 'nothing fits' queries, want 40", len(absent))
	}
	tune, held := mcpQueries(t)
	present := append(tune, held...)
	ix := NewWithOptions(testRegistry(t, tools...), Options{MinConfidence: -1})
	defer ix.Close()
	if *calibrate {
		for th := 0.10; th < 0.65; th += 0.05 {
			t.Logf("threshold %.2f: %v", th, measureAbstention(ix, present, absent, th))
		}
	}
	a := measureAbstention(ix, present, absent, DefaultMinConfidence)
	t.Logf("at DefaultMinConfidence %.3g: %v", DefaultMinConfidence, a)
	if a.recall == 0 {
		t.Errorf("'nothing fits' never answered for a capability the catalog lacks: %v", a)
	}
	if a.falseAbstain > 0.05 {
		t.Errorf("'nothing fits' answered for %.3f of queries whose tool is there, want at most 0.05", a.falseAbstain)
	}
}
