package gen

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lines turns comment text (without the // markers) into docLines
// numbered from 1.
func lines(text string) []docLine {
	var out []docLine
	for i, t := range strings.Split(text, "\n") {
		out = append(out, docLine{t, i + 1})
	}
	return out
}

func TestParseFuncDoc(t *testing.T) {
	for _, tt := range []struct {
		name string
		doc  string
		want funcDoc
	}{
		{
			name: "summary only",
			doc:  "F does a thing\nin two lines.\n\nMore text.",
			want: funcDoc{summary: "F does a thing in two lines."},
		},
		{
			name: "go style list",
			doc:  "F.\n\nParameters:\n  - city: the city\n    continued\n  - unit: the unit (default: celsius)",
			want: funcDoc{summary: "F.", params: []paramDoc{
				{name: "city", text: "the city continued", line: 4},
				{name: "unit", text: "the unit (default: celsius)", line: 6, def: "celsius", hasDef: true},
			}},
		},
		{
			name: "header right after the summary",
			doc:  "F.\nParams:\n  - a: x",
			want: funcDoc{summary: "F.", params: []paramDoc{{name: "a", text: "x", line: 3}}},
		},
		{
			name: "google style as gofmt leaves it",
			doc:  "F.\n\nArgs:\n\n\tcity (str): the city\n\t    continued\n\tn: count (optional)\n\nReturns x.",
			want: funcDoc{summary: "F.", params: []paramDoc{
				{name: "city", text: "the city continued", line: 5},
				{name: "n", text: "count (optional)", line: 7, optional: true},
			}},
		},
		{
			name: "google style before gofmt",
			doc:  "F.\n\nArguments:\n    city: the city\n        continued\n    n: count",
			want: funcDoc{summary: "F.", params: []paramDoc{
				{name: "city", text: "the city continued", line: 4},
				{name: "n", text: "count", line: 6},
			}},
		},
		{
			name: "bullets and numbers",
			doc:  "F.\n\nParameters:\n  * a: x\n  + b: y\n  1. c: z\n  2) d:",
			want: funcDoc{summary: "F.", params: []paramDoc{
				{name: "a", text: "x", line: 4},
				{name: "b", text: "y", line: 5},
				{name: "c", text: "z", line: 6},
				{name: "d", text: "", line: 7},
			}},
		},
		{
			name: "the list ends at an unindented line",
			doc:  "F.\n\nParameters:\n  - a: x\nnote: not a parameter",
			want: funcDoc{summary: "F.", params: []paramDoc{{name: "a", text: "x", line: 4}}},
		},
		{
			name: "defaults in JSON",
			doc:  "F.\n\nParameters:\n  - a: x (DEFAULT: [\"a)\", {\"b\": 1}])\n  - b: y (default: \"q)\")",
			want: funcDoc{summary: "F.", params: []paramDoc{
				{name: "a", text: `x (DEFAULT: ["a)", {"b": 1}])`, line: 4, def: `["a)", {"b": 1}]`, hasDef: true},
				{name: "b", text: `y (default: "q)")`, line: 5, def: `"q)"`, hasDef: true},
			}},
		},
		{
			name: "a URL in a continuation is no entry",
			doc:  "F.\n\nParameters:\n  - url: where, e.g.\n    http://x.example",
			want: funcDoc{summary: "F.", params: []paramDoc{{name: "url", text: "where, e.g. http://x.example", line: 4}}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := parseFuncDoc(lines(tt.doc))
			if len(errs) > 0 {
				t.Fatalf("parseFuncDoc: errors %v", errs)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(funcDoc{}, paramDoc{})); diff != "" {
				t.Errorf("parseFuncDoc(%q) mismatch (-want +got):\n%s", tt.doc, diff)
			}
		})
	}
}

func TestParseFuncDocErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		doc  string
		want []lineError
	}{
		{"entry without a name", "F.\n\nParameters:\n  - the city", []lineError{{4, `parameter list entry must look like "name: description"`}}},
		{"unclosed default", "F.\n\nArgs:\n  a: x (default: 1", []lineError{{4, `parameter a: "(default:" has no closing ")"`}}},
		{"empty default", "F.\n\nArgs:\n  a: x (default: )", []lineError{{4, `parameter a: empty (default: ) value`}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := parseFuncDoc(lines(tt.doc))
			if diff := cmp.Diff(tt.want, errs, cmp.AllowUnexported(lineError{})); diff != "" {
				t.Errorf("parseFuncDoc(%q) errors (-want +got):\n%s", tt.doc, diff)
			}
		})
	}
}

// FuzzParseFuncDoc checks that no doc comment makes the parser panic, and
// that every entry it returns names an identifier.
func FuzzParseFuncDoc(f *testing.F) {
	for _, s := range []string{
		"F.\n\nParameters:\n  - a: x (default: 1)",
		"F.\n\nArgs:\n\n\ta (int): x\n\t    y",
		"Args:\n\t(default:",
		"Parameters:\n  - a: (default: \"\\",
		"Parameters:\n  - a: (default: [[[)",
		"\n\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		d, _ := parseFuncDoc(lines(doc))
		for _, p := range d.params {
			if p.name == "" || strings.ContainsAny(p.name, " :\t") {
				t.Errorf("entry name %q is not an identifier", p.name)
			}
		}
	})
}

func TestNames(t *testing.T) {
	for _, tt := range []struct{ in, snake, exported, unexported string }{
		{"GetWeather", "get_weather", "GetWeather", "getWeather"},
		{"city", "city", "City", "city"},
		{"userID", "user_id", "UserID", "userID"},
		{"HTTPServer", "http_server", "HTTPServer", "httpServer"},
		{"Base64Data", "base64_data", "Base64Data", "base64Data"},
		{"max_price", "max_price", "Max_price", "max_price"},
		{"ID", "id", "ID", "id"},
		{"_x", "_x", "P_x", "_x"},
	} {
		if got := snake(tt.in); got != tt.snake {
			t.Errorf("snake(%q) = %q, want %q", tt.in, got, tt.snake)
		}
		if got := exported(tt.in); got != tt.exported {
			t.Errorf("exported(%q) = %q, want %q", tt.in, got, tt.exported)
		}
		if got := unexported(tt.in); got != tt.unexported {
			t.Errorf("unexported(%q) = %q, want %q", tt.in, got, tt.unexported)
		}
	}
}
