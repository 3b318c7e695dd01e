package openaitool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
)

// Each test below pins one rule of OpenAI's strict subset (as OpenAI's
// structured outputs documentation states it) or one of our documented
// choices.

func strict(t *testing.T, schema string) (map[string]any, []string) {
	t.Helper()
	out, lossy, err := StrictSchema(json.RawMessage(schema))
	if err != nil {
		t.Fatalf("StrictSchema(%s) error: %v", schema, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("StrictSchema output is not JSON: %v\n%s", err, out)
	}
	return m, lossy
}

func strictErr(t *testing.T, schema string) *StrictError {
	t.Helper()
	out, _, err := StrictSchema(json.RawMessage(schema))
	if err == nil {
		t.Fatalf("StrictSchema(%s) = %s, want an error", schema, out)
	}
	var se *StrictError
	if !errors.As(err, &se) {
		t.Fatalf("StrictSchema error %v is not a *StrictError", err)
	}
	return se
}

func get(m any, path ...string) any {
	for _, p := range path {
		switch v := m.(type) {
		case map[string]any:
			m = v[p]
		case []any:
			var i int
			fmt.Sscan(p, &i)
			if i >= len(v) {
				return nil
			}
			m = v[i]
		default:
			return nil
		}
	}
	return m
}

func TestStrictRootMustBeObject(t *testing.T) {
	for _, s := range []string{`{"type":"string"}`, `{"type":["object","null"]}`, `{"properties":{}}`, `[]`, `true`} {
		if se := strictErr(t, s); se.Keyword != "type" {
			t.Errorf("StrictSchema(%s) keyword = %q, want type", s, se.Keyword)
		}
	}
}

func TestStrictRootMayNotBeUnion(t *testing.T) {
	for _, kw := range []string{"anyOf", "oneOf"} {
		s := `{"type":"object","` + kw + `":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}]}`
		if se := strictErr(t, s); se.Keyword != kw || se.Pointer != "" {
			t.Errorf("root %s: got keyword %q at %q", kw, se.Keyword, se.Pointer)
		}
	}
}

func TestStrictEveryPropertyRequired(t *testing.T) {
	m, lossy := strict(t, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"]}`)
	if diff := cmp.Diff([]any{"a", "b"}, m["required"]); diff != "" {
		t.Errorf("required (-want +got):\n%s", diff)
	}
	if len(lossy) != 0 {
		t.Errorf("lossy = %v, want none", lossy)
	}
}

func TestStrictOptionalBecomesNullable(t *testing.T) {
	m, _ := strict(t, `{"type":"object","properties":{
		"s":{"type":"string"},
		"u":{"type":["string","integer"]},
		"e":{"type":"string","enum":["x","y"]},
		"c":{"const":"k"},
		"a":{"anyOf":[{"type":"string"},{"type":"integer"}]},
		"n":{"type":["string","null"]}}}`)
	for _, tt := range []struct {
		prop string
		want any
	}{
		{"s", map[string]any{"type": []any{"string", "null"}}},
		{"u", map[string]any{"type": []any{"string", "integer", "null"}}},
		{"e", map[string]any{"type": []any{"string", "null"}, "enum": []any{"x", "y", nil}}},
		{"c", map[string]any{"anyOf": []any{map[string]any{"const": "k"}, map[string]any{"type": "null"}}}},
		{"a", map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}, map[string]any{"type": "null"}}}},
		{"n", map[string]any{"type": []any{"string", "null"}}},
	} {
		if diff := cmp.Diff(tt.want, get(m, "properties", tt.prop)); diff != "" {
			t.Errorf("property %s (-want +got):\n%s", tt.prop, diff)
		}
	}
}

