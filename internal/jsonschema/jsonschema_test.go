package jsonschema

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestKeywords(t *testing.T) {
	for _, tc := range keywordCases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.schema))
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			for _, in := range tc.valid {
				_, vs, err := s.Validate([]byte(in), Limits{})
				if err != nil || len(vs) != 0 {
					t.Errorf("%s: want valid, got err %v, violations %v", in, err, vs)
				}
			}
			for _, in := range tc.bad {
				_, vs, err := s.Validate([]byte(in), Limits{})
				if err != nil || len(vs) == 0 {
					t.Errorf("%s: want violations, got err %v, none", in, err)
				}
				for _, v := range vs {
					if v.Expected == "" || v.Got == "" {
						t.Errorf("%s: incomplete violation %+v", in, v)
					}
				}
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	schema := `{"type":"object","properties":{
		"passengers":{"type":"integer","default":1},
		"cabin":{"$ref":"#/$defs/cabin"},
		"opts":{"type":"object","properties":{"x":{"default":{"deep":[1, 2]}},"y":{"type":"string"}}},
		"list":{"type":"array","items":{"type":"object","properties":{"n":{"default":0}}}},
		"bad":{"type":"integer","minimum":1,"default":0}
	},"$defs":{"cabin":{"type":"string","default":"economy"}}}`
	s, err := Compile([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{`{"passengers":2,"cabin":"first","bad":3}`, `{"passengers":2,"cabin":"first","bad":3}`},
		{`{"cabin":"first","bad":3}`, `{"cabin":"first","bad":3,"passengers":1}`},
		{` { "bad" : 3 , "opts" : { "y" : "a\u0041" } } `, `{"bad":3,"opts":{"y":"a\u0041","x":{"deep":[1,2]}},"passengers":1,"cabin":"economy"}`},
		{`{"bad":3,"list":[{},{"n":5}],"passengers":1,"cabin":"x"}`, `{"bad":3,"list":[{"n":0},{"n":5}],"passengers":1,"cabin":"x"}`},
		// The default of "bad" violates its own schema: it is left out.
		{`{"cabin":"x"}`, `{"cabin":"x","passengers":1}`},
	}
	for _, tc := range tests {
		in := []byte(tc.in)
		out, vs, err := s.Validate(in, Limits{})
		if err != nil || len(vs) > 0 {
			t.Fatalf("%s: %v %v", tc.in, err, vs)
		}
		if string(out) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, out, tc.want)
		}
		if string(out) == tc.in && &out[0] != &in[0] {
			t.Errorf("%s: unchanged output is a copy", tc.in)
		}
		if !json.Valid(out) {
			t.Errorf("%s: output is not valid JSON", tc.in)
		}
	}
	// Nothing added: the very same slice comes back.
	in := []byte(`{"passengers":2,"cabin":"first","bad":3}`)
	out, _, _ := s.Validate(in, Limits{})
	if &out[0] != &in[0] {
		t.Error("unchanged instance was copied")
	}
	// Invalid instances get no defaults.
	in = []byte(`{"passengers":"x"}`)
	out, vs, _ := s.Validate(in, Limits{})
	if len(vs) == 0 || string(out) != string(in) {
		t.Errorf("invalid instance: out %s, violations %v", out, vs)
	}
}

