package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/miniopenclaw/tool"
)

// countingSearch is the search_flights tool with a call counter, so tests
// can check that invalid arguments never reach the function.
func countingSearch(t *testing.T) (*tool.Registry, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	r := tool.NewRegistry()
	err := r.Register(tool.Must(tool.New("search_flights", "Searches flights.",
		func(ctx context.Context, in searchArgs) (searchResult, error) {
			calls.Add(1)
			return searchFlights(ctx, in)
		})))
	if err != nil {
		t.Fatal(err)
	}
	return r, &calls
}

// TestExecuteCatalogB runs a catalogue of hostile and malformed arguments
// (rows B1, B2, …): each gives an invalid_arguments result
// with a clear message and the function is never called.
func TestExecuteCatalogB(t *testing.T) {
	for _, tt := range []struct {
		row, args string
		want      []string // substrings of Result.Error
	}{
		{"B1 truncated", `{"from": "SFO",`, []string{"expected valid JSON", "unexpected end of input at offset 15"}},
		{"B3 wrong type", `{"from":5,"to":"JFK","date":"2026-12-24"}`, []string{"/from: expected a string matching ^[A-Z]{3}$, got number 5"}},
		{"B4 missing required", `{"from":"SFO"}`, []string{`/to: expected required property "to"`, `/date: expected required property "date"`, "got nothing"}},
		{"B5 unknown field", `{"from":"SFO","to":"JFK","date":"2026-12-24","rm":true}`, []string{`/rm: expected no property "rm" (allowed: from, to, date`, `got true`}},
		{"B6 null", `{"from":null,"to":"JFK","date":"2026-12-24"}`, []string{"/from: expected a string", "got null"}},
		{"B7 NaN", `{"from":"SFO","to":"JFK","date":"2026-12-24","max_price":NaN}`, []string{"expected valid JSON", "invalid character 'N'"}},
		{"B7 Infinity", `{"max_price":Infinity}`, []string{"expected valid JSON", "invalid character 'I'"}},
		{"B8 duplicate keys", `{"from":"SFO","to":"JFK","to":"LAX","date":"2026-12-24"}`, []string{`/to: expected each key once, got a second "to"`}},
		{"B10 homoglyph key", `{"frоm":"SFO","to":"JFK","date":"2026-12-24"}`, []string{`no property "frоm"`, `/from: expected required property`}},
		{"B10 case-variant key", `{"FROM":"SFO","to":"JFK","date":"2026-12-24"}`, []string{`no property "FROM"`, `did you mean "from"? names are case-sensitive`}},
		{"B11 overflow", `{"from":"SFO","to":"JFK","date":"2026-12-24","passengers":9223372036854775808}`, []string{"/passengers: expected an integer between 1 and 9, got 9223372036854775808"}},
		{"B11 negative", `{"from":"SFO","to":"JFK","date":"2026-12-24","passengers":-1}`, []string{"/passengers: expected an integer between 1 and 9, got -1"}},
		{"B11 huge exponent", `{"from":"SFO","to":"JFK","date":"2026-12-24","passengers":1e400}`, []string{"/passengers: expected an integer between 1 and 9, got 1e400"}},
		{"B13 number as string", `{"from":"SFO","to":"JFK","date":"2026-12-24","passengers":"5"}`, []string{`/passengers: expected an integer between 1 and 9, got string "5"`}},
		{"B18 byte order mark", "\xef\xbb\xbf{}", []string{"a byte order mark (U+FEFF)"}},
		{"B19 empty arguments", ``, []string{`/from: expected required property "from"`}},
		{"B20 array", `[]`, []string{"(root): expected a JSON object, got array []"}},
		{"B20 string", `"str"`, []string{`(root): expected a JSON object, got string "str"`}},
		{"B20 number", `42`, []string{"(root): expected a JSON object, got number 42"}},
		{"B20 null", `null`, []string{"(root): expected a JSON object, got null"}},
		{"B22 deep nesting", `{"airlines":` + strings.Repeat("[", 100000), []string{"nested too deeply (more than 64 levels)"}},
		{"B23 huge arguments", `{"from":"` + strings.Repeat("A", 2<<20) + `"}`, []string{"expected arguments of at most 1048576 bytes, got 2097163 bytes"}},
		{"invalid UTF-8", "{\"from\":\"\xc3\x28\"}", []string{"invalid UTF-8 in string"}},
		{"lone surrogate", `{"from":"\ud83d"}`, []string{`lone surrogate \ud83d`}},
		{"trailing data", `{"from":"SFO","to":"JFK","date":"2026-12-24"}{"from":"LAX"}`, []string{"expected the end of the input"}},
	} {
		t.Run(tt.row, func(t *testing.T) {
			r, calls := countingSearch(t)
			res := r.Execute(context.Background(), "search_flights", []byte(tt.args))
			if !res.IsError || res.Kind != tool.KindInvalidArguments {
				t.Fatalf("Execute(%.60q) = %+v, want an invalid_arguments error", tt.args, res)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Error, w) {
					t.Errorf("Execute(%.60q) error =\n%s\nwant it to contain %q", tt.args, res.Error, w)
				}
			}
			if n := calls.Load(); n != 0 {
				t.Errorf("the tool function ran %d times on invalid arguments", n)
			}
			if len(res.Error) > 4096 {
				t.Errorf("error message is %d bytes; the echo of the arguments must be capped", len(res.Error))
			}
		})
	}
}