func TestStrictAdditionalPropertiesFalseOnEveryObject(t *testing.T) {
	m, _ := strict(t, `{"type":"object","properties":{
		"o":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]},
		"l":{"type":"array","items":{"type":"object","properties":{"y":{"type":"number"}},"required":["y"]}},
		"r":{"$ref":"#/$defs/D"}},
		"required":["o","l","r"],
		"$defs":{"D":{"type":"object","properties":{"z":{"type":"boolean"}},"required":["z"]}}}`)
	for _, path := range [][]string{{}, {"properties", "o"}, {"properties", "l", "items"}, {"$defs", "D"}} {
		if got := get(m, append(path, "additionalProperties")...); got != false {
			t.Errorf("%v additionalProperties = %v, want false", path, got)
		}
	}
}

func TestStrictOpenObjectsRefused(t *testing.T) {
	for name, s := range map[string]string{
		"additionalProperties true":    `{"type":"object","additionalProperties":true}`,
		"additionalProperties {}":      `{"type":"object","properties":{"m":{"type":"object","additionalProperties":{}}}}`,
		"additionalProperties schema":  `{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}}}`,
		"nested object, no properties": `{"type":"object","properties":{"m":{"type":"object"}}}`,
	} {
		if se := strictErr(t, s); se.Keyword != "additionalProperties" {
			t.Errorf("%s: keyword = %q, want additionalProperties", name, se.Keyword)
		}
	}
	// The root with no properties is a tool without parameters, not a map.
	m, _ := strict(t, `{"type":"object"}`)
	if diff := cmp.Diff(map[string]any{"type": "object", "properties": map[string]any{}, "required": []any{}, "additionalProperties": false}, m); diff != "" {
		t.Errorf("no-parameter root (-want +got):\n%s", diff)
	}
}

func TestStrictUnsupportedKeywordsRefused(t *testing.T) {
	for _, kw := range []string{"allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "prefixItems", "patternProperties"} {
		s := `{"type":"object","properties":{"a":{"type":"string","` + kw + `":{}}},"required":["a"]}`
		se := strictErr(t, s)
		if se.Keyword != kw || se.Pointer != "/properties/a" {
			t.Errorf("%s: got keyword %q at %q", kw, se.Keyword, se.Pointer)
		}
	}
}

func TestStrictAnyOfBelowRootAllowed(t *testing.T) {
	m, lossy := strict(t, `{"type":"object","properties":{"v":{"anyOf":[
		{"type":"object","properties":{"n":{"type":"integer"}}},
		{"type":"string"}]}},"required":["v"]}`)
	b := get(m, "properties", "v", "anyOf", "0")
	if diff := cmp.Diff(map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": []any{"integer", "null"}}}, "required": []any{"n"}, "additionalProperties": false}, b); diff != "" {
		t.Errorf("anyOf branch is converted by the same rules (-want +got):\n%s", diff)
	}
	if len(lossy) != 0 {
		t.Errorf("lossy = %v", lossy)
	}
}

func TestStrictOneOfBecomesAnyOf(t *testing.T) {
	m, lossy := strict(t, `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["v"]}`)
	if get(m, "properties", "v", "anyOf") == nil || get(m, "properties", "v", "oneOf") != nil {
		t.Errorf("oneOf not rewritten: %v", get(m, "properties", "v"))
	}
	if len(lossy) != 1 || !strings.Contains(lossy[0], "oneOf") {
		t.Errorf("lossy = %v, want the oneOf rewrite listed", lossy)
	}
}

func TestStrictDefsAndRecursion(t *testing.T) {
	m, lossy := strict(t, `{"type":"object","properties":{
		"tree":{"$ref":"#/$defs/Node"},"self":{"$ref":"#"}},"required":["tree","self"],
		"$defs":{"Node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/Node"}}},"required":["kids"]}}}`)
	if got := get(m, "properties", "tree", "$ref"); got != "#/$defs/Node" {
		t.Errorf("tree $ref = %v", got)
	}
	if got := get(m, "properties", "self", "$ref"); got != "#" {
		t.Errorf("root recursion $ref = %v", got)
	}
	if len(lossy) != 0 {
		t.Errorf("lossy = %v", lossy)
	}
	if se := strictErr(t, `{"type":"object","properties":{"x":{"$ref":"https://example.com/s.json"}}}`); se.Keyword != "$ref" {
		t.Errorf("remote $ref keyword = %q", se.Keyword)
	}
	if se := strictErr(t, `{"type":"object","properties":{"x":{"$ref":"#/$defs/Missing"}}}`); se.Keyword != "$ref" {
		t.Errorf("dangling $ref keyword = %q", se.Keyword)
	}
}

