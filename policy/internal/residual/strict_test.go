package residual

import (
	"strconv"
	"strings"
	"testing"
)

// TestStrict: what Strict accepts and refuses, and that its work holds
// its bounds on hostile input (deep nesting, many keys).
func TestStrict(t *testing.T) {
	deep := strings.Repeat(`{"a":`, MaxDepth) + `1` + strings.Repeat(`}`, MaxDepth)
	tooDeep := `{"a":` + strings.Repeat(`[`, 100000) + strings.Repeat(`]`, 100000) + `}`
	var many strings.Builder
	many.WriteString("{")
	for i := range 200000 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"k` + strconv.Itoa(i) + `":1`)
	}
	many.WriteString("}")
	for _, tc := range []struct{ name, in, why string }{
		{"empty", ``, ""},
		{"blank", " \n", ""},
		{"empty object", `{}`, ""},
		{"plain", `{"a":"x","b":[1,2.5,-0,1e400,{"c":null}],"d":true}`, ""},
		{"escaped keys that differ", `{"a":1,"\u0062":2}`, ""},
		{"keys equal only after a non-simple fold", `{"ss":1,"ß":2}`, ""},
		{"nested at the bound", deep, ""},
		{"not an object", `[1]`, "must be a JSON object"},
		{"a string", `"x"`, "must be a JSON object"},
		{"trailing value", `{"a":1} {"a":2}`, "more after the object"},
		{"trailing garbage", `{"a":1}x`, "more after the object"},
		{"trailing comma", `{"a":1,}`, "expected a string key"},
		{"duplicate", `{"a":1,"a":2}`, `duplicate key "a"`},
		{"escaped duplicate", `{"a":1,"\u0061":2}`, `duplicate key "a"`},
		{"nested duplicate", `{"o":[{"x":1,"x":1}]}`, `duplicate key "x"`},
		{"case variant", `{"path":"a","PATH":"b"}`, "differ only in case"},
		{"KELVIN SIGN", `{"k":1,"\u212A":2}`, "differ only in case"},
		{"long s", `{"s":1,"\u017F":2}`, "differ only in case"},
		{"lone surrogate", `{"a":"\ud800"}`, "surrogate"},
		{"reversed pair", `{"a":"\udc00\ud800"}`, "surrogate"},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", "UTF-8"},
		{"invalid UTF-8 in a key", "{\"\xc0\xaf\":1}", "UTF-8"},
		{"control character", "{\"a\":\"\x01\"}", "control"},
		{"leading zero", `{"a":01}`, "offset"},
		{"NaN", `{"a":NaN}`, "offset"},
		{"too deep", tooDeep, "nested too deeply"},
		{"many keys", many.String(), ""},
	} {
		err := Strict([]byte(tc.in))
		switch {
		case tc.why == "" && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.why != "" && (err == nil || !strings.Contains(err.Error(), tc.why)):
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.why)
		}
	}
}
