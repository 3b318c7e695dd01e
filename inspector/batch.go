package inspector

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool"
)

// Bounds of POST /api/batch and POST /api/trace.
const (
	maxBatchBytes = 8 << 20
	maxBatchCalls = 1000
)

// timelineRow is one call on the timeline.
type timelineRow struct {
	ID        string       `json:"id"`
	Name      string       `json:"name"`
	DependsOn []string     `json:"depends_on"`
	Ran       bool         `json:"ran"`
	StartMS   float64      `json:"start_ms"`
	EndMS     float64      `json:"end_ms"`
	Status    string       `json:"status"` // ok, error, skipped, timeout, canceled, denied…
	Retried   bool         `json:"retried"`
	Result    *tool.Result `json:"result,omitempty"`
}

// timelineJSON is the answer of POST /api/batch and POST /api/trace.
type timelineJSON struct {
	TotalMS float64       `json:"total_ms"`
	Rows    []timelineRow `json:"rows"`
}

// span is when one call ran.
type span struct{ start, end time.Duration }

func (h *Handler) batch(w http.ResponseWriter, r *http.Request) {
	var in []tool.Call
	if !decodeBody(w, r, maxBatchBytes, &in) {
		return
	}
	if len(in) == 0 {
		writeError(w, http.StatusBadRequest, "the batch is empty: give a JSON array of calls")
		return
	}
	if len(in) > maxBatchCalls {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the batch has %d calls; the inspector runs at most %d", len(in), maxBatchCalls))
		return
	}
	calls := make([]tool.Call, len(in))
	for i, c := range in {
		if c.Name == "" {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("call #%d has no name", i+1))
			return
		}
		if c.ID == "" {
			c.ID = fmt.Sprintf("#%d", i+1)
		}
		args := c.Args
		if t := bytes.TrimSpace(args); len(t) == 0 || string(t) == "null" {
			args = json.RawMessage("{}")
		}
		calls[i] = tool.Call{ID: c.ID, Name: c.Name, Args: args, DependsOn: c.DependsOn}
	}
	var mu sync.Mutex
	spans := make(map[string]span, len(calls))
	t0 := time.Now()
	record := func(next tool.Step) tool.Step {
		return func(ctx context.Context, c tool.Call) (tool.Result, error) {
			start := time.Since(t0)
			res, err := next(ctx, c)
			mu.Lock()
			spans[c.ID] = span{start, time.Since(t0)}
			mu.Unlock()
			return res, err
		}
	}
	opts := append([]tool.ExecutorOption{tool.WithMiddleware(record)}, h.execOpts...)
	outs, err := tool.NewExecutor(h.reg, opts...).Run(r.Context(), calls)
	total := time.Since(t0)
	if errors.Is(err, tool.ErrInvalidBatch) {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	mu.Lock()
	defer mu.Unlock()
	tl := timelineJSON{TotalMS: ms(total), Rows: make([]timelineRow, len(calls))}
	for i, c := range calls {
		row := timelineRow{ID: c.ID, Name: c.Name, DependsOn: orEmpty(c.DependsOn), Status: "ok"}
		if i < len(outs) {
			res := outs[i].Result
			row.Result = &res
			row.Status = statusOf(res)
			if a, ok := res.Metadata["attempts"]; ok && fmt.Sprint(a) != "1" {
				row.Retried = true
			}
		}
		if s, ok := spans[c.ID]; ok {
			row.Ran, row.StartMS, row.EndMS = true, ms(s.start), ms(s.end)
		}
		tl.Rows[i] = row
	}
	writeJSON(w, http.StatusOK, tl)
}

func statusOf(res tool.Result) string {
	switch {
	case !res.IsError:
		return "ok"
	case res.Kind == "":
		return "error"
	case res.Kind == tool.KindTimeout, res.Kind == tool.KindSkipped, res.Kind == tool.KindCanceled, res.Kind == tool.KindDenied:
		return string(res.Kind)
	}
	return "error"
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// traceRequest is the body of POST /api/trace: what "clawtool call
// --trace" printed.
type traceRequest struct {
	Text string `json:"text"`
}

func (h *Handler) trace(w http.ResponseWriter, r *http.Request) {
	var req traceRequest
	if !decodeBody(w, r, maxBatchBytes, &req) {
		return
	}
	tl, err := parseTrace(req.Text)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, tl)
}