func TestExecuteEchoesArguments(t *testing.T) {
	r, _ := countingSearch(t)
	res := r.Execute(context.Background(), "search_flights", []byte(`{"from":"sfo","to":"JFK","date":"2026-12-24"}`))
	if want := `received: {"from":"sfo","to":"JFK","date":"2026-12-24"}`; !strings.HasSuffix(res.Error, want) {
		t.Errorf("error = %q, want it to end with %q", res.Error, want)
	}
}

func TestExecuteDefaultsApplied(t *testing.T) {
	r, _ := countingSearch(t)
	res := r.Execute(context.Background(), "search_flights", []byte(`{"from":"SFO","to":"JFK","date":"2026-12-24"}`))
	if res.IsError {
		t.Fatal(res.Error)
	}
	var out searchResult
	if err := json.Unmarshal([]byte(res.Output), &out); err != nil {
		t.Fatal(err)
	}
	if out.Seats != 1 {
		t.Errorf("passengers default: the function saw %d, want 1", out.Seats)
	}
	if !bytes.Equal(res.Structured, []byte(res.Output)) {
		t.Errorf("Structured = %s, want the same JSON as Output", res.Structured)
	}
}

func TestExecuteUnknownTool(t *testing.T) {
	r, _ := countingSearch(t)
	r.Register(newRaw("search_hotels", `{"type":"object"}`))
	for _, tt := range []struct {
		name string
		want []string
	}{
		{"search_flight", []string{`unknown tool "search_flight"`, `Did you mean "search_flights"?`, "Available tools: search_flights, search_hotels."}},
		{"Search_Flights", []string{`Did you mean "search_flights"?`}},
		{"delete_everything", []string{"Available tools:"}},
	} {
		res := r.Execute(context.Background(), tt.name, []byte(`{}`))
		if !res.IsError || res.Kind != tool.KindNotFound {
			t.Fatalf("Execute(%q) = %+v, want a not_found error", tt.name, res)
		}
		for _, w := range tt.want {
			if !strings.Contains(res.Error, w) {
				t.Errorf("Execute(%q) error = %q, want it to contain %q", tt.name, res.Error, w)
			}
		}
	}
}

func TestExecuteToolError(t *testing.T) {
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("fail", "Always fails.", func(ctx context.Context, in struct{}) (string, error) {
		return "", errors.New("the backend said no")
	})))
	r.Register(tool.Must(tool.New("quiet", "Succeeds with no output.", func(ctx context.Context, in struct{}) (string, error) {
		return "", nil
	})))
	res := r.Execute(context.Background(), "fail", nil)
	if want := (tool.Result{Error: "the backend said no", IsError: true, Kind: tool.KindToolError}); res.Error != want.Error || res.IsError != want.IsError || res.Kind != want.Kind {
		t.Errorf("Execute(fail) = %+v, want %+v", res, want)
	}
	res = r.Execute(context.Background(), "quiet", nil)
	if res.IsError || res.Output != "" || res.Kind != "" {
		t.Errorf("Execute(quiet) = %+v, want a success with empty output", res)
	}
}

