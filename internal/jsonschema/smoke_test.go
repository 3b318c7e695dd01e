package jsonschema

import "testing"

func TestSmoke(t *testing.T) {
	s, err := Compile([]byte(flightsSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		flightsInput,
		`{"from":"sfo","to":"JFK","date":"2026-13-24","passengers":12,"cabin":"premium","rm":true,"Airlines":["UA"]}`,
		`{"from":"SFO","to":"JFK","date":"2026-12-24"}`,
		`{"from":5,"to":null}`,
		`{"from":"SFO","from":"JFK"}`,
	} {
		out, vs, err := s.Validate([]byte(in), Limits{})
		t.Logf("%s\n  out=%s err=%v", in, out, err)
		for _, v := range vs {
			t.Logf("  %s", v)
		}
	}
}

const flightsSchema = `{
  "type": "object",
  "properties": {
    "from": {"type": "string", "pattern": "^[A-Z]{3}$", "description": "IATA code"},
    "to": {"type": "string", "pattern": "^[A-Z]{3}$"},
    "date": {"type": "string", "format": "date"},
    "passengers": {"type": "integer", "minimum": 1, "maximum": 9, "default": 1},
    "cabin": {"type": "string", "enum": ["economy", "business", "first"]},
    "flexible": {"type": "boolean"},
    "max_price": {"type": "number"},
    "airlines": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["from", "to", "date"],
  "additionalProperties": false
}`

const flightsInput = `{"from":"SFO","to":"JFK","date":"2026-12-24","passengers":2,"cabin":"business","airlines":["UA","DL"]}`
