// Command report regenerates BENCHMARKS.md: it runs every benchmark that the
// template bench/BENCHMARKS.tmpl names, keeps each run's raw output with the
// time, the machine and the load it ran at under bench/results/, and writes
// the figures into the tables of the template.
//
// Usage, from the repository's root (bench/run.sh does this):
//
//	go run ./bench/report [-run REGEXP] [-render]
//
// Every run in the template has a key. Without flags every run is made
// again. With -run only the runs whose key matches are made again and the
// others are read from bench/results/KEY.txt, so that one area can be
// measured again without the rest; each table still says when and at which
// load its own run was made. With -render nothing runs: the file is written
// from the kept results alone, and a run without one is an error.
//
// The template is a text/template with these functions:
//
//	bench KEY PKG ARG...   runs go test -run '^$' ARG... PKG; returns a run
//	script KEY CMD ARG...  runs a command; returns a run whose Out is its output
//	machine                the machines the runs so far were made on
//
// A run's fields and methods: Cmd (the command line), When (UTC), Load (the
// one-minute load average seen before, during and after, low–high), Machine,
// Out (its standard output), Fig NAME METRIC (the lowest–highest value of METRIC
// over the run's lines for benchmark NAME, with "Benchmark" and the -N
// GOMAXPROCS suffix left off NAME), Med NAME METRIC (their median) and N NAME
// (how many lines NAME had), Meets NAME METRIC LIMIT ("✓" when every value
// is at most LIMIT, or at least -LIMIT when LIMIT is negative; else "✗")
// and MeetsAtLoad NAME METRIC LIMIT MIN (Meets, for a run whose load was
// at least MIN throughout; otherwise no mark and the load).
//
// Each run made is also kept under bench/results/history/KEY/ (the newest
// keepRuns of each key), so that a claim about several runs is written by
// the report too: Runs NAME METRIC SINCE lists Fig and the load of every
// kept run of the same command made at or after SINCE ("2006-01-02 15:04",
// UTC), newest first; RunsMeet NAME METRIC LIMIT MIN SINCE says in how
// many of those runs whose load stayed at least MIN every value met LIMIT.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"
)

func main() {
	tmplPath := flag.String("template", "bench/BENCHMARKS.tmpl", "the template of the report")
	out := flag.String("out", "BENCHMARKS.md", "the report to write")
	dir := flag.String("results", "bench/results", "where each run's raw output is kept")
	only := flag.String("run", "", "make again only the runs whose key matches this regular expression")
	render := flag.Bool("render", false, "make no run: write the report from the kept results")
	flag.Parse()

	var match *regexp.Regexp
	if *only != "" {
		var err error
		if match, err = regexp.Compile(*only); err != nil {
			fatal(fmt.Errorf("-run: %w", err))
		}
	}
	r := &reporter{dir: *dir, match: match, renderOnly: *render}
	b, err := r.report(*tmplPath)
	if err != nil {
		fatal(err)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fatal(err)
	}
	fmt.Fprintf(os.Stderr, "report: wrote %s (%d runs made, %d read from %s)\n", *out, r.made, r.kept, *dir)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "report:", err)
	os.Exit(1)
}

// report executes the template at tmplPath, making or reading its runs.
func (r *reporter) report(tmplPath string) ([]byte, error) {
	src, err := os.ReadFile(tmplPath)
	if err != nil {
		return nil, err
	}
	t, err := template.New(filepath.Base(tmplPath)).Option("missingkey=error").Funcs(template.FuncMap{
		"bench":   r.bench,
		"script":  r.script,
		"machine": r.machine,
	}).Parse(string(src))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, nil); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// reporter makes or reads the template's runs.
type reporter struct {
	dir        string
	match      *regexp.Regexp
	renderOnly bool
	made, kept int
	seen       map[string]bool
	machines   []string // of the runs so far, each once
}

// machine names the machines the runs so far were made on (read from the
// kept results, so that a report rendered elsewhere says the same).
func (r *reporter) machine() string {
	if len(r.machines) == 0 {
		return thisMachine()
	}
	return strings.Join(r.machines, "; ")
}

// saw records the machine of a run.
func (r *reporter) saw(run *Run) {
	if !slices.Contains(r.machines, run.Machine) {
		r.machines = append(r.machines, run.Machine)
	}
}

// bench runs go test -run '^$' args... pkg.
func (r *reporter) bench(key, pkg string, args ...string) (*Run, error) {
	argv := append([]string{"go", "test", "-run", "^$"}, args...)
	argv = append(argv, pkg)
	return r.do(key, argv)
}