// panicky panics with a value carrying a host path, which the model must
// not see.
type panicky struct{ rawTool }

func (p *panicky) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	panic("open /home/secret/config.yaml: permission denied")
}

func TestExecutePanic(t *testing.T) {
	var logs bytes.Buffer
	r := tool.NewRegistry(tool.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	r.Register(&panicky{rawTool{name: "boom", schema: `{"type":"object"}`}})
	res := r.Execute(context.Background(), "boom", []byte(`{}`))
	if !res.IsError || res.Kind != tool.KindPanic {
		t.Fatalf("Execute = %+v, want a panic result", res)
	}
	id, _ := res.Metadata["correlation_id"].(string)
	if id == "" || !strings.Contains(res.Error, id) {
		t.Errorf("result %+v: want the correlation id in Error and Metadata", res)
	}
	if strings.Contains(res.Error, "/home/secret") || strings.Contains(res.Error, "goroutine") {
		t.Errorf("the model sees %q: it must not include the panic value or a stack", res.Error)
	}
	for _, w := range []string{`"msg":"tool panicked"`, id, "/home/secret/config.yaml", "goroutine"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("log %s\nwant it to contain %q", logs.String(), w)
		}
	}
	// A panic in a typed tool, and in a type's own decoder, are recovered too.
	r.Register(tool.Must(tool.New("boom2", "Panics.", func(ctx context.Context, in struct{}) (string, error) { panic("x") })))
	r.Register(tool.Must(tool.New("boom3", "Panics while decoding.", func(ctx context.Context, in struct {
		V panicText `json:"v"`
	}) (string, error) {
		return "", nil
	})))
	for name, args := range map[string]string{"boom2": `{}`, "boom3": `{"v":"x"}`} {
		if res := r.Execute(context.Background(), name, []byte(args)); res.Kind != tool.KindPanic {
			t.Errorf("Execute(%s) = %+v, want a panic result", name, res)
		}
	}
}

type panicText struct{}

func (*panicText) UnmarshalText([]byte) error { panic("decoder bug") }

func TestExecuteTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := tool.NewRegistry()
		r.Register(tool.Must(tool.New("slow", "Waits for its context.", func(ctx context.Context, in struct{}) (string, error) {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(time.Hour):
				return "done", nil
			}
		}, tool.WithTimeout(5*time.Second))))
		start := time.Now()
		res := r.Execute(context.Background(), "slow", nil)
		if res.Kind != tool.KindTimeout || !strings.Contains(res.Error, "timed out after 5s") {
			t.Errorf("Execute = %+v, want a timeout after 5s", res)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("Execute took %v, want 5s", d)
		}
		if s := r.Stats(); s.IgnoredContext != 0 {
			t.Errorf("Stats = %+v, want no ignored context", s)
		}
	})
}

func TestExecuteCallerCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := tool.NewRegistry()
		r.Register(tool.Must(tool.New("slow", "Waits for its context.", func(ctx context.Context, in struct{}) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		})))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		res := r.Execute(ctx, "slow", nil)
		if res.Kind != tool.KindCanceled {
			t.Errorf("Execute = %+v, want canceled (the caller's deadline, not the tool's limit)", res)
		}
		res = r.Execute(ctx, "slow", nil)
		if res.Kind != tool.KindCanceled || !strings.Contains(res.Error, "before it started") {
			t.Errorf("Execute with a done context = %+v, want canceled before it started", res)
		}
	})
}

func TestExecuteIgnoredContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		r := tool.NewRegistry(tool.WithGracePeriod(time.Second), tool.WithDefaultTimeout(2*time.Second),
			tool.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		release := make(chan struct{})
		r.Register(tool.Must(tool.New("stubborn", "Ignores its context.", func(ctx context.Context, in struct{}) (string, error) {
			<-release
			return "late", nil
		})))
		start := time.Now()
		res := r.Execute(context.Background(), "stubborn", nil)
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("Execute returned after %v, want the 2s limit plus the 1s grace period", d)
		}
		if res.Kind != tool.KindTimeout || !strings.Contains(res.Error, "did not stop") || res.Metadata["ignored_context"] != true {
			t.Errorf("Execute = %+v, want a timeout that says the tool did not stop", res)
		}
		if s := r.Stats(); s.IgnoredContext != 1 || s.StillRunning != 1 {
			t.Errorf("Stats = %+v, want 1 ignored and 1 still running", s)
		}
		close(release)
		synctest.Wait()
		if s := r.Stats(); s.IgnoredContext != 1 || s.StillRunning != 0 {
			t.Errorf("after the tool returned: Stats = %+v, want 1 ignored and 0 still running", s)
		}
		if !strings.Contains(logs.String(), "tool ignored its context") || !strings.Contains(logs.String(), "abandoned tool call returned") {
			t.Errorf("log = %s, want the abandonment and the late return reported", logs.String())
		}
	})
}

func TestExecuteBudget(t *testing.T) {
	r := tool.NewRegistry(tool.WithDefaultMaxOutput(10))
	r.Register(tool.Must(tool.New("big", "Returns a lot.", func(ctx context.Context, in struct{}) (string, error) {
		return "ééééééé", nil // 14 bytes; the cut must not split a rune
	})))
	r.Register(tool.Must(tool.New("unlimited", "Returns a lot.", func(ctx context.Context, in struct{}) (string, error) {
		return strings.Repeat("x", 100), nil
	}, tool.WithMaxOutput(-1))))
	res := r.Execute(context.Background(), "big", nil)
	if !strings.HasPrefix(res.Output, "ééééé\n[output truncated: the tool returned 14 bytes and only the first 10 are shown; ask for less") {
		t.Errorf("Output = %q, want the first 10 bytes and a notice", res.Output)
	}
	if res.Metadata["truncated_bytes"] != 4 || res.IsError {
		t.Errorf("Result = %+v, want a success with truncated_bytes 4", res)
	}
	if res := r.Execute(context.Background(), "unlimited", nil); len(res.Output) != 100 {
		t.Errorf("a tool with WithMaxOutput(-1) was cut to %d bytes", len(res.Output))
	}
}

func TestExecuteHandWrittenSchema(t *testing.T) {
	r := tool.NewRegistry()
	echo := newRaw("echo", `{"type":"object","properties":{"text":{"type":"string","minLength":1},"times":{"type":"integer","default":1}},"required":["text"],"additionalProperties":false}`)
	if err := r.Register(echo); err != nil {
		t.Fatal(err)
	}
	res := r.Execute(context.Background(), "echo", []byte(`{"text":"","extra":1}`))
	if res.Kind != tool.KindInvalidArguments || !strings.Contains(res.Error, "/text") || !strings.Contains(res.Error, "/extra") || echo.calls != 0 {
		t.Errorf("Execute = %+v (calls %d), want both violations and no call", res, echo.calls)
	}
	// A schema that allows other properties still refuses a key that
	// differs from a declared one only in case.
	open := newRaw("open", `{"type":"object","properties":{"path":{"type":"string"}}}`)
	r.Register(open)
	if res := r.Execute(context.Background(), "open", []byte(`{"PATH":"/etc/passwd"}`)); res.Kind != tool.KindInvalidArguments || open.calls != 0 {
		t.Errorf("Execute with a case-variant key = %+v (calls %d), want invalid_arguments and no call", res, open.calls)
	}
	if res := r.Execute(context.Background(), "open", []byte(`{"path":"a","other":1}`)); res.IsError {
		t.Errorf("Execute with an allowed extra property = %+v, want success", res)
	}
	res = r.Execute(context.Background(), "echo", []byte(`{"text":"hi"}`))
	if res.IsError {
		t.Fatal(res.Error)
	}
	var got map[string]any
	if err := json.Unmarshal(echo.gotArgs, &got); err != nil || got["times"] != 1.0 {
		t.Errorf("the tool got %s, want the default times=1 applied", echo.gotArgs)
	}
}

