package jsonschema

import (
	"errors"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/internal/jsontext"
)

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name, schema string
		pointer      string // want a *SchemaError with this pointer
		msg          string // and this text in its message
	}{
		{"unevaluatedProperties not a schema", `{"properties":{"a":{"unevaluatedProperties":1}}}`, "/properties/a/unevaluatedProperties", `a schema must be an object or a boolean`},
		{"dynamicRef to nothing", `{"$defs":{"a":{"$dynamicRef":"#x"}}}`, "/$defs/a/$dynamicRef", `no $anchor "x" in the document`},
		{"recursiveRef", `{"items":{"$recursiveRef":"#"}}`, "/items/$recursiveRef", "not supported"},
		{"remote ref", `{"properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "/properties/a/$ref", `no schema is registered under "https://example.com/s.json"; schemas are never fetched`},
		{"relative ref", `{"$ref":"other.json#/a"}`, "/$ref", "never fetched"},
		{"ref past an embedded id", `{"$defs":{"a":{"$id":"https://example.com/a","$ref":"#/$defs/b"}},"$ref":"#/$defs/a"}`, "/$defs/a/$ref", `points to nothing in "https://example.com/a"`},
		{"dangling ref", `{"$ref":"#/$defs/nope"}`, "/$ref", "points to nothing"},
		{"dangling anchor", `{"$ref":"#nope"}`, "/$ref", "no $anchor"},
		{"self ref", `{"$ref":"#"}`, "", "refers to itself"},
		{"ref cycle", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, "/$defs/a", "refers to itself"},
		{"not cycle", `{"$defs":{"a":{"not":{"$ref":"#/$defs/a"}}}}`, "/$defs/a", "refers to itself"},
		{"bad pattern", `{"properties":{"a":{"pattern":"(?=x)"}}}`, "/properties/a/pattern", `pattern "(?=x)" is not supported`},
		{"bad patternProperties", `{"patternProperties":{"a(":{}}}`, "/patternProperties/a(", "not supported"},
		{"long pattern", `{"pattern":"` + strings.Repeat("a", 5000) + `"}`, "/pattern", "longer than"},
		{"bad type", `{"type":"str"}`, "/type", "unknown type"},
		{"bad type list", `{"type":["string",1]}`, "/type/1", "unknown type"},
		{"bad minimum", `{"minimum":"1"}`, "/minimum", "must be a number"},
		{"bad minLength", `{"minLength":-1}`, "/minLength", "non-negative integer"},
		{"fractional maxItems", `{"maxItems":1.5}`, "/maxItems", "non-negative integer"},
		{"zero multipleOf", `{"multipleOf":0}`, "/multipleOf", "greater than 0"},
		{"bad required", `{"required":"a"}`, "/required", "array of strings"},
		{"duplicate required", `{"required":["a","a"]}`, "/required/1", "listed twice"},
		{"bad properties", `{"properties":[]}`, "/properties", "must be an object"},
		{"schema not object", `{"items":5}`, "/items", "must be an object or a boolean"},
		{"empty anyOf", `{"anyOf":[]}`, "/anyOf", "non-empty array"},
		{"bad id", `{"$defs":{"a":{"$id":"http://[::1"}}}`, "/$defs/a/$id", "not a URI reference"},
		{"not json", `{"type":}`, "", "not valid JSON"},
		{"duplicate key", `{"type":"string","type":"integer"}`, "", "duplicate key"},
		{"trailing data", `{} {}`, "", "not valid JSON"},
		{"too deep", strings.Repeat(`{"items":`, 200) + `{}` + strings.Repeat(`}`, 200), "", "nested too deeply"},
		{"too large", `{"description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`, "", "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile([]byte(tc.schema))
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("got %v (%T), want a *SchemaError", err, err)
			}
			if se.Pointer != tc.pointer || !strings.Contains(se.Msg, tc.msg) {
				t.Errorf("got pointer %q, message %q; want %q, %q", se.Pointer, se.Msg, tc.pointer, tc.msg)
			}
			if strings.Contains(err.Error(), "/work/") || strings.Contains(err.Error(), "*jsonschema") {
				t.Errorf("message leaks internals: %v", err)
			}
		})
	}
}

func TestCompileAccepts(t *testing.T) {
	for _, schema := range []string{
		`{}`, `true`, `false`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://example.com/root.json","$ref":"https://example.com/root.json#/$defs/a","$defs":{"a":{"type":"string"}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"type":"integer"}},"properties":{"x":{"$ref":"#/definitions/a"}}}`,
		`{"exclusiveMinimum":true,"minimum":0}`,
		`{"dependencies":{"a":["b"],"c":{"required":["d"]}}}`,
		`{"x-vendor":{"$dynamicRef":"#x","unevaluatedProperties":false},"contentEncoding":"base64"}`,
		`{"type":"object","properties":{"next":{"$ref":"#"}}}`,
		`{"$defs":{"tree":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/tree"}}}}},"$ref":"#/$defs/tree"}`,
		`{"$defs":{"a":{"$dynamicAnchor":"meta","type":"object"}},"$ref":"#meta"}`,
	} {
		if _, err := Compile([]byte(schema)); err != nil {
			t.Errorf("%s: %v", schema, err)
		}
	}
}

func TestDraft4ExclusiveBounds(t *testing.T) {
	s, err := Compile([]byte(`{"minimum":0,"exclusiveMinimum":true,"maximum":10,"exclusiveMaximum":false}`))
	if err != nil {
		t.Fatal(err)
	}
	for in, valid := range map[string]bool{`0`: false, `0.1`: true, `10`: true} {
		_, vs, _ := s.Validate([]byte(in), Limits{})
		if (len(vs) == 0) != valid {
			t.Errorf("%s: violations %v, want valid=%v", in, vs, valid)
		}
	}
}

