package inspector

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/jsontext"
)

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Parse(pageHTML))

func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// The page loads nothing from anywhere: no CDN, no other origin.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; media-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	_ = pageTemplate.Execute(w, struct{ Token string }{h.token})
}

// toolInfo is one tool as GET /api/tools lists it.
type toolInfo struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	Badges       []string        `json:"badges"`
	Source       string          `json:"source,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

func (h *Handler) tools(w http.ResponseWriter, r *http.Request) {
	list := h.reg.List()
	out := make([]toolInfo, 0, len(list))
	for _, t := range list {
		o := tool.OptionsOf(t)
		a := o.Annotations
		badges := []string{}
		for _, b := range []struct {
			on   bool
			name string
		}{{a.ReadOnly, "read-only"}, {a.Destructive, "destructive"}, {a.Idempotent, "idempotent"}, {a.OpenWorld, "open-world"}} {
			if b.on {
				badges = append(badges, b.name)
			}
		}
		out = append(out, toolInfo{
			// An imported server writes the title and description:
			// they are shown with the characters that hide or
			// reorder text escaped, as approvals and audit records
			// are.
			Name: t.Name(), Title: jsontext.Visible(a.Title), Description: jsontext.Visible(t.Description()), Badges: badges,
			Source: h.source(t.Name()), InputSchema: t.Parameters(), OutputSchema: o.OutputSchema,
		})
	}
	writeJSON(w, http.StatusOK, out)
}

// definition is one tool's definition in one format: JSON, or why the
// format cannot express it.
type definition struct {
	Format     string          `json:"format"`
	Definition json.RawMessage `json:"definition,omitempty"`
	Error      string          `json:"error,omitempty"`
}

func (h *Handler) definitions(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	t, ok := h.reg.Get(name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no tool %q", name))
		return
	}
	var out []definition
	if h.render == nil {
		sub := tool.NewRegistry()
		if err := sub.Register(t); err != nil {
			out = append(out, definition{Format: "openai", Error: err.Error()})
		} else {
			out = append(out, definition{Format: "openai", Definition: firstOf(sub.Definitions())})
		}
	}
	for _, f := range h.formats {
		b, err := h.render(f, []tool.Tool{t})
		if err != nil {
			out = append(out, definition{Format: f, Error: err.Error()})
			continue
		}
		out = append(out, definition{Format: f, Definition: firstOf(b)})
	}
	writeJSON(w, http.StatusOK, out)
}

// firstOf returns the only element of a JSON array of one definition, or
// b as it is.
func firstOf(b []byte) json.RawMessage {
	var arr []json.RawMessage
	if json.Unmarshal(b, &arr) == nil && len(arr) == 1 {
		return arr[0]
	}
	return b
}

// maxCallBytes bounds the body of POST /api/call: the arguments and a
// little more.
const maxCallBytes = tool.DefaultMaxArgsBytes + 4096

// callRequest is the body of POST /api/call.
type callRequest struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	As   *callAs         `json:"as,omitempty"` // see WithCallAs
}

// violation is one tool.Violation for the page.
type violation struct {
	Pointer  string `json:"pointer"`
	Expected string `json:"expected"`
	Got      string `json:"got,omitempty"`
	Hint     string `json:"hint,omitempty"`
	Message  string `json:"message"`
}

// callResult is the last event of a call.
type callResult struct {
	tool.Result
	Violations []violation `json:"violations,omitempty"`
	ElapsedMS  float64     `json:"elapsed_ms"`
	Dropped    int64       `json:"dropped_events,omitempty"`
}

// call runs one tool and answers with a stream of server-sent events:
// "progress" and "log" while it runs, then one "result".
func (h *Handler) call(w http.ResponseWriter, r *http.Request) {
	var req callRequest
	if !decodeBody(w, r, maxCallBytes, &req) {
		return
	}
	if req.Name == "" {
		writeError(w, http.StatusBadRequest, `the body needs "name": the tool to call`)
		return
	}
	if _, ok := h.reg.Get(req.Name); !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no tool %q", req.Name))
		return
	}
	callCtx := r.Context()
	if req.As != nil {
		if h.callAs == nil {
			writeError(w, http.StatusBadRequest, `"as" needs a policy: start the inspector with --policy`)
			return
		}
		if msg := req.As.check(); msg != "" {
			writeError(w, http.StatusBadRequest, msg)
			return
		}
		c, err := h.callAs(callCtx, req.As.ID, req.As.Roles)
		if err != nil {
			writeError(w, http.StatusBadRequest, `"as": `+err.Error())
			return
		}
		callCtx = c
	}
	args := req.Args
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()

	// Events go through a bounded channel: a tool that reports faster
	// than the browser reads loses reports (counted), never blocks.
	events := make(chan sseEvent, 64)
	var dropped, sent atomic.Int64
	send := func(ev sseEvent) {
		if sent.Add(1) > int64(h.maxEvents) {
			dropped.Add(1)
			return
		}
		select {
		case events <- ev:
		default:
			dropped.Add(1)
		}
	}
	ctx := tool.WithProgress(callCtx, func(progress, total float64, message string) {
		send(sseEvent{"progress", map[string]any{"progress": progress, "total": total, "message": message}})
	})
	ctx = tool.WithClientLogger(ctx, slog.New(&eventHandler{send: send, level: slog.LevelDebug}))

	done := make(chan callResult, 1)
	go func() {
		start := time.Now()
		outs, err := tool.NewExecutor(h.reg, h.execOpts...).Run(ctx, []tool.Call{{ID: "call", Name: req.Name, Args: args}})
		var res callResult
		if len(outs) == 1 {
			res.Result = outs[0].Result
			var ae *tool.ArgumentError
			if errors.As(outs[0].Err, &ae) {
				for _, v := range ae.Violations {
					res.Violations = append(res.Violations, violation{Pointer: v.Pointer, Expected: v.Expected, Got: v.Got, Hint: v.Hint, Message: v.String()})
				}
			}
		} else if err != nil {
			res.Result = tool.Result{Error: err.Error(), IsError: true, Kind: tool.KindToolError}
		}
		res.ElapsedMS = float64(time.Since(start).Microseconds()) / 1000
		done <- res
	}()
	for {
		select {
		case ev := <-events:
			writeEvent(w, ev)
			_ = rc.Flush()
		case res := <-done:
			for len(events) > 0 {
				writeEvent(w, <-events)
			}
			res.Dropped = dropped.Load()
			writeEvent(w, sseEvent{"result", res})
			_ = rc.Flush()
			return
		}
	}
}

type sseEvent struct {
	name string
	data any
}

func writeEvent(w io.Writer, ev sseEvent) {
	b, err := json.Marshal(ev.data)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, b)
}

// eventHandler is the slog.Handler behind a call's client logger: each
// record becomes a "log" event.
type eventHandler struct {
	send  func(sseEvent)
	level slog.Level
	attrs []slog.Attr
}

func (e *eventHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= e.level }

func (e *eventHandler) Handle(_ context.Context, rec slog.Record) error {
	attrs := map[string]any{}
	for _, a := range e.attrs {
		attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return len(attrs) < 32
	})
	e.send(sseEvent{"log", map[string]any{"level": rec.Level.String(), "message": rec.Message, "attrs": attrs}})
	return nil
}

func (e *eventHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *e
	n.attrs = append(append([]slog.Attr(nil), e.attrs...), as...)
	return &n
}

func (e *eventHandler) WithGroup(string) slog.Handler { return e }

func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "the body must be JSON, sent with Content-Type: application/json")
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body holds more than %d bytes", limit))
			return false
		}
		writeError(w, http.StatusBadRequest, "the body is not the expected JSON: "+err.Error())
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "unexpected data after the JSON body")
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