func TestStrictRefWithSiblingsWrapped(t *testing.T) {
	// Merging siblings into the referent ("parent wins") silently changes
	// its constraints (openai-agents-python#4353); wrapping keeps both.
	m, _ := strict(t, `{"type":"object","properties":{"p":{"$ref":"#/$defs/P","description":"where"}},"required":["p"],
		"$defs":{"P":{"type":"string","pattern":"^[a-z]+$"}}}`)
	want := map[string]any{"anyOf": []any{map[string]any{"$ref": "#/$defs/P"}}, "description": "where"}
	if diff := cmp.Diff(want, get(m, "properties", "p")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := get(m, "$defs", "P", "pattern"); got != "^[a-z]+$" {
		t.Errorf("referent's pattern = %v, want it kept", got)
	}
}

func TestStrictSupportedKeywordsKept(t *testing.T) {
	s := `{"type":"object","properties":{
		"s":{"type":"string","pattern":"^[A-Z]{3}$","format":"date","description":"d","title":"T"},
		"n":{"type":"number","multipleOf":0.5,"minimum":0,"maximum":10,"exclusiveMinimum":-1,"exclusiveMaximum":11},
		"a":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3}},"required":["s","n","a"]}`
	m, lossy := strict(t, s)
	var orig map[string]any
	json.Unmarshal([]byte(s), &orig)
	if diff := cmp.Diff(get(orig, "properties"), get(m, "properties")); diff != "" {
		t.Errorf("supported keywords changed (-orig +strict):\n%s", diff)
	}
	if len(lossy) != 0 {
		t.Errorf("lossy = %v", lossy)
	}
}

func TestStrictSupportedFormats(t *testing.T) {
	for _, f := range []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"} {
		m, lossy := strict(t, `{"type":"object","properties":{"v":{"type":"string","format":"`+f+`"}},"required":["v"]}`)
		if get(m, "properties", "v", "format") != f || len(lossy) != 0 {
			t.Errorf("format %s: got %v, lossy %v", f, get(m, "properties", "v"), lossy)
		}
	}
	m, lossy := strict(t, `{"type":"object","properties":{"v":{"type":"string","format":"uri"}},"required":["v"]}`)
	if get(m, "properties", "v", "format") != nil || !strings.Contains(get(m, "properties", "v", "description").(string), `format="uri"`) || len(lossy) != 1 {
		t.Errorf("format uri: got %v, lossy %v; want it moved into the description", get(m, "properties", "v"), lossy)
	}
}

func TestStrictUnsupportedConstraintsMovedToDescription(t *testing.T) {
	m, lossy := strict(t, `{"type":"object","properties":{
		"s":{"type":"string","description":"A name.","minLength":3,"maxLength":10},
		"l":{"type":"array","items":{"type":"integer"},"uniqueItems":true},
		"p":{"type":"string","pattern":"^(?!admin).*$"}},"required":["s","l","p"]}`)
	for prop, want := range map[string]string{
		"s": "A name. Constraints: minLength=3, maxLength=10.",
		"l": "Constraints: uniqueItems=true.",
		"p": `Constraints: pattern="^(?!admin).*$".`,
	} {
		if got := get(m, "properties", prop, "description"); got != want {
			t.Errorf("%s description = %q, want %q", prop, got, want)
		}
	}
	for _, kw := range []string{"minLength", "maxLength"} {
		if get(m, "properties", "s", kw) != nil {
			t.Errorf("%s still present", kw)
		}
	}
	if len(lossy) != 4 {
		t.Errorf("lossy = %q, want 4 entries", lossy)
	}
}

