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
	kv.mu.Lock()
	defer kv.mu.Unlock()
	total := 0
	for k, v := range kv.data {
		total += len(k) + len(v)
	}
	if total != kv.bytes {
		t.Errorf("the store counts %d bytes, holds %d", kv.bytes, total)
	}
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
		total := 0
		for k, v := range kv.data {
			total += len(k) + len(v)
		}
		if total != kv.bytes || len(kv.data) > kvMaxKeys || kv.bytes > kvMaxBytes {
			t.Errorf("after Execute(%q): %d keys, %d bytes counted, %d held", args, len(kv.data), kv.bytes, total)
		}
	})
}
