package jsonschema

import (
	"strings"
	"testing"

	santhosh "github.com/santhosh-tekuri/jsonschema/v6"
)

// oracleURL is the synthetic address the schemas are registered under, so
// no message of the other validator can name a host path.
const oracleURL = "https://clawtool.invalid/schema.json"

// differentialExceptions lists where this package and the oracle
// (santhosh-tekuri/jsonschema v6.0.3, draft 2020-12, formats asserted)
// disagree on purpose, keyed by case name and instance.
var differentialExceptions = map[string]string{
	// Draft 7 tuple items are accepted here as a courtesy to older
	// generators; under draft 2020-12 the oracle reads "items" as a schema
	// and "additionalItems" as unknown.
	"draft7 tuple items": "oracle refuses the schema",
	// RFC 5321 requires a non-empty local part; the oracle accepts none.
	`format email "@example.com"`: "oracle accepts an empty local part",
}

// oracle compiles schema with the other validator.
func oracle(t *testing.T, schema string) (*santhosh.Schema, error) {
	t.Helper()
	doc, err := santhosh.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := santhosh.NewCompiler()
	c.DefaultDraft(santhosh.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(oracleURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(oracleURL)
}

func oracleValid(t *testing.T, s *santhosh.Schema, instance string) bool {
	t.Helper()
	v, err := santhosh.UnmarshalJSON(strings.NewReader(instance))
	if err != nil {
		t.Fatalf("oracle cannot read %s: %v", instance, err)
	}
	return s.Validate(v) == nil
}

// TestDifferential checks that this package and an independent
// validator agree on valid/invalid over the keyword table and the message
// cases.
func TestDifferential(t *testing.T) {
	type pair struct{ name, schema, instance string }
	var pairs []pair
	for _, tc := range keywordCases {
		for _, in := range append(append([]string{}, tc.valid...), tc.bad...) {
			pairs = append(pairs, pair{tc.name, tc.schema, in})
		}
	}
	for _, tc := range messageCases {
		pairs = append(pairs, pair{tc.name, tc.schema, tc.in})
	}
	ours := map[string]*Schema{}
	theirs := map[string]*santhosh.Schema{}
	agreed := 0
	for _, p := range pairs {
		if _, ok := differentialExceptions[p.name+" "+p.instance]; ok {
			continue
		}
		if _, ok := differentialExceptions[p.name]; ok {
			continue
		}
		s, ok := ours[p.schema]
		if !ok {
			var err error
			if s, err = Compile([]byte(p.schema)); err != nil {
				t.Fatalf("%s: Compile: %v", p.name, err)
			}
			ours[p.schema] = s
		}
		o, ok := theirs[p.schema]
		if !ok {
			var err error
			if o, err = oracle(t, p.schema); err != nil {
				t.Errorf("%s: the oracle refuses the schema: %v", p.name, err)
				theirs[p.schema] = nil
				continue
			}
			theirs[p.schema] = o
		}
		if o == nil {
			continue
		}
		_, vs, err := s.Validate([]byte(p.instance), Limits{})
		if err != nil {
			continue // not strict JSON: the oracle's reader is lenient
		}
		if got, want := len(vs) == 0, oracleValid(t, o, p.instance); got != want {
			t.Errorf("%s: %s: valid here %v, oracle %v (violations %v)", p.name, p.instance, got, want, vs)
			continue
		}
		agreed++
	}
	t.Logf("%d schema × instance pairs agree", agreed)
}
