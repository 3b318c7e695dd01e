package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"unicode/utf8"
)

// plainCall returns the call of a typed tool on v, as a registry would
// hand it to an Authorizer.
func plainCall(t testing.TB, v plainArgs) AccessRequest {
	t.Helper()
	ft, ok := Must(New("plain", "p", func(ctx context.Context, a plainArgs) (string, error) { return "", nil })).(*funcTool[plainArgs, string])
	if !ok || ft.encoder() == nil {
		t.Fatal("no typed tool with an encoder for plainArgs")
	}
	return AccessRequest{Name: "plain", call: &funcCall[plainArgs, string]{t: ft, in: &v}}
}

// argumentNames are the names asked of every plainArgs call: every
// member its encoding may have, and names it never has (a case variant,
// a field tagged "-", an unexported field, a Go name renamed by its tag).
var argumentNames = []string{"q", "limit", "flag", "N8", "u", "u8", "-", "i64", "Q", "n8", "Skip", "private", "Limit", "", "nope"}

// checkArgument compares AccessRequest.Argument with the decoding of
// Arguments for every name, and checks that it declines exactly the
// values its contract names (a string that is not valid UTF-8, an
// unsigned integer beyond int64). It returns how many names it answered.
func checkArgument(t testing.TB, v plainArgs) int {
	t.Helper()
	req := plainCall(t, v)
	raw, err := req.Arguments()
	if err != nil {
		t.Fatalf("%+v: Arguments: %v", v, err)
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		t.Fatalf("%+v: decoding %s: %v", v, raw, err)
	}
	declines := map[string]bool{
		"q": !utf8.ValidString(v.Q),
		"-": !utf8.ValidString(v.Dash),
		"u": v.U > math.MaxInt64,
	}
	answered := 0
	for _, name := range argumentNames {
		got, ok := req.Argument(name)
		if ok == declines[name] {
			t.Errorf("%+v: Argument(%q) ok = %v, want %v", v, name, ok, !declines[name])
		}
		if !ok {
			if got != (ArgumentValue{}) {
				t.Errorf("%+v: Argument(%q) declined with %+v, want the zero value", v, name, got)
			}
			continue
		}
		answered++
		var want ArgumentValue
		switch m := obj[name].(type) {
		case nil:
			if _, present := obj[name]; present {
				t.Fatalf("%+v: %s has null for %q", v, raw, name)
			}
		case string:
			want = ArgumentValue{Kind: ArgumentString, String: m}
		case bool:
			want = ArgumentValue{Kind: ArgumentBool, Bool: m}
		case json.Number:
			n, err := m.Int64()
			if err != nil {
				t.Fatalf("%+v: Argument(%q) = %+v, but %q in %s is no int64", v, name, got, m, raw)
			}
			want = ArgumentValue{Kind: ArgumentInt64, Int64: n}
		default:
			t.Fatalf("%+v: %q is %T in %s", v, name, m, raw)
		}
		if got != want {
			t.Errorf("%+v: Argument(%q) = %+v, decoding %s gives %+v", v, name, got, raw, want)
		}
	}
	return answered
}

// TestArgumentMatchesArguments is the differential test of
// AccessRequest.Argument: over random values of a plain struct, every
// answer equals what decoding Arguments gives.
func TestArgumentMatchesArguments(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	strs := []string{"", "golang", "a b", "docs/../a", `q"uote`, `back\slash`, "<b>", "a&b", "tab\t", "nul\x00", "é", "\u2028", "\xff", "a\xc3", "\x7f", "~", "\U0001F600"}
	ints := []int64{0, 1, -1, 127, -128, 255, math.MaxInt64, math.MinInt64}
	answered := 0
	for range 5000 {
		v := plainArgs{
			Q: strs[rng.IntN(len(strs))], Limit: int(ints[rng.IntN(len(ints))]), Flag: rng.IntN(2) == 0,
			N8: int8(ints[rng.IntN(len(ints))]), U: rng.Uint64() >> rng.IntN(65), U8: uint8(rng.IntN(256)),
			Skip: "s", Dash: strs[rng.IntN(len(strs))], private: "p", I64: ints[rng.IntN(len(ints))],
		}
		answered += checkArgument(t, v)
	}
	if answered < 5000*len(argumentNames)*3/4 {
		t.Errorf("Argument answered only %d of %d questions", answered, 5000*len(argumentNames))
	}
}

// FuzzArgument checks AccessRequest.Argument against the decoding of
// Arguments for values the fuzzer chooses; its seeds run with the tests.
func FuzzArgument(f *testing.F) {
	f.Add("golang", int64(5), true, uint64(0), "")
	f.Add("", int64(0), false, uint64(math.MaxUint64), "\xff")
	f.Add("a\"b\\<>&\u2028\x00", int64(math.MinInt64), false, uint64(math.MaxInt64), "é")
	f.Add("\xed\xa0\x80", int64(-1), true, uint64(math.MaxInt64)+1, "-")
	f.Fuzz(func(t *testing.T, q string, n int64, flag bool, u uint64, dash string) {
		checkArgument(t, plainArgs{Q: q, Limit: int(n), Flag: flag, N8: int8(n), U: u, U8: uint8(u), Dash: dash, I64: n})
	})
}

// TestArgumentDoesNotAllocate bounds the accessor's work on the values it
// exists for: strings, booleans and integers.
func TestArgumentDoesNotAllocate(t *testing.T) {
	req := plainCall(t, plainArgs{Q: "golang", Limit: 5, Flag: true, U: 7})
	for _, name := range []string{"q", "limit", "flag", "u", "nope"} {
		if n := testing.AllocsPerRun(100, func() { req.Argument(name) }); n != 0 {
			t.Errorf("Argument(%q): %v allocations", name, n)
		}
	}
}

// TestArgumentFieldTable checks that the accessor reads through the same
// field table as the encoder: one entry per member, by name.
func TestArgumentFieldTable(t *testing.T) {
	e := newArgsEncoder(reflect.TypeFor[plainArgs]())
	var names []string
	for _, f := range e.fields {
		names = append(names, f.name)
	}
	want := []string{"q", "limit", "flag", "N8", "u", "u8", "-", "i64"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("fields %q, want %q", names, want)
	}
}

// TestEncoderOnFirstUse: New leaves the arguments' encoder to the first
// call an Authorizer looks into, and calls that look at once, on one tool
// that has not built it, all get the same answer (run under -race, it
// also checks that they share the encoder safely).
func TestEncoderOnFirstUse(t *testing.T) {
	ft := Must(New("plain", "p", func(ctx context.Context, a plainArgs) (string, error) { return "", nil })).(*funcTool[plainArgs, string])
	if ft.enc != nil {
		t.Fatal("New built the encoder")
	}
	v := plainArgs{Q: "x", Limit: 3}
	const n = 8
	got := make([]string, n)
	done := make(chan struct{})
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			req := AccessRequest{Name: "plain", call: &funcCall[plainArgs, string]{t: ft, in: &v}}
			raw, err := req.Arguments()
			if err != nil {
				t.Error(err)
				return
			}
			a, ok := req.Argument("limit")
			if !ok {
				t.Error("limit: not answered")
				return
			}
			got[i] = fmt.Sprintf("%s %d", raw, a.Int64)
		}()
	}
	for range n {
		<-done
	}
	for i := range n {
		if want := `{"q":"x","limit":3,"N8":0,"u8":0,"-":"","i64":0} 3`; got[i] != want {
			t.Errorf("call %d: %s, want %s", i, got[i], want)
		}
	}
	if ft.enc == nil {
		t.Error("no encoder after the calls")
	}
}
