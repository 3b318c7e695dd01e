package natstool

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/miniopenclaw/tool"
)

// The hand-written codec of plain results agrees with encoding/json:
// what it encodes is byte for byte what json.Marshal writes, and what it
// decodes is what json.Unmarshal reads, error or not.
func FuzzResultJSON(f *testing.F) {
	for _, s := range []struct {
		output, errText, kind, structured string
		isError                           bool
	}{
		{"42", "", "", "42", false},
		{"", "boom", "tool_error", "", true},
		{"héllo wörld ✓", "", "", `{"a":"héllo wörld","b":[1,2.5e3,null,true]}`, false},
		{"a<b", "", "", `"a<b"`, false},
		{`say "hi"`, "", "", `{"q":"say \"hi\" \\ \u003c"}`, false},
		{"line\nbreak", "", "", "{ \"a\" : 1 }", false},
		{"\u2028", "", "", `"\u2028` + "\u2028" + `"`, false},
		{"\xff", "", "", `"\xff"`, false},
		{"", "", "denied", `{"a":`, true},
		{"x", "", "", `[[[{"a":[]}]],{}]`, false},
		{"x", "", "", `null`, false},
	} {
		f.Add(s.output, s.errText, s.kind, s.structured, s.isError)
	}
	f.Fuzz(func(t *testing.T, output, errText, kind, structured string, isError bool) {
		res := tool.Result{Output: output, Error: errText, Kind: tool.ErrorKind(kind), IsError: isError, Structured: json.RawMessage(structured)}
		got, ok := appendResult(nil, &res)
		want, err := json.Marshal(res)
		if err != nil {
			if ok {
				t.Fatalf("appendResult wrote %s for a result json.Marshal refuses: %v", got, err)
			}
			// The structured content is not JSON; the rest still has to agree.
			res.Structured = nil
			if want, err = json.Marshal(res); err != nil {
				t.Fatal(err)
			}
			got, ok = appendResult(nil, &res)
		}
		if ok && !bytes.Equal(got, want) {
			t.Fatalf("appendResult = %s, json.Marshal = %s", got, want)
		}
		var fromJSON tool.Result
		if err := json.Unmarshal(want, &fromJSON); err != nil {
			t.Fatal(err)
		}
		if fromUs, err := decodeResult(want); err != nil || !reflect.DeepEqual(fromUs, fromJSON) {
			t.Fatalf("decodeResult(%s) = %+v, %v; json.Unmarshal: %+v", want, fromUs, err, fromJSON)
		}
		// Arbitrary bytes too: the output used as a whole document, and the
		// structured content as the value of its member.
		checkDecode(t, []byte(output))
		checkDecode(t, []byte(`{"output":"x","structured":`+structured+`}`))
	})
}

// checkDecode compares decodeResult with json.Unmarshal on data.
func checkDecode(t *testing.T, data []byte) {
	t.Helper()
	var fromJSON tool.Result
	errJSON := json.Unmarshal(data, &fromJSON)
	fromUs, errUs := decodeResult(data)
	if (errJSON == nil) != (errUs == nil) {
		t.Fatalf("decodeResult(%q): error %v, json.Unmarshal: %v", data, errUs, errJSON)
	}
	if errJSON == nil && !reflect.DeepEqual(fromUs, fromJSON) {
		t.Fatalf("decodeResult(%q) = %+v, json.Unmarshal: %+v", data, fromUs, fromJSON)
	}
}

// Documents the plain path must leave to encoding/json, and ones it must
// read the same.
func TestDecodeResultAgreesWithJSON(t *testing.T) {
	for _, doc := range []string{
		`{"output":"42","error":"","is_error":false}`,
		` { "output" : "42" , "is_error" : true , "kind" : "timeout" } `,
		`{}`,
		`{"Output":"case folded"}`,
		`{"output":"a","output":"b"}`,
		`{"output":"esc\u00e9"}`,
		`{"output":"x","structured":{"a":1}}`,
		`{"output":"x","parts":[{"type":"text","text":"t"}]}`,
		`{"output":"x","metadata":{"k":"v"}}`,
		`{"output":null}`,
		`{"is_error":null}`,
		`{"is_error":1}`,
		`{"output":"x"} trailing`,
		`{"output":"x",}`,
		`{"output":"x"`,
		`[]`,
		``,
		`{"output":"` + "\xff" + `"}`,
		`{"output":"tab` + "\t" + `"}`,
		`{"is_error":truex}`,
		`{"structured":42}`,
		`{"structured":42,"output":"a"}`,
		`{"structured": {"a" : [1, "}]"] } ,"output":"a"}`,
		`{"structured":"a\"b}"}`,
		`{"structured":null}`,
		`{"structured":1,"structured":2}`,
		`{"structured":}`,
		`{"structured":]}`,
		`{"structured":42`,
		`{"structured":{"a":1}`,
		`{"structured":{"a":01}}`,
		`{"structured":[1,]}`,
		`{"structured":tru}`,
		`{"structured":"` + "\xff" + `"}`,
		`{"Structured":1}`,
	} {
		checkDecode(t, []byte(doc))
	}
}

// TestDecodeResultAllocs checks that decoding the commonest result, one
// plain output, makes only the output's string: the keys are compared as
// bytes, and the result stays off the heap.
func TestDecodeResultAllocs(t *testing.T) {
	data := []byte(`{"output":"42","kind":"tool_error"}`)
	var res tool.Result
	if n := testing.AllocsPerRun(100, func() {
		var err error
		if res, err = decodeResult(data); err != nil || res.Output != "42" || res.Kind != tool.KindToolError {
			t.Fatalf("%v %+v", err, res)
		}
	}); n != 2 {
		t.Errorf("decodeResult allocated %v times, want 2 (the output and the kind)", n)
	}
}