func TestManyViolations(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("{")
	for i := range 1000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	b.WriteString("}")
	_, vs, err := s.Validate([]byte(b.String()), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != MaxViolations+1 {
		t.Fatalf("got %d violations, want %d", len(vs), MaxViolations+1)
	}
	if vs[0].Pointer != "/k0" || vs[MaxViolations-1].Pointer != fmt.Sprintf("/k%d", MaxViolations-1) {
		t.Errorf("not in document order: %v ... %v", vs[0], vs[MaxViolations-1])
	}
	if last := vs[MaxViolations]; last.Got != fmt.Sprintf("%d more problems", 1000-MaxViolations) {
		t.Errorf("last violation %+v", last)
	}
}

// TestConcurrent validates from many goroutines at once (run with -race).
func TestConcurrent(t *testing.T) {
	s, err := Compile([]byte(flightsSchema))
	if err != nil {
		t.Fatal(err)
	}
	inputs := []string{flightsInput, `{"from":"SFO","to":"JFK","date":"2026-12-24"}`, `{"from":"sfo"}`, `{`}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				in := inputs[(g+i)%len(inputs)]
				out, vs, err := s.Validate([]byte(in), Limits{})
				switch in {
				case flightsInput:
					if err != nil || len(vs) != 0 || string(out) != in {
						t.Errorf("valid input: %s %v %v", out, vs, err)
					}
				case `{`:
					if err == nil {
						t.Error("no syntax error")
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestDefaultsThroughApplicators(t *testing.T) {
	tests := []struct{ name, schema, in, want string }{
		{"oneOf variant",
			`{"properties":{"s":{"oneOf":[{"properties":{"k":{"const":"a"},"x":{"default":1}},"required":["k"]},{"properties":{"k":{"const":"b"},"y":{"default":2}},"required":["k"]}]}}}`,
			`{"s":{"k":"b"}}`, `{"s":{"k":"b","y":2}}`},
		{"anyOf first match",
			`{"anyOf":[{"required":["a"],"properties":{"b":{"default":"from-a"}}},{"properties":{"c":{"default":"from-any"}}}]}`,
			`{"z":0}`, `{"z":0,"c":"from-any"}`},
		{"if then",
			`{"if":{"properties":{"k":{"const":"x"}},"required":["k"]},"then":{"properties":{"n":{"default":5}}},"else":{"properties":{"m":{"default":6}}}}`,
			`{"k":"x"}`, `{"k":"x","n":5}`},
		{"if else",
			`{"if":{"properties":{"k":{"const":"x"}},"required":["k"]},"then":{"properties":{"n":{"default":5}}},"else":{"properties":{"m":{"default":6}}}}`,
			`{}`, `{"m":6}`},
		{"recursive tree",
			`{"$defs":{"t":{"type":"object","properties":{"color":{"default":"red"},"kids":{"type":"array","items":{"$ref":"#/$defs/t"}}}}},"$ref":"#/$defs/t"}`,
			`{"kids":[{"color":"blue","kids":[{}]}]}`, `{"kids":[{"color":"blue","kids":[{"color":"red"}]}],"color":"red"}`},
		{"allOf twice, one default",
			`{"allOf":[{"properties":{"a":{"default":1}}},{"properties":{"a":{"default":1}}}]}`,
			`{}`, `{"a":1}`},
		{"prefixItems",
			`{"prefixItems":[{"properties":{"p":{"default":true}}}],"items":{"properties":{"q":{"default":false}}}}`,
			`[{},{},3]`, `[{"p":true},{"q":false},3]`},
		{"key escapes kept",
			`{"properties":{"a\"b":{"default":"\u00e9\n"}}}`,
			`{"c\u0041":1}`, `{"c\u0041":1,"a\"b":"\u00e9\n"}`},
		{"defaults only in unused defs",
			`{"$defs":{"u":{"properties":{"a":{"default":1}}}}}`,
			`{}`, `{}`},
		{"maxProperties would break",
			`{"maxProperties":1,"properties":{"a":{"default":1},"b":{}}}`,
			`{"b":2}`, `{"b":2}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			out, vs, err := s.Validate([]byte(tc.in), Limits{})
			if err != nil || len(vs) > 0 {
				t.Fatalf("%v %v", err, vs)
			}
			if string(out) != tc.want {
				t.Errorf("got %s, want %s", out, tc.want)
			}
		})
	}
}

func TestCaseSensitive(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","properties":{"path":{"type":"string"},"Mode":{},"size":{},"kelvin":{}},"patternProperties":{"^X-":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	strict := s.CaseSensitive()
	for _, tc := range []struct {
		in              string
		plain, caseSens int // violations
	}{
		{`{"path":"a"}`, 0, 0},
		{`{"PATH":"a"}`, 0, 1},
		{`{"path":"a","Path":"b","mode":1,"x-y":2,"other":3}`, 0, 2},
		{`{"path":"a","patĥ":"b"}`, 0, 0},   // ĥ does not fold to h
		{`{"path":"a","path":"b"}`, 0, 0},   // an escape of the same name is a duplicate, refused by the parser
		{`{"ſpath":"a"}`, 0, 0},             // not the same length in letters
		{"{\"pa\u0074H\":\"b\"}", 0, 1},     // escaped and in other case
		{"{\"Key\":1}", 0, 0},               // no property key here
		{"{\"ſize\":1,\"Kelvin\":2}", 0, 2}, // ſ folds to s, K to k: 2 bytes for 1 and 3 for 1
		{"{\"MODE\":1,\"mode\":1}", 0, 2},
	} {
		_, vs, _ := s.Validate([]byte(tc.in), Limits{})
		_, vs2, _ := strict.Validate([]byte(tc.in), Limits{})
		if len(vs) != tc.plain || len(vs2) != tc.caseSens {
			t.Errorf("%s: got %v and %v", tc.in, vs, vs2)
		}
	}
	_, vs, _ := strict.Validate([]byte(`{"PATH":"a"}`), Limits{})
	want := Violation{Pointer: "/PATH", Expected: `no property "PATH" (property names are case-sensitive)`, Got: `"a"`, Hint: `did you mean "path"?`}
	if len(vs) != 1 || vs[0] != want {
		t.Errorf("got %+v, want %+v", vs, want)
	}

	// Many properties: the folded names are looked up in an index.
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"host":{"enum":["localhost"]}`)
	for i := range 20 {
		fmt.Fprintf(&b, `,"p%d":{}`, i)
	}
	b.WriteString(`}}`)
	for _, schema := range []string{`{"type":"object","properties":{"host":{"enum":["localhost"]}}}`, b.String()} {
		s, err := Compile([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		_, vs, err := s.CaseSensitive().Validate([]byte("{\"host\":\"localhost\",\"hoſt\":\"evil.example\"}"), Limits{})
		if err != nil || len(vs) != 1 || vs[0].Hint != `did you mean "host"?` {
			t.Errorf("hoſt next to host: got %v %v, want a violation naming host", vs, err)
		}
	}
}

func TestInvisibleCharactersAreEscaped(t *testing.T) {
	s, err := Compile([]byte(`{"properties":{"name":{"type":"integer"}},"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	_, vs, _ := s.Validate([]byte("{\"name\":\"a\u202eb\u200bc\",\"x\u202e\":1}"), Limits{})
	if len(vs) != 2 {
		t.Fatalf("got %v", vs)
	}
	for _, v := range vs {
		if strings.ContainsAny(v.Expected+v.Got, "\u202e\u200b") {
			t.Errorf("invisible characters in %+v", v)
		}
	}
	if vs[0].Got != `string "a\u202Eb\u200Bc"` {
		t.Errorf("got %s", vs[0].Got)
	}
}

// TestMessageGrammar checks that counts in messages agree with their
// nouns.
func TestMessageGrammar(t *testing.T) {
	for _, tc := range []struct{ schema, instance, want string }{
		{`{"minLength":1}`, `""`, "expected a string of at least 1 character, got \"\""},
		{`{"minLength":1,"maxLength":1}`, `""`, "expected a string of exactly 1 character, got \"\""},
		{`{"maxLength":1}`, `"ab"`, "expected a string of at most 1 character, got \"ab\""},
		{`{"minItems":1}`, `[]`, "expected an array of at least 1 item, got 0 items"},
		{`{"minProperties":2}`, `{"a":1}`, "expected an object with at least 2 properties, got 1 property"},
		{`{"maxProperties":1}`, `{"a":1,"b":2}`, "expected an object with at most 1 property, got 2 properties"},
		{`{"contains":{"const":1},"minContains":2}`, `[1]`, "expected an array with at least 2 items matching: exactly 1, got 1 matching item"},
	} {
		s, err := Compile([]byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		_, vs, err := s.Validate([]byte(tc.instance), Limits{})
		if err != nil || len(vs) != 1 || !strings.HasSuffix(vs[0].String(), tc.want) {
			t.Errorf("%s against %s: got %v %v, want %q", tc.instance, tc.schema, vs, err, tc.want)
		}
	}
}

// DefaultValid names exactly the defaults Validate adds, by where they are
// written in the document.
func TestDefaultValid(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","properties":{
		"ok":{"type":"integer","default":3},
		"null":{"type":"string","default":null},
		"enum":{"enum":["a","b"],"default":"c"},
		"ref":{"$ref":"#/$defs/E","default":"a"},
		"badref":{"$ref":"#/$defs/E","default":"z"},
		"a/b":{"type":"string","default":"x"},
		"none":{"type":"string"}},
		"$defs":{"E":{"enum":["a","b"]},"D":{"type":"object","properties":{"in":{"type":"boolean","default":true}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for ptr, want := range map[string]bool{
		"/properties/ok": true, "/properties/null": false, "/properties/enum": false,
		"/properties/ref": true, "/properties/badref": false, "/properties/a~1b": true,
		"/properties/none": false, "/properties/missing": false, "": false,
		"/$defs/D/properties/in": true,
	} {
		if got := s.DefaultValid(ptr); got != want {
			t.Errorf("DefaultValid(%q) = %v, want %v", ptr, got, want)
		}
	}
	// What Validate adds agrees.
	out, vs, err := s.Validate([]byte(`{}`), Limits{})
	if err != nil || len(vs) != 0 || string(out) != `{"ok":3,"ref":"a","a/b":"x"}` {
		t.Errorf("Validate({}) = %s, %v, %v", out, vs, err)
	}
}