// TestExecuteInline checks that an Inline tool keeps Execute's guarantees
// (the timeout context, the panic guard, the caller's goroutine left
// intact) and that, as documented, one that ignores its context holds its
// caller until it returns instead of being abandoned.
func TestExecuteInline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := tool.NewRegistry(tool.WithGracePeriod(time.Second), tool.WithDefaultTimeout(2*time.Second),
			tool.WithLogger(slog.New(slog.DiscardHandler)))
		var caller, callee atomic.Pointer[string]
		goid := func() *string { s := string(bytes.Fields(debugStack())[1]); return &s }
		must(t, r.Register(tool.Must(tool.New("where", "Reports its goroutine.", func(ctx context.Context, _ struct{}) (string, error) {
			callee.Store(goid())
			return "here", nil
		}, tool.WithInline()))))
		must(t, r.Register(tool.Must(tool.New("waits", "Honors its context.", func(ctx context.Context, _ struct{}) (string, error) {
			<-ctx.Done()
			return "", context.Cause(ctx)
		}, tool.WithInline()))))
		must(t, r.Register(tool.Must(tool.New("boom", "Panics.", func(context.Context, struct{}) (string, error) {
			panic("inline panic")
		}, tool.WithInline()))))
		must(t, r.Register(tool.Must(tool.New("stubborn", "Ignores its context.", func(ctx context.Context, _ struct{}) (string, error) {
			time.Sleep(10 * time.Second)
			return "late", nil
		}, tool.WithInline()))))

		caller.Store(goid())
		if res := r.Execute(context.Background(), "where", nil); res.IsError || res.Output != "here" || *callee.Load() != *caller.Load() {
			t.Errorf("where = %+v on goroutine %s, want success on the caller's goroutine %s", res, *callee.Load(), *caller.Load())
		}
		start := time.Now()
		if res := r.Execute(context.Background(), "waits", nil); res.Kind != tool.KindTimeout || time.Since(start) != 2*time.Second {
			t.Errorf("waits = %+v after %v, want a timeout after the 2s limit", res, time.Since(start))
		}
		if res := r.Execute(context.Background(), "boom", nil); res.Kind != tool.KindPanic {
			t.Errorf("boom = %+v, want a recovered panic", res)
		}
		start = time.Now()
		res := r.Execute(context.Background(), "stubborn", nil)
		if d := time.Since(start); d != 10*time.Second || res.IsError || res.Output != "late" {
			t.Errorf("stubborn = %+v after %v, want its late result, after 10s", res, d)
		}
		if s := r.Stats(); s.IgnoredContext != 0 || s.StillRunning != 0 {
			t.Errorf("Stats = %+v, want nothing abandoned", s)
		}
	})
}

// debugStack returns the first line of the current goroutine's stack
// trace, "goroutine N [running]:".
func debugStack() []byte {
	buf := make([]byte, 64)
	return buf[:runtime.Stack(buf, false)]
}

// recorder is an OutcomeRecorder that allows every call and keeps the
// kinds of the outcomes it is told.
type recorder struct {
	mu    sync.Mutex
	kinds []tool.ErrorKind
}

func (*recorder) Authorize(context.Context, tool.AccessRequest) error { return nil }
func (r *recorder) Outcome(_ context.Context, _ tool.AccessRequest, res tool.Result, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kinds = append(r.kinds, res.Kind)
}

