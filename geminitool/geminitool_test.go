package geminitool

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
	"github.com/miniopenclaw/tool/internal/golden"
	"github.com/miniopenclaw/tool/internal/providercall"
)

func testTools() []tool.Tool {
	return []tool.Tool{
		echotool.New("now", "The current time.", `{"type":"object"}`),
		echotool.New("search_flights", "Searches flights between two airports.", `{"type":"object","properties":{
			"from":{"type":"string","pattern":"^[A-Z]{3}$"},"to":{"type":"string","pattern":"^[A-Z]{3}$"},
			"date":{"type":"string","format":"date"},
			"passengers":{"type":"integer","minimum":1,"maximum":9,"default":1},
			"cabin":{"type":"string","enum":["economy","business","first"]},
			"max_price":{"type":["number","null"],"exclusiveMinimum":0},
			"airlines":{"type":"array","items":{"type":"string"},"uniqueItems":true},
			"traveller":{"$ref":"#/$defs/Person","description":"Who travels."}},
			"required":["from","to","date"],"additionalProperties":false,
			"$defs":{"Person":{"type":"object","properties":{"name":{"type":"string"},"born":{"type":"string","format":"date-time"}},"required":["name"]}}}`),
		echotool.New("weather", "Current weather in a city.", `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
	}
}

func TestGoldenDefinitions(t *testing.T) {
	defs, err := Tools(testTools())
	if err != nil {
		t.Fatal(err)
	}
	golden.JSON(t, "definitions", json.RawMessage(defs))
}

func convert(t *testing.T, s string) map[string]any {
	t.Helper()
	out, err := Schema(json.RawMessage(s))
	if err != nil {
		t.Fatalf("Schema(%s): %v", s, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSchemaConversions(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     map[string]any // of property "p"
	}{
		{"type upper case", `{"type":"string"}`, map[string]any{"type": "STRING"}},
		{"nullable type", `{"type":["integer","null"]}`, map[string]any{"type": "INTEGER", "nullable": true}},
		{"anyOf with null", `{"anyOf":[{"type":"string"},{"type":"null"}]}`, map[string]any{"type": "STRING", "nullable": true}},
		{"anyOf kept", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, map[string]any{"anyOf": []any{map[string]any{"type": "STRING"}, map[string]any{"type": "INTEGER"}}}},
		{"oneOf as anyOf", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, map[string]any{"anyOf": []any{map[string]any{"type": "STRING"}, map[string]any{"type": "INTEGER"}}}},
		{"enum", `{"enum":["a","b",null]}`, map[string]any{"type": "STRING", "enum": []any{"a", "b"}, "nullable": true}},
		{"const", `{"const":"only"}`, map[string]any{"type": "STRING", "enum": []any{"only"}}},
		{"examples", `{"type":"string","examples":["x","y"]}`, map[string]any{"type": "STRING", "example": "x"}},
		{"formats kept", `{"type":"integer","format":"int64"}`, map[string]any{"type": "INTEGER", "format": "int64"}},
		{"format moved", `{"type":"string","format":"email","description":"Mail."}`, map[string]any{"type": "STRING", "description": `Mail. Constraints: format="email".`}},
		{"constraints moved", `{"type":"number","exclusiveMinimum":0,"multipleOf":0.5}`, map[string]any{"type": "NUMBER", "description": "Constraints: exclusiveMinimum=0, multipleOf=0.5."}},
		{"kept keywords", `{"type":"string","minLength":1,"maxLength":5,"pattern":"^a","title":"T","default":"a"}`, map[string]any{"type": "STRING", "minLength": 1.0, "maxLength": 5.0, "pattern": "^a", "title": "T", "default": "a"}},
		{"closed object", `{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"number"}},"required":["a"],"additionalProperties":false}`,
			map[string]any{"type": "OBJECT", "properties": map[string]any{"a": map[string]any{"type": "BOOLEAN"}, "b": map[string]any{"type": "NUMBER"}}, "required": []any{"a"}, "propertyOrdering": []any{"a", "b"}}},
		{"array", `{"type":"array","items":{"type":"string"},"minItems":1}`, map[string]any{"type": "ARRAY", "items": map[string]any{"type": "STRING"}, "minItems": 1.0}},
		{"annotations dropped", `{"type":"string","$comment":"c","readOnly":true,"deprecated":true}`, map[string]any{"type": "STRING", "description": "Deprecated."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := convert(t, `{"type":"object","properties":{"p":`+tt.in+`}}`)
			if diff := cmp.Diff(tt.want, m["properties"].(map[string]any)["p"]); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSchemaRefsInlined(t *testing.T) {
	m := convert(t, `{"type":"object","properties":{"a":{"$ref":"#/$defs/P"},"b":{"$ref":"#/definitions/Q","description":"B."}},
		"$defs":{"P":{"type":"string","minLength":2}},"definitions":{"Q":{"type":"integer","description":"Q."}}}`)
	want := map[string]any{
		"a": map[string]any{"type": "STRING", "minLength": 2.0},
		"b": map[string]any{"type": "INTEGER", "description": "B."},
	}
	if diff := cmp.Diff(want, m["properties"]); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if m["$defs"] != nil || m["definitions"] != nil {
		t.Error("definitions left in the converted schema")
	}
}

func TestSchemaRejections(t *testing.T) {
	for _, tt := range []struct{ name, prop, keyword string }{
		{"recursive ref", `{"$ref":"#/$defs/N"}`, "$ref"},
		{"root recursion", `{"$ref":"#"}`, "$ref"},
		{"remote ref", `{"$ref":"https://example.com/x.json"}`, "$ref"},
		{"allOf", `{"allOf":[{"type":"string"}]}`, "allOf"},
		{"not", `{"type":"string","not":{"const":"x"}}`, "not"},
		{"if", `{"type":"string","if":{"const":"x"},"then":{}}`, "if"},
		{"dependentRequired", `{"type":"object","properties":{"a":{"type":"string"}},"dependentRequired":{"a":["b"]}}`, "dependentRequired"},
		{"prefixItems", `{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"string"}}`, "prefixItems"},
		{"patternProperties", `{"type":"object","properties":{"a":{"type":"string"}},"patternProperties":{"^x":{}}}`, "patternProperties"},
		{"open map", `{"type":"object","additionalProperties":{"type":"string"}}`, "additionalProperties"},
		{"free-form object", `{"type":"object"}`, "properties"},
		{"array without items", `{"type":"array"}`, "items"},
		{"enum of strings and numbers", `{"enum":[1,"a"]}`, "enum"},
		{"enum of objects", `{"enum":[{"a":1}]}`, "enum"},
		{"number enum on a string", `{"type":"string","enum":[1,2]}`, "enum"},
		{"const object", `{"const":{"a":1}}`, "const"},
		{"two types", `{"type":["string","integer"]}`, "type"},
		{"any value", `{}`, "type"},
		{"boolean schema", `true`, "true"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := `{"type":"object","properties":{"p":` + tt.prop + `},"$defs":{"N":{"type":"object","properties":{"next":{"$ref":"#/$defs/N"}}}}}`
			_, err := Schema(json.RawMessage(s))
			var se *SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("Schema error = %v, want a *SchemaError", err)
			}
			if se.Keyword != tt.keyword || !strings.HasPrefix(se.Pointer, "/properties/p") {
				t.Errorf("got keyword %q at %q, want %q under /properties/p", se.Keyword, se.Pointer, tt.keyword)
			}
		})
	}
	for _, root := range []string{`{"type":"string"}`, `[]`, `{"type":"object","anyOf":[{"type":"object","properties":{"a":{"type":"string"}}}]}`} {
		if _, err := Schema(json.RawMessage(root)); err == nil {
			t.Errorf("Schema(%s) accepted a bad root", root)
		}
	}
}

func TestDeclarationsNameTheTool(t *testing.T) {
	_, err := Tools([]tool.Tool{echotool.New("kv_put", "", `{"type":"object","properties":{"meta":{"type":"object","additionalProperties":true}}}`)})
	var se *SchemaError
	if !errors.As(err, &se) || se.Tool != "kv_put" || !strings.Contains(err.Error(), `"kv_put"`) || !strings.Contains(err.Error(), `"additionalProperties"`) {
		t.Errorf("error = %v", err)
	}
}

const parallel = `{
  "candidates": [{
    "content": {
      "role": "model",
      "parts": [
        {"functionCall": {"name": "weather", "args": {"city": "Paris"}}},
        {"functionCall": {"name": "weather", "args": {"city": "Tokyo"}}},
        {"functionCall": {"id": "fc-3", "name": "search_flights", "args": {"from": "CDG", "to": "HND", "date": "2026-12-24"}}}
      ]
    },
    "finishReason": "STOP",
    "index": 0
  }],
  "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 40, "totalTokenCount": 160},
  "modelVersion": "gemini-2.5-flash"
}`

const malformed = `{
  "role": "model",
  "parts": [
    {"functionCall": {"name": "weather", "args": "{\"city\":\"Paris\"}"}},
    {"functionCall": {"name": "weather", "args": [1]}},
    {"functionCall": {"name": "wether", "args": {"city": "Rome"}}},
    {"functionCall": {"name": "weather"}},
    {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}},
    {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}},
    {"functionCall": {"id": "same", "name": "weather", "args": {"city": "Bern"}}},
    {"functionCall": {"id": "same", "name": "weather", "args": {"city": "Graz"}}},
    {"functionCall": "nonsense"},
    {"text": "thinking out loud", "thought": true}
  ]
}`

func TestGoldenCalls(t *testing.T) {
	for _, tt := range []struct{ name, body string }{{"calls_parallel", parallel}, {"calls_malformed", malformed}} {
		t.Run(tt.name, func(t *testing.T) {
			calls, err := Calls([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			golden.JSON(t, tt.name, golden.RunCalls(t, testTools(), calls))
		})
	}
}

func TestStableIDs(t *testing.T) {
	a, _ := Calls([]byte(parallel))
	b, _ := Calls([]byte(parallel))
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("ids differ between two parses (-first +second):\n%s", diff)
	}
	if a[0].ID == a[1].ID || !strings.HasPrefix(a[0].ID, StableIDPrefix) || a[2].ID != "fc-3" {
		t.Errorf("ids = %q, %q, %q", a[0].ID, a[1].ID, a[2].ID)
	}
}

func TestGoldenResults(t *testing.T) {
	calls, _ := Calls([]byte(parallel))
	outcomes := []tool.Outcome{
		{ID: calls[0].ID, Result: tool.Result{Output: "18°C, cloudy", Parts: []tool.Part{tool.Image("image/png", []byte("\x89PNG"))}}},
		{ID: calls[1].ID, Result: tool.Result{Output: `{"temp_c":9}`, Structured: json.RawMessage(`{"temp_c":9}`)}},
		{ID: calls[2].ID, Result: tool.Result{IsError: true, Kind: tool.KindTimeout, Error: `tool "search_flights" timed out after 30s`}},
	}
	golden.JSON(t, "results", Results(calls, outcomes))
}

func TestWholeResponseMalformed(t *testing.T) {
	for _, body := range []string{``, `{"candidates":[{"content":{"parts":[`, `{}`, `{"candidates":[]}`, `{"promptFeedback":{"blockReason":"SAFETY"}}`, `3`} {
		if _, err := Calls([]byte(body)); err == nil {
			t.Errorf("Calls(%q) gave no error", body)
		}
	}
	// A candidate without content (finishReason MALFORMED_FUNCTION_CALL) has no calls.
	calls, err := Calls([]byte(`{"candidates":[{"finishReason":"MALFORMED_FUNCTION_CALL"}]}`))
	if err != nil || len(calls) != 0 {
		t.Errorf("Calls = %v, %v; want no calls, no error", calls, err)
	}
}

func TestText(t *testing.T) {
	if got := Text([]byte(`{"candidates":[{"content":{"parts":[{"text":"hm","thought":true},{"text":"Hello"},{"text":" there"}]}}]}`)); got != "Hello there" {
		t.Errorf("Text = %q", got)
	}
}

func FuzzCalls(f *testing.F) {
	for _, s := range []string{parallel, malformed, `[]`, `[{"functionCall":{"id":"a"}},{"functionCall":{"id":"a"}},{"functionCall":{"id":"a_2"}}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		calls, err := Calls(data)
		if err != nil {
			return
		}
		if err := providercall.CheckIDs(calls); err != nil {
			t.Fatal(err)
		}
		_ = Results(calls, nil)
		_ = Text(data)
	})
}

func FuzzSchema(f *testing.F) {
	for _, tl := range testTools() {
		f.Add([]byte(tl.Parameters()))
	}
	f.Add([]byte(`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`))
	f.Add([]byte(fanOutSchema(9, 200_000))) // TestInlinedReferencesBounded
	f.Fuzz(func(t *testing.T, schema []byte) {
		out, err := Schema(schema)
		if err == nil && !json.Valid(out) {
			t.Fatalf("Schema(%s) = %s, not JSON", schema, out)
		}
	})
}

// Gemini's enum holds strings only (a STRING with format "enum"). An enum
// or const of numbers or booleans cannot be said in the dialect: the tool
// is kept, the values move into the description as a constraint (still
// enforced when the call is validated), and Convert reports it.
func TestSchemaNonStringEnumsDegraded(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     map[string]any // of property "p"
		lossy    string         // the report, for property "p"
	}{
		{"integer enum", `{"type":"integer","enum":[1,2,3]}`,
			map[string]any{"type": "INTEGER", "description": "Constraints: enum=[1,2,3]."}, "enum"},
		{"integer enum with a description", `{"type":"integer","enum":[0,90,180],"description":"Angle."}`,
			map[string]any{"type": "INTEGER", "description": "Angle. Constraints: enum=[0,90,180]."}, "enum"},
		{"number enum", `{"type":"number","enum":[0.5,1.5]}`,
			map[string]any{"type": "NUMBER", "description": "Constraints: enum=[0.5,1.5]."}, "enum"},
		{"boolean enum", `{"type":"boolean","enum":[true]}`,
			map[string]any{"type": "BOOLEAN", "description": "Constraints: enum=[true]."}, "enum"},
		{"nullable integer enum", `{"type":["integer","null"],"enum":[1,2,null]}`,
			map[string]any{"type": "INTEGER", "nullable": true, "description": "Constraints: enum=[1,2,null]."}, "enum"},
		{"integer enum without a type", `{"enum":[1,2]}`,
			map[string]any{"type": "INTEGER", "description": "Constraints: enum=[1,2]."}, "enum"},
		{"number enum without a type", `{"enum":[1,2.5]}`,
			map[string]any{"type": "NUMBER", "description": "Constraints: enum=[1,2.5]."}, "enum"},
		{"number const", `{"const":3}`,
			map[string]any{"type": "INTEGER", "description": "Constraints: const=3."}, "const"},
		{"integer const with a type", `{"type":"integer","const":7}`,
			map[string]any{"type": "INTEGER", "description": "Constraints: const=7."}, "const"},
		{"string enum kept (control)", `{"type":"string","enum":["a","b"]}`,
			map[string]any{"type": "STRING", "enum": []any{"a", "b"}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := `{"type":"object","properties":{"p":` + tt.in + `}}`
			out, lossy, err := Convert(json.RawMessage(s))
			if err != nil {
				t.Fatalf("Convert(%s): %v", s, err)
			}
			var m map[string]any
			if err := json.Unmarshal(out, &m); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, m["properties"].(map[string]any)["p"]); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tt.lossy == "" {
				if len(lossy) != 0 {
					t.Errorf("lossy = %q, want nothing", lossy)
				}
				return
			}
			if len(lossy) != 1 || !strings.HasPrefix(lossy[0], "/properties/p: "+tt.lossy+" ") || !strings.Contains(lossy[0], "description") {
				t.Errorf("lossy = %q, want one report of %s at /properties/p moved into the description", lossy, tt.lossy)
			}
		})
	}
}

// A tool with an integer enum is declared, not refused, and the registry
// still refuses a value outside the enum: the degradation loses only what
// the model is told in the schema's own words.
func TestIntegerEnumToolDeclaredAndEnforced(t *testing.T) {
	r := tool.NewRegistry()
	if err := r.Register(echotool.New("rotate", "Rotates the image.", `{"type":"object","properties":{"degrees":{"type":"integer","enum":[90,180,270]}},"required":["degrees"]}`)); err != nil {
		t.Fatal(err)
	}
	decls, err := Declarations(r.List())
	if err != nil || len(decls) != 1 {
		t.Fatalf("Declarations = %v, %v; want the tool declared", decls, err)
	}
	if !strings.Contains(string(decls[0].Parameters), `Constraints: enum=[90,180,270].`) {
		t.Errorf("parameters = %s, want the allowed values in the description", decls[0].Parameters)
	}
	if res := r.Execute(t.Context(), "rotate", json.RawMessage(`{"degrees":45}`)); !res.IsError {
		t.Errorf("degrees 45 ran: %+v", res)
	}
	if res := r.Execute(t.Context(), "rotate", json.RawMessage(`{"degrees":180}`)); res.IsError {
		t.Errorf("degrees 180 refused: %+v", res)
	}
}

// Every keyword the conversion moves into the description is reported.
func TestConvertReportsEveryDegradation(t *testing.T) {
	_, lossy, err := Convert(json.RawMessage(`{"type":"object","properties":{
		"a":{"type":"string","format":"email"},
		"b":{"type":"number","exclusiveMinimum":0,"multipleOf":0.5},
		"c":{"type":"string","format":"date-time"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`/properties/a: format "email" moved into the description (Gemini knows date-time and enum for strings)`,
		`/properties/b: exclusiveMinimum moved into the description (Gemini's schema dialect lacks it)`,
		`/properties/b: multipleOf moved into the description (Gemini's schema dialect lacks it)`,
	}
	if diff := cmp.Diff(want, lossy); diff != "" {
		t.Errorf("lossy (-want +got):\n%s", diff)
	}
}
