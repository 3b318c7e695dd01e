package jsonschema

import (
	"errors"
	"strings"
	"testing"
)

// TestTranslatePattern checks the JavaScript syntax patterns are
// translated from, by what the compiled pattern matches.
func TestTranslatePattern(t *testing.T) {
	for _, tc := range []struct {
		pattern     string
		match, miss []string
	}{
		{`^\u0041\u00e9$`, []string{"Aé"}, []string{"A", `\u0041`}},
		{`^\uD83D\uDE00$`, []string{"😀"}, []string{"\uFFFD\uFFFD"}},
		{`^\u{1F600}$`, []string{"😀"}, nil},
		{`^a\cJb$`, []string{"a\nb"}, []string{"aJb"}},
		{`^a\0b$`, []string{"a\x00b"}, []string{"a0b"}},
		{`^[\b]$`, []string{"\b"}, []string{"b"}},
		{`^[^]$`, []string{"x", "\n"}, nil},
		{`^a[]?$`, []string{"a"}, nil},
		{`^\/x$`, []string{"/x"}, nil},
		{`^\p{Lu}\p{Letter}\P{L}$`, []string{"Ab1"}, []string{"ab1", "AbC"}},
		{`^\p{Script=Greek}+$`, []string{"αβ"}, []string{"ab"}},
		{`^\p{gc=Nd}$`, []string{"7", "٣"}, []string{"x"}},
		// JavaScript's \s takes the Unicode spaces and vertical tab that
		// RE2's \s (ASCII [\t\n\f\r ]) leaves out; \S is its complement.
		{`^\s+$`, []string{" \t\n\r\f", "\v", "\u00a0", "\u2003", "\u3000", "\ufeff", "\u2028"}, []string{"x", "\u200b"}},
		{`^\S+$`, []string{"x", "\u200b", "é"}, []string{" ", "\u00a0", "\v", "a b"}},
		{`^[\s,]+$`, []string{" ,\u00a0"}, []string{"x"}},
		{`^[^\s]+$`, []string{"ab"}, []string{"a\u2003b"}},
		{`^[\S]+$`, []string{"ab"}, []string{"a\u3000b"}},
		{`^\d\w\b`, []string{"1a"}, []string{"١a"}}, // \d is ASCII in both
	} {
		re, err := compilePattern(tc.pattern)
		if err != nil {
			t.Errorf("%s: %v", tc.pattern, err)
			continue
		}
		for _, s := range tc.match {
			if !re.MatchString(s) {
				t.Errorf("%s does not match %q (RE2 %s)", tc.pattern, s, re)
			}
		}
		for _, s := range tc.miss {
			if re.MatchString(s) {
				t.Errorf("%s matches %q (RE2 %s)", tc.pattern, s, re)
			}
		}
	}
}

// TestLookaroundAtTheEnds checks the lookarounds that can be checked as
// patterns of their own: lookaheads after a leading ^, lookbehinds before
// a final $.
func TestLookaroundAtTheEnds(t *testing.T) {
	for _, tc := range []struct {
		pattern     string
		match, miss []string
	}{
		// zod's email pattern
		{`^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-\.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9\-]*\.)+[A-Za-z]{2,}$`,
			[]string{"a.b@example.com", "x_y+z@mail.example.org"}, []string{".a@example.com", "a..b@example.com", "a@b"}},
		{`^(?=.*\d)(?=.*[a-z]).{8,}$`, []string{"abcdefg1"}, []string{"abcdefgh", "12345678", "a1"}},
		{`^[a-z-]+(?<!-)$`, []string{"a-b"}, []string{"a-", "-"}},
		{`^(?=a)(?<=b)$`, nil, []string{"", "a", "b"}},
		{`^\d+(?<=0)$`, []string{"10"}, []string{"11"}},
		{`^(?:(?!x).)*$`, nil, nil}, // not at an end: refused below
	} {
		re, err := compilePattern(tc.pattern)
		if tc.match == nil && tc.miss == nil {
			if err == nil {
				t.Errorf("%s: no error", tc.pattern)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.pattern, err)
			continue
		}
		for _, s := range tc.match {
			if !re.MatchString(s) || !re.Match([]byte(s)) {
				t.Errorf("%s does not match %q", tc.pattern, s)
			}
		}
		for _, s := range tc.miss {
			if re.MatchString(s) || re.Match([]byte(s)) {
				t.Errorf("%s matches %q", tc.pattern, s)
			}
		}
	}
}

