package toolbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/tooltest"
)

func TestKVConformance(t *testing.T) {
	tooltest.Run(t, func(*testing.T) tool.Tool { return NewKV() }, json.RawMessage(`{"op":"set","key":"k","value":"v"}`))
}

// A session of calls, in order, on one store, through a Registry.
func TestKVSession(t *testing.T) {
	r := tool.NewRegistry()
	if err := r.Register(NewKV()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args string
		want tool.Result
	}{
		{`{"op":"list"}`, tool.Result{Output: "the store is empty"}},
		{`{"op":"get","key":"plan"}`, tool.Result{IsError: true, Kind: tool.KindToolError, Error: `no key "plan"; the store has 0 keys (see them with {"op":"list"})`}},
		{`{"op":"set","key":"plan","value":"1. read\n2. write"}`, tool.Result{Output: `stored "plan" (16 characters)`}},
		{`{"op":"get","key":"plan"}`, tool.Result{Output: "1. read\n2. write"}},
		{`{"op":"set","key":"plan","value":"done"}`, tool.Result{Output: `replaced "plan" (4 characters)`}},
		{`{"op":"set","key":"notes/b","value":"é"}`, tool.Result{Output: `stored "notes/b" (1 character)`}},
		{`{"op":"set","key":"notes/a","value":""}`, tool.Result{Output: `stored "notes/a" (0 characters)`}},
		{`{"op":"set","key":"two\nlines","value":"x"}`, tool.Result{Output: `stored "two\nlines" (1 character)`}},
		{`{"op":"list"}`, tool.Result{Output: "notes/a\nnotes/b\nplan\n\"two\\nlines\""}},
		{`{"op":"list","prefix":"notes/"}`, tool.Result{Output: "notes/a\nnotes/b"}},
		{`{"op":"list","prefix":"x"}`, tool.Result{Output: `no keys start with "x"`}},
		{`{"op":"get","key":"notes/a"}`, tool.Result{}},
		{`{"op":"delete","key":"plan"}`, tool.Result{Output: `deleted "plan"`}},
		{`{"op":"delete","key":"plan"}`, tool.Result{Output: `no key "plan"; nothing to delete`}},
		{`{"op":"get","key":"plan"}`, tool.Result{IsError: true, Kind: tool.KindToolError, Error: `no key "plan"; the store has 3 keys (see them with {"op":"list"})`}},
	} {
		if got := r.Execute(context.Background(), "kv", json.RawMessage(tt.args)); !equalResult(got, tt.want) {
			t.Errorf("Execute(kv, %s) = %+v, want %+v", tt.args, got, tt.want)
		}
	}
}

func equalResult(a, b tool.Result) bool {
	return a.Output == b.Output && a.Error == b.Error && a.IsError == b.IsError && a.Kind == b.Kind
}

// Arguments that do not fit an operation are refused by Execute called
// directly (by its own checks) and, when the schema alone rules them out,
// by the Registry before Execute runs.
func TestKVBadArguments(t *testing.T) {
	long := strings.Repeat("k", 257)
	for _, tt := range []struct {
		args     string
		pointer  string // of the violation Execute reports
		bySchema bool   // the Registry refuses them from the schema
	}{
		{`{}`, "/op", true},
		{`{"op":"put","key":"k"}`, "/op", true},
		{`{"op":5}`, "", true},
		{`{"op":"set","key":"k"}`, "/value", false},
		{`{"op":"set","value":"v"}`, "/key", false},
		{`{"op":"get"}`, "/key", false},
		{`{"op":"delete"}`, "/key", false},
		{`{"op":"get","key":""}`, "/key", true},
		{`{"op":"get","key":"` + long + `"}`, "/key", true},
		{`{"op":"set","key":"k","value":"` + strings.Repeat("v", 16385) + `"}`, "/value", true},
		{`{"op":"list","prefix":"` + long + `"}`, "/prefix", true},
		{`{"op":"list","limit":3}`, "", true},
		{`{"op":"list"} {"op":"list"}`, "", true},
		{`[{"op":"list"}]`, "", true},
		{`null`, "", true},
		{``, "", true},
	} {
		_, err := NewKV().Execute(context.Background(), json.RawMessage(tt.args))
		var ae *tool.ArgumentError
		if !errors.As(err, &ae) || len(ae.Violations) != 1 || ae.Violations[0].Pointer != tt.pointer {
			t.Errorf("Execute(%.60s) error = %v, want an *ArgumentError at %q", tt.args, err, tt.pointer)
		}
		r := tool.NewRegistry()
		if err := r.Register(NewKV()); err != nil {
			t.Fatal(err)
		}
		res := r.Execute(context.Background(), "kv", json.RawMessage(tt.args))
		if res.Kind != tool.KindInvalidArguments {
			t.Errorf("Registry.Execute(kv, %.60s) = %+v, want kind %s", tt.args, res, tool.KindInvalidArguments)
		}
		if bySchema := !strings.Contains(res.Error, "needs"); bySchema != tt.bySchema {
			t.Errorf("Registry.Execute(kv, %.60s): refused by the schema = %v, want %v (%s)", tt.args, bySchema, tt.bySchema, res.Error)
		}
	}
}