func TestStrictAnnotationsDroppedOrDescribed(t *testing.T) {
	m, lossy := strict(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","$comment":"c","type":"object",
		"properties":{"q":{"type":"string","examples":["a","b"],"deprecated":true,"readOnly":true}},"required":["q"]}`)
	for _, kw := range []string{"$schema", "$id", "$comment"} {
		if m[kw] != nil {
			t.Errorf("%s kept", kw)
		}
	}
	if got := get(m, "properties", "q"); !cmp.Equal(got, map[string]any{"type": "string", "description": `Examples: "a", "b". Deprecated.`}) {
		t.Errorf("q = %v", got)
	}
	if len(lossy) != 0 {
		t.Errorf("annotations should not count as lossy: %v", lossy)
	}
	_, lossy = strict(t, `{"type":"object","properties":{"q":{"type":"string","x-vendor":1}},"required":["q"]}`)
	if len(lossy) != 1 {
		t.Errorf("unknown keyword: lossy = %v, want it listed", lossy)
	}
}

func TestStrictDefaultRemovedAndDescribed(t *testing.T) {
	m, lossy := strict(t, `{"type":"object","properties":{"n":{"type":"integer","default":1,"description":"How many."}}}`)
	want := map[string]any{"type": []any{"integer", "null"}, "description": "How many. Default: 1."}
	if diff := cmp.Diff(want, get(m, "properties", "n")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(lossy) != 0 {
		t.Errorf("lossy = %v", lossy)
	}
}

func TestStrictArrayNeedsItems(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"array"}},"required":["a"]}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{}}},"required":["a"]}`,
		`{"type":"object","properties":{"a":{"type":"array","items":true}},"required":["a"]}`,
	} {
		if se := strictErr(t, s); se.Keyword != "items" {
			t.Errorf("%s: keyword %q, want items", s, se.Keyword)
		}
	}
}

