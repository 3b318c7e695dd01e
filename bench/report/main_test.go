package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/miniopenclaw/tool
BenchmarkExecuteTyped-2   	  200000	      5300 ns/op	      2700 baseline-ns/op	         1.96 x-baseline	    1200 B/op	      24 allocs/op
BenchmarkExecuteTyped-2   	  200000	      5100 ns/op	      2690 baseline-ns/op	         1.90 x-baseline	    1200 B/op	      24 allocs/op
BenchmarkExecuteTyped-2   	  200000	      5200 ns/op	      2600 baseline-ns/op	         2.00 x-baseline	    1200 B/op	      24 allocs/op
BenchmarkSpawnSplit/spare-paused-2   150   8320000 ns/op   2.90 run-p50-ms
PASS
`

func TestFigures(t *testing.T) {
	r := &Run{Out: sample}
	r.parse()
	for _, tt := range []struct{ name, metric, fig, med string }{
		{"ExecuteTyped", "x-baseline", "1.90–2.00", "1.96"},
		{"BenchmarkExecuteTyped", "ns/op", "5.10–5.30 µs", "5.20 µs"},
		{"ExecuteTyped", "allocs/op", "24", "24"},
		{"SpawnSplit/spare-paused", "ns/op", "8.32 ms", "8.32 ms"},
		{"SpawnSplit/spare-paused", "run-p50-ms", "2.90", "2.90"},
	} {
		fig, err := r.Fig(tt.name, tt.metric)
		if err != nil || fig != tt.fig {
			t.Errorf("Fig(%s, %s) = %q, %v; want %q", tt.name, tt.metric, fig, err, tt.fig)
		}
		med, err := r.Med(tt.name, tt.metric)
		if err != nil || med != tt.med {
			t.Errorf("Med(%s, %s) = %q, %v; want %q", tt.name, tt.metric, med, err, tt.med)
		}
	}
	if n := r.N("ExecuteTyped"); n != 3 {
		t.Errorf("N = %d, want 3", n)
	}
	if _, err := r.Fig("ExecuteTyped", "x-json"); err == nil || !strings.Contains(err.Error(), "reports no x-json") {
		t.Errorf("a metric the benchmark does not report: %v", err)
	}
	if _, err := r.Fig("Missing", "ns/op"); err == nil || !strings.Contains(err.Error(), "no benchmark Missing") {
		t.Errorf("a benchmark the run does not have: %v", err)
	}
}

// TestScale: times in nanoseconds read in the unit that suits them,
// whatever the metric's name says they are per; other metrics as they are.
func TestScale(t *testing.T) {
	for _, tt := range []struct {
		v      float64
		metric string
		want   string
	}{
		{95660, "direct-ns/call", "95.7 µs"},
		{1.5e6, "raw-p50-ns", "1.50 ms"},
		{2700, "baseline-ns/op", "2.70 µs"},
		{120, "ns/op", "120 ns"},
		{95660, "B/op", "95,660"},
		{1.5, "x-baseline", "1.50"},
	} {
		scale, unit := scaleOf(tt.v, tt.metric)
		if got := sig(tt.v/scale, tt.v == float64(int64(tt.v)) && scale == 1) + unit; got != tt.want {
			t.Errorf("%v %s reads %q, want %q", tt.v, tt.metric, got, tt.want)
		}
	}
}

// TestMeets: a goal holds only when every line meets it.
func TestMeets(t *testing.T) {
	r := &Run{Out: sample}
	r.parse()
	for _, tt := range []struct {
		limit float64
		want  string
	}{
		{2.0, "✓"},  // the highest line is 2.00
		{1.95, "✗"}, // two of three lines meet it, one does not
		{-1.9, "✓"}, // at least 1.90: the lowest is 1.90
		{-1.95, "✗"},
	} {
		got, err := r.Meets("ExecuteTyped", "x-baseline", tt.limit)
		if err != nil || got != tt.want {
			t.Errorf("Meets(%v) = %q, %v; want %q", tt.limit, got, err, tt.want)
		}
	}
	if _, err := r.Meets("Missing", "x-baseline", 1); err == nil {
		t.Error("Meets of a benchmark the run does not have: no error")
	}
}

// TestMeetsAtLoad: a goal stated for a load gets a mark only from a run
// whose lowest load reached it; below, the run says its load instead.
func TestMeetsAtLoad(t *testing.T) {
	for _, tt := range []struct {
		load  string
		limit float64
		want  string
	}{
		{"10.8–12.4", 2.0, "✓"},
		{"10.8–12.4", 1.95, "✗"},
		{"10.0–11.0", 2.0, "✓"},
		{"9.9–14.0", 2.0, "— (load 9.9–14.0, not ≥ 10)"},
		{"0.1–1.6", 1.95, "— (load 0.1–1.6, not ≥ 10)"},
	} {
		r := &Run{Out: sample, Load: tt.load}
		r.parse()
		got, err := r.MeetsAtLoad("ExecuteTyped", "x-baseline", tt.limit, 10)
		if err != nil || got != tt.want {
			t.Errorf("load %s, limit %v: %q, %v; want %q", tt.load, tt.limit, got, err, tt.want)
		}
	}
	r := &Run{Out: sample, Load: "unknown"}
	r.parse()
	if _, err := r.MeetsAtLoad("ExecuteTyped", "x-baseline", 2, 10); err == nil {
		t.Error("a run without a load: no error")
	}
}

func TestSig(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 1.234: "1.23", 12.345: "12.3", 123.45: "123", 1234.5: "1,235", 0.01234: "0.0123", 1234567: "1,234,567", -2.5: "-2.50", 2: "2.00",
	} {
		if got := sig(v, false); got != want {
			t.Errorf("sig(%v) = %q, want %q", v, got, want)
		}
	}
	if got := sig(24, true); got != "24" {
		t.Errorf("sig(24, whole) = %q", got)
	}
}

// TestKeptRuns writes a run as the report keeps it, renders a template from
// it alone, and checks that a changed command refuses the kept result.
func TestKeptRuns(t *testing.T) {
	dir := t.TempDir()
	run := &Run{Cmd: "go test -run '^$' -bench Execute .", When: "2026-12-02 08:00 UTC", Load: "1.0–2.0", Machine: "2 cores", Out: sample}
	if err := os.WriteFile(filepath.Join(dir, "core.txt"), run.encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &reporter{dir: dir, renderOnly: true}
	tmpl := template.Must(template.New("t").Funcs(template.FuncMap{"bench": r.bench}).Parse(
		`{{$r := bench "core" "." "-bench" "Execute"}}{{$r.Cmd}} at load {{$r.Load}}: {{$r.Fig "ExecuteTyped" "x-baseline"}}×`))
	var b strings.Builder
	if err := tmpl.Execute(&b, nil); err != nil {
		t.Fatal(err)
	}
	if want := "go test -run '^$' -bench Execute . at load 1.0–2.0: 1.90–2.00×"; b.String() != want {
		t.Errorf("rendered %q, want %q", b.String(), want)
	}

	r = &reporter{dir: dir, renderOnly: true}
	tmpl = template.Must(template.New("t").Funcs(template.FuncMap{"bench": r.bench}).Parse(`{{bench "core" "." "-bench" "Other"}}`))
	if err := tmpl.Execute(&b, nil); err == nil || !strings.Contains(err.Error(), "make it again") {
		t.Errorf("a kept run of another command: %v", err)
	}
}

func TestShellQuote(t *testing.T) {
	if got, want := shellQuote([]string{"go", "test", "-run", "^$", "-bench", "A|B", "it's"}), `go test -run '^$' -bench 'A|B' 'it'\''s'`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestBenchmarksMatchResults: BENCHMARKS.md is exactly what the template
