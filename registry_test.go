package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/golden"
)

// rawTool is a hand-written tool with a fixed schema that echoes its
// arguments.
type rawTool struct {
	name, desc string
	schema     string
	calls      int
	mu         sync.Mutex
	gotArgs    json.RawMessage
}

func (t *rawTool) Name() string                { return t.name }
func (t *rawTool) Description() string         { return t.desc }
func (t *rawTool) Parameters() json.RawMessage { return json.RawMessage(t.schema) }
func (t *rawTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls++
	t.gotArgs = append(json.RawMessage(nil), args...)
	return tool.Result{Output: string(args)}, nil
}

func newRaw(name, schema string) *rawTool {
	return &rawTool{name: name, desc: "Echoes its arguments.", schema: schema}
}

// TestRegisterReplacesAndUnique checks the registry's duplicate-name rule:
// Register replaces and logs a warning naming the tool, RegisterUnique
// refuses and leaves the registered tool in place.
func TestRegisterReplacesAndUnique(t *testing.T) {
	var logged bytes.Buffer
	r := tool.NewRegistry(tool.WithLogger(slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))))
	first, second := newRaw("echo", `{"type":"object"}`), newRaw("echo", `{"type":"object"}`)
	if err := r.Register(first); err != nil {
		t.Fatal(err)
	}
	if logged.Len() != 0 {
		t.Errorf("registering a new name logged %q, want nothing", logged.String())
	}
	if err := r.Register(second); err != nil {
		t.Fatalf("Register of a duplicate name = %v, want nil (replace)", err)
	}
	if got, _ := r.Get("echo"); got != tool.Tool(second) {
		t.Errorf("Get after a replacing Register returned the old tool")
	}
	if want := "level=WARN msg=\"tool replaced: a tool of the same name was already registered\" tool=echo\n"; logged.String() != want {
		t.Errorf("a replacing Register logged %q, want %q", logged.String(), want)
	}
	logged.Reset()
	// Replace is Register for the name's owner: the same change, no warning.
	third := newRaw("echo", `{"type":"object"}`)
	if replaced, err := r.Replace(third); err != nil || !replaced {
		t.Fatalf("Replace of a registered name = %v, %v; want true, nil", replaced, err)
	}
	if got, _ := r.Get("echo"); got != tool.Tool(third) || logged.Len() != 0 {
		t.Errorf("Replace: the tool is not the new one, or it logged %q", logged.String())
	}
	if replaced, err := r.Replace(newRaw("fresh", `{"type":"object"}`)); err != nil || replaced {
		t.Errorf("Replace of a new name = %v, %v; want false, nil", replaced, err)
	}
	if _, err := r.Replace(newRaw("bad name!", `{"type":"object"}`)); !errors.Is(err, tool.ErrInvalidName) {
		t.Errorf("Replace of an invalid name = %v, want ErrInvalidName", err)
	}
	r.Remove("fresh")
	r.Register(second)
	logged.Reset()
	err := r.RegisterUnique(first)
	if !errors.Is(err, tool.ErrDuplicate) || !strings.Contains(err.Error(), `"echo"`) {
		t.Fatalf("RegisterUnique of a duplicate = %v, want an error naming the tool, wrapping ErrDuplicate", err)
	}
	if got, _ := r.Get("echo"); got != tool.Tool(second) {
		t.Errorf("a refused RegisterUnique changed the registered tool")
	}
	if logged.Len() != 0 {
		t.Errorf("a refused RegisterUnique logged %q, want nothing", logged.String())
	}
	if !r.Remove("echo") || r.Remove("echo") {
		t.Errorf("Remove = false on a registered tool, or true on a removed one")
	}
	if _, ok := r.Get("echo"); ok || r.Len() != 0 {
		t.Errorf("after Remove: Get ok = %v, Len = %d; want false, 0", ok, r.Len())
	}
}