func TestStrictAnyValueRefused(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{}},"required":["a"]}`,
		`{"type":"object","properties":{"a":true},"required":["a"]}`,
		`{"type":"object","properties":{"a":{"description":"anything"}},"required":["a"]}`,
	} {
		strictErr(t, s)
	}
}

func TestStrictSizeLimits(t *testing.T) {
	props := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
		}
		return b.String()
	}
	nest := func(levels int) string {
		s := `{"type":"string"}`
		for range levels - 1 {
			s = `{"type":"object","properties":{"x":` + s + `},"required":["x"]}`
		}
		return `{"type":"object","properties":{"x":` + s + `},"required":["x"]}`
	}
	enum := func(n, width int) string {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf(`"%0*d"`, width, i)
		}
		return `{"type":"object","properties":{"e":{"type":"string","enum":[` + strings.Join(vals, ",") + `]}},"required":["e"]}`
	}
	for _, tt := range []struct {
		name    string
		schema  string
		keyword string // "" when it must pass
	}{
		{"5000 properties", `{"type":"object","properties":{` + props(5000) + `}}`, ""},
		{"5001 properties", `{"type":"object","properties":{` + props(5001) + `}}`, "properties"},
		{"10 levels", nest(10), ""},
		{"11 levels", nest(11), "properties"},
		{"1000 enum values", enum(1000, 4), ""},
		{"1001 enum values", enum(1001, 4), "enum"},
		{"250 long values", enum(250, 70), ""},
		{"251 values over 15000 chars", enum(251, 60), "enum"},
		{"over 120000 characters", `{"type":"object","properties":{"a` + strings.Repeat("k", 40000) + `":{"type":"string"},"b` + strings.Repeat("k", 40000) + `":{"type":"string"},"c` + strings.Repeat("k", 40000) + `":{"type":"string"}}}`, "properties"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := StrictSchema(json.RawMessage(tt.schema))
			var se *StrictError
			if tt.keyword == "" && err != nil {
				t.Fatalf("error %v, want none", err)
			}
			if tt.keyword != "" && (!errors.As(err, &se) || se.Keyword != tt.keyword) {
				t.Fatalf("error %v, want a StrictError for %q", err, tt.keyword)
			}
		})
	}
}

func TestStrictHostileSchemaBounded(t *testing.T) {
	deep := strings.Repeat(`{"anyOf":[`, 200) + `{"type":"string"}` + strings.Repeat(`]}`, 200)
	strictErr(t, `{"type":"object","properties":{"a":`+deep+`},"required":["a"]}`)
}

func TestStrictOnNamesToolAndKeyword(t *testing.T) {
	_, err := NewTools([]tool.Tool{
		echotool.New("fine", "", `{"type":"object","properties":{"a":{"type":"string"}}}`),
		echotool.New("kv_put", "", `{"type":"object","properties":{"meta":{"type":"object","additionalProperties":true}}}`),
	}, WithStrict(StrictOn))
	var se *StrictError
	if !errors.As(err, &se) {
		t.Fatalf("NewTools error = %v, want a *StrictError", err)
	}
	if se.Tool != "kv_put" || se.Keyword != "additionalProperties" || se.Pointer != "/properties/meta" {
		t.Errorf("StrictError = %+v", se)
	}
	for _, s := range []string{`"kv_put"`, `"additionalProperties"`, "/properties/meta"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %s", err, s)
		}
	}
}

func TestStrictAuto(t *testing.T) {
	ts, err := NewTools([]tool.Tool{
		echotool.New("lossless", "", `{"type":"object","properties":{"a":{"type":"string","default":"x"}}}`),
		echotool.New("lossy", "", `{"type":"object","properties":{"a":{"type":"string","minLength":2}}}`),
		echotool.New("impossible", "", `{"type":"object","properties":{"a":{"type":"object"}}}`),
	}, WithStrict(StrictAuto), WithToolStrict("lossless", StrictAuto))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"lossless": true, "lossy": false, "impossible": false} {
		got, notes := ts.Strict(name)
		if got != want {
			t.Errorf("Strict(%q) = %v (%v), want %v", name, got, notes, want)
		}
		if !want && len(notes) == 0 {
			t.Errorf("Strict(%q) gives no reason", name)
		}
	}
	var defs []ChatTool
	json.Unmarshal(ts.Chat(), &defs)
	if defs[1].Function.Strict || !strings.Contains(string(defs[1].Function.Parameters), "minLength") {
		t.Errorf("a lossy tool must be sent as it is: %s", defs[1].Function.Parameters)
	}
}

func TestStrictPerToolOverride(t *testing.T) {
	ts, err := NewTools([]tool.Tool{
		echotool.New("open", "", `{"type":"object","properties":{"m":{"type":"object"}}}`),
		echotool.New("closed", "", `{"type":"object","properties":{"a":{"type":"string"}}}`),
	}, WithStrict(StrictOn), WithToolStrict("open", StrictOff))
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := ts.Strict("open"); s {
		t.Error("open is strict")
	}
	if s, _ := ts.Strict("closed"); !s {
		t.Error("closed is not strict")
	}
}

// The strict rewrite reads only Parameters, so every way of building a
// tool gets it (openai-agents-python#992: a hand-built tool skipped it).
func TestStrictEveryConstructionPath(t *testing.T) {
	const schema = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","default":1}},"required":["city"],"additionalProperties":false}`
	want, _, err := StrictSchema(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]tool.Tool{
		"hand-written": echotool.New("weather", "w", schema),
		"imported":     importTool(t, `{"name":"weather","description":"w","inputSchema":`+schema+`}`),
		"wrapped":      tool.With(echotool.New("weather", "w", schema), tool.WithTimeout(1)),
	}
	type in struct {
		City string `json:"city"`
		Days int    `json:"days,omitempty" default:"1"`
	}
	if typed, err := tool.New("weather", "w", func(context.Context, in) (string, error) { return "", nil }); err == nil {
		paths["typed"] = typed
	} else {
		t.Logf("typed path skipped: tool.New: %v", err)
	}
	for name, tl := range paths {
		ts, err := NewTools([]tool.Tool{tl}, WithStrict(StrictOn))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var defs []ChatTool
		json.Unmarshal(ts.Chat(), &defs)
		if !defs[0].Function.Strict {
			t.Errorf("%s: not strict", name)
		}
		if name != "typed" && string(defs[0].Function.Parameters) != string(want) {
			t.Errorf("%s: parameters\n%s\nwant\n%s", name, defs[0].Function.Parameters, want)
		}
	}
}

