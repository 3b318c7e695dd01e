package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
)

// handWritten returns a registry with one hand-written tool, "echo", whose
// parameters are schema.
func handWritten(t *testing.T, schema string) *tool.Registry {
	t.Helper()
	r := tool.NewRegistry()
	if err := r.Register(echotool.New("echo", "Echoes its arguments.", schema)); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFoldedKeyRefused: a key that encoding/json binds to a declared
// property, though it is not that property's name, is refused for
// hand-written tools, including keys whose case folding changes their
// length in UTF-8 (ſ U+017F folds to s, the Kelvin sign K U+212A to k).
func TestFoldedKeyRefused(t *testing.T) {
	r := handWritten(t, `{"type":"object","properties":{"host":{"enum":["localhost"]},"kind":{"type":"string"}}}`)
	for _, args := range []string{
		`{"host":"localhost","HOST":"evil.example"}`,
		`{"host":"localhost","ho` + "\u017f" + `t":"evil.example"}`,
		`{"` + "\u212a" + `ind":"x"}`,
		`{"host":"localhost","Ho\u017fT":"evil.example"}`,
	} {
		var bound struct {
			Host string `json:"host"`
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal([]byte(args), &bound); err != nil {
			t.Fatal(err)
		}
		if bound.Host != "evil.example" && bound.Kind != "x" {
			t.Fatalf("%s: encoding/json does not bind the variant key (%+v); the case is moot", args, bound)
		}
		res := r.Execute(context.Background(), "echo", json.RawMessage(args))
		if res.Kind != tool.KindInvalidArguments || !strings.Contains(res.Error, "property names are case-sensitive") {
			t.Errorf("%s: got %+v, want invalid_arguments naming the case-sensitive property", args, res)
		}
	}
}

// TestArgumentErrorBounded: whatever the arguments, the message of a
// refused call is at most tool.MaxArgumentErrorBytes, and holds no control
// characters but the newlines between its lines.
func TestArgumentErrorBounded(t *testing.T) {
	hugeKey := strings.Repeat("k", 900<<10)
	halfKey := hugeKey[:450<<10]
	var nested strings.Builder // 20 violations, each 30 levels deep under 60-character keys
	nested.WriteString("{")
	for i := range 20 {
		if i > 0 {
			nested.WriteString(",")
		}
		nested.WriteString(`"` + strings.Repeat(string(rune('a'+i)), 200) + `":`)
		nested.WriteString(strings.Repeat(`{"`+strings.Repeat("n", 200)+`":`, 30) + `"x"` + strings.Repeat("}", 30))
	}
	nested.WriteString("}")
	typed, _ := countingSearch(t)
	closed := handWritten(t, `{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false}`)
	deep := handWritten(t, `{"type":"object","additionalProperties":{"$ref":"#/$defs/n"},"$defs":{"n":{"type":"object","additionalProperties":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"integer"}]}}}}`)
	for _, tc := range []struct {
		name string
		r    *tool.Registry
		tool string
		args string
		want string
	}{
		{"typed, huge unknown key", typed, "search_flights", `{"` + hugeKey + `":1}`, "no property"},
		{"hand-written, huge unknown key", closed, "echo", `{"` + hugeKey + `":1}`, "no property"},
		{"hand-written, huge key wrong value", handWritten(t, `{"type":"object","additionalProperties":{"type":"integer"}}`), "echo", `{"` + hugeKey + `":"x"}`, "expected an integer"},
		{"hand-written, huge duplicate key", closed, "echo", `{"` + halfKey + `":1,"` + halfKey + `":2}`, "duplicate key"},
		{"typed, huge duplicate key", typed, "search_flights", `{"from":"SFO","` + halfKey + `":1,"` + halfKey + `":2}`, "a second"},
		{"hand-written, long pointers", deep, "echo", nested.String(), "expected"},
		{"typed, escaped control characters in a key", typed, "search_flights", `{"\u001b[2J\u0007\u0000":1}`, `\u001B[2J\u0007\u0000`},
		{"hand-written, escaped control characters in a key", closed, "echo", `{"\u001b[2J\u0007\u0000":1}`, `\u001B[2J\u0007\u0000`},
		{"hand-written, control characters in malformed JSON", closed, "echo", "{\"a\":\"\x1b[31m\x07\x00", `\u001B[31m\u0007\u0000`},
		{"typed, control characters in malformed JSON", typed, "search_flights", "{\"a\":\"\x1b[31m\x07\x00", `\u001B[31m\u0007\u0000`},
		{"typed, right-to-left override", typed, "search_flights", "{\"from\":\"\u202eSFO\"}", `\u202E`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.r.Execute(context.Background(), tc.tool, json.RawMessage(tc.args))
			if res.Kind != tool.KindInvalidArguments {
				t.Fatalf("got %+v, want invalid_arguments", res)
			}
			if len(res.Error) > tool.MaxArgumentErrorBytes {
				t.Errorf("the message is %d bytes, more than %d", len(res.Error), tool.MaxArgumentErrorBytes)
			}
			if !strings.Contains(res.Error, tc.want) {
				t.Errorf("the message does not say %q:\n%.2000s", tc.want, res.Error)
			}
			for _, r := range res.Error {
				if r < 0x20 && r != '\n' || r == 0x7f || r == '\u202e' {
					t.Errorf("the message holds %U:\n%.2000q", r, res.Error)
					break
				}
			}
		})
	}
}