// TestExecuteHere checks that ExecuteHere gives what Execute gives, at
// the same moment, for every outcome, with the tool run on the caller's
// goroutine; and that a tool ignoring its context is abandoned through
// the callback when Execute would have returned (up to a quarter of the
// grace period later), while ExecuteHere itself returns, with ok false,
// when the tool does.
func TestExecuteHere(t *testing.T) {
	type want struct {
		kind      tool.ErrorKind
		output    string
		after     time.Duration // from the call to its answer
		abandoned bool          // answered through the callback
		returns   time.Duration // from the call to ExecuteHere's return, when abandoned
	}
	for _, tt := range []struct {
		name     string
		tool     string
		args     string
		cancelAt time.Duration // the caller cancels its ctx then; 0: never
		nilCB    bool          // ExecuteHere with a nil callback
		record   bool          // with an OutcomeRecorder
		inline   bool          // Execute cannot abandon the tool: it answers later
		want     want
	}{
		{name: "success", tool: "where", want: want{output: "here"}},
		{name: "invalid arguments", tool: "where", args: `{"x":1}`, want: want{kind: tool.KindInvalidArguments}},
		{name: "unknown tool", tool: "nope", want: want{kind: tool.KindNotFound}},
		{name: "panic", tool: "boom", want: want{kind: tool.KindPanic}},
		{name: "tool error", tool: "fails", want: want{kind: tool.KindToolError}},
		{name: "timeout honored", tool: "waits", want: want{kind: tool.KindTimeout, after: 2 * time.Second}},
		{name: "caller canceled", tool: "waits", cancelAt: time.Second, want: want{kind: tool.KindCanceled, after: time.Second}},
		{name: "returns within the grace period", tool: "slowpoke", want: want{output: "late", after: 2500 * time.Millisecond}},
		{name: "ignores its context", tool: "stubborn",
			want: want{kind: tool.KindTimeout, after: 3 * time.Second, abandoned: true, returns: 10 * time.Second}},
		{name: "ignores its caller's cancel", tool: "stubborn", cancelAt: time.Second,
			want: want{kind: tool.KindCanceled, after: 2 * time.Second, abandoned: true, returns: 10 * time.Second}},
		{name: "ignores its context, recorded", tool: "stubborn", record: true,
			want: want{kind: tool.KindTimeout, after: 3 * time.Second, abandoned: true, returns: 10 * time.Second}},
		{name: "inline tool ignoring its context", tool: "stubborn-inline", inline: true,
			want: want{kind: tool.KindTimeout, after: 3 * time.Second, abandoned: true, returns: 10 * time.Second}},
		{name: "nil callback is Execute", tool: "stubborn", nilCB: true, want: want{kind: tool.KindTimeout, after: 3 * time.Second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec recorder
				opts := []tool.RegistryOption{tool.WithGracePeriod(time.Second), tool.WithDefaultTimeout(2 * time.Second),
					tool.WithLogger(slog.New(slog.DiscardHandler))}
				if tt.record {
					opts = append(opts, tool.WithAuthorizer(&rec))
				}
				r := tool.NewRegistry(opts...)
				var caller, callee atomic.Pointer[string]
				goid := func() *string { s := string(bytes.Fields(debugStack())[1]); return &s }
				must(t, r.Register(tool.Must(tool.New("where", "Reports its goroutine.", func(ctx context.Context, _ struct{}) (string, error) {
					callee.Store(goid())
					return "here", nil
				}))))
				must(t, r.Register(tool.Must(tool.New("waits", "Honors its context.", func(ctx context.Context, _ struct{}) (string, error) {
					<-ctx.Done()
					return "", context.Cause(ctx)
				}))))
				must(t, r.Register(tool.Must(tool.New("boom", "Panics.", func(context.Context, struct{}) (string, error) {
					panic("here panic")
				}))))
				must(t, r.Register(tool.Must(tool.New("fails", "Fails.", func(context.Context, struct{}) (string, error) {
					return "", errors.New("no")
				}))))
				must(t, r.Register(tool.Must(tool.New("slowpoke", "Returns half a grace period late.", func(ctx context.Context, _ struct{}) (string, error) {
					time.Sleep(2500 * time.Millisecond)
					return "late", nil
				}))))
				stubborn := func(ctx context.Context, _ struct{}) (string, error) {
					time.Sleep(10 * time.Second)
					return "late", nil
				}
				must(t, r.Register(tool.Must(tool.New("stubborn", "Ignores its context.", stubborn))))
				must(t, r.Register(tool.Must(tool.New("stubborn-inline", "Ignores its context.", stubborn, tool.WithInline()))))

				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.cancelAt > 0 {
					time.AfterFunc(tt.cancelAt, cancel)
				}
				type answer struct {
					res tool.Result
					at  time.Duration
				}
				var viaCallback []answer
				start := time.Now()
				cb := func(res tool.Result) { viaCallback = append(viaCallback, answer{res, time.Since(start)}) }
				if tt.nilCB {
					cb = nil
				}
				caller.Store(goid())
				res, ok := r.ExecuteHere(ctx, tt.tool, json.RawMessage(tt.args), cb)
				returned := time.Since(start)
				got := answer{res, returned}
				if tt.want.abandoned {
					if ok || len(viaCallback) != 1 || !reflect.DeepEqual(res, tool.Result{}) {
						t.Fatalf("ExecuteHere = %+v, %v with %d callbacks, want a zero result, false, after one callback", res, ok, len(viaCallback))
					}
					got = viaCallback[0]
					if returned != tt.want.returns {
						t.Errorf("ExecuteHere returned after %v, want %v, when the tool did", returned, tt.want.returns)
					}
					if got.res.Metadata["ignored_context"] != true || !strings.Contains(got.res.Error, "did not stop") {
						t.Errorf("abandoned with %+v, want it to say the tool did not stop", got.res)
					}
				} else if !ok || len(viaCallback) != 0 {
					t.Fatalf("ExecuteHere gave ok %v with %d callbacks, want true and none", ok, len(viaCallback))
				}
				// The registry's watcher of ExecuteHere's calls abandons
				// them up to a quarter of the grace period late.
				late := time.Duration(0)
				if tt.want.abandoned {
					late = time.Second / 4
				}
				if got.res.Kind != tt.want.kind || got.res.Output != tt.want.output || got.at < tt.want.after || got.at > tt.want.after+late {
					t.Errorf("answer %+v after %v, want kind %q output %q after %v (+%v)", got.res, got.at, tt.want.kind, tt.want.output, tt.want.after, late)
				}
				if tt.tool == "where" && tt.args == "" && *callee.Load() != *caller.Load() {
					t.Errorf("the tool ran on goroutine %s, want the caller's %s", *callee.Load(), *caller.Load())
				}
				if s := r.Stats(); (s.IgnoredContext == 1) != (tt.want.abandoned || tt.nilCB) || s.IgnoredContext > 1 {
					t.Errorf("Stats = %+v, want 1 ignored if abandoned, else 0", s)
				}
				synctest.Wait()
				if s := r.Stats(); s.StillRunning != 0 && !tt.nilCB {
					t.Errorf("Stats after the return = %+v, want nothing still running", s)
				}
				if tt.record && (len(rec.kinds) != 1 || rec.kinds[0] != tt.want.kind) {
					t.Errorf("outcomes recorded: %v, want one, %q", rec.kinds, tt.want.kind)
				}

				if tt.inline {
					return // Execute waits for an Inline tool (TestExecuteInline)
				}
				// Execute gives the same answer at the same moment.
				ctx2, cancel2 := context.WithCancel(context.Background())
				defer cancel2()
				if tt.cancelAt > 0 {
					time.AfterFunc(tt.cancelAt, cancel2)
				}
				start = time.Now()
				want := r.Execute(ctx2, tt.tool, json.RawMessage(tt.args))
				if want.Kind != got.res.Kind || want.Output != got.res.Output || time.Since(start) != tt.want.after {
					t.Errorf("Execute = %+v after %v; ExecuteHere answered %+v after %v", want, time.Since(start), got.res, got.at)
				}
				time.Sleep(20 * time.Second) // let an abandoned tool of Execute return
			})
		})
	}
}