// importTool builds a tool from an MCP-style JSON description.
func importTool(t *testing.T, desc string) tool.Tool {
	var d struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal([]byte(desc), &d); err != nil {
		t.Fatal(err)
	}
	return echotool.New(d.Name, d.Description, string(d.InputSchema))
}

func TestNormalize(t *testing.T) {
	ts, err := NewTools([]tool.Tool{echotool.New("t", "", `{"type":"object","properties":{
		"n":{"type":"integer","default":5},
		"s":{"type":"string"},
		"keep":{"type":["string","null"]},
		"req":{"type":"string"},
		"obj":{"type":"object","properties":{"inner":{"type":"boolean","default":true}}},
		"list":{"type":"array","items":{"$ref":"#/$defs/I"}}},
		"required":["req"],
		"$defs":{"I":{"type":"object","properties":{"w":{"type":"number","default":0.5}}}}}`)}, WithStrict(StrictOn))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ in, want string }{
		{`{"n":null,"s":null,"keep":null,"req":"r","obj":null,"list":null}`, `{"n":5,"keep":null,"req":"r"}`},
		{`{"n":2,"s":"x","keep":"k","req":"r","obj":{"inner":null},"list":[{"w":null},{"w":2}]}`, `{"n":2,"s":"x","keep":"k","req":"r","obj":{"inner":true},"list":[{"w":0.5},{"w":2}]}`},
		{`{"req":null}`, `{"req":null}`}, // required, not rewritten: the registry reports it
		{`not json`, `not json`},
		{`"{\"n\":null}"`, `"{\"n\":null}"`},
	} {
		got := ts.Normalize([]tool.Call{{ID: "1", Name: "t", Args: json.RawMessage(tt.in)}})
		if string(got[0].Args) != tt.want {
			t.Errorf("Normalize(%s) = %s, want %s", tt.in, got[0].Args, tt.want)
		}
	}
	calls := []tool.Call{{Name: "other", Args: json.RawMessage(`{"n":null}`)}}
	if got := ts.Normalize(calls); &got[0] != &calls[0] {
		t.Error("Normalize copied calls it did not change")
	}
}