// script runs a command.
func (r *reporter) script(key string, argv ...string) (*Run, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("script %s: no command", key)
	}
	return r.do(key, argv)
}

func (r *reporter) do(key string, argv []string) (*Run, error) {
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	if r.seen[key] {
		return nil, fmt.Errorf("run %s: the key is used twice", key)
	}
	r.seen[key] = true
	path := filepath.Join(r.dir, key+".txt")
	cmd := shellQuote(argv)
	if r.renderOnly || (r.match != nil && !r.match.MatchString(key)) {
		run, err := readRun(path)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w (make it with -run '^%s$')", key, err, regexp.QuoteMeta(key))
		}
		if run.Cmd != cmd {
			return nil, fmt.Errorf("run %s: the kept result ran %q, the template now says %q: make it again", key, run.Cmd, cmd)
		}
		run.historyDir = filepath.Join(r.dir, "history", key)
		r.kept++
		r.saw(run)
		return run, nil
	}
	fmt.Fprintf(os.Stderr, "report: %s: %s\n", key, cmd)
	run, err := execute(argv)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", key, err)
	}
	run.Cmd = cmd
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, run.encode(), 0o644); err != nil {
		return nil, err
	}
	if err := keepInHistory(filepath.Join(r.dir, "history", key), run); err != nil {
		return nil, err
	}
	run.historyDir = filepath.Join(r.dir, "history", key)
	r.made++
	r.saw(run)
	return run, nil
}

// keepRuns is how many runs of a key bench/results/history keeps.
const keepRuns = 12