func TestKVLimits(t *testing.T) {
	ctx := context.Background()
	set := func(kv *KV, key, value string) error {
		args, _ := json.Marshal(map[string]string{"op": "set", "key": key, "value": value})
		_, err := kv.Execute(ctx, args)
		return err
	}

	kv := NewKV()
	for i := range kvMaxKeys {
		if err := set(kv, fmt.Sprint(i), "v"); err != nil {
			t.Fatalf("set key %d of %d: %v", i+1, kvMaxKeys, err)
		}
	}
	if err := set(kv, "one more", "v"); err == nil || !strings.Contains(err.Error(), "the store is full (1000 keys)") {
		t.Errorf("set of key %d = %v, want the store to be full", kvMaxKeys+1, err)
	}
	if err := set(kv, "0", "replaced"); err != nil {
		t.Errorf("replacing a key in a full store: %v", err)
	}
	res, err := kv.Execute(ctx, json.RawMessage(`{"op":"list"}`))
	if lines := strings.Split(res.Output, "\n"); err != nil || len(lines) != kvMaxListed+1 || lines[kvMaxListed] != "… and 800 more; list with a longer prefix to see them" {
		t.Errorf("list of a full store: %d lines ending %q, %v", len(lines), lines[len(lines)-1], err)
	}

	kv = NewKV()
	value := strings.Repeat("v", kvMaxValueChars)
	n := 0
	for ; n < 100; n++ {
		if err := set(kv, fmt.Sprint(n), value); err != nil {
			if !strings.Contains(err.Error(), "over its limit of 1048576") {
				t.Errorf("set of value %d: %v, want the byte limit", n, err)
			}
			break
		}
	}
	if n != 63 {
		t.Errorf("the store took %d values of %d bytes, want 63 (1 MiB with the keys)", n, kvMaxValueChars)
	}
	if _, err := kv.Execute(ctx, json.RawMessage(`{"op":"delete","key":"0"}`)); err != nil {
		t.Fatal(err)
	}
	if err := set(kv, "again", value); err != nil {
		t.Errorf("set after a delete freed room: %v", err)
	}
}