// A strict tool end to end: the model sends null for an optional field and
// the tool receives the default.
func TestStrictNullGetsDefaultBeforeExecute(t *testing.T) {
	r := tool.NewRegistry()
	if err := r.Register(echotool.New("count", "", `{"type":"object","properties":{"n":{"type":"integer","default":3}}}`)); err != nil {
		t.Fatal(err)
	}
	ts, err := NewTools(r.List(), WithStrict(StrictOn))
	if err != nil {
		t.Fatal(err)
	}
	calls, err := ChatCalls([]byte(`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"count","arguments":"{\"n\":null}"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	calls = ts.Normalize(calls)
	res := r.Execute(context.Background(), calls[0].Name, calls[0].Args)
	if res.IsError || res.Output != `{"n":3}` {
		t.Errorf("result = %+v, want the tool to see {\"n\":3}", res)
	}
}

// Models answer in schema key order, so the rewrite keeps the order of
// properties (and of everything else) as written.
func TestStrictKeepsKeyOrder(t *testing.T) {
	out, _, err := StrictSchema(json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"string"},"mid":{"type":"integer"}},"required":["mid"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"zeta":{"type":["string","null"]},"alpha":{"type":["string","null"]},"mid":{"type":"integer"}},"required":["zeta","alpha","mid"],"additionalProperties":false}`
	if string(out) != want {
		t.Errorf("StrictSchema =\n%s\nwant\n%s", out, want)
	}
}

// A strict-mode model sends null for every optional field it leaves
// unset. Normalize must turn that back into what the tool's own schema
// accepts for "not given": the default when it is valid for the field,
// otherwise no field at all. Each case is checked three ways: the
// normalized arguments, that the registry accepts them, and that the tool
// then sees exactly what it sees when the field is left out without strict
// mode.
func TestNormalizeGivesBackNotGiven(t *testing.T) {
	for _, tt := range []struct {
		name, schema string
		in, want     string // the strict model's arguments; Normalize's result
		notGiven     string // the same call without strict mode
	}{
		{"valid default put back (control)",
			`{"type":"object","properties":{"n":{"type":"integer","default":3}}}`,
			`{"n":null}`, `{"n":3}`, `{}`},
		{"null default on a type that is not nullable",
			`{"type":"object","properties":{"s":{"type":"string","default":null}}}`,
			`{"s":null}`, `{}`, `{}`},
		{"null default on an integer beside a valid one",
			`{"type":"object","properties":{"a":{"type":"integer","default":null},"b":{"type":"boolean","default":false}}}`,
			`{"a":null,"b":null}`, `{"b":false}`, `{}`},
		{"default outside the field's enum",
			`{"type":"object","properties":{"unit":{"type":"string","enum":["celsius","fahrenheit"],"default":"kelvin"}}}`,
			`{"unit":null}`, `{}`, `{}`},
		{"default inside the field's enum (control)",
			`{"type":"object","properties":{"unit":{"type":"string","enum":["celsius","fahrenheit"],"default":"celsius"}}}`,
			`{"unit":null}`, `{"unit":"celsius"}`, `{}`},
		{"default below the minimum",
			`{"type":"object","properties":{"k":{"type":"integer","minimum":1,"default":0}}}`,
			`{"k":null}`, `{}`, `{}`},
		{"default of the wrong type",
			`{"type":"object","properties":{"k":{"type":"integer","default":"10"}}}`,
			`{"k":null}`, `{}`, `{}`},
		{"default that fails its format",
			`{"type":"object","properties":{"d":{"type":"string","format":"date","default":"today"}}}`,
			`{"d":null}`, `{}`, `{}`},
		{"default checked against the referenced schema",
			`{"type":"object","properties":{"u":{"$ref":"#/$defs/U","default":"k"}},"$defs":{"U":{"type":"string","enum":["c","f"]}}}`,
			`{"u":null}`, `{}`, `{}`},
		{"invalid default in a nested object",
			`{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"string","default":null}}}},"required":["o"]}`,
			`{"o":{"x":null}}`, `{"o":{}}`, `{"o":{}}`},
		{"invalid default in a definition used by items",
			`{"type":"object","properties":{"l":{"type":"array","items":{"$ref":"#/$defs/I"}}},"required":["l"],"$defs":{"I":{"type":"object","properties":{"w":{"type":"number","default":null}}}}}`,
			`{"l":[{"w":null},{"w":1}]}`, `{"l":[{},{"w":1}]}`, `{"l":[{},{"w":1}]}`},
		{"invalid default in a oneOf branch",
			`{"type":"object","properties":{"v":{"oneOf":[{"type":"object","properties":{"k":{"const":1},"a":{"type":"string","default":null}},"required":["k"],"additionalProperties":false},{"type":"string"}]}},"required":["v"]}`,
			`{"v":{"k":1,"a":null}}`, `{"v":{"k":1}}`, `{"v":{"k":1}}`},
		{"defaults valid alone but not together",
			`{"type":"object","maxProperties":1,"properties":{"a":{"type":"integer","default":1},"b":{"type":"integer","default":2}}}`,
			`{"a":null,"b":null}`, `{}`, `{}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := tool.NewRegistry()
			if err := r.Register(echotool.New("t", "", tt.schema)); err != nil {
				t.Fatal(err)
			}
			ts, err := NewTools(r.List(), WithStrict(StrictOn))
			if err != nil {
				t.Fatal(err)
			}
			got := ts.Normalize([]tool.Call{{ID: "1", Name: "t", Args: json.RawMessage(tt.in)}})[0].Args
			if string(got) != tt.want {
				t.Errorf("Normalize(%s) = %s, want %s", tt.in, got, tt.want)
			}
			res := r.Execute(context.Background(), "t", got)
			if res.IsError {
				t.Fatalf("the registry refused the normalized call %s: %+v", got, res)
			}
			plain := r.Execute(context.Background(), "t", json.RawMessage(tt.notGiven))
			if plain.IsError {
				t.Fatalf("the registry refused %s without strict mode: %+v", tt.notGiven, plain)
			}
			if res.Output != plain.Output {
				t.Errorf("the tool saw %s after strict mode, %s without it", res.Output, plain.Output)
			}
		})
	}
}

// OpenAI's strict mode refuses a schema whose format is outside its nine
// (date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid),
// so every other format leaves the schema. A format clawtool does not
// check either ("float" on a number, "int64", "password", …) is an
// annotation: it is named in the description and the tool stays strict
// under StrictAuto. A format clawtool checks but OpenAI lacks (uri) is a
// constraint the model is no longer held to, so it is lossy.
func TestStrictAnnotationFormats(t *testing.T) {
	for _, tt := range []struct {
		name, prop string
		want       map[string]any // property "v" after the rewrite
		strict     bool           // sent strict under StrictAuto
	}{
		{"float on a number", `{"type":"number","format":"float"}`,
			map[string]any{"type": "number", "description": `Format: "float".`}, true},
		{"double on an optional number", `{"type":"number","format":"double","description":"Price."}`,
			map[string]any{"type": "number", "description": `Price. Format: "double".`}, true},
		{"int64 on an integer", `{"type":"integer","format":"int64"}`,
			map[string]any{"type": "integer", "description": `Format: "int64".`}, true},
		{"password on a string", `{"type":"string","format":"password"}`,
			map[string]any{"type": "string", "description": `Format: "password".`}, true},
		{"binary on a string", `{"type":"string","format":"binary"}`,
			map[string]any{"type": "string", "description": `Format: "binary".`}, true},
		{"date-time kept (control)", `{"type":"string","format":"date-time"}`,
			map[string]any{"type": "string", "format": "date-time"}, true},
		{"hostname kept (control)", `{"type":"string","format":"hostname"}`,
			map[string]any{"type": "string", "format": "hostname"}, true},
		{"uri is checked by clawtool, lacking in OpenAI: lossy (control)", `{"type":"string","format":"uri"}`,
			map[string]any{"type": "string", "description": `Constraints: format="uri".`}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			schema := `{"type":"object","properties":{"v":` + tt.prop + `},"required":["v"]}`
			m, lossy := strict(t, schema)
			if diff := cmp.Diff(tt.want, get(m, "properties", "v")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tt.strict != (len(lossy) == 0) {
				t.Errorf("lossy = %q; want strict = %v", lossy, tt.strict)
			}
			ts, err := NewTools([]tool.Tool{echotool.New("t", "", schema)}, WithStrict(StrictAuto))
			if err != nil {
				t.Fatal(err)
			}
			if got, notes := ts.Strict("t"); got != tt.strict {
				t.Errorf("StrictAuto: strict = %v (%q), want %v", got, notes, tt.strict)
			}
		})
	}
}
