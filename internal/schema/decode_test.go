package schema

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type flight struct {
	From       string   `json:"from" pattern:"^[A-Z]{3}$"`
	To         string   `json:"to" pattern:"^[A-Z]{3}$"`
	Date       string   `json:"date"`
	Passengers int      `json:"passengers" default:"1" minimum:"1" maximum:"9"`
	Cabin      string   `json:"cabin,omitempty" enum:"economy,business,first"`
	Flexible   bool     `json:"flexible,omitempty"`
	MaxPrice   float64  `json:"max_price,omitempty"`
	Airlines   []string `json:"airlines,omitempty"`
}

func decodeInto[T any](t *testing.T, data string) (T, []Violation, error) {
	t.Helper()
	c, err := For(reflect.TypeFor[T](), false)
	if err != nil {
		t.Fatalf("For(%s): %v", reflect.TypeFor[T](), err)
	}
	var v T
	vs, err := c.Decode([]byte(data), reflect.ValueOf(&v).Elem(), 64)
	return v, vs, err
}

func TestDecodeBinds(t *testing.T) {
	got, vs, err := decodeInto[flight](t, `{"from":"SFO","to":"JFK","date":"2026-12-24","passengers":2,"cabin":"business","airlines":["UA","DL"]}`)
	if err != nil || len(vs) > 0 {
		t.Fatalf("Decode: %v %v", vs, err)
	}
	want := flight{From: "SFO", To: "JFK", Date: "2026-12-24", Passengers: 2, Cabin: "business", Airlines: []string{"UA", "DL"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Decode mismatch (-want +got):\n%s", diff)
	}
}

func TestDecodeDefaults(t *testing.T) {
	type inner struct {
		Mode  string   `json:"mode" default:"fast"`
		Tags  []string `json:"tags" default:"[\"x\"]"`
		Limit *int     `json:"limit" default:"5"`
	}
	type outer struct {
		Items []inner `json:"items"`
	}
	got, vs, err := decodeInto[outer](t, `{"items":[{},{"mode":"slow","tags":[],"limit":null}]}`)
	if err != nil || len(vs) > 0 {
		t.Fatalf("Decode: %v %v", vs, err)
	}
	five := 5
	want := outer{Items: []inner{{Mode: "fast", Tags: []string{"x"}, Limit: &five}, {Mode: "slow", Tags: []string{}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults inside arrays (-want +got):\n%s", diff)
	}
	// Defaults of reference types must not be shared between calls.
	again, _, _ := decodeInto[outer](t, `{"items":[{}]}`)
	again.Items[0].Tags[0] = "changed"
	third, _, _ := decodeInto[outer](t, `{"items":[{}]}`)
	if third.Items[0].Tags[0] != "x" {
		t.Errorf("a default slice is shared between calls: got %q", third.Items[0].Tags[0])
	}
}

func TestDecodeKinds(t *testing.T) {
	got, vs, err := decodeInto[Kinds](t, `{"s":"a\u00e9\ud83d\ude00","i":-3,"i8":1e2,"u16":65535,"u":3.0,"f32":1.5,"f":-2.5e-3,"b":true,
		"any":{"x":[1,"y",null,true]},"raw":{"keep": [1, 2]},"num":12.50,"data":"aGk=","when":"2026-12-24T10:00:00Z","wait":1000,
		"tags":[],"pair":[1,2],"map":{"a":1},"ptr":null,"addr":"127.0.0.1","ver":"1.2","unit":"celsius","nest":{"k":[true]}}`)
	if err != nil || len(vs) > 0 {
		t.Fatalf("Decode: %v %v", vs, err)
	}
	want := Kinds{S: "aé😀", I: -3, I8: 100, U16: 65535, U: 3, F32: 1.5, F: -2.5e-3, B: true,
		Any: map[string]any{"x": []any{1.0, "y", nil, true}}, Raw: json.RawMessage(`{"keep": [1, 2]}`), Num: "12.50",
		Data: []byte("hi"), When: time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC), Wait: 1000, Tags: []string{},
		Pair: [2]float64{1, 2}, Map: map[string]int{"a": 1}, Unit: "celsius", Nest: map[string][]bool{"k": {true}}}
	want.Addr = netip.MustParseAddr("127.0.0.1")
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("Decode mismatch (-want +got):\n%s", diff)
	}
}

// TestDecodeViolations lists what each bad input reports: pointer,
// expected, got. Every violation is reported, not only the first.
func TestDecodeViolations(t *testing.T) {
	for _, tt := range []struct {
		name string
		data string
		want []Violation
	}{
		{"catalog B3 wrong type", `{"from":5,"to":"JFK","date":"d"}`, []Violation{
			{Pointer: "/from", Expected: "a string matching ^[A-Z]{3}$", Got: "number 5"}}},
		{"catalog B4 missing required", `{}`, []Violation{
			{Pointer: "/from", Expected: `required property "from" (a string matching ^[A-Z]{3}$)`, Got: "nothing"},
			{Pointer: "/to", Expected: `required property "to" (a string matching ^[A-Z]{3}$)`, Got: "nothing"},
			{Pointer: "/date", Expected: `required property "date" (a string)`, Got: "nothing"}}},
		{"catalog B5 unknown field", `{"from":"SFO","to":"JFK","date":"d","rm":true}`, []Violation{
			{Pointer: "/rm", Expected: `no property "rm" (allowed: from, to, date, passengers, cabin, flexible, max_price, airlines)`, Got: "true"}}},
		{"catalog B6 null", `{"from":null,"to":"JFK","date":"d"}`, []Violation{
			{Pointer: "/from", Expected: "a string matching ^[A-Z]{3}$", Got: "null"}}},
		{"catalog B8 duplicate key", `{"from":"SFO","from":"LAX","to":"JFK","date":"d"}`, []Violation{
			{Pointer: "/from", Expected: "each key once", Got: `a second "from"`}}},
		{"catalog B10 case-variant key", `{"From":"SFO","to":"JFK","date":"d"}`, []Violation{
			{Pointer: "/From", Expected: `no property "From" (allowed: from, to, date, passengers, cabin, flexible, max_price, airlines)`, Got: `"SFO"`, Hint: `did you mean "from"? names are case-sensitive`},
			{Pointer: "/from", Expected: `required property "from" (a string matching ^[A-Z]{3}$)`, Got: "nothing"}}},
		{"catalog B11 overflow", `{"from":"SFO","to":"JFK","date":"d","passengers":9223372036854775808}`, []Violation{
			{Pointer: "/passengers", Expected: "an integer between 1 and 9", Got: "9223372036854775808"}}},
		{"catalog B13 number as string", `{"from":"SFO","to":"JFK","date":"d","passengers":"5"}`, []Violation{
			{Pointer: "/passengers", Expected: "an integer between 1 and 9", Got: `string "5"`}}},
		{"all at once", `{"from":"sfo","to":"JFK","date":"d","passengers":12,"cabin":"Business","airlines":"UA"}`, []Violation{
			{Pointer: "/from", Expected: "a string matching ^[A-Z]{3}$", Got: `"sfo"`},
			{Pointer: "/passengers", Expected: "an integer between 1 and 9", Got: "12"},
			{Pointer: "/cabin", Expected: `one of "economy", "business", "first"`, Got: `"Business"`, Hint: `did you mean "business"?`},
			{Pointer: "/airlines", Expected: "an array", Got: `string "UA"`}}},
		{"fraction for integer", `{"from":"SFO","to":"JFK","date":"d","passengers":2.5}`, []Violation{
			{Pointer: "/passengers", Expected: "an integer between 1 and 9", Got: "2.5"}}},
		{"top level array", `[]`, []Violation{{Expected: "a JSON object", Got: "array []"}}},
		{"top level null", `null`, []Violation{{Expected: "a JSON object", Got: "null"}}},
		{"catalog B18 BOM", "\xef\xbb\xbf{}", []Violation{{Expected: "a JSON object", Got: "a byte order mark (U+FEFF) before the value"}}},
		{"typo hint", `{"from":"SFO","to":"JFK","date":"d","pasengers":2}`, []Violation{
			{Pointer: "/pasengers", Expected: `no property "pasengers" (allowed: from, to, date, passengers, cabin, flexible, max_price, airlines)`, Got: "2", Hint: `did you mean "passengers"?`}}},
		{"nested pointer", `{"from":"SFO","to":"JFK","date":"d","airlines":["UA",7]}`, []Violation{
			{Pointer: "/airlines/1", Expected: "a string", Got: "number 7"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, vs, err := decodeInto[flight](t, tt.data)
			if err != nil {
				t.Fatalf("Decode(%s) error: %v", tt.data, err)
			}
			if diff := cmp.Diff(tt.want, vs); diff != "" {
				t.Errorf("Decode(%s) violations (-want +got):\n%s", tt.data, diff)
			}
		})
	}
}

// TestDecodeSyntax lists inputs that are not strict JSON: Decode stops
// with one syntax error naming the problem and its offset.
func TestDecodeSyntax(t *testing.T) {
	for _, tt := range []struct {
		name, data, want string
	}{
		{"catalog B1 truncated", `{"from": "a.txt",`, "unexpected end of input at offset 17"},
		{"catalog B7 NaN", `{"passengers":NaN}`, `invalid character 'N', expected a value`},
		{"catalog B7 Infinity", `{"max_price":-Infinity}`, `invalid character 'I', expected a digit`},
		{"invalid UTF-8", "{\"from\":\"\xff\"}", "invalid UTF-8 in string at offset 9"},
		{"lone surrogate", `{"from":"\ud800"}`, `lone surrogate \ud800`},
		{"reversed surrogates", `{"from":"\udc00\ud800"}`, `lone surrogate \udc00`},
		{"trailing data", `{"from":"SFO","to":"JFK","date":"d"} {}`, "expected the end of the input"},
		{"catalog B22 deep nesting", `{"airlines":` + strings.Repeat("[", 100000), "nested too deeply"},
		{"leading zero", `{"passengers":01}`, `invalid character '1', expected ',' or '}'`},
		{"single quotes", `{'from':1}`, `invalid character '\'', expected a string key`},
		{"control character", "{\"from\":\"a\nb\"}", "control character 0x0a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, vs, err := decodeInto[flight](t, tt.data)
			if err == nil {
				t.Fatalf("Decode(%q) = %v, nil; want a syntax error", tt.data, vs)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode(%q) error = %q, want it to contain %q", tt.data, err, tt.want)
			}
		})
	}
}

func TestDecodeStringOption(t *testing.T) {
	type args struct {
		N int     `json:"n,string"`
		F float64 `json:"f,string,omitempty"`
		B bool    `json:"b,string,omitempty"`
	}
	got, vs, err := decodeInto[args](t, `{"n":"-42","f":"1.5e3","b":"true"}`)
	if err != nil || len(vs) > 0 {
		t.Fatalf("Decode: %v %v", vs, err)
	}
	if want := (args{N: -42, F: 1500, B: true}); got != want {
		t.Errorf("Decode = %+v, want %+v", got, want)
	}
	for _, bad := range []string{`{"n":42}`, `{"n":"4 2"}`, `{"n":"1e2"}`, `{"n":"01"}`, `{"n":"1","b":"yes"}`} {
		if _, vs, err := decodeInto[args](t, bad); err == nil && len(vs) == 0 {
			t.Errorf("Decode(%s) accepted, want a violation", bad)
		}
	}
}

func TestDecodeUniqueAndCounts(t *testing.T) {
	type args struct {
		IDs   []int            `json:"ids" minItems:"1" maxItems:"3" uniqueItems:"true"`
		Props map[string]int   `json:"props,omitempty" maxProperties:"1"`
		Pair  [2]string        `json:"pair,omitempty"`
		Text  string           `json:"text,omitempty" minLength:"2" maxLength:"3"`
		Rate  float64          `json:"rate,omitempty" multipleOf:"0.1" exclusiveMaximum:"1"`
		Tree  map[string][]int `json:"tree,omitempty"`
	}
	for _, tt := range []struct {
		data string
		ok   bool
	}{
		{`{"ids":[1,2,3]}`, true},
		{`{"ids":[]}`, false},
		{`{"ids":[1,2,3,4]}`, false},
		{`{"ids":[1,2,1]}`, false},
		{`{"ids":[1],"props":{"a":1,"b":2}}`, false},
		{`{"ids":[1],"props":{"a":1,"a":2}}`, false},
		{`{"ids":[1],"pair":["a"]}`, false},
		{`{"ids":[1],"pair":["a","b","c"]}`, false},
		{`{"ids":[1],"pair":["a","b"]}`, true},
		{`{"ids":[1],"text":"é😀"}`, true},
		{`{"ids":[1],"text":"a"}`, false},
		{`{"ids":[1],"text":"abcd"}`, false},
		{`{"ids":[1],"rate":0.3}`, true},
		{`{"ids":[1],"rate":0.35}`, false},
		{`{"ids":[1],"rate":1}`, false},
	} {
		_, vs, err := decodeInto[args](t, tt.data)
		if got := err == nil && len(vs) == 0; got != tt.ok {
			t.Errorf("Decode(%s) accepted = %v, want %v (violations %v, error %v)", tt.data, got, tt.ok, vs, err)
		}
	}
}

func TestDecodeExactIntegers(t *testing.T) {
	for _, tt := range []struct {
		data string
		ok   bool
	}{
		{`{"from":"SFO","to":"JFK","date":"d","passengers":2.0}`, true},
		{`{"from":"SFO","to":"JFK","date":"d","passengers":2e0}`, true},
		{`{"from":"SFO","to":"JFK","date":"d","passengers":0.99999999999999999999}`, false}, // rounds to 1 as a float64
		{`{"from":"SFO","to":"JFK","date":"d","passengers":1.00000000000000000001}`, false},
	} {
		_, vs, err := decodeInto[flight](t, tt.data)
		if got := err == nil && len(vs) == 0; got != tt.ok {
			t.Errorf("Decode(%s) accepted = %v, want %v (%v)", tt.data, got, tt.ok, vs)
		}
	}
}

// TestDecodeMultipleOfLongLiteral checks that multipleOf stays exact for
// literals of any length, and that the work is linear in the literal's
// length: a 1 MB literal used to take gigabytes of big.Rat arithmetic (and
// one over 400 bytes was refused outright).
func TestDecodeMultipleOfLongLiteral(t *testing.T) {
	type amount struct {
		N json.Number `json:"n" multipleOf:"0.7"`
	}
	digits := strings.Repeat("1234567", 1<<20/7)
	for _, tt := range []struct {
		lit string
		ok  bool
	}{
		{"7" + digits + ".7", true}, // 10 times it is divisible by 7
		{"7" + digits + ".5", false},
		{"1" + digits + "e-1", false},
		{"0.7e1000000000", true},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, vs, err := decodeInto[amount](t, `{"n":`+tt.lit+`}`)
		runtime.ReadMemStats(&after)
		if got := err == nil && len(vs) == 0; got != tt.ok {
			t.Errorf("Decode(%.20s…) accepted = %v, want %v (%v %v)", tt.lit, got, tt.ok, vs, err)
		}
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(16*len(tt.lit)+1<<20); got > limit {
			t.Errorf("Decode(%.20s…) allocated %d bytes, more than %d", tt.lit, got, limit)
		}
	}
}

// TestDecodeMessageGrammar checks counts in messages agree with their
// nouns, and that a number a Go type cannot hold is called out of range
// rather than not a number.
func TestDecodeMessageGrammar(t *testing.T) {
	type args struct {
		One    string            `json:"one,omitempty" minLength:"1" maxLength:"1"`
		Least  string            `json:"least,omitempty" minLength:"1"`
		Most   string            `json:"most,omitempty" maxLength:"1"`
		Items  []int             `json:"items,omitempty" minItems:"1"`
		Pair   [1]int            `json:"pair,omitempty"`
		Props  map[string]int    `json:"props,omitempty" minProperties:"1"`
		F      float64           `json:"f,omitempty"`
		F32    float32           `json:"f32,omitempty"`
		I      int               `json:"i,omitempty"`
		I8     int8              `json:"i8,omitempty"`
		U      uint              `json:"u,omitempty"`
		Frac   int               `json:"frac,omitempty"`
		A      any               `json:"a,omitempty"`
		Nested map[string]string `json:"nested,omitempty"`
	}
	for _, tt := range []struct {
		data string
		want Violation
	}{
		{`{"one":""}`, Violation{"/one", "a string of exactly 1 character", `""`, "it has 0 characters"}},
		{`{"one":"ab"}`, Violation{"/one", "a string of exactly 1 character", `"ab"`, "it has 2 characters"}},
		{`{"least":""}`, Violation{"/least", "a string of at least 1 character", `""`, "it has 0 characters"}},
		{`{"most":"ab"}`, Violation{"/most", "a string of at most 1 character", `"ab"`, "it has 2 characters"}},
		{`{"items":[]}`, Violation{"/items", "an array of at least 1 item", "an array of 0 items", ""}},
		{`{"pair":[1,2]}`, Violation{"/pair", "an array of exactly 1 item", "an array of 2 items", ""}},
		{`{"props":{}}`, Violation{"/props", "an object with at least 1 property", "an object with 0 properties", ""}},
		{`{"f":1e400}`, Violation{"/f", "a number", "1e400", "out of range: this parameter holds numbers from -1.7976931348623157e+308 to 1.7976931348623157e+308"}},
		{`{"f32":-1e39}`, Violation{"/f32", "a number between -3.4028235e+38 and 3.4028235e+38", "-1e39", "out of range: this parameter holds numbers from -3.4028235e+38 to 3.4028235e+38"}},
		{`{"i":1e400}`, Violation{"/i", "an integer", "1e400", "out of range: this parameter holds integers from -9223372036854775808 to 9223372036854775807"}},
		{`{"i":9223372036854775808}`, Violation{"/i", "an integer", "9223372036854775808", "out of range: this parameter holds integers from -9223372036854775808 to 9223372036854775807"}},
		{`{"i8":128}`, Violation{"/i8", "an integer between -128 and 127", "128", "out of range: this parameter holds integers from -128 to 127"}},
		{`{"u":-1}`, Violation{"/u", "an integer ≥ 0", "-1", "out of range: this parameter holds integers from 0 to 18446744073709551615"}},
		{`{"frac":1.5}`, Violation{"/frac", "an integer", "1.5", ""}},
		{`{"a":1e400}`, Violation{"/a", "a number", "1e400", "out of range: this parameter holds numbers from -1.7976931348623157e+308 to 1.7976931348623157e+308"}},
		{"{\"nested\":{\"\\u001b\":1}}", Violation{"/nested/\\u001B", "a string", "number 1", ""}},
	} {
		_, vs, err := decodeInto[args](t, tt.data)
		if err != nil || len(vs) != 1 || vs[0] != tt.want {
			t.Errorf("Decode(%s) = %q, %v; want %q", tt.data, vs, err, tt.want)
		}
	}
}

// TestDecodeUniqueItemsHugeExponents: uniqueItems compares numbers by
// value without expanding their exponents (big.Rat turned each 1e1000000
// into a million digits), and still finds equal ones written apart.
func TestDecodeUniqueItemsHugeExponents(t *testing.T) {
	type args struct {
		Ns []json.Number `json:"ns" uniqueItems:"true"`
	}
	var b strings.Builder
	b.WriteString(`{"ns":[`)
	for i := range 200 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%de1000000", i+1)
	}
	b.WriteString(`]}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, vs, err := decodeInto[args](t, b.String())
	runtime.ReadMemStats(&after)
	if err != nil || len(vs) != 0 {
		t.Errorf("distinct huge numbers: %v %v", vs, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Errorf("allocated %d bytes for %d bytes of input", got, b.Len())
	}
	_, vs, err = decodeInto[args](t, `{"ns":[1e1000000,10.0e999999,2]}`)
	if err != nil || len(vs) != 1 || vs[0].Hint != "items 0 and 1 are equal" {
		t.Errorf("equal huge numbers: %v %v", vs, err)
	}
}

// endpoint decodes itself with encoding/json, which matches keys to field
// names ignoring case, and states its schema through JSONSchema.
type endpoint struct {
	Host string `json:"host"`
}

func (endpoint) JSONSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"host":{"enum":["localhost"]}}}`)
}

func (e *endpoint) UnmarshalJSON(b []byte) error {
	type plain endpoint
	return json.Unmarshal(b, (*plain)(e))
}

// TestDecodeCustomSchemaCaseSensitive: the schema a type states for
// itself refuses keys that its (encoding/json) decoder would bind to a
// declared property though they are spelled otherwise.
func TestDecodeCustomSchemaCaseSensitive(t *testing.T) {
	type args struct {
		To endpoint `json:"to"`
	}
	for _, data := range []string{
		`{"to":{"host":"localhost","HOST":"evil.example"}}`,
		"{\"to\":{\"host\":\"localhost\",\"ho\u017ft\":\"evil.example\"}}",
	} {
		got, vs, err := decodeInto[args](t, data)
		if err != nil || len(vs) != 1 || !strings.Contains(vs[0].Expected, "case-sensitive") {
			t.Errorf("Decode(%s) = %+v, %v, %v; want one violation about the case-variant key", data, got, vs, err)
		}
	}
	if got, vs, err := decodeInto[args](t, `{"to":{"host":"localhost"}}`); err != nil || len(vs) != 0 || got.To.Host != "localhost" {
		t.Errorf("valid endpoint: %+v %v %v", got, vs, err)
	}
}