func TestTranslatePatternRefuses(t *testing.T) {
	for pattern, want := range map[string]string{
		`a(?=b)`:         "lookaround",
		`(?!x)y`:         "lookaround",
		`^(?!a)b|c`:      "lookaround",
		`^(?=(?!a))b`:    "lookaround",
		`(?<=a)b`:        "lookaround",
		`^a(?<!a)b$`:     "lookaround",
		`(a)\1`:          "backreferences",
		`(?<n>a)\k<n>`:   "backreferences",
		`\p{Emoji}`:      "cannot be expressed",
		`\p{Alphabetic}`: "cannot be expressed",
		`\u12`:           "malformed escape",
		`\c1`:            `\c takes a letter`,
		`a{2,1}`:         "invalid repeat count",
	} {
		if _, err := compilePattern(pattern); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", pattern, err, want)
		}
	}
}

// TestIgnoredPattern checks that a pattern that cannot be translated
// fails a strict Compile but is ignored, and reported, by CompileWith.
func TestIgnoredPattern(t *testing.T) {
	doc := []byte(`{"properties":{"a":{"type":"string","pattern":"x(?!y)","maxLength":3},"b":{"type":"object","patternProperties":{"(?=k)":{"type":"integer"}},"additionalProperties":false}}}`)
	if _, err := Compile(doc); err == nil || !strings.Contains(err.Error(), "lookaround") {
		t.Fatalf("Compile: %v, want a lookaround error", err)
	}
	s, err := CompileWith(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range s.Ignored() {
		got = append(got, e.Error())
	}
	want := []string{
		`invalid schema at /properties/a/pattern: pattern "x(?!y)" is not supported: lookaround ((?=, (?!, (?<=, (?<!) cannot be expressed in RE2; the keyword is ignored`,
		`invalid schema at /properties/b/patternProperties/(?=k): pattern "(?=k)" is not supported: lookaround ((?=, (?!, (?<=, (?<!) cannot be expressed in RE2; the keyword is ignored`,
		`invalid schema at /properties/b/patternProperties: patternProperties and additionalProperties are ignored: a pattern cannot be translated to RE2`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Ignored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for in, valid := range map[string]bool{`{"a":"xyz"}`: true, `{"a":"long"}`: false, `{"b":{"k":"s","z":1}}`: true} {
		if _, vs, _ := s.Validate([]byte(in), Limits{}); (len(vs) == 0) != valid {
			t.Errorf("%s: %v, want valid %v", in, vs, valid)
		}
	}
}

// TestFormatOption checks that formats are annotations unless asserted.
func TestFormatOption(t *testing.T) {
	doc := []byte(`{"type":"string","format":"date-time"}`)
	in := []byte(`"2026-01-02T10:00:00"`) // no zone
	for _, tc := range []struct {
		name  string
		opts  Options
		valid bool
	}{
		{"annotation by default", Options{}, true},
		{"asserted", Options{AssertFormat: true}, false},
	} {
		s, err := CompileWith(doc, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, vs, _ := s.Validate(in, Limits{}); (len(vs) == 0) != tc.valid {
			t.Errorf("%s: %v, want valid %v", tc.name, vs, tc.valid)
		}
	}
	s, _ := Compile(doc)
	if _, vs, _ := s.Validate(in, Limits{}); len(vs) == 0 {
		t.Error("Compile: format not asserted")
	}
}

// TestResources checks references to schemas registered in advance and
// the refusal of everything else.
func TestResources(t *testing.T) {
	r := &Resources{}
	if err := r.Add("https://example.com/item.json", []byte(`{"$defs":{"id":{"type":"integer","minimum":1}},"type":"object","properties":{"id":{"$ref":"#/$defs/id"}},"required":["id"]}`)); err != nil {
		t.Fatal(err)
	}
	for uri, want := range map[string]string{
		"https://example.com/item.json": "already registered",
		"item.json":                     "must be absolute",
		"https://example.com/x#frag":    "without a fragment",
	} {
		if err := r.Add(uri, []byte(`{}`)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Add(%s): %v, want %q", uri, err, want)
		}
	}
	if err := r.Add("https://example.com/bad.json", []byte(`{"a":}`)); err == nil {
		t.Error("Add of a document that is not JSON: no error")
	}

	s, err := CompileWith([]byte(`{"$id":"https://example.com/list.json","type":"array","items":{"$ref":"item.json"}}`), Options{Resources: r})
	if err != nil {
		t.Fatal(err)
	}
	_, vs, _ := s.Validate([]byte(`[{"id":1},{"id":0},{}]`), Limits{})
	got := ""
	for _, v := range vs {
		got += v.String() + "\n"
	}
	want := "/1/id: expected an integer of at least 1, got 0\n/2/id: expected required property \"id\", got nothing\n"
	if got != want {
		t.Errorf("violations:\n%swant:\n%s", got, want)
	}

	for _, doc := range []string{
		`{"$ref":"https://example.com/other.json"}`,
		`{"$ref":"file:///etc/passwd"}`,
		`{"$ref":"http://127.0.0.1:1/x.json"}`,
		`{"unevaluatedProperties":false,"$ref":"file:///etc/passwd"}`,
		`{"$schema":"https://example.com/meta.json"}`,
	} {
		_, err := CompileWith([]byte(doc), Options{Resources: r})
		var se *SchemaError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, "never fetched") {
			t.Errorf("%s: %v, want a refusal that says schemas are never fetched", doc, err)
		}
	}
}

// TestExternal checks the schemas the external validator evaluates: the
// project's messages, Compile's bounds, and bounded numbers.
func TestExternal(t *testing.T) {
	s, err := CompileWith([]byte(`{"type":"object","properties":{"a":{"type":"integer"}},
		"allOf":[{"properties":{"b":{"type":"string","minLength":2}}}],"unevaluatedProperties":false}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.ext == nil {
		t.Fatal("unevaluatedProperties is not given to the external validator")
	}
	for _, tc := range []struct{ in, want string }{
		{`{"a":1,"b":"xy"}`, ""},
		{`{"a":"1","b":"x","c":[1,2]}`, "/a: expected an integer, got string \"1\"\n" +
			"/b: expected a string of at least 2 characters, got \"x\"\n" +
			"/c: expected no property \"c\" (no schema evaluates it), got [1,2]\n"},
	} {
		_, vs, err := s.Validate([]byte(tc.in), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, v := range vs {
			got += v.String() + "\n"
		}
		if got != tc.want {
			t.Errorf("%s:\n%swant:\n%s", tc.in, got, tc.want)
		}
	}
	// The instance is parsed strictly, within the limits, first.
	if _, _, err := s.Validate([]byte(`{"a":1,"a":2}`), Limits{}); err == nil {
		t.Error("duplicate key: no error")
	}
	if _, _, err := s.Validate([]byte(`{"b":"`+strings.Repeat("x", 100)+`"}`), Limits{MaxBytes: 50}); err == nil {
		t.Error("input over MaxBytes: no error")
	}
	// Numbers that would cost megabytes as exact fractions are refused.
	if _, _, err := s.Validate([]byte(`{"a":1e999999}`), Limits{}); !errors.Is(err, ErrTooComplex) {
		t.Errorf("1e999999: %v, want ErrTooComplex", err)
	}
	// Many violations: at most MaxViolations, then a count.
	var b strings.Builder
	b.WriteString(`{"a":1`)
	for i := range 50 {
		b.WriteString(`,"x` + itoa(i) + `":1`)
	}
	b.WriteString(`}`)
	_, vs, _ := s.Validate([]byte(b.String()), Limits{})
	if len(vs) != MaxViolations+1 || !strings.Contains(vs[MaxViolations].Got, "30 more problems") {
		t.Errorf("%d violations, last %v; want %d and a count of 30 more", len(vs), vs[len(vs)-1], MaxViolations+1)
	}

	// Growth with depth is refused at compile time, for the external
	// validator's keywords too.
	_, err = CompileWith([]byte(`{"$defs":{"t":{"anyOf":[{"unevaluatedItems":{"$ref":"#/$defs/t"}},{"unevaluatedItems":{"$ref":"#/$defs/t"}}]}},"$ref":"#/$defs/t"}`), Options{})
	if err == nil || !strings.Contains(err.Error(), "grows exponentially") {
		t.Errorf("exponential unevaluatedItems: %v, want refused", err)
	}
}

// TestEmbeddedResources checks $id in subschemas: references resolve
// against the base URI of the resource they are in, on the fast path.
func TestEmbeddedResources(t *testing.T) {
	s, err := CompileWith([]byte(`{"$id":"https://example.com/root.json","properties":{
		"a":{"$ref":"a.json"},"b":{"$ref":"https://example.com/nested/b.json#pos"},"c":{"$ref":"urn:example:c"}},
		"$defs":{"a":{"$id":"a.json","type":"string"},
			"b":{"$id":"nested/b.json","$defs":{"p":{"$anchor":"pos","type":"integer","minimum":0}}},
			"c":{"$id":"urn:example:c","$ref":"#/$defs/x","$defs":{"x":{"const":true}}}}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.ext != nil {
		t.Error("embedded resources are given to the external validator")
	}
	_, vs, _ := s.Validate([]byte(`{"a":1,"b":-1,"c":false}`), Limits{})
	if len(vs) != 3 {
		t.Errorf("violations %v, want 3", vs)
	}
	if _, vs, _ := s.Validate([]byte(`{"a":"x","b":1,"c":true}`), Limits{}); len(vs) != 0 {
		t.Errorf("valid instance: %v", vs)
	}
}

// FuzzTranslatePattern feeds arbitrary patterns to the translation: it
// must not panic, must leave patterns without escapes, classes or groups
// alone, and must give RE2 text that compiles or a clear error.
func FuzzTranslatePattern(f *testing.F) {
	for _, s := range []string{
		`^\u0041$`, `\uD83D\uDE00`, `\u{1F600}`, `\cJ`, `\c`, `\0`, `\01`, `[\b]`, `[^]`, `[]`, `[]a]`,
		`\p{Script=Greek}`, `\p{`, `\p{}`, `\P{L}`, `\s\S[\s\S][^\s]`, `(?=a)`, `(?<n>a)\k<n>`, `\1`,
		`\`, `\u`, `\u{110000}`, `[\u0041-\u005a]`, `abc`, `a{2,3}`, `(?i)x`, `\/`,
		`^(?!\.)(?!.*\.\.)[a-z.]+$`, `^a(?<!b)$`, `^(?=a)|b$`, `^(?=(a)$`, `^(?=a))$`, `^[(?=]$`, `^\((?=a)$`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out, err := translatePattern(src)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if !strings.ContainsAny(src, `\[(`) && out != src {
			t.Fatalf("%q became %q", src, out)
		}
		_, _ = compilePattern(src)
	})
}

// TestBundle checks that Bundle embeds the registered schemas a document
// uses, so that the result compiles, and validates the same, without them.
func TestBundle(t *testing.T) {
	r := &Resources{}
	for uri, doc := range map[string]string{
		"https://example.com/item.json":  `{"type":"object","properties":{"id":{"$ref":"id.json"}}}`,
		"https://example.com/id.json":    `{"$id":"https://example.com/id.json","type":"integer","minimum":1}`,
		"https://example.com/other.json": `{"type":"string"}`,
		"https://example.com/wrong.json": `{"$id":"https://example.com/elsewhere.json"}`,
		"https://example.com/yes.json":   `true`,
	} {
		if err := r.Add(uri, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ doc, want string }{
		{`{"type":"array"}`, `{"type":"array"}`},
		{`{"items":{"$ref":"https://example.com/item.json"}}`,
			`{"items":{"$ref":"https://example.com/item.json"},"$defs":{"https://example.com/id.json":{"$id":"https://example.com/id.json","type":"integer","minimum":1},` +
				`"https://example.com/item.json":{"$id":"https://example.com/item.json","type":"object","properties":{"id":{"$ref":"id.json"}}}}}`},
		{`{"$defs":{"a":{"$ref":"https://example.com/yes.json"}}, "$ref":"#/$defs/a"}`,
			`{"$defs":{"a":{"$ref":"https://example.com/yes.json"},"https://example.com/yes.json":{"$id":"https://example.com/yes.json","allOf":[true]}}, "$ref":"#/$defs/a"}`},
	} {
		got, err := Bundle([]byte(tc.doc), r)
		if err != nil {
			t.Errorf("%s: %v", tc.doc, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Bundle(%s) =\n%s\nwant\n%s", tc.doc, got, tc.want)
		}
		if _, err := CompileWith(got, Options{}); err != nil {
			t.Errorf("the bundle of %s does not compile alone: %v", tc.doc, err)
		}
	}
	s, _ := Bundle([]byte(`{"items":{"$ref":"https://example.com/item.json"}}`), r)
	b, _ := CompileWith(s, Options{})
	if _, vs, _ := b.Validate([]byte(`[{"id":1},{"id":0}]`), Limits{}); len(vs) != 1 || vs[0].Pointer != "/1/id" {
		t.Errorf("bundle violations %v, want one at /1/id", vs)
	}
	if _, err := Bundle([]byte(`{"$ref":"https://example.com/wrong.json"}`), r); err == nil || !strings.Contains(err.Error(), "another URI") {
		t.Errorf("registered schema with another $id: %v", err)
	}
	if _, err := Bundle([]byte(`{"$ref":"https://example.com/missing.json"}`), r); err == nil || !strings.Contains(err.Error(), "never fetched") {
		t.Errorf("unregistered: %v", err)
	}
}

// TestExternalBudget checks that the external validator's work is bounded
// before it starts, as this package's own validator bounds its steps: a
// value that would be checked against thousands of schemas, times many
// values, is refused with ErrTooComplex.
func TestExternalBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"$defs":{"b":{"type":"integer"}},"items":{"allOf":[`)
	for i := range 500 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"$ref":"#/$defs/b"}`)
	}
	b.WriteString(`]}`)
	fast := b.String() + `}`
	external := b.String() + `,"unevaluatedItems":false}`
	few := "[" + strings.TrimSuffix(strings.Repeat("1,", 20), ",") + "]"
	many := "[" + strings.TrimSuffix(strings.Repeat("1,", 3000), ",") + "]"
	for _, doc := range []string{fast, external} {
		s, err := CompileWith([]byte(doc), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, vs, err := s.Validate([]byte(few), Limits{}); err != nil || len(vs) != 0 {
			t.Errorf("external %v, 20 items: %v %v, want valid", s.ext != nil, vs, err)
		}
		if _, _, err := s.Validate([]byte(many), Limits{}); !errors.Is(err, ErrTooComplex) {
			t.Errorf("external %v, 3000 items: %v, want ErrTooComplex", s.ext != nil, err)
		}
	}
}

// TestExternalCaseSensitive checks that CaseSensitive holds for schemas
// the external validator evaluates.
func TestExternalCaseSensitive(t *testing.T) {
	s, err := CompileWith([]byte(`{"type":"object","properties":{"host":{"enum":["localhost"]},"list":{"items":{"properties":{"name":{}}}}},"unevaluatedProperties":{"type":"string"}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := []byte(`{"host":"localhost","HOST":"evil.example","list":[{"NAME":"x","name":"y"}]}`)
	if _, vs, err := s.Validate(in, Limits{}); err != nil || len(vs) != 0 {
		t.Fatalf("JSON Schema allows the keys: %v %v", vs, err)
	}
	_, vs, err := s.CaseSensitive().Validate(in, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, v := range vs {
		got += v.String() + "\n"
	}
	want := `/HOST: expected no property "HOST" (property names are case-sensitive), got "evil.example" (did you mean "host"?)` + "\n" +
		`/list/0/NAME: expected no property "NAME" (property names are case-sensitive), got "x" (did you mean "name"?)` + "\n"
	if got != want {
		t.Errorf("violations:\n%swant:\n%s", got, want)
	}
}

// TestPatternBytesTranslated checks that the bound on the patterns of one
// schema counts their RE2 text, which translation makes longer.
func TestPatternBytesTranslated(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"properties":{`)
	for i := range 300 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"p` + itoa(i) + `":{"pattern":"` + strings.Repeat(`\\s`, 1000) + itoa(i) + `"}`)
	}
	b.WriteString(`}}`)
	if _, err := CompileWith([]byte(b.String()), Options{}); err == nil || !strings.Contains(err.Error(), "the patterns add up to more than") {
		t.Errorf("300 patterns of 1,000 \\s: %v, want refused", err)
	}
}