// makes of the kept results, so no figure in it was written by hand or
// left from an earlier run. After editing the template or a run, write
// it again with bench/run.sh (-render when no run changed).
func TestBenchmarksMatchResults(t *testing.T) {
	r := &reporter{dir: "../results", renderOnly: true}
	got, err := r.report("../BENCHMARKS.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("BENCHMARKS.md is not what bench/BENCHMARKS.tmpl makes of bench/results: run bench/run.sh -render")
	}
}

// TestHistory: every run made is kept by key; Runs and RunsMeet read the
// runs of the same command since a time, newest first, and the history
// keeps only the newest keepRuns.
func TestHistory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "history", "k")
	mk := func(cmd, when, load string, ratio string) *Run {
		r := &Run{Cmd: cmd, When: when, Load: load, Machine: "m",
			Out: "BenchmarkX-2   10   5 ns/op   " + ratio + " x-raw\n"}
		r.parse()
		if err := keepInHistory(dir, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	mk("go test a", "2026-12-07 05:00 UTC", "1.0–2.0", "1.50") // before since
	mk("go test b", "2026-12-07 06:00 UTC", "1.0–2.0", "1.00") // another command
	mk("go test a", "2026-12-07 06:01 UTC", "12.0–14.0", "1.20")
	mk("go test a", "2026-12-07 06:01 UTC", "1.5–1.6", "1.10") // same minute
	last := mk("go test a", "2026-12-07 06:03 UTC", "10.5–20.0", "1.40")
	last.historyDir = dir

	got, err := last.Runs("X", "x-raw", "2026-12-07 06:00")
	want := "1.40 at load 10.5–20.0 (2026-12-07 06:03); 1.10 at load 1.5–1.6 (2026-12-07 06:01); 1.20 at load 12.0–14.0 (2026-12-07 06:01)"
	if err != nil || got != want {
		t.Errorf("Runs = %q, %v\nwant %q", got, err, want)
	}
	for _, tt := range []struct {
		limit, minLoad float64
		want           string
	}{
		{1.3, 10, "1 of 2 runs at load ≥ 10"},
		{1.3, 0, "2 of 3 runs"},
		{1.5, 0, "3 of 3 runs"},
		{1.0, 0, "0 of 3 runs"},
	} {
		if got, err := last.RunsMeet("X", "x-raw", tt.limit, tt.minLoad, "2026-12-07 06:00"); err != nil || got != tt.want {
			t.Errorf("RunsMeet(%v, %v) = %q, %v; want %q", tt.limit, tt.minLoad, got, err, tt.want)
		}
	}
	if _, err := last.Runs("X", "x-raw", "2026-12-08 00:00"); err == nil {
		t.Error("Runs with no kept run since: no error")
	}
	if _, err := last.Runs("X", "x-raw", "yesterday"); err == nil {
		t.Error("Runs with a malformed since: no error")
	}

	for i := range keepRuns + 3 {
		mk("go test a", fmt.Sprintf("2026-12-07 07:%02d UTC", i), "1.0–1.0", "1.00")
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	if len(names) != keepRuns {
		t.Fatalf("history holds %d runs, want %d", len(names), keepRuns)
	}
	if got, _ := last.RunsMeet("X", "x-raw", 1.5, 0, "2026-12-07 06:00"); got != fmt.Sprintf("%d of %d runs", keepRuns, keepRuns) {
		t.Errorf("after pruning: %q", got)
	}
}
