package tool

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

type upper string

func (u upper) MarshalText() ([]byte, error) { return []byte(strings.ToUpper(string(u))), nil }

type plainArgs struct {
	Q       string `json:"q"`
	Limit   int    `json:"limit,omitempty" default:"10"`
	Flag    bool   `json:"flag,omitzero"`
	N8      int8
	U       uint64 `json:"u,omitempty"`
	U8      uint8  `json:"u8"`
	Skip    string `json:"-"`
	Dash    string `json:"-,"`
	private string
	I64     int64 `json:"i64"`
}

// TestArgsEncoderMatchesJSON compares the arguments' encoder with
// encoding/json over random values of a plain struct, including strings
// it must leave to encoding/json.
func TestArgsEncoderMatchesJSON(t *testing.T) {
	e := newArgsEncoder(reflect.TypeFor[plainArgs]())
	if e == nil {
		t.Fatal("no encoder for a plain struct")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "golang", "a b", "docs/a", `q"uote`, `back\slash`, "<b>", "a&b", "tab\t", "é", "\u2028", "\xff", "\x7f", "~"}
	ints := []int64{0, 1, -1, 127, -128, math.MaxInt64, math.MinInt64}
	written := 0
	for range 5000 {
		v := plainArgs{
			Q: strs[rng.IntN(len(strs))], Limit: int(ints[rng.IntN(len(ints))]), Flag: rng.IntN(2) == 0,
			N8: int8(ints[rng.IntN(len(ints))]), U: rng.Uint64() >> rng.IntN(64), U8: uint8(rng.IntN(256)),
			Skip: "s", Dash: strs[rng.IntN(len(strs))], private: "p", I64: ints[rng.IntN(len(ints))],
		}
		want, err := json.Marshal(&v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := e.encode(reflect.ValueOf(&v).Elem(), nil)
		if !ok {
			if json.Valid(got) && string(got) == string(want) {
				t.Errorf("%+v: refused, yet wrote what encoding/json writes", v)
			}
			continue
		}
		written++
		if string(got) != string(want) {
			t.Fatalf("%+v:\n got %s\nwant %s", v, got, want)
		}
	}
	if written < 400 {
		t.Errorf("the encoder wrote only %d of 5000 values", written)
	}
}

// TestArgsEncoderDeclines lists types the encoder leaves to
// encoding/json.
func TestArgsEncoderDeclines(t *testing.T) {
	type embedded struct{ A string }
	for _, typ := range []reflect.Type{
		reflect.TypeFor[struct{ embedded }](),
		reflect.TypeFor[struct {
			N int `json:"n,string"`
		}](),
		reflect.TypeFor[struct{ F float64 }](),
		reflect.TypeFor[struct{ S []string }](),
		reflect.TypeFor[struct{ P *string }](),
		reflect.TypeFor[struct{ M map[string]any }](),
		reflect.TypeFor[struct{ U upper }](),
		reflect.TypeFor[struct{ T time.Time }](),
		reflect.TypeFor[struct {
			A string `json:"B"`
			B string
		}](),
		reflect.TypeFor[struct {
			A string `json:"a.b"`
		}](),
		reflect.TypeFor[map[string]any](),
		reflect.TypeFor[*plainArgs](),
		reflect.TypeFor[time.Time](),
	} {
		if newArgsEncoder(typ) != nil {
			t.Errorf("%v: an encoder was made", typ)
		}
	}
}
