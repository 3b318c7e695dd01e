package toolsearch

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
)

func TestAppendTerms(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"listPullRequests", []string{"list", "pull", "request"}},
		{"list_pull_requests", []string{"list", "pull", "request"}},
		{"HTTPServer get-by-ID", []string{"http", "server", "get", "id"}},
		{"Creates a new issue in the repository.", []string{"creat", "new", "issu", "repository"}},
		{"creating created create", []string{"creat", "creat", "creat"}},
		{"meetings meeting", []string{"meet", "meet"}},
		{"queries query boxes matches running stopped", []string{"query", "query", "box", "match", "run", "stop"}},
		{"s3 ec2Instances v2", []string{"s3", "ec2", "instanc", "v2"}},
		{"Wetter für München", []string{"wetter", "für", "münchen"}},
		{"the of and", nil},
		{"", nil},
	}
	for _, tt := range tests {
		got := appendTerms(nil, tt.text, 100)
		if !slices.Equal(got, tt.want) {
			t.Errorf("appendTerms(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestAppendTermsBounded(t *testing.T) {
	got := appendTerms(nil, strings.Repeat("word ", 1000), 7)
	if len(got) != 7 {
		t.Fatalf("got %d terms, want 7", len(got))
	}
	q := queryTerms(strings.Repeat("alpha beta gamma delta ", 10000), defaultRanking.synonym, defaultRanking.repeat)
	if len(q) > 2*MaxQueryTerms {
		t.Fatalf("query gave %d terms", len(q))
	}
}

func testRegistry(t testing.TB, tools ...tool.Tool) *tool.Registry {
	t.Helper()
	r := tool.NewRegistry()
	for _, tl := range tools {
		if err := r.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func names(ms []Match) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

var sample = []tool.Tool{
	echotool.New("slack_post_message", "Post a message to a Slack channel.", `{"type":"object","properties":{"channel":{"type":"string","description":"Channel ID"},"text":{"type":"string"}}}`),
	echotool.New("github_create_issue", "Create a new issue in a GitHub repository.", `{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"},"title":{"type":"string"}}}`),
	echotool.New("get_weather", "Current weather conditions for a city.", `{"type":"object","properties":{"city":{"type":"string","description":"City name, e.g. Paris"}}}`),
	echotool.New("readFile", "Read the contents of a file from disk.", `{"type":"object","properties":{"path":{"type":"string"}}}`),
	tool.With(echotool.New("rm", "Removes the entry at a path.", `{"type":"object"}`), tool.WithAnnotations(tool.Annotations{Title: "Delete file", Destructive: true})),
}

func TestSearch(t *testing.T) {
	ix := New(testRegistry(t, sample...))
	defer ix.Close()
	tests := []struct {
		query string
		first string
	}{
		{"post a message to slack", "slack_post_message"},
		{"github_create_issue", "github_create_issue"},
		{"open a ticket", "github_create_issue"}, // synonym: ticket for issue
		{"forecast in Paris", "get_weather"},     // synonym and parameter description
		{"read file contents", "readFile"},       // camelCase name
		{"delete a file", "rm"},                  // title
		{"send chat to a channel", "slack_post_message"},
	}
	for _, tt := range tests {
		got := ix.Search(tt.query, 3)
		if len(got) == 0 || got[0].Name != tt.first {
			t.Errorf("Search(%q) = %q, want %q first", tt.query, names(got), tt.first)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Score > got[i-1].Score {
				t.Errorf("Search(%q): scores not in order: %v", tt.query, got)
			}
		}
	}
	if got := ix.Search("zebra quantum", 5); len(got) != 0 {
		t.Errorf("unrelated query found %q", names(got))
	}
	if got := ix.Search("", 5); len(got) != 0 {
		t.Errorf("empty query found %q", names(got))
	}
}

func TestSearchLimit(t *testing.T) {
	var tools []tool.Tool
	for i := range 80 {
		tools = append(tools, echotool.New("tool_"+strings.Repeat("x", i%5+1)+string(rune('a'+i%26))+string(rune('a'+i/26)), "Fetch a web page.", `{"type":"object"}`))
	}
	ix := New(testRegistry(t, tools...))
	defer ix.Close()
	for _, tt := range []struct{ limit, want int }{{0, 5}, {3, 3}, {1000, MaxResults}} {
		if got := ix.Search("web page", tt.limit); len(got) != tt.want {
			t.Errorf("limit %d: got %d matches, want %d", tt.limit, len(got), tt.want)
		}
	}
	// Equal scores are ordered by name.
	got := names(ix.Search("web page", 10))
	if !slices.IsSorted(got) {
		t.Errorf("ties not in name order: %q", got)
	}
}

func TestFollowsRegistry(t *testing.T) {
	r := testRegistry(t, sample...)
	ix := New(r)
	if err := r.Register(echotool.New("get_weather", "Stock quotes for a ticker symbol.", `{"type":"object"}`)); err != nil {
		t.Fatal(err)
	}
	if got := ix.Search("conditions for a city", 5); slices.Contains(names(got), "get_weather") {
		t.Errorf("replaced description still found: %q", names(got))
	}
	if got := ix.Search("stock ticker", 5); len(got) == 0 || got[0].Name != "get_weather" {
		t.Errorf("new description not found: %q", names(got))
	}
	r.Remove("slack_post_message")
	if got := ix.Search("slack message", 5); slices.Contains(names(got), "slack_post_message") {
		t.Errorf("removed tool found: %q", names(got))
	}
	if ix.Len() != 4 {
		t.Errorf("Len = %d, want 4", ix.Len())
	}
	ix.Close()
	r.Remove("readFile")
	if ix.Len() != 4 {
		t.Errorf("closed index changed: Len = %d", ix.Len())
	}
}

func TestSearchRegexp(t *testing.T) {
	ix := New(testRegistry(t, sample...))
	defer ix.Close()
	tests := []struct {
		pattern string
		want    []string
	}{
		{"^github_", []string{"github_create_issue"}},
		{"(?i)slack", []string{"slack_post_message"}},
		{"Paris", []string{"get_weather"}},                                                            // a parameter description
		{"(?i)delete", []string{"rm"}},                                                                // the title
		{"e", []string{"get_weather", "github_create_issue", "slack_post_message", "readFile", "rm"}}, // by fields matched, then name
		{"nothing-matches-this", nil},
	}
	for _, tt := range tests {
		got, err := ix.SearchRegexp(tt.pattern, 10)
		if err != nil {
			t.Fatalf("SearchRegexp(%q): %v", tt.pattern, err)
		}
		if !slices.Equal(names(got), tt.want) {
			t.Errorf("SearchRegexp(%q) = %q, want %q", tt.pattern, names(got), tt.want)
		}
	}
	for _, bad := range []string{"(", strings.Repeat("a", MaxPatternBytes+1), `\8`} {
		_, err := ix.SearchRegexp(bad, 5)
		var pe *PatternError
		if !errors.As(err, &pe) {
			t.Errorf("SearchRegexp(%.20q): err = %v, want a *PatternError", bad, err)
		}
	}
}

func TestEachParam(t *testing.T) {
	tests := []struct {
		schema string
		want   []string
	}{
		{`{"type":"object","properties":{"city":{"type":"string","description":"City name"},"units":{"enum":["c","f"]}}}`, []string{"city: City name", "units: "}},
		{`{"type":"object","properties":{"filter":{"type":"object","description":"Filter","properties":{"owner":{"description":"Who"}}}}}`, []string{"filter: Filter", "owner: Who"}},
		{`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"object","properties":{"key":{"description":"Tag key"}}}}}}`, []string{"tags: ", "key: Tag key"}},
		{`{"properties":{"a":{"description":"esc\"aped \u00e9"}}}`, []string{`a: esc"aped é`}},
		{`{"properties":{"a":{"description":"x"}`, nil}, // cut short
		{`{"properties":{"a":{"description":7}}}`, []string{"a: "}},
		{`{"properties":[1,2]}`, nil},
		{`not json`, nil},
		{``, nil},
	}
	for _, tt := range tests {
		var got []string
		eachParam([]byte(tt.schema), func(name, desc string) { got = append(got, name+": "+desc) })
		if !slices.Equal(got, tt.want) {
			t.Errorf("eachParam(%s) = %q, want %q", tt.schema, got, tt.want)
		}
	}
}

func TestEachParamBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range 1000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
	}
	b.WriteString(`}}`)
	n := 0
	eachParam([]byte(b.String()), func(string, string) { n++ })
	if n != maxParams {
		t.Errorf("reported %d parameters, want the cap %d", n, maxParams)
	}
	deep := strings.Repeat(`{"properties":{"a":`, 20) + `{}` + strings.Repeat(`}}`, 20)
	n = 0
	eachParam([]byte(deep), func(string, string) { n++ })
	if n != maxSchemaDepth {
		t.Errorf("reported %d nested parameters, want %d", n, maxSchemaDepth)
	}
}

func FuzzSearch(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"description":"b"}}}`, "find a b", "a|b")
	f.Add(`{"properties":{"x":{"items":{"properties":{"y":{}}}}}}`, "HTTPServer get_by_id", "(?i)x")
	f.Add(`{`, "", "(")
	f.Add(`{"type":"object"}`, "x", `[a-z]{1000}[!?]`) // a large program (TestSearchRegexpProgramBounded)
	f.Add(`{"type":"object"}`, "x", `(?:abcdefghijklmnopqrstuvwxyz){1000}`)
	f.Fuzz(func(t *testing.T, schema, query, pattern string) {
		n := 0
		eachParam([]byte(schema), func(string, string) { n++ })
		if n > maxParams {
			t.Fatalf("%d parameters", n)
		}
		r := tool.NewRegistry()
		if r.Register(echotool.New("t", query, schema)) != nil {
			_ = r.Register(echotool.New("t", query, `{"type":"object"}`))
		}
		ix := New(r)
		defer ix.Close()
		for _, m := range ix.Search(query, 5) {
			if m.Name != "t" || m.Score <= 0 {
				t.Fatalf("match %+v", m)
			}
		}
		if _, err := ix.SearchRegexp(pattern, 5); err != nil {
			var pe *PatternError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v", err)
			}
		}
	})
}

func TestRequiredLiteral(t *testing.T) {
	tests := []struct {
		pattern string
		lit     string
		fold    bool
	}{
		{"slack", "slack", false},
		{"(?i)slack.*message", "message", true},
		{"^github_(create|update)_issue$", "github_", false}, // the longest
		{"(?i)Slack", "slack", true},
		{"a|b", "", false},
		{"x", "", false},          // too short
		{"(?i)straße", "", false}, // folding beyond ASCII
		{"(ab)+cd", "ab", false},
		{"(abc){0,2}d", "", false},
	}
	for _, tt := range tests {
		lit, fold := requiredLiteral(tt.pattern)
		if lit != tt.lit || fold != tt.fold {
			t.Errorf("requiredLiteral(%q) = %q, %v; want %q, %v", tt.pattern, lit, fold, tt.lit, tt.fold)
		}
	}
	for _, tt := range []struct {
		s, lit string
		fold   bool
		want   bool
	}{
		{"Post a Message", "message", true, true},
		{"Post a Message", "message", false, false},
		{"MESS", "message", true, false},
		{"xmessage", "message", true, true},
	} {
		if got := contains(tt.s, tt.lit, tt.fold); got != tt.want {
			t.Errorf("contains(%q, %q, %v) = %v", tt.s, tt.lit, tt.fold, got)
		}
	}
}

// TestSearchRegexpPrefilter checks that skipping texts without a
// pattern's required literal changes no result: the index agrees with
// matching every field of every tool.
func TestSearchRegexpPrefilter(t *testing.T) {
	tools := evalTools(t)
	ix := New(testRegistry(t, tools...))
	defer ix.Close()
	for _, pattern := range []string{`(?i)slack.*message`, `^github_`, `(?i)ISSUE`, `(ab)+|message`, `(?i)pull[ _]request`, `calendar|event`, `(?i)e(mail)+s?\b`, `Repository owner`} {
		re := regexp.MustCompile(pattern)
		var want []Match
		for _, tl := range tools {
			d, _ := analyze(tl, &defaultRanking)
			score := 0.0
			for _, f := range []struct {
				text  string
				score float64
			}{{d.name, 8}, {d.title, 4}, {d.desc, 2}, {d.params, 1}} {
				if f.text != "" && re.MatchString(f.text) {
					score += f.score
				}
			}
			if score > 0 {
				want = keepBest(want, Match{Name: d.name, Score: score}, MaxResults)
			}
		}
		sortMatches(want)
		got, err := ix.SearchRegexp(pattern, MaxResults)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(names(got), names(want)) || len(got) == 0 {
			t.Errorf("%s: index found %q, matching every tool %q", pattern, names(got), names(want))
		}
	}
}

// TestKeepBest checks the heap of keepBest against sorting everything
// and keeping the first limit, with ties broken by name.
func TestKeepBest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n, limit := rng.IntN(120), rng.IntN(60)
		var all, best []Match
		for i := range n {
			m := Match{Name: fmt.Sprintf("t%03d", i), Score: float64(rng.IntN(20))} // many ties
			all = append(all, m)
			best = keepBest(best, m, limit)
		}
		sortMatches(all)
		sortMatches(best)
		want := names(all[:min(limit, len(all))])
		if got := names(best); !slices.Equal(got, want) {
			t.Fatalf("round %d (n %d, limit %d): kept %v, want %v", round, n, limit, got, want)
		}
	}
}
