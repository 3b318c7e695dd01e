package jsonschema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// fuzzSchemas are the schemas FuzzValidate checks instances against.
func fuzzSchemas() []string {
	out := []string{flightsSchema, fileSchema, shapeSchema}
	for _, tc := range keywordCases {
		out = append(out, tc.schema)
	}
	return out
}

// FuzzCompile feeds arbitrary bytes to Compile: it must return, without
// panicking, and a schema it accepts must validate a few instances.
func FuzzCompile(f *testing.F) {
	for _, s := range fuzzSchemas() {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"$ref":"#"}`, `{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
		`{"pattern":"(?=a)"}`, `{"type":["string",{}]}`, `{"minimum":1e999999999}`,
		`{"multipleOf":1e-400}`, `{"$ref":"#/$defs/%ZZ"}`, `{"enum":[]}`, `{"items":[true,false]}`,
		`{"$anchor":"a","$ref":"#a"}`, `{"not":{"not":{"not":{}}}}`, `{"dependencies":{"a":5}}`,
		`{"$id":"https://a.example/b","$defs":{"x":{"$id":"c","$anchor":"q"}},"$ref":"c#q"}`,
		`{"unevaluatedProperties":false,"properties":{"a":true},"anyOf":[{"properties":{"d":{}}}]}`,
		`{"$dynamicAnchor":"m","items":{"$dynamicRef":"#m"}}`, `{"$ref":"https://json-schema.org/draft/2020-12/schema"}`,
		`{"unevaluatedItems":{"pattern":"\u0041\s"},"prefixItems":[true]}`,
		// patterns whose programs are large (TestHostilePatternPrograms)
		`{"pattern":"[a-z]{1000}!"}`, `{"patternProperties":{"(?:abcdefghijklmnop){1000}":true}}`,
		`{"pattern":"^(?=[a-z]{1000})(?:x{1000}){16}"}`, `{"pattern":"^[a-z0-9_-]{3,64}$"}`,
		`{"properties":{"a":{"pattern":"[a-z]{1000}!"}},"patternProperties":{"(?<=x)$":true},"unevaluatedProperties":false}`,
	} {
		f.Add([]byte(s))
	}
	instances := [][]byte{
		[]byte(`{}`), []byte(`{"a":[1,"b",{"c":null}],"d":1.5e3}`), []byte(`[[[[]]]]`),
		[]byte(`"x"`), []byte(`-0.0`), []byte(`true`), []byte(`null`),
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		s, err := Compile(doc)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		for _, in := range instances {
			out, _, err := s.Validate(in, Limits{MaxDepth: 16})
			if err != nil && err != ErrTooComplex {
				t.Fatalf("%s: %v", in, err)
			}
			if err == nil && !json.Valid(out) {
				t.Fatalf("%s: output %q is not JSON", in, out)
			}
		}
	})
}

// FuzzValidate validates arbitrary instances against the seed schemas. It
// must not panic; anything it accepts is valid JSON; and when an instance
// is valid, the output (defaults applied) is valid JSON that validates
// again unchanged.
func FuzzValidate(f *testing.F) {
	schemas := fuzzSchemas()
	compiled := make([]*Schema, len(schemas))
	for i, doc := range schemas {
		s, err := Compile([]byte(doc))
		if err != nil {
			f.Fatalf("%s: %v", doc, err)
		}
		compiled[i] = s
	}
	index := func(schema string) uint8 {
		for i, s := range schemas {
			if s == schema {
				return uint8(i)
			}
		}
		return 0
	}
	for _, tc := range keywordCases {
		for _, in := range append(append([]string{}, tc.valid...), tc.bad...) {
			f.Add(index(tc.schema), []byte(in))
		}
	}
	for _, tc := range messageCases {
		if len(tc.in) < 1000 {
			f.Add(index(tc.schema), []byte(tc.in))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, in []byte) {
		s := compiled[int(which)%len(compiled)]
		out, vs, err := s.Validate(in, Limits{MaxDepth: 32, MaxBytes: 1 << 16})
		if err != nil {
			if err != ErrTooComplex && !strings.Contains(err.Error(), "offset") {
				t.Fatalf("error without an offset: %v", err)
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("accepted invalid JSON %q", in)
		}
		for _, v := range vs {
			if v.Expected == "" || v.Got == "" {
				t.Fatalf("incomplete violation %+v", v)
			}
			for _, field := range []string{v.Pointer, v.Expected, v.Got, v.Hint} {
				if len(field) > MaxViolationText || strings.ContainsFunc(field, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
					t.Fatalf("violation field %q is too long or holds control characters", field)
				}
			}
		}
		if len(vs) > 0 {
			if !bytes.Equal(out, in) {
				t.Fatalf("invalid instance changed: %q", out)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("output %q is not JSON", out)
		}
		out2, vs2, err := s.Validate(out, Limits{MaxDepth: 33})
		if err != nil || len(vs2) > 0 {
			t.Fatalf("output %q does not validate: %v %v", out, err, vs2)
		}
		if !bytes.Equal(out2, out) {
			t.Fatalf("defaults not idempotent: %q then %q", out, out2)
		}
	})
}
