package jsonobj

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestParseKeepsOrder(t *testing.T) {
	o, err := Parse([]byte(` {"z":1, "a":{"y":[1,2]}, "m":"x", "a":2} `))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := o.MarshalJSON()
	if string(got) != `{"z":1,"a":2,"m":"x"}` {
		t.Errorf("round trip = %s; want order kept and the last duplicate in the first one's place", got)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct {
		in        string
		notObject bool
	}{
		{`[]`, true}, {`"s"`, true}, {`null`, true}, {`3`, true},
		{``, false}, {`{`, false}, {`{"a":}`, false}, {`{"a":1}{}`, false}, {`{"a":1} x`, false},
	} {
		_, err := Parse([]byte(tt.in))
		if err == nil || errors.Is(err, ErrNotObject) != tt.notObject {
			t.Errorf("Parse(%q) error = %v, want not-object %v", tt.in, err, tt.notObject)
		}
	}
}

func TestSetDeleteGet(t *testing.T) {
	var o Object
	o.Set("a", json.RawMessage(`1`))
	o.Set("b", json.RawMessage(`2`))
	o.Set("a", json.RawMessage(`3`))
	o.Delete("b")
	o.Delete("missing")
	if v, ok := o.Get("a"); !ok || string(v) != "3" || o.Has("b") || len(o.Keys()) != 1 {
		t.Errorf("object = %+v", o)
	}
}

func TestStringAndKind(t *testing.T) {
	if b, _ := String("<a&b>"); string(b) != `"<a&b>"` {
		t.Errorf("String escapes HTML: %s", b)
	}
	for in, want := range map[string]string{` {}`: "object", `[1]`: "array", `"x"`: "string", `-1`: "number", `true`: "boolean", `null`: "null", ``: "invalid", `x`: "invalid"} {
		if got := Kind(json.RawMessage(in)); got != want {
			t.Errorf("Kind(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{`"a\u0026b"`: "a&b", ` "x" `: "x", `7`: "", `null`: "", ``: "", `"x`: ""} {
		if got := Unquote(json.RawMessage(in)); got != want {
			t.Errorf("Unquote(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEncodeHelpers(t *testing.T) {
	for _, tt := range []struct{ name, got, want string }{
		{"Quote", string(Quote("<a>\"")), `"<a>\""`},
		{"Strings", string(Strings([]string{"a", "<b>"})), `["a","<b>"]`},
		{"Strings nil", string(Strings(nil)), `null`},
		{"Strings empty", string(Strings([]string{})), `[]`},
		{"Array", string(Array([]json.RawMessage{json.RawMessage(`1`), json.RawMessage(`{"a": 2}`)})), `[1,{"a": 2}]`},
		{"Array empty", string(Array(nil)), `[]`},
		{"Compact", Compact(json.RawMessage(" { \"a\" : [1, 2] } ")), `{"a":[1,2]}`},
		{"Compact invalid", Compact(json.RawMessage(`{a: 1}`)), `{a: 1}`},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}
