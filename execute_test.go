package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime"
	"strings"
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
