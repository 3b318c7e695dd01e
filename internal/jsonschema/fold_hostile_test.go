package jsonschema

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// foldSchema declares n properties in a definition nothing refers to,
// and unevaluatedProperties, which the external validator evaluates.
func foldSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"p0":{}},"unevaluatedProperties":true,"$defs":{"d":{"properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":true`, i)
	}
	b.WriteString(`}}}}`)
	return b.String()
}

// foldInstance holds n keys no property declares, nested below one that does.
func foldInstance(n int) string {
	var b strings.Builder
	b.WriteString(`{"p0":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"q%d":""`, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// TestFoldedKeysExternalIndexed: with CaseSensitive (every registered
// schema), a schema the external validator evaluates has every key of the
// instance, at any depth, looked up among all the property names it
// declares ignoring case. That lookup scanned the names one by one: a
// server's schema of 4,000 names and arguments of 85,000 keys (1 MB) made
// 3.4·10^8 comparisons, which no budget counted. The control counts the
// comparisons the scan makes, from the data; the defence is an index, one
// lookup a key.
func TestFoldedKeysExternalIndexed(t *testing.T) {
	const names, keys = 4_000, 85_000
	schema, inst := foldSchema(names), foldInstance(keys)
	if len(schema) > 256<<10 || len(inst) > 1<<20 {
		t.Fatalf("schema %d bytes, instance %d: over the import or argument bounds", len(schema), len(inst))
	}
	s, err := Compile([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	s = s.CaseSensitive()
	if s.ext == nil || s.extNames == nil {
		t.Fatal("the schema is not evaluated by the external validator")
	}
	// Control: a scan compares each key that is not a name with every name.
	if scans := int64(keys) * int64(len(s.extNames.props)); scans < 3e8 {
		t.Fatalf("control: %d comparisons", scans)
	}
	if s.extNames.foldIndex == nil {
		t.Fatal("the names of a schema the external validator evaluates have no fold index: each key scans them all")
	}
	// The index finds what the scan finds.
	for _, key := range []string{"P1", "p1", "Q1", "P3999", "p4000", "ſ", "Pſ"} {
		scan := &node{props: s.extNames.props}
		want, _ := scan.foldMatch([]byte(key), nil)
		got, _ := s.extNames.foldMatch([]byte(key), nil)
		if got != want {
			t.Errorf("foldMatch(%q) = %q, the scan finds %q", key, got, want)
		}
	}
	_, vs, err := s.Validate([]byte(`{"P1":0,"p0":{"P2":1}}`), Limits{})
	if err != nil || len(vs) != 2 {
		t.Errorf("got %v, %v; want the two case-variant keys refused", vs, err)
	}
	if _, vs, err := s.Validate([]byte(inst), Limits{}); err != nil || len(vs) != 0 {
		t.Errorf("got %v, %v", vs, err)
	}
}

// TestExternalCompileBounded: the external validator's compiler works in
// time that grows with the square of a schema's subschemas (20,000 took
// 8 s). A schema it would evaluate is refused past maxExternalNodes,
// before that compiler starts; the control is the count of subschemas, the
// same schema without the keyword that needs the external validator
// compiles.
func TestExternalCompileBounded(t *testing.T) {
	big := foldSchema(maxExternalNodes + 1)
	if _, err := Compile([]byte(strings.Replace(big, `"unevaluatedProperties":true,`, "", 1))); err != nil {
		t.Fatalf("control: without unevaluatedProperties: %v", err)
	}
	_, err := Compile([]byte(big))
	if err == nil || !strings.Contains(err.Error(), "more than 4096 subschemas") {
		t.Fatalf("got %v, want a SchemaError naming the bound", err)
	}
	if _, err := Compile([]byte(foldSchema(maxExternalNodes - 8))); err != nil {
		t.Fatalf("under the bound: %v", err)
	}
}

// TestExternalEstimateCountsText: the estimate made before the external
// validator starts counted each value once per schema that applies to it,
// whatever its length, and each pattern once for the whole instance; but
// each of those schemas may read a string whole (its length, a format, a
// pattern). 2,000 schemas applied to a 1 MB string took 15 s for
// "format":"uri", 4 s for maxLength. The control is the old estimate,
// within the budget, against the bytes read, from the data; the defence
// counts the text each applying schema may read.
func TestExternalEstimateCountsText(t *testing.T) {
	in := `"` + strings.Repeat("a", 1<<20-10) + `"`
	for _, kw := range []string{`"maxLength":2000000`, `"format":"uri"`, `"pattern":"^a"`} {
		doc := `{"allOf":[` + strings.TrimSuffix(strings.Repeat(`{"$ref":"#/$defs/s"},`, 2000), ",") + `],"$defs":{"s":{` + kw + `}},"unevaluatedItems":false}`
		s, err := CompileWith([]byte(doc), Options{AssertFormat: true})
		if err != nil {
			t.Fatal(err)
		}
		if s.ext == nil || s.extFanout < 2000 {
			t.Fatalf("%s: not evaluated by the external validator (fan-out %g)", kw, s.extFanout)
		}
		old := 3*s.extFanout + float64(s.extPatterns)*float64(len(in))/64
		if reads := s.extFanout * float64(len(in)); old > extBaseSteps || reads < 1e9 {
			t.Fatalf("control: old estimate %g (budget %d), %g bytes read", old, extBaseSteps, reads)
		}
		if _, _, err := s.Validate([]byte(in), Limits{}); !errors.Is(err, ErrTooComplex) {
			t.Errorf("%s: got %v, want ErrTooComplex before the external validator starts", kw, err)
		}
		// Applied once, the string is checked.
		once, err := CompileWith([]byte(`{`+kw+`,"unevaluatedItems":false}`), Options{AssertFormat: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := once.Validate([]byte(in), Limits{}); err != nil {
			t.Errorf("%s applied once to 1 MB: %v", kw, err)
		}
	}
}
