package toolbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/tooltest"
)

var update = flag.Bool("update", false, "update the golden files in testdata")

// Every built-in tool passes the conformance checks.
func TestConformance(t *testing.T) {
	for _, tt := range []struct {
		name      string
		new       func() tool.Tool
		validArgs string
	}{
		{"calc", Calc, `{"expression":"2 * (3 + 4)"}`},
		{"convert_units", ConvertUnits, `{"value":5,"from":"km","to":"mi"}`},
		{"current_time", CurrentTime, `{"zone":"Europe/Paris","format":"rfc1123"}`},
		{"kv", func() tool.Tool { return NewKV() }, `{"op":"set","key":"k","value":"v"}`},
		{"wait", Wait, `{"seconds":0.001}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tooltest.Run(t, func(*testing.T) tool.Tool { return tt.new() }, json.RawMessage(tt.validArgs))
		})
	}
}

func TestTools(t *testing.T) {
	var names []string
	for _, tl := range Tools() {
		names = append(names, tl.Name())
	}
	if want := []string{"calc", "convert_units", "current_time", "kv", "wait"}; !slices.Equal(names, want) {
		t.Errorf("Tools() names = %q, want %q", names, want)
	}
	a, b := Tools(), Tools()
	if a[3] == b[3] {
		t.Errorf("Tools() returned the same kv store twice; each call must make a new one")
	}
}

func TestRegister(t *testing.T) {
	r := tool.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if r.Len() != 5 {
		t.Errorf("after Register, the registry has %d tools, want 5", r.Len())
	}
	if err := Register(r); !errors.Is(err, tool.ErrDuplicate) {
		t.Errorf("a second Register = %v, want an error wrapping ErrDuplicate", err)
	}
}

// TestRegisterKeepsExisting checks that Register never displaces a tool the
// program registered: it refuses with an error naming the tool, and the
// program's tool stays.
func TestRegisterKeepsExisting(t *testing.T) {
	r := tool.NewRegistry()
	mine := tool.Must(tool.New("kv", "The program's own store.", func(context.Context, struct{}) (string, error) { return "mine", nil }))
	if err := r.Register(mine); err != nil {
		t.Fatal(err)
	}
	err := Register(r)
	if !errors.Is(err, tool.ErrDuplicate) || err.Error() != `toolbox: register "kv": duplicate tool name` {
		t.Errorf("Register = %v, want an error naming kv, wrapping ErrDuplicate", err)
	}
	if got, _ := r.Get("kv"); got != mine {
		t.Errorf("Register displaced the program's kv tool")
	}
	if r.Len() != 4 {
		t.Errorf("the registry has %d tools, want 4: the three before kv and the program's kv", r.Len())
	}
}

// The annotations and timeouts the tools declare; the first four return at
// once, so they run inline, and wait may run as an MCP task.
func TestOptions(t *testing.T) {
	want := map[string]tool.Options{
		"calc":          {Annotations: tool.Annotations{Title: "Calculator", ReadOnly: true, Idempotent: true}, Timeout: 5 * time.Second, Inline: true},
		"convert_units": {Annotations: tool.Annotations{Title: "Unit converter", ReadOnly: true, Idempotent: true}, Timeout: 5 * time.Second, Inline: true},
		"current_time":  {Annotations: tool.Annotations{Title: "Current time", ReadOnly: true, Idempotent: true}, Timeout: 5 * time.Second, Inline: true},
		"kv":            {Annotations: tool.Annotations{Title: "Key-value store", Destructive: true, Idempotent: true}, Timeout: 5 * time.Second, Inline: true},
		"wait":          {Annotations: tool.Annotations{Title: "Wait", ReadOnly: true, Idempotent: true}, Timeout: MaxWait + time.Minute, Task: tool.TaskOptional},
	}
	for _, tl := range Tools() {
		got := tool.OptionsOf(tl)
		got.OutputSchema = nil // pinned by the golden file
		if diff := cmp.Diff(want[tl.Name()], got, cmpopts.IgnoreUnexported(tool.Options{})); diff != "" {
			t.Errorf("OptionsOf(%s) mismatch (-want +got):\n%s", tl.Name(), diff)
		}
	}
}

// The definitions a model sees, pinned in a golden file: review changes to
// it like code. Update it with go test ./toolbox -run Definitions -update.
func TestDefinitions(t *testing.T) {
	r := tool.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatal(err)
	}
	var defs []map[string]any
	if err := json.Unmarshal(r.Definitions(), &defs); err != nil {
		t.Fatal(err)
	}
	type outputs map[string]json.RawMessage
	out := outputs{}
	for _, tl := range Tools() {
		if s := tool.OptionsOf(tl).OutputSchema; s != nil {
			out[tl.Name()] = s
		}
	}
	got, err := json.MarshalIndent(map[string]any{"definitions": defs, "output_schemas": out}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "definitions.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("definitions mismatch (-want +got), run with -update if the change is intended:\n%s", diff)
	}
}

// Calls through a Registry, as clawtool makes them: what the model reads.
func TestCalls(t *testing.T) {
	for _, tt := range []struct {
		tool, args string
		want       tool.Result
	}{
		{"calc", `{"expression":"2 * (3 + 4)"}`, tool.Result{Output: "14"}},
		{"calc", `{"expression":"round(100 / 7, 2)"}`, tool.Result{Output: "14.29"}},
		{"calc", `{"expression":"1/0"}`, tool.Result{IsError: true, Kind: tool.KindToolError, Error: "at column 2: division by zero"}},
		{"calc", `{"expression":"os.exit(1)"}`, tool.Result{IsError: true, Kind: tool.KindToolError, Error: `at column 1: unknown name "os"; the constants are pi and e`}},
		{"calc", `{"expression":""}`, tool.Result{IsError: true, Kind: tool.KindInvalidArguments}},
		{"calc", `{"expr":"1"}`, tool.Result{IsError: true, Kind: tool.KindInvalidArguments}},
		{"convert_units", `{"value":100,"from":"C","to":"F"}`, tool.Result{Output: `{"value":212,"unit":"F","text":"100 C = 212 F"}`}},
		{"convert_units", `{"value":1,"from":"kg","to":"m"}`, tool.Result{IsError: true, Kind: tool.KindToolError, Error: "cannot convert kg (mass) to m (length): they measure different quantities"}},
		{"convert_units", `{"value":1,"from":"kg","to":"furlong"}`, tool.Result{IsError: true, Kind: tool.KindInvalidArguments}},
		{"convert_units", `{"value":"1","from":"kg","to":"g"}`, tool.Result{IsError: true, Kind: tool.KindInvalidArguments}},
		{"current_time", `{"zone":"Asia/Tokyo","at":"2026-11-29T22:05:00Z","format":"datetime"}`,
			tool.Result{Output: `{"time":"2026-11-30 07:05:00","zone":"Asia/Tokyo","abbreviation":"JST","utc_offset":"+09:00","dst":false,"weekday":"Monday","unix":1795989900}`}},
		{"current_time", `{"zone":"Local"}`, tool.Result{IsError: true, Kind: tool.KindToolError, Error: `zone: "Local" is not offered: name the user's IANA zone, such as Europe/Paris`}},
		{"current_time", `{"zone":"../etc/passwd"}`, tool.Result{IsError: true, Kind: tool.KindInvalidArguments}},
		{"current_time", `{"format":"iso"}`, tool.Result{IsError: true, Kind: tool.KindInvalidArguments}},
	} {
		r := tool.NewRegistry()
		if err := Register(r); err != nil {
			t.Fatal(err)
		}
		got := r.Execute(context.Background(), tt.tool, json.RawMessage(tt.args))
		if tt.want.Kind == tool.KindInvalidArguments {
			got.Error = "" // the Registry's wording, tested there
		}
		if got.Output != tt.want.Output || got.Error != tt.want.Error || got.IsError != tt.want.IsError || got.Kind != tt.want.Kind {
			t.Errorf("Execute(%s, %s) = %+v, want %+v", tt.tool, tt.args, got, tt.want)
		}
	}
}

// current_time reads the clock: in a synctest bubble the clock starts at
// 2000-01-01 00:00:00 UTC and moves only with the bubble's timers.
func TestCurrentTimeNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := tool.NewRegistry()
		if err := r.Register(CurrentTime()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(90 * time.Minute)
		res := r.Execute(context.Background(), "current_time", json.RawMessage(`{"zone":"America/New_York","format":"rfc1123"}`))
		var got ClockReading
		if err := json.Unmarshal(res.Structured, &got); err != nil {
			t.Fatalf("Execute = %+v: %v", res, err)
		}
		want := ClockReading{Time: "Fri, 31 Dec 1999 20:30:00 EST", Zone: "America/New_York", Abbreviation: "EST", UTCOffset: "-05:00", Weekday: "Friday", Unix: 946690200}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("current_time mismatch (-want +got):\n%s", diff)
		}
	})
}

// Output is the Structured content, for tools with structured results.
func TestStructuredIsOutput(t *testing.T) {
	r := tool.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatal(err)
	}
	res := r.Execute(context.Background(), "convert_units", json.RawMessage(`{"value":1,"from":"mi","to":"km"}`))
	if !bytes.Equal(bytes.TrimSpace(res.Structured), []byte(res.Output)) {
		t.Errorf("Structured = %s, Output = %s; want the same JSON", res.Structured, res.Output)
	}
}