func TestKVConcurrent(t *testing.T) {
	kv := NewKV()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				key := fmt.Sprintf("k%d", i%5)
				for _, args := range []string{
					fmt.Sprintf(`{"op":"set","key":%q,"value":"%d"}`, key, g),
					fmt.Sprintf(`{"op":"get","key":%q}`, key),
					`{"op":"list"}`,
					fmt.Sprintf(`{"op":"delete","key":%q}`, key),
				} {
					if _, err := kv.Execute(context.Background(), json.RawMessage(args)); err != nil && !strings.HasPrefix(err.Error(), "no key") {
						t.Errorf("Execute(%s): %v", args, err)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := kv.counted(); err != nil {
		t.Error(err)
	}
}

// counted checks that kv's byte counts are what its stores hold, and
// within the limits.
func (kv *KV) counted() error {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	all := 0
	for name, st := range kv.stores {
		total := 0
		for k, v := range st.data {
			total += len(k) + len(v)
		}
		if total != st.bytes || len(st.data) > kvMaxKeys || st.bytes > kvMaxBytes {
			return fmt.Errorf("store %q: %d keys, %d bytes counted, %d held", name, len(st.data), st.bytes, total)
		}
		all += total
	}
	if all != kv.bytes || len(kv.stores) > max(1, kvMaxCallers) {
		return fmt.Errorf("%d stores, %d bytes counted, %d held", len(kv.stores), kv.bytes, all)
	}
	return nil
}

func TestKVCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewKV().Execute(ctx, json.RawMessage(`{"op":"list"}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("Execute with a canceled context = %v, want context.Canceled", err)
	}
}

// Execute called directly never panics, and a call it accepts left the
// store's byte count true.
func FuzzKVExecute(f *testing.F) {
	for _, s := range []string{
		`{"op":"set","key":"k","value":"v"}`, `{"op":"get","key":"k"}`, `{"op":"list","prefix":""}`,
		`{"op":"delete","key":"k"}`, `{"op":"set","key":"k"}`, `{"op":null}`, `{"op":"set","key":"k","value":"v","op":"get"}`,
		`[`, ``, "{\"op\":\"set\",\"key\":\"\xff\",\"value\":\"\"}", `{"op":"list"} x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		kv := NewKV()
		_, _ = kv.Execute(context.Background(), json.RawMessage(`{"op":"set","key":"k","value":"v"}`))
		_, _ = kv.Execute(context.Background(), json.RawMessage(args))
		if err := kv.counted(); err != nil {
			t.Errorf("after Execute(%q): %v", args, err)
		}
	})
}

// callerKey carries the caller's name for NewKVPerCaller in tests.
type callerKey struct{}

func asCaller(name string) context.Context {
	return context.WithValue(context.Background(), callerKey{}, name)
}

func callerOf(ctx context.Context) string { s, _ := ctx.Value(callerKey{}).(string); return s }

// TestKVPerCaller: each caller has a store of its own (Bob neither lists
// nor reads nor deletes Ann's key); a store goes when its last key does;
// past 256 callers a new one is refused, and so is a set past 64 MiB of
// all stores. Control: NewKV's one store is every caller's.
func TestKVPerCaller(t *testing.T) {
	do := func(kv *KV, who, args string) (string, error) {
		r, err := kv.Execute(asCaller(who), json.RawMessage(args))
		if err == nil && r.IsError {
			err = errors.New(r.Error)
		}
		return r.Output, err
	}
	kv := NewKVPerCaller(callerOf)
	if _, err := do(kv, "ann", `{"op":"set","key":"secret","value":"hunter2"}`); err != nil {
		t.Fatal(err)
	}
	if out, _ := do(kv, "bob", `{"op":"list"}`); out != "the store is empty" {
		t.Errorf("Bob's list = %q", out)
	}
	if out, err := do(kv, "bob", `{"op":"get","key":"secret"}`); err == nil || strings.Contains(out, "hunter2") {
		t.Errorf("Bob's get = %q, %v", out, err)
	}
	if out, _ := do(kv, "bob", `{"op":"delete","key":"secret"}`); !strings.Contains(out, "nothing to delete") {
		t.Errorf("Bob's delete = %q", out)
	}
	if out, err := do(kv, "ann", `{"op":"get","key":"secret"}`); err != nil || out != "hunter2" {
		t.Errorf("Ann's get = %q, %v", out, err)
	}
	do(kv, "ann", `{"op":"delete","key":"secret"}`)
	if n := len(kv.stores); n != 0 {
		t.Errorf("%d stores after the last key went, want 0", n)
	}

	for i := range kvMaxCallers {
		if _, err := do(kv, fmt.Sprint("u", i), `{"op":"set","key":"k","value":"v"}`); err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	if _, err := do(kv, "one-more", `{"op":"set","key":"k","value":"v"}`); err == nil || !strings.Contains(err.Error(), "no room") {
		t.Errorf("caller %d: %v, want no room", kvMaxCallers+1, err)
	}
	if err := kv.counted(); err != nil {
		t.Error(err)
	}

	big := NewKVPerCaller(callerOf)
	value := `"` + strings.Repeat("v", kvMaxValueChars) + `"`
	var refused error
	for i := 0; refused == nil && i < kvMaxAllBytes/kvMaxValueChars+kvMaxCallers; i++ {
		who := fmt.Sprint("u", i/(kvMaxBytes/(kvMaxValueChars+8)))
		_, refused = do(big, who, fmt.Sprintf(`{"op":"set","key":"k%d","value":%s}`, i, value))
	}
	if refused == nil || !strings.Contains(refused.Error(), "all callers") {
		t.Errorf("filling the stores: %v, want a refusal past 64 MiB of all stores", refused)
	}
	if err := big.counted(); err != nil || big.bytes > kvMaxAllBytes {
		t.Errorf("%v; %d bytes held", err, big.bytes)
	}

	shared := NewKV()
	do(shared, "ann", `{"op":"set","key":"secret","value":"hunter2"}`)
	if out, _ := do(shared, "bob", `{"op":"get","key":"secret"}`); out != "hunter2" {
		t.Errorf("control: NewKV's store is not shared: Bob got %q", out)
	}
}

// TestRegisterPerCaller: the kv RegisterPerCaller registers keeps a store
// for each caller; Register's is shared (the control).
func TestRegisterPerCaller(t *testing.T) {
	for _, tc := range []struct {
		name     string
		register func(*tool.Registry) error
		shared   bool
	}{
		{"per caller", func(r *tool.Registry) error { return RegisterPerCaller(r, callerOf) }, false},
		{"control: shared", Register, true},
	} {
		r := tool.NewRegistry()
		if err := tc.register(r); err != nil {
			t.Fatal(err)
		}
		r.Execute(asCaller("ann"), "kv", json.RawMessage(`{"op":"set","key":"secret","value":"hunter2"}`))
		got := r.Execute(asCaller("bob"), "kv", json.RawMessage(`{"op":"get","key":"secret"}`))
		if shared := got.Output == "hunter2"; shared != tc.shared {
			t.Errorf("%s: Bob's get = %+v", tc.name, got)
		}
		if r.Len() != len(Tools()) {
			t.Errorf("%s: %d tools registered, want %d", tc.name, r.Len(), len(Tools()))
		}
	}
}