func TestRegisterRefuses(t *testing.T) {
	for _, tt := range []struct {
		name, tool, schema string
		is                 error
		want               string
	}{
		{"empty name", "", `{"type":"object"}`, tool.ErrInvalidName, "must match"},
		{"dot in name", "fs.read", `{"type":"object"}`, tool.ErrInvalidName, `"fs.read"`},
		{"long name", strings.Repeat("a", 65), `{"type":"object"}`, tool.ErrInvalidName, "must match"},
		{"space in name", "read file", `{"type":"object"}`, tool.ErrInvalidName, "must match"},
		{"not JSON", "t", `{"type":`, tool.ErrInvalidSchema, `register "t"`},
		{"not an object schema", "t", `{"type":"string"}`, tool.ErrInvalidSchema, "object schema"},
		{"empty schema", "t", ``, tool.ErrInvalidSchema, "empty"},
		{"array root", "t", `[]`, tool.ErrInvalidSchema, "not a JSON object"},
		{"bad pattern", "t", `{"type":"object","properties":{"a":{"type":"string","pattern":"(("}}}`, tool.ErrInvalidSchema, "pattern"},
		{"remote ref", "t", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, tool.ErrInvalidSchema, "$ref"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tool.NewRegistry().Register(newRaw(tt.tool, tt.schema))
			if !errors.Is(err, tt.is) {
				t.Fatalf("Register = %v, want an error wrapping %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Register error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestListOrderAndDefinitionsGolden(t *testing.T) {
	r := tool.NewRegistry()
	for _, name := range []string{"zeta", "alpha", "mid-1", "Beta"} {
		if err := r.Register(newRaw(name, `{"type":"object","properties":{"q":{"type":"string","description":"<query> & more"}}}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Register(tool.Must(tool.New("search_flights", "Searches flights.", searchFlights))); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range r.List() {
		names = append(names, tl.Name())
	}
	if got, want := strings.Join(names, " "), "Beta alpha mid-1 search_flights zeta"; got != want {
		t.Errorf("List order = %s, want %s", got, want)
	}
	defs := r.Definitions()
	defs[0] = 'X' // the caller owns the result
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, r.Definitions(), "", "  "); err != nil {
		t.Fatalf("Definitions is not valid JSON: %v", err)
	}
	pretty.WriteByte('\n')
	golden.File(t, filepath.Join("testdata", "definitions.golden.json"), pretty.Bytes())
}

func TestOnChange(t *testing.T) {
	r := tool.NewRegistry()
	var got []string
	stop := r.OnChange(func(name string) { got = append(got, name+fmt.Sprint(r.Len())) })
	r.Register(newRaw("a", `{"type":"object"}`))
	r.Register(newRaw("a", `{"type":"object"}`))
	r.RegisterUnique(newRaw("a", `{"type":"object"}`)) // refused: no event
	r.Register(newRaw("b", `{"type":"object"}`))
	r.Remove("a")
	r.Remove("zzz") // nothing removed: no event
	stop()
	r.Register(newRaw("c", `{"type":"object"}`))
	if want := "a1 a1 b2 a1"; strings.Join(got, " ") != want {
		t.Errorf("OnChange events = %q, want %q", strings.Join(got, " "), want)
	}
}

// TestRegistryConcurrent registers, lists, exports and executes at once;
// run with -race.
func TestRegistryConcurrent(t *testing.T) {
	r := tool.NewRegistry()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				name := fmt.Sprintf("t%d_%d", i, j%5)
				r.Register(newRaw(name, `{"type":"object"}`))
				r.Execute(context.Background(), name, []byte(`{}`))
				r.List()
				r.Definitions()
				if j%7 == 0 {
					r.Remove(name)
				}
			}
		})
	}
	wg.Wait()
	var defs []any
	if err := json.Unmarshal(r.Definitions(), &defs); err != nil || len(defs) != r.Len() {
		t.Errorf("Definitions after concurrent use: %d entries, err %v; want %d", len(defs), err, r.Len())
	}
}

// TestDefinitionsAfterReplacement: a replaced tool's new definition is
// exported in its place in name order, after the export was cached, and
// so is a new tool; an export made while the registry changes is never
// kept in place of the current one.
func TestDefinitionsAfterReplacement(t *testing.T) {
	r := tool.NewRegistry(tool.WithLogger(slog.New(slog.DiscardHandler)))
	mk := func(name, desc string) tool.Tool {
		return tool.Must(tool.New(name, desc, func(context.Context, struct{}) (string, error) { return "", nil }))
	}
	for _, n := range []string{"c", "a", "b"} {
		r.Register(mk(n, "first "+n))
	}
	names := func() string {
		var defs []struct {
			Function struct{ Name, Description string } `json:"function"`
		}
		if err := json.Unmarshal(r.Definitions(), &defs); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range defs {
			out = append(out, d.Function.Name+"="+d.Function.Description)
		}
		return strings.Join(out, " ")
	}
	if got, want := names(), "a=first a b=first b c=first c"; got != want {
		t.Fatalf("before: %s, want %s", got, want)
	}
	r.Register(mk("b", "second b"))
	if got, want := names(), "a=first a b=second b c=first c"; got != want {
		t.Errorf("after replacing b: %s, want %s", got, want)
	}
	r.Register(mk("aa", "new"))
	r.Register(mk("c", "second c"))
	if got, want := names(), "a=first a aa=new b=second b c=second c"; got != want {
		t.Errorf("after adding aa and replacing c: %s, want %s", got, want)
	}
	r.Remove("a")
	r.Register(mk("b", "third b"))
	if got, want := names(), "aa=new b=third b c=second c"; got != want {
		t.Errorf("after removing a and replacing b: %s, want %s", got, want)
	}

	// Exports racing with replacements: the last export after they end
	// is the last registration's.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 50 {
				r.Register(mk("b", fmt.Sprintf("racing %d %d", i, j)))
				r.Definitions()
			}
		})
	}
	wg.Wait()
	r.Register(mk("b", "last b"))
	if got, want := names(), "aa=new b=last b c=second c"; got != want {
		t.Errorf("after the race: %s, want %s", got, want)
	}
}

// TestDefinitionsAfterManyReplacements: after an export, replacements of
// 1 to 40 of 40 tools (some replaced twice, so both the few that are
// patched into the last order and the many that are looked up by name)
// export each tool's latest definition, in name order.
func TestDefinitionsAfterManyReplacements(t *testing.T) {
	mk := func(name, desc string) tool.Tool {
		return tool.Must(tool.New(name, desc, func(context.Context, struct{}) (string, error) { return "", nil }))
	}
	for _, replaced := range []int{1, 2, 4, 5, 6, 40} {
		t.Run(fmt.Sprint(replaced), func(t *testing.T) {
			r := tool.NewRegistry(tool.WithLogger(slog.New(slog.DiscardHandler)))
			want := map[string]string{}
			var names []string
			for i := range 40 {
				n := fmt.Sprintf("t%02d", (i*17)%40) // registered out of order
				r.Register(mk(n, "first"))
				want[n] = "first"
				names = append(names, n)
			}
			r.Definitions()
			for i := range replaced {
				n := names[(i*7)%40]
				r.Register(mk(n, fmt.Sprint("second ", i)))
				want[n] = fmt.Sprint("second ", i)
				if i%3 == 0 { // the same tool again
					r.Register(mk(n, fmt.Sprint("third ", i)))
					want[n] = fmt.Sprint("third ", i)
				}
			}
			var defs []struct {
				Function struct{ Name, Description string } `json:"function"`
			}
			if err := json.Unmarshal(r.Definitions(), &defs); err != nil {
				t.Fatal(err)
			}
			if len(defs) != 40 {
				t.Fatalf("%d definitions, want 40", len(defs))
			}
			for i, d := range defs {
				if wantName := fmt.Sprintf("t%02d", i); d.Function.Name != wantName || d.Function.Description != want[wantName] {
					t.Errorf("definition %d: %s=%q, want %s=%q", i, d.Function.Name, d.Function.Description, wantName, want[wantName])
				}
			}
			for i, tl := range r.List() {
				if tl.Name() != defs[i].Function.Name || tl.Description() != defs[i].Function.Description {
					t.Errorf("List()[%d] is %s=%q, Definitions has %s=%q", i, tl.Name(), tl.Description(), defs[i].Function.Name, defs[i].Function.Description)
				}
			}
		})
	}
}

// TestRegisterUniqueFoldsCase: RegisterUnique refuses a name that differs
// from a registered one only in case and in its '-' and '_', and takes it
// once that one is removed; Register, the program's own choice, still
// adds it.
func TestRegisterUniqueFoldsCase(t *testing.T) {
	mk := func(name string) tool.Tool {
		return tool.Must(tool.New(name, "A tool.", func(context.Context, struct{}) (string, error) { return "", nil }))
	}
	r := tool.NewRegistry()
	if err := r.RegisterUnique(mk("read_file")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Read_File", "READ_FILE", "read_File", "read-file", "readfile", "READ__FILE", "_read-file_"} {
		if err := r.RegisterUnique(mk(name)); !errors.Is(err, tool.ErrDuplicate) || !strings.Contains(err.Error(), name) {
			t.Errorf("RegisterUnique(%q) beside read_file: %v, want ErrDuplicate naming it", name, err)
		}
	}
	if _, ok := r.Get("Read_File"); ok {
		t.Error("a refused case variant is registered")
	}
	for _, name := range []string{"read_files", "read_file2", "reaf_file"} {
		if err := r.RegisterUnique(mk(name)); err != nil {
			t.Errorf("%q, a name that differs in more than case and separators: %v", name, err)
		}
	}
	if err := r.Register(mk("Read_File")); err != nil {
		t.Errorf("Register of a case variant: %v", err)
	}
	r.Remove("Read_File")
	if err := r.RegisterUnique(mk("READ_FILE")); !errors.Is(err, tool.ErrDuplicate) {
		t.Errorf("with read_file still there: %v, want ErrDuplicate", err)
	}
	r.Remove("read_file")
	if err := r.RegisterUnique(mk("READ_FILE")); err != nil {
		t.Errorf("once read_file is removed: %v", err)
	}
}