// TestExecuteHereConcurrent runs calls of ExecuteHere at once, every
// other one of a tool that ignores its context: each of those is answered
// once through its callback, the others return their results, and the
// registry's watcher ends once no call is left.
func TestExecuteHereConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := tool.NewRegistry(tool.WithGracePeriod(time.Second), tool.WithDefaultTimeout(2*time.Second),
			tool.WithLogger(slog.New(slog.DiscardHandler)))
		must(t, r.Register(tool.Must(tool.New("stubborn", "Ignores its context.", func(ctx context.Context, _ struct{}) (string, error) {
			time.Sleep(10 * time.Second)
			return "late", nil
		}))))
		must(t, r.Register(tool.Must(tool.New("waits", "Honors its context.", func(ctx context.Context, _ struct{}) (string, error) {
			<-ctx.Done()
			return "", context.Cause(ctx)
		}))))
		const calls = 40
		var callbacks, kept, lost atomic.Int64
		var wg sync.WaitGroup
		for i := range calls {
			name := "waits"
			if i%2 == 0 {
				name = "stubborn"
			}
			wg.Go(func() {
				res, ok := r.ExecuteHere(context.Background(), name, nil, func(res tool.Result) {
					if res.Kind == tool.KindTimeout && res.Metadata["ignored_context"] == true {
						callbacks.Add(1)
					}
				})
				switch {
				case ok && name == "waits" && res.Kind == tool.KindTimeout:
					kept.Add(1)
				case !ok && name == "stubborn":
					lost.Add(1)
				default:
					t.Errorf("%s: ExecuteHere = %+v, %v", name, res, ok)
				}
			})
		}
		wg.Wait()
		if callbacks.Load() != calls/2 || kept.Load() != calls/2 || lost.Load() != calls/2 {
			t.Errorf("callbacks %d, kept %d, lost %d; want %d each", callbacks.Load(), kept.Load(), lost.Load(), calls/2)
		}
		if s := r.Stats(); s.IgnoredContext != calls/2 || s.StillRunning != 0 {
			t.Errorf("Stats = %+v, want %d ignored, none still running", s, calls/2)
		}
	})
}