// parseTrace reads the output of "clawtool call --trace": the JSON array
// of outcomes, then the timeline table that follows "trace:".
func parseTrace(text string) (timelineJSON, error) {
	var tl timelineJSON
	dec := json.NewDecoder(strings.NewReader(text))
	var outs []struct {
		ID string `json:"id"`
		tool.Result
	}
	if err := dec.Decode(&outs); err != nil {
		return tl, fmt.Errorf("not the output of clawtool call --trace: it starts with the JSON array of outcomes: %v", err)
	}
	byID := make(map[string]tool.Result, len(outs))
	for _, o := range outs {
		byID[o.ID] = o.Result
	}
	sc := bufio.NewScanner(strings.NewReader(text[dec.InputOffset():]))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var header []rune
	for sc.Scan() {
		line := sc.Text()
		if header == nil {
			if strings.HasPrefix(line, "trace: ") && sc.Scan() {
				header = []rune(sc.Text())
			}
			continue
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if len(tl.Rows) == maxBatchCalls {
			return tl, fmt.Errorf("the trace has more than %d calls", maxBatchCalls)
		}
		row, err := parseTraceRow(header, []rune(line))
		if err != nil {
			return tl, fmt.Errorf("trace line %d: %v", len(tl.Rows)+1, err)
		}
		if res, ok := byID[row.ID]; ok {
			row.Result = &res
			row.Status = statusOf(res)
			if a, ok := res.Metadata["attempts"]; ok && fmt.Sprint(a) != "1" {
				row.Retried = true
			}
		}
		tl.TotalMS = max(tl.TotalMS, row.EndMS)
		tl.Rows = append(tl.Rows, row)
	}
	if err := sc.Err(); err != nil {
		return tl, err
	}
	if header == nil {
		return tl, errors.New(`no timeline: the text has no "trace:" line (run clawtool call with --trace)`)
	}
	return tl, nil
}

// parseTraceRow reads one row of the timeline table, whose columns the
// header places: id, tool, start (7 wide), end (7 wide), bar, waited for.
func parseTraceRow(header, row []rune) (timelineRow, error) {
	h := string(header)
	toolAt := runeIndex(header, "tool")
	startEnd := runeIndex(header, "start") + len("start")
	waitedAt := runeIndex(header, "waited for")
	if toolAt < 2 || startEnd < 7 || waitedAt < 0 || !strings.HasPrefix(h, "id") {
		return timelineRow{}, errors.New("the table's header is not id, tool, start, end, waited for")
	}
	col := func(from, to int) string {
		from, to = min(max(from, 0), len(row)), min(max(to, 0), len(row))
		if to < from {
			return ""
		}
		return strings.TrimSpace(string(row[from:to]))
	}
	r := timelineRow{
		ID:        col(0, toolAt-2),
		Name:      col(toolAt, startEnd-9),
		DependsOn: []string{},
		Status:    "ok",
	}
	start, end, rest := col(startEnd-7, startEnd), col(startEnd+2, startEnd+9), col(waitedAt, len(row))
	if r.ID == "" {
		return r, errors.New("no call id")
	}
	if start == "-" {
		r.Status = "skipped"
		if kind, ok := strings.CutPrefix(rest, "not run: "); ok && kind != "" {
			r.Status = kind
		}
		return r, nil
	}
	var err error
	if r.StartMS, err = parseMS(start); err != nil {
		return r, err
	}
	if r.EndMS, err = parseMS(end); err != nil {
		return r, err
	}
	r.Ran = true
	if rest != "-" && rest != "" {
		for _, id := range strings.Split(rest, ", ") {
			r.DependsOn = append(r.DependsOn, strings.TrimSpace(id))
		}
	}
	return r, nil
}

// parseMS reads "12ms" or "340µs" as milliseconds.
func parseMS(s string) (float64, error) {
	unit := 1.0
	num, ok := strings.CutSuffix(s, "µs")
	if ok {
		unit = 0.001
	} else if num, ok = strings.CutSuffix(s, "ms"); !ok {
		return 0, fmt.Errorf("%q is not a time in ms or µs", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a time in ms or µs", s)
	}
	return v * unit, nil
}

// runeIndex is strings.Index counted in runes.
func runeIndex(s []rune, sub string) int {
	i := strings.Index(string(s), sub)
	if i < 0 {
		return -1
	}
	return len([]rune(string(s)[:i]))
}