// keepInHistory adds run to the history directory dir, named by when it
// ran, and removes the oldest beyond keepRuns.
func keepInHistory(dir string, run *Run) error {
	when, err := time.Parse(whenLayout, run.When)
	if err != nil {
		return fmt.Errorf("run %s: %w", run.Cmd, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var name string // the minute, and a count for runs in the same minute
	for i := 1; ; i++ {
		name = fmt.Sprintf("%s-%02d", when.Format("20060102-1504"), i)
		if _, err := os.Stat(filepath.Join(dir, name+".txt")); errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	if err := os.WriteFile(filepath.Join(dir, name+".txt"), run.encode(), 0o644); err != nil {
		return err
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return err
	}
	slices.Sort(names)
	for len(names) > keepRuns {
		if err := os.Remove(names[0]); err != nil {
			return err
		}
		names = names[1:]
	}
	return nil
}

// history reads the kept runs of this run's key that ran the same command
// at or after since, newest first.
func (r *Run) history(since string) ([]*Run, error) {
	from, err := time.Parse(whenLayout, since+" UTC")
	if err != nil {
		return nil, fmt.Errorf("since %q: want 2006-01-02 15:04 (UTC)", since)
	}
	if r.historyDir == "" {
		return nil, fmt.Errorf("%s: no history directory", r.Cmd)
	}
	names, err := filepath.Glob(filepath.Join(r.historyDir, "*.txt"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var runs []*Run
	for _, name := range slices.Backward(names) {
		h, err := readRun(name)
		if err != nil {
			return nil, err
		}
		when, err := time.Parse(whenLayout, h.When)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if h.Cmd != r.Cmd || when.Before(from) {
			continue
		}
		runs = append(runs, h)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: no kept run since %s", r.Cmd, since)
	}
	return runs, nil
}

// Runs lists, newest first, Fig of metric for benchmark name and the load
// of every kept run of this command made at or after since (UTC,
// "2006-01-02 15:04").
func (r *Run) Runs(name, metric, since string) (string, error) {
	runs, err := r.history(since)
	if err != nil {
		return "", err
	}
	parts := make([]string, len(runs))
	for i, h := range runs {
		fig, err := h.Fig(name, metric)
		if err != nil {
			return "", err
		}
		parts[i] = fmt.Sprintf("%s at load %s (%s)", fig, h.Load, strings.TrimSuffix(h.When, " UTC"))
	}
	return strings.Join(parts, "; "), nil
}

// RunsMeet says in how many of the kept runs since since (as in Runs)
// whose load stayed at least minLoad every value of metric met limit (as in
// Meets): "k of n runs at load ≥ MIN"; a minLoad of 0 leaves the load out.
func (r *Run) RunsMeet(name, metric string, limit, minLoad float64, since string) (string, error) {
	runs, err := r.history(since)
	if err != nil {
		return "", err
	}
	met, n := 0, 0
	for _, h := range runs {
		lo, _, _ := strings.Cut(h.Load, "–")
		l, err := strconv.ParseFloat(lo, 64)
		if err != nil {
			return "", fmt.Errorf("a kept run's load %q: %w", h.Load, err)
		}
		if l < minLoad {
			continue
		}
		n++
		mark, err := h.Meets(name, metric, limit)
		if err != nil {
			return "", err
		}
		if mark == "✓" {
			met++
		}
	}
	if minLoad == 0 {
		return fmt.Sprintf("%d of %d runs", met, n), nil
	}
	return fmt.Sprintf("%d of %d runs at load ≥ %s", met, n, strconv.FormatFloat(minLoad, 'f', -1, 64)), nil
}

// A Run is one command's output with when, where and at which load it ran.
type Run struct {
	Cmd     string
	When    string
	Load    string
	Machine string
	Out     string
	lines   map[string]map[string][]float64 // benchmark → metric → values

	historyDir string // where the runs of its key are kept
}

// whenLayout is the form of Run.When.
const whenLayout = "2006-01-02 15:04 MST"

// execute runs argv, sampling the load average every 5 s while it runs.
func execute(argv []string) (*Run, error) {
	var (
		mu    sync.Mutex
		loads []float64
	)
	sample := func() {
		if l, err := loadAverage(); err == nil {
			mu.Lock()
			loads = append(loads, l)
			mu.Unlock()
		}
	}
	sample()
	start := time.Now().UTC()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	c := exec.Command(argv[0], argv[1:]...)
	var out bytes.Buffer
	// Out is the standard output alone: the benchmark lines, or a
	// script's table; what goes to standard error (builds, logs) is shown
	// and not kept.
	c.Stdout = io.MultiWriter(&out, os.Stderr)
	c.Stderr = os.Stderr
	err := c.Run()
	cancel()
	wg.Wait()
	sample()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shellQuote(argv), err)
	}
	lo, hi := slices.Min(loads), slices.Max(loads)
	run := &Run{
		When:    start.Format(whenLayout),
		Load:    fmt.Sprintf("%.1f–%.1f", lo, hi),
		Machine: thisMachine(),
		Out:     out.String(),
	}
	run.parse()
	return run, nil
}

// encode is the form a Run is kept in: header lines, then the output.
func (r *Run) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# cmd: %s\n# when: %s\n# load: %s\n# machine: %s\n", r.Cmd, r.When, r.Load, r.Machine)
	b.WriteString(r.Out)
	return b.Bytes()
}

// readRun reads a Run kept by encode.
func readRun(path string) (*Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &Run{}
	fields := map[string]*string{"cmd": &r.Cmd, "when": &r.When, "load": &r.Load, "machine": &r.Machine}
	rest := string(data)
	for len(fields) > 0 {
		line, after, ok := strings.Cut(rest, "\n")
		k, v, isHeader := strings.Cut(strings.TrimPrefix(line, "# "), ": ")
		p := fields[k]
		if !ok || !strings.HasPrefix(line, "# ") || !isHeader || p == nil {
			return nil, fmt.Errorf("%s: no %q header", path, firstKey(fields))
		}
		*p = v
		delete(fields, k)
		rest = after
	}
	r.Out = rest
	r.parse()
	return r, nil
}

func firstKey(m map[string]*string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys[0]
}

// benchLine is a line of go test -bench output: name, iterations, then
// value–unit pairs.
var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

func (r *Run) parse() {
	r.lines = map[string]map[string][]float64{}
	sc := bufio.NewScanner(strings.NewReader(r.Out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		f := strings.Fields(m[2])
		metrics := r.lines[m[1]]
		if metrics == nil {
			metrics = map[string][]float64{}
			r.lines[m[1]] = metrics
		}
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			metrics[f[i+1]] = append(metrics[f[i+1]], v)
		}
	}
}

func (r *Run) values(name, metric string) ([]float64, error) {
	name = strings.TrimPrefix(name, "Benchmark")
	m, ok := r.lines[name]
	if !ok {
		return nil, fmt.Errorf("%s: no benchmark %s in its output", r.Cmd, name)
	}
	v := m[metric]
	if len(v) == 0 {
		return nil, fmt.Errorf("%s: benchmark %s reports no %s", r.Cmd, name, metric)
	}
	return slices.Sorted(slices.Values(v)), nil
}

// Fig is the lowest–highest value of metric over the lines of benchmark
// name.
func (r *Run) Fig(name, metric string) (string, error) {
	v, err := r.values(name, metric)
	if err != nil {
		return "", err
	}
	lo, hi := v[0], v[len(v)-1]
	scale, unit := scaleOf(hi, metric)
	w := whole(v) && scale == 1
	if sig(lo/scale, w) == sig(hi/scale, w) {
		return sig(hi/scale, w) + unit, nil
	}
	return sig(lo/scale, w) + "–" + sig(hi/scale, w) + unit, nil
}

// Med is the median value of metric over the lines of benchmark name.
func (r *Run) Med(name, metric string) (string, error) {
	v, err := r.values(name, metric)
	if err != nil {
		return "", err
	}
	n := len(v)
	med := v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	scale, unit := scaleOf(med, metric)
	return sig(med/scale, whole(v) && scale == 1 && med == math.Trunc(med)) + unit, nil
}

// Meets says whether every value of metric for benchmark name is at most
// limit ("✓"), or not ("✗"); when higher is better (the metric is a rate
// or a scaling factor), pass a negative limit: every value must then be at
// least -limit. A goal is met only by every line of the run, not by its
// best one.
func (r *Run) Meets(name, metric string, limit float64) (string, error) {
	v, err := r.values(name, metric)
	if err != nil {
		return "", err
	}
	if limit < 0 {
		if v[0] >= -limit {
			return "✓", nil
		}
		return "✗", nil
	}
	if v[len(v)-1] <= limit {
		return "✓", nil
	}
	return "✗", nil
}

// MeetsAtLoad is Meets for a goal that holds at a load of at least
// minLoad: a run whose lowest load was below it says so ("— (load LO–HI,
// not ≥ MIN)") instead of a mark, whichever way its values fall, since it
// did not measure what the goal is about.
func (r *Run) MeetsAtLoad(name, metric string, limit, minLoad float64) (string, error) {
	mark, err := r.Meets(name, metric, limit)
	if err != nil {
		return "", err
	}
	lo, _, _ := strings.Cut(r.Load, "–")
	l, err := strconv.ParseFloat(lo, 64)
	if err != nil {
		return "", fmt.Errorf("the run's load %q: %w", r.Load, err)
	}
	if l < minLoad {
		return fmt.Sprintf("— (load %s, not ≥ %s)", r.Load, strconv.FormatFloat(minLoad, 'f', -1, 64)), nil
	}
	return mark, nil
}

// N is how many lines benchmark name had in the run.
func (r *Run) N(name string) int {
	for _, v := range r.lines[strings.TrimPrefix(name, "Benchmark")] {
		return len(v)
	}
	return 0
}

// scaleOf is the unit that reads best for v: times per operation in ns, µs,
// ms or s; other metrics as they are.
func scaleOf(v float64, metric string) (scale float64, unit string) {
	if !nanoseconds(metric) {
		return 1, ""
	}
	switch {
	case v >= 1e9:
		return 1e9, " s"
	case v >= 1e6:
		return 1e6, " ms"
	case v >= 1e3:
		return 1e3, " µs"
	}
	return 1, " ns"
}

// nanoseconds reports whether metric counts nanoseconds: ns/op, and the
// custom metrics that say so (direct-ns/call, raw-p50-ns, baseline-ns/op).
func nanoseconds(metric string) bool {
	return metric == "ns/op" || strings.HasSuffix(metric, "-ns") || strings.HasSuffix(metric, "ns/op") || strings.HasSuffix(metric, "ns/call")
}

// whole reports whether every value is a whole number, as counts are.
func whole(v []float64) bool {
	for _, x := range v {
		if x != math.Trunc(x) {
			return false
		}
	}
	return true
}

// sig writes v with three significant digits, or as the whole number it is
// when whole is set; numbers from 1,000 on are whole, their digits grouped.
func sig(v float64, whole bool) string {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	a := math.Abs(v)
	if a >= 1000 || whole {
		return commas(strconv.FormatFloat(math.Round(v), 'f', 0, 64))
	}
	digits := 2 - int(math.Floor(math.Log10(a)))
	return strconv.FormatFloat(v, 'f', max(digits, 0), 64)
}

// commas groups an integer's digits by three.
func commas(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// loadAverage is the one-minute load average.
func loadAverage() (float64, error) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, errors.New("/proc/loadavg: empty")
	}
	return strconv.ParseFloat(f[0], 64)
}

// machine describes the machine: cores, CPU model, kernel and Go.
// thisMachine describes the machine this process runs on.
func thisMachine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := "unknown kernel"
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = "Linux " + strings.TrimSpace(string(data))
	}
	return fmt.Sprintf("%d cores, %s, %s, %s", runtime.NumCPU(), model, kernel, runtime.Version())
}

// shellQuote writes argv as a shell would read it back.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=,:+@") == "" {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