// TestExecuteHereRunsInTheCallersContext checks that, when the caller's
// deadline comes before the tool's limit, the tool gets the caller's
// context itself, and otherwise one that ends at its limit.
func TestExecuteHereRunsInTheCallersContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := tool.NewRegistry(tool.WithDefaultTimeout(2*time.Second), tool.WithLogger(slog.New(slog.DiscardHandler)))
		var got context.Context
		must(t, r.Register(tool.Must(tool.New("keep", "Keeps its context.", func(ctx context.Context, _ struct{}) (string, error) {
			got = ctx
			return "ok", nil
		}))))
		for _, tt := range []struct {
			name     string
			caller   time.Duration // the caller's deadline; 0: none
			same     bool
			deadline time.Duration // the tool's, from the call
		}{
			{"earlier deadline", time.Second, true, time.Second},
			{"the same deadline", 2 * time.Second, true, 2 * time.Second},
			{"later deadline", 3 * time.Second, false, 2 * time.Second},
			{"no deadline", 0, false, 2 * time.Second},
		} {
			ctx, cancel := context.WithCancel(context.Background())
			if tt.caller > 0 {
				ctx, cancel = context.WithTimeout(context.Background(), tt.caller)
			}
			start := time.Now()
			res, ok := r.ExecuteHere(ctx, "keep", nil, func(tool.Result) {})
			if !ok || res.IsError {
				t.Fatalf("%s: ExecuteHere = %+v, %v", tt.name, res, ok)
			}
			if (got == ctx) != tt.same {
				t.Errorf("%s: the tool got the caller's context: %v, want %v", tt.name, got == ctx, tt.same)
			}
			if d, _ := got.Deadline(); d.Sub(start) != tt.deadline {
				t.Errorf("%s: the tool's deadline is %v from the call", tt.name, d.Sub(start))
			}
			if !tt.same && got.Err() == nil {
				t.Errorf("%s: the context made for the call was not ended after it", tt.name)
			}
			cancel()
		}
		time.Sleep(tool.DefaultGracePeriod) // the watcher of ExecuteHere's calls ends when idle
	})
}
