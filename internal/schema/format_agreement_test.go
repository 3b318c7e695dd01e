package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/internal/jsonschema"
)

// formatValues are, for each format the schema of a Go type can carry,
// values on which checkers are known to differ: RFC 3339's lowercase t
// and z, leap seconds, offsets, fractions, dates that do not exist,
// addresses with zones, and so on. Formats that neither side checks
// (duration, hostname, …) are annotations: both take every string.
var formatValues = map[string][]string{
	"date-time": {
		"2026-12-24T10:00:00Z", "2026-12-24t10:00:00z", "2026-12-24T10:00:00z", "2026-12-24t10:00:00Z",
		"2026-12-24T10:00:00.5Z", "2026-12-24T10:00:00.123456789Z", "2026-12-24T10:00:00.1234567891234z",
		"2026-12-24T10:00:00+01:00", "2026-12-24T10:00:00-00:00", "2026-12-24T10:00:00+23:59",
		"2026-12-24T10:00:00+24:00", "2026-12-24T10:00:00+01:60", "2016-12-31T23:59:60Z", "2016-12-31t23:59:60z",
		"2016-12-31T22:59:60-01:00", "2016-12-31T23:59:60.5Z", "2026-12-24T23:59:60Z", "2026-12-24 10:00:00Z",
		"2026-12-24T10:00:00", "2026-12-24T10:00Z", "2026-02-29T10:00:00Z", "2024-02-29T10:00:00Z",
		"0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2026-12-24T24:00:00Z", "2026-12-24T10:60:00Z",
		"2026-12-24T10:00:00.Z", "2026-12-24T10:00:00,5Z", "2026-12-24T10:00:00+0100", "2026-12-24T10:00:00+01",
		"", "2026-12-24T10:00:00Z ", "\uff12026-12-24T10:00:00Z", "2026-12-24T10:00:00\u00a0Z", "+2026-12-24T10:00:00Z",
	},
	"date":  {"2026-12-24", "2024-02-29", "2026-02-29", "2026-13-01", "2026-1-01", "20261224", "2026-12-24T00:00:00Z", "0000-01-01"},
	"time":  {"10:00:00Z", "10:00:00z", "10:00:00.5+01:00", "23:59:60Z", "22:59:60-01:00", "10:00:00", "24:00:00Z", "10:00:00+24:00"},
	"email": {"a@example.com", "a@b", "@b.com", "a@", "a b@c.com", "a@[127.0.0.1]", `"a b"@c.com`, "a..b@c.com", "é@é.fr"},
	"uri":   {"https://example.com/x", "urn:isbn:0451450523", "/relative", "http://[::1]/", "ht tp://x", "https://example.com/ s", "mailto:a@b", "x:", "1http://x"},
	"uuid": {"123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000", "123e4567e89b12d3a456426614174000",
		"{123e4567-e89b-12d3-a456-426614174000}", "123e4567-e89b-12d3-a456-42661417400g"},
	"ipv4":     {"127.0.0.1", "256.0.0.1", "01.2.3.4", "1.2.3", "::1", "1.2.3.4 ", "0.0.0.0"},
	"ipv6":     {"::1", "2001:db8::1", "::ffff:127.0.0.1", "fe80::1%eth0", "127.0.0.1", "1:2:3:4:5:6:7:8:9", "[::1]", "::"},
	"duration": {"P1D", "PT1H", "1h", "P", "not a duration"},
	"hostname": {"example.com", "-bad-.com", "a_b", ""},
	"regex":    {"^a+$", "(", "\\"},
	"x-custom": {"anything"},
}

// TestFormatsAgree runs every value of formatValues through the typed
// decoder (a string field with that format tag, and a time.Time for
// date-time) and through the generic validator on the schema the same
// type renders: they must take and refuse the same values, and the
// decoder's message must name the real cause.
func TestFormatsAgree(t *testing.T) {
	type binding struct {
		name string
		typ  reflect.Type
	}
	for format, values := range formatValues {
		bindings := []binding{{"string format:" + format, reflect.StructOf([]reflect.StructField{{
			Name: "V", Type: reflect.TypeFor[string](), Tag: reflect.StructTag(`json:"v" format:"` + format + `"`)}})}}
		if format == "date-time" {
			bindings = append(bindings,
				binding{"time.Time", reflect.TypeFor[struct {
					V time.Time `json:"v"`
				}]()},
				binding{"*time.Time", reflect.TypeFor[struct {
					V *time.Time `json:"v"`
				}]()})
		}
		for _, b := range bindings {
			c, err := For(b.typ, false)
			if err != nil {
				t.Fatalf("%s: %v", b.name, err)
			}
			s, err := jsonschema.Compile(c.Schema())
			if err != nil {
				t.Fatalf("%s: schema %s: %v", b.name, c.Schema(), err)
			}
			for _, value := range values {
				lit, _ := json.Marshal(value)
				data := []byte(`{"v":` + string(lit) + `}`)
				dv, derr := c.Decode(data, reflect.New(b.typ).Elem(), 64)
				if derr != nil {
					t.Fatalf("%s: Decode(%s): %v", b.name, data, derr)
				}
				_, jv, jerr := s.Validate(data, jsonschema.Limits{})
				if jerr != nil {
					t.Fatalf("%s: Validate(%s): %v", b.name, data, jerr)
				}
				if (len(dv) == 0) != (len(jv) == 0) {
					t.Errorf("%s %s: decoder %s, validator %s", b.name, data, verdict(dv), verdictJS(jv))
					continue
				}
				leap := b.typ.Field(0).Type != reflect.TypeFor[string]() && len(value) >= 19 && value[17:19] == "60"
				for _, v := range dv {
					if mentions := strings.Contains(v.Hint+v.Expected, "leap second"); mentions != leap {
						t.Errorf("%s %s: message %+v; a leap second is the cause: %v", b.name, data, v, leap)
					}
				}
			}
		}
	}
}

func verdict(vs []Violation) string {
	if len(vs) == 0 {
		return "accepts"
	}
	return "refuses (" + vs[0].Expected + "; " + vs[0].Hint + ")"
}

func verdictJS(vs []jsonschema.Violation) string {
	if len(vs) == 0 {
		return "accepts"
	}
	return "refuses (" + vs[0].String() + ")"
}
