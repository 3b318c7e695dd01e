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
			name: "non-ASCII text whose lower case is longer",
			doc:  "F.\n\nParameters:\n  - a: ȺȺȺȺȺȺȺȺȺȺȺȺ (default: 1)",
			want: funcDoc{summary: "F.", params: []paramDoc{{name: "a", text: "ȺȺȺȺȺȺȺȺȺȺȺȺ (default: 1)", line: 4, def: "1", hasDef: true}}},
		},
		{
			name: "non-ASCII text whose lower case is shorter",
			doc:  "F.\n\nParameters:\n  - a: \u212a\u212a\u212a\u212a (default: 5)",
			want: funcDoc{summary: "F.", params: []paramDoc{{name: "a", text: "\u212a\u212a\u212a\u212a (default: 5)", line: 4, def: "5", hasDef: true}}},
		},
		{
			name: "a marker only Unicode folding matches is no marker",
			doc:  "F.\n\nParameters:\n  - a: (\u212aefault: 5) (De\u017fault: 6) (Optional)",
			want: funcDoc{summary: "F.", params: []paramDoc{{name: "a", text: "(\u212aefault: 5) (De\u017fault: 6) (Optional)", line: 4, optional: true}}},
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

func TestDescription(t *testing.T) {
	for _, tt := range []struct{ fn, summary, want string }{
		{"GetWeather", "GetWeather reports the current weather in a city.", "Reports the current weather in a city."},
		{"GetWeather", "GetWeather  returns the weather", "Returns the weather."},
		{"GetWeather", "Reports the weather!", "Reports the weather!"},
		{"GetWeather", "Is it raining?", "Is it raining?"},
		{"GetWeather", "GetWeatherNow reports it.", "GetWeatherNow reports it."}, // another name
		{"Ping", "Ping is a no-op", "A no-op."},
		{"Ping", "Ping isolates nothing.", "Isolates nothing."},
		{"GetWeather", "GetWeather.", "GetWeather."},
		{"GetWeather", "GetWeather is", "GetWeather is."},
		{"GetWeather", "GetWeather", "GetWeather."},
		{"Ölstand", "Ölstand élève le niveau", "Élève le niveau."},
	} {
		if got := description(tt.fn, tt.summary); got != tt.want {
			t.Errorf("description(%q, %q) = %q, want %q", tt.fn, tt.summary, got, tt.want)
		}
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

// FuzzParseFuncDoc checks that no doc comment makes the parser panic, that
// every entry it returns names an identifier, and that a default it reads
// is what follows a "(default:" marker in the entry's text. Crashers it
// found are kept in testdata/fuzz/FuzzParseFuncDoc.
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
			if p.hasDef && !followsMarker(p.text, p.def) {
				t.Errorf("entry %q: default %q does not follow a (default: marker", p.text, p.def)
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

// followsMarker reports whether def follows "(default:", in any ASCII
// case, and white space somewhere in text.
func followsMarker(text, def string) bool {
	const marker = "(default:"
	for i := 0; i+len(marker) <= len(text); i++ {
		if strings.EqualFold(text[i:i+len(marker)], marker) && isASCII(text[i:i+len(marker)]) &&
			strings.HasPrefix(strings.TrimSpace(text[i+len(marker):]), def) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
