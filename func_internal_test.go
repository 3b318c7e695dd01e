package tool

import (
	"context"
	"encoding/json"
	"math"
	"testing"
)

// TestScalarJSON holds scalarJSON to encoding/json, which the results of
// tools returning these types used to go through, at the edges of each
// type; and to refusing what it does not write.
func TestScalarJSON(t *testing.T) {
	type named int // has no methods, but is not predeclared: not scalarJSON's
	for _, v := range []any{
		true, false,
		int(0), int(-1), int(math.MaxInt), int(math.MinInt),
		int8(math.MinInt8), int8(math.MaxInt8), int16(math.MinInt16), int16(math.MaxInt16),
		int32(math.MinInt32), int32(math.MaxInt32), int64(math.MinInt64), int64(math.MaxInt64),
		uint(0), uint(math.MaxUint), uint8(math.MaxUint8), uint16(math.MaxUint16),
		uint32(math.MaxUint32), uint64(math.MaxUint64), uintptr(math.MaxUint64),
	} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := scalarJSON(v); !ok || got != string(want) {
			t.Errorf("scalarJSON(%T %v) = %q, %v; encoding/json writes %s", v, v, got, ok, want)
		}
	}
	for _, v := range []any{named(1), 1.5, "x", nil, []int{1}} {
		if got, ok := scalarJSON(v); ok {
			t.Errorf("scalarJSON(%T %v) = %q, want it refused", v, v, got)
		}
	}
}

// level has a MarshalJSON of its own: New must leave its results to
// encoding/json.
type level int

func (l level) MarshalJSON() ([]byte, error) {
	return []byte(`"level-` + string(rune('0'+l)) + `"`), nil
}

// TestScalarResults checks which result types New writes with strconv
// and that their Output is encoding/json's.
func TestScalarResults(t *testing.T) {
	check := func(name string, tl Tool, scalar bool, want string) {
		t.Helper()
		if got := tl.(interface{ isScalar() bool }).isScalar(); got != scalar {
			t.Errorf("%s: written with strconv: %v, want %v", name, got, scalar)
		}
		res, err := tl.Execute(context.Background(), nil)
		if err != nil || res.Output != want {
			t.Errorf("%s: %+v, %v; want output %s", name, res, err, want)
		}
	}
	check("int64", Must(New("a", "A.", func(context.Context, struct{}) (int64, error) { return math.MinInt64, nil })), true, "-9223372036854775808")
	check("bool", Must(New("b", "B.", func(context.Context, struct{}) (bool, error) { return true, nil })), true, "true")
	check("named with MarshalJSON", Must(New("c", "C.", func(context.Context, struct{}) (level, error) { return 3, nil })), false, `"level-3"`)
	check("float", Must(New("d", "D.", func(context.Context, struct{}) (float64, error) { return 1e21, nil })), false, "1e+21")
}

func (t *funcTool[In, Out]) isScalar() bool { return t.outScalar }