// TestFanOut checks the two defences against schemas that fan out: the
// compile-time bound on subschemas at one location, and the work budget
// of Validate for fan-out that only shows with depth.
func TestFanOut(t *testing.T) {
	// 2^20 subschemas at the root: refused at compile time.
	var b strings.Builder
	b.WriteString(`{"$defs":{`)
	for i := 0; i < 20; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		next := `true`
		if i < 19 {
			next = `{"$ref":"#/$defs/d` + itoa(i+1) + `"}`
		}
		b.WriteString(`"d` + itoa(i) + `":{"anyOf":[` + next + `,` + next + `]}`)
	}
	b.WriteString(`},"$ref":"#/$defs/d` + itoa(0) + `"}`)
	_, err := Compile([]byte(b.String()))
	var se *SchemaError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "more than") {
		t.Fatalf("wide fan-out: got %v", err)
	}
	// Doubling per level of the instance: refused at compile time.
	_, err = Compile([]byte(`{"$defs":{"t":{"allOf":[{"$ref":"#/$defs/u"},{"$ref":"#/$defs/u"}]},"u":{"items":{"$ref":"#/$defs/t"}}},"$ref":"#/$defs/t"}`))
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "exponentially") {
		t.Fatalf("doubling per level: got %v", err)
	}
	// Slower growth (E_k = E_k-1 + E_k-5) passes that check, but validating
	// a deep instance is cut off by the work budget instead of hanging.
	s, err := Compile([]byte(`{"$defs":{"t":{"allOf":[{"items":{"$ref":"#/$defs/t"}},{"items":{"items":{"items":{"items":{"items":{"$ref":"#/$defs/t"}}}}}}]}},"$ref":"#/$defs/t"}`))
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("[", 64) + strings.Repeat("]", 64)
	_, _, err = s.Validate([]byte(deep), Limits{})
	if !errors.Is(err, ErrTooComplex) {
		t.Fatalf("deep slow growth: got %v, want ErrTooComplex", err)
	}
	// Recursive schemas that do not fan out compile and validate.
	for _, schema := range []string{
		`{"$defs":{"v":{"anyOf":[{"type":["string","number","boolean","null"]},{"type":"array","items":{"$ref":"#/$defs/v"}},{"type":"object","additionalProperties":{"$ref":"#/$defs/v"}}]}},"$ref":"#/$defs/v"}`,
		`{"type":"object","properties":{"left":{"$ref":"#"},"right":{"$ref":"#"},"value":{"type":"integer"}}}`,
	} {
		s, err := Compile([]byte(schema))
		if err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		if _, vs, err := s.Validate([]byte(deep), Limits{}); err != nil {
			t.Fatalf("%s: %v %v", schema, vs, err)
		}
	}
}

func itoa(i int) string { return string(rune('a'+i/26)) + string(rune('a'+i%26)) }

func TestValidateSyntaxErrors(t *testing.T) {
	s, err := Compile([]byte(flightsSchema))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, in string
		lim      Limits
		msg      string
		offset   int
	}{
		{"truncated", `{"from": "SFO",`, Limits{}, "unexpected end of input", 15},
		{"trailing", `{} {}`, Limits{}, "expected end of input", 3},
		{"duplicate", `{"from":"SFO","from":"JFK"}`, Limits{}, `duplicate key "from"`, 14},
		{"escaped duplicate", `{"from":"SFO","fro\u006d":"JFK"}`, Limits{}, `duplicate key "from"`, 14},
		{"invalid utf8", "{\"from\":\"\xff\"}", Limits{}, "invalid UTF-8", 9},
		{"lone surrogate", `{"from":"\ud800"}`, Limits{}, "lone surrogate", 9},
		{"NaN", `{"max_price":NaN}`, Limits{}, "invalid character 'N'", 13},
		{"leading zero", `{"passengers":01}`, Limits{}, "expected ',' or '}'", 15},
		{"plus", `{"passengers":+1}`, Limits{}, "invalid character '+'", 14},
		{"bom", "\ufeff{}", Limits{}, "invalid byte 0xef", 0},
		{"empty", ``, Limits{}, "unexpected end of input", 0},
		{"too deep", strings.Repeat(`[`, 10) + strings.Repeat(`]`, 10), Limits{MaxDepth: 5}, "nested too deeply (more than 5 levels)", 5},
		{"default depth", strings.Repeat(`[`, 65) + strings.Repeat(`]`, 65), Limits{}, "more than 64 levels", 64},
		{"too large", `{"from":"SFO"}`, Limits{MaxBytes: 10}, "more than the limit of 10", 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, vs, err := s.Validate([]byte(tc.in), tc.lim)
			var se *jsontext.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, %v, %v; want a *jsontext.SyntaxError", out, vs, err)
			}
			if !strings.Contains(se.Msg, tc.msg) || se.Offset != tc.offset {
				t.Errorf("got %q at %d, want %q at %d", se.Msg, se.Offset, tc.msg, tc.offset)
			}
		})
	}
	// Depth limits count the way jsontext.SkipValue counts them.
	at64 := strings.Repeat(`[`, 64) + strings.Repeat(`]`, 64)
	if _, err := jsontext.SkipValue([]byte(at64), 0, 0, 64); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Validate([]byte(at64), Limits{}); err != nil {
		t.Errorf("64 levels: %v", err)
	}
}
