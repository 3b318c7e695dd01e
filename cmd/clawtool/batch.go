package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/boundedfile"
)

// batchFlags are the flags of "clawtool call" that run a batch of calls.
type batchFlags struct {
	file  *string
	trace *bool
}

func addBatchFlags(fs *flag.FlagSet) *batchFlags {
	return &batchFlags{
		file: fs.String("batch", "", "run a batch of calls read from `FILE` (\"-\" for standard input): a JSON array of\n"+
			"{\"id\":…,\"name\":…,\"args\":{…},\"depends_on\":[…]}; a JSON array given instead of NAME does the same"),
		trace: fs.Bool("trace", false, "after a batch's outcomes, print a timeline of its calls: start, end and what each waited for"),
	}
}

// run runs "clawtool call" as a batch when the flags or the arguments ask
// for one: --batch FILE|-, a JSON array as the only argument, or "-" with a
// JSON array on standard input. ok is false when the call is not a batch.
func (bf *batchFlags) run(ctx context.Context, e *env, fs *flag.FlagSet, rf *registryFlags) (code int, ok bool) {
	var input []byte
	switch {
	case *bf.file != "":
		if fs.NArg() > 0 {
			fmt.Fprintln(e.stderr, "clawtool call: --batch takes no other arguments")
			return exitUsage, true
		}
		var err error
		if *bf.file == "-" {
			input, err = readInput(e.stdin, maxBatchBytes, "a batch")
		} else {
			input, err = readBatchFile(*bf.file)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool call: %v\n", err)
			return exitUsage, true
		}
	case fs.NArg() == 1 && strings.HasPrefix(strings.TrimSpace(fs.Arg(0)), "["):
		input = []byte(fs.Arg(0))
	case fs.NArg() == 1 && fs.Arg(0) == "-":
		b, err := readInput(e.stdin, maxBatchBytes, "a batch")
		if err != nil {
			fmt.Fprintf(e.stderr, "clawtool call: %v\n", err)
			return exitUsage, true
		}
		if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
			fmt.Fprintln(e.stderr, "clawtool call: standard input is not a JSON array of calls; to call one tool, name it: clawtool call NAME -")
			return exitUsage, true
		}
		input = b
	default:
		if *bf.trace {
			fmt.Fprintln(e.stderr, "clawtool call: --trace needs a batch (--batch FILE or a JSON array of calls)")
			return exitUsage, true
		}
		return 0, false
	}
	r, cleanup, ok := rf.open(ctx, e, "call")
	if !ok {
		return exitToolError, true
	}
	defer cleanup()
	code, err := runBatch(ctx, r, input, *bf.trace, e.stdout)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool call: %v\n", err)
	}
	return code, true
}

// maxBatchBytes bounds the JSON of one batch.
const maxBatchBytes = 64 << 20

// readBatchFile reads a batch from the named file, refusing more than
// maxBatchBytes.
func readBatchFile(name string) ([]byte, error) {
	b, err := boundedfile.Read(name, maxBatchBytes)
	if _, ok := errors.AsType[*boundedfile.TooLargeError](err); ok {
		return nil, fmt.Errorf("%s holds more than %s, the most a batch may hold", name, byteSize(maxBatchBytes))
	}
	return b, err
}

// batchOutcome is the JSON form of one outcome: the call's ID, then the
// Result's fields.
type batchOutcome struct {
	ID string `json:"id"`
	tool.Result
}

// runBatch parses input, a JSON array of calls, runs them through an
// executor on r and prints the outcomes to stdout as one JSON array in the
// order of the calls, each {"id","output","error","is_error","kind",…}. A
// call without an id gets "#N", its 1-based position. With trace, a
// timeline of the calls follows the outcomes.
//
// The exit code is 0 when every call succeeded, 1 when any outcome is an
// error, and 2 when the input is not a usable batch (not a JSON array of
// calls, or a dependency graph with an unknown or duplicate ID or a
// cycle); err then says why and nothing is printed.
func runBatch(ctx context.Context, r *tool.Registry, input []byte, trace bool, stdout io.Writer) (exitCode int, err error) {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	var in []tool.Call
	if err := dec.Decode(&in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			where := ""
			if te.Field != "" {
				where = " at " + te.Field
			}
			err = fmt.Errorf("unexpected JSON %s%s", te.Value, where)
		}
		return exitUsage, fmt.Errorf("batch: not a JSON array of calls {\"id\",\"name\",\"args\",\"depends_on\"}: %v", err)
	}
	if dec.More() {
		return exitUsage, errors.New("batch: unexpected data after the JSON array")
	}
	calls := make([]tool.Call, len(in))
	for i, c := range in {
		if c.Name == "" {
			return exitUsage, fmt.Errorf("batch: call #%d has no name", i+1)
		}
		if c.ID == "" {
			c.ID = fmt.Sprintf("#%d", i+1)
		}
		args := c.Args
		if string(bytes.TrimSpace(args)) == "null" {
			args = nil
		}
		calls[i] = tool.Call{ID: c.ID, Name: c.Name, Args: args, DependsOn: c.DependsOn}
	}
	tl := &timeline{t0: time.Now(), spans: make(map[string]*traceSpan, len(calls))}
	var opts []tool.ExecutorOption
	if trace {
		opts = append(opts, tool.WithMiddleware(tl.middleware))
	}
	outs, runErr := tool.NewExecutor(r, opts...).Run(ctx, calls)
	tl.total = time.Since(tl.t0)
	if errors.Is(runErr, tool.ErrInvalidBatch) {
		return exitUsage, runErr
	}
	printed := make([]batchOutcome, len(outs))
	code := exitOK
	for i, o := range outs {
		printed[i] = batchOutcome{ID: o.ID, Result: o.Result}
		if o.Result.IsError {
			code = exitToolError
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(printed); err != nil {
		return exitToolError, err
	}
	if trace {
		tl.print(stdout, calls, outs)
	}
	if runErr != nil {
		return exitToolError, runErr
	}
	return code, nil
}

// timeline records when each call of a batch ran.
type timeline struct {
	t0    time.Time
	total time.Duration

	mu    sync.Mutex
	spans map[string]*traceSpan
}

type traceSpan struct {
	start, end time.Duration
	after      []string
}

func (tl *timeline) middleware(next tool.Step) tool.Step {
	return func(ctx context.Context, c tool.Call) (tool.Result, error) {
		s := &traceSpan{start: time.Since(tl.t0), after: c.DependsOn}
		tl.mu.Lock()
		tl.spans[c.ID] = s
		tl.mu.Unlock()
		res, err := next(ctx, c)
		end := time.Since(tl.t0)
		tl.mu.Lock()
		s.end = end
		tl.mu.Unlock()
		return res, err
	}
}

// print writes the timeline: one line per call, in input order, with its
// start and end relative to the start of the batch, a bar showing when it
// ran, and the calls it waited for; calls that did not run say why.
func (tl *timeline) print(w io.Writer, calls []tool.Call, outs []tool.Outcome) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	const width = 40
	idw, namew := 2, 4
	for _, c := range calls {
		idw = max(idw, len(c.ID))
		namew = max(namew, len(c.Name))
	}
	peak := 0 // the most calls running at one instant: count at each start
	for _, s := range tl.spans {
		n := 0
		for _, o := range tl.spans {
			if o.start <= s.start && (s.start < o.end || o.start == o.end && o.start == s.start) {
				n++
			}
		}
		peak = max(peak, n)
	}
	fmt.Fprintf(w, "\ntrace: %d calls in %s, at most %d at once\n", len(calls), msText(tl.total), peak)
	fmt.Fprintf(w, "%-*s  %-*s  %7s  %7s  %-*s  %s\n", idw, "id", namew, "tool", "start", "end", width+2, "", "waited for")
	scale := func(d time.Duration) int {
		if tl.total <= 0 {
			return 0
		}
		return min(width, int(int64(d)*width/int64(tl.total)))
	}
	for i, c := range calls {
		s, ran := tl.spans[c.ID]
		if !ran {
			why := string(outs[i].Result.Kind)
			fmt.Fprintf(w, "%-*s  %-*s  %7s  %7s  %-*s  not run: %s\n", idw, c.ID, namew, c.Name, "-", "-", width+2, "", why)
			continue
		}
		a, b := scale(s.start), scale(s.end)
		if b == a && b < width {
			b++ // a call too short to see still gets a mark
		} else if b == a {
			a--
		}
		bar := "|" + strings.Repeat(" ", a) + strings.Repeat("█", b-a) + strings.Repeat(" ", width-b) + "|"
		after := "-"
		if len(s.after) > 0 {
			after = strings.Join(slices.Clone(s.after), ", ")
		}
		fmt.Fprintf(w, "%-*s  %-*s  %7s  %7s  %s  %s\n", idw, c.ID, namew, c.Name, msText(s.start), msText(s.end), bar, after)
	}
}

// msText formats d in milliseconds, or microseconds below 1ms.
func msText(d time.Duration) string {
	if d > 0 && d < time.Millisecond {
		return fmt.Sprintf("%dµs", d.Microseconds())
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}
