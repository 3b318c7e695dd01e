package jsonschema

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// requiredSchema applies a list of n required names to every item.
func requiredSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"items":{"required":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"r%d"`, i)
	}
	b.WriteString(`]}}`)
	return b.String()
}

// emptyObjects is an array of n empty objects.
func emptyObjects(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("{},", n), ",") + "]"
}

// TestRequiredListsCharged: each object is checked against the whole list
// of its schema's required names (and dependencies), whatever it holds,
// and that was charged as one step; each missing name also made its
// message before the violation bound threw it away. A server's schema of
// 25,000 required names (214 KB) and 30,000 empty objects (90 KB) took
// 2 minutes and allocated 35 GB. The control counts, from the data, the
// name checks the old charge let through; the defence charges the list
// and makes a message only when it is kept.
func TestRequiredListsCharged(t *testing.T) {
	const names, objects = 25_000, 30_000
	s, err := Compile([]byte(requiredSchema(names)))
	if err != nil {
		t.Fatal(err)
	}
	in := emptyObjects(objects)
	// Control: charged a step or two an object, the instance fits the
	// budget, and its checks number 7.5·10^8.
	if oldCharge, budget := 2*objects, baseSteps; oldCharge > budget || int64(names)*objects < 7e8 {
		t.Fatalf("control: old charge %d, budget %d", oldCharge, budget)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var v validator
	_, _, err = s.validate(&v, []byte(in), Limits{})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooComplex) {
		t.Errorf("got %v, want ErrTooComplex", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<20 {
		t.Errorf("allocated %d bytes", got)
	}
	// A few objects are checked, and say what is missing.
	_, vs, err := s.Validate([]byte(emptyObjects(3)), Limits{})
	if err != nil || len(vs) != MaxViolations+1 || !strings.Contains(vs[MaxViolations].Got, "more problems") {
		t.Fatalf("got %d violations, %v", len(vs), err)
	}
	if want := 3*names - MaxViolations; !strings.Contains(vs[MaxViolations].Got, fmt.Sprint(want)) {
		t.Errorf("the last violation says %q, want %d more", vs[MaxViolations].Got, want)
	}
}

// TestDefaultsReadOnlyTheirProperties: adding defaults read every
// property of an object's schema, for each object, to find the few with a
// default, and charged none of it: a server's schema of 20,000 properties
// beside one default and 10,000 empty objects (30 KB) took 2 s, a
// megabyte of them a minute. The control counts those reads from the
// data; the defence keeps, at compile time, the list of the properties
// that have a default, and charges reading it.
func TestDefaultsReadOnlyTheirProperties(t *testing.T) {
	const props, objects = 20_000, 10_000
	var b strings.Builder
	b.WriteString(`{"items":{"properties":{"a":{"default":1}`)
	for i := range props {
		fmt.Fprintf(&b, `,"p%d":{}`, i)
	}
	b.WriteString(`,"z":{"default":"zz"}}}}`)
	s, err := Compile([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	// Control: reading every property of each object is 2·10^8 reads,
	// over a hundred times the budget of the instance.
	tape := 2 + objects
	if reads, budget := int64(props)*objects, baseSteps+stepsPerNode*tape; reads < 100*int64(budget) {
		t.Fatalf("control: %d reads, budget %d", reads, budget)
	}
	items := s.root.items
	if items == nil || len(items.defProps) != 2 || items.props[items.defProps[0]].name != "a" || items.props[items.defProps[1]].name != "z" {
		t.Fatalf("the items' schema lists %v as its properties with a default, want a and z", items.defProps)
	}
	var v validator
	out, vs, err := s.validate(&v, []byte(emptyObjects(objects)), Limits{})
	if err != nil || len(vs) != 0 {
		t.Fatal(vs, err)
	}
	if want := "[" + strings.TrimSuffix(strings.Repeat(`{"a":1,"z":"zz"},`, objects), ",") + "]"; string(out) != want {
		t.Errorf("defaults: %.80s…", out)
	}
}

// TestStringChecksCharged: counting a string's characters (minLength,
// maxLength) and checking its format read the whole string each time a
// schema applies, charged a step each. A server's schema applying one
// definition 4,900 times (a $ref repeated in an allOf, within the 10,000
// subschemas one value may meet) to a 1 MB string took 21 s for
// "format":"uri", 3 s for maxLength. The control counts the bytes read
// from the data; the defence charges them.
func TestStringChecksCharged(t *testing.T) {
	const times = 4900
	in := `"` + strings.Repeat("a", 1<<20-10) + `"`
	if reads, budget := int64(times)*int64(len(in)), baseSteps+stepsPerNode; reads < 1000*int64(budget) || times > budget {
		t.Fatalf("control: %d bytes read for %d steps charged, budget %d", reads, times, budget)
	}
	for _, kw := range []string{`"maxLength":2000000`, `"minLength":1`, `"format":"uri"`, `"format":"email"`, `"format":"date-time"`} {
		doc := `{"allOf":[` + strings.TrimSuffix(strings.Repeat(`{"$ref":"#/$defs/s"},`, times), ",") + `],"$defs":{"s":{` + kw + `}}}`
		s, err := Compile([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		var v validator
		if _, _, err := s.validate(&v, []byte(in), Limits{}); !errors.Is(err, ErrTooComplex) {
			t.Errorf("%s: got %v, want ErrTooComplex", kw, err)
		}
		if read := int64(v.steps) * stringBytesPerStep; read > 2*int64(v.maxSteps)*stringBytesPerStep {
			t.Errorf("%s: %d steps for a budget of %d", kw, v.steps, v.maxSteps)
		}
		// Applied once, the same string is checked.
		once, err := Compile([]byte(`{` + kw + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := once.Validate([]byte(in), Limits{}); err != nil {
			t.Errorf("%s applied once to 1 MB: %v", kw, err)
		}
	}
}

// TestNumberChecksCharged: a number's checks (type integer, the bounds,
// enum and const, which compare by value) read its whole literal each time
// a schema applies, charged a step each. A definition applied 4,900 times
// to a number of a million digits took 15 s ("enum":[1,2], and type
// integer on a fraction). The control counts the bytes read from the
// data; the defence charges them.
func TestNumberChecksCharged(t *testing.T) {
	const times = 4900
	num := "7" + strings.Repeat("1234567", 1<<20/7-1)
	if reads, budget := int64(times)*int64(len(num)), baseSteps+stepsPerNode; reads < 1000*int64(budget) || times > budget {
		t.Fatalf("control: %d bytes read for %d steps charged, budget %d", reads, times, budget)
	}
	for _, c := range []struct{ kw, in string }{
		{`"minimum":0`, num}, {`"exclusiveMinimum":5.5`, num}, {`"type":"integer"`, num + ".5"},
		{`"enum":[1,2]`, num}, {`"const":7`, num},
	} {
		doc := `{"allOf":[` + strings.TrimSuffix(strings.Repeat(`{"$ref":"#/$defs/s"},`, times), ",") + `],"$defs":{"s":{` + c.kw + `}}}`
		s, err := Compile([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		var v validator
		if _, _, err := s.validate(&v, []byte(c.in), Limits{}); !errors.Is(err, ErrTooComplex) {
			t.Errorf("%s: got %v, want ErrTooComplex", c.kw, err)
		}
		// Applied once, the same number is checked.
		once, err := Compile([]byte(`{` + c.kw + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := once.Validate([]byte(c.in), Limits{}); err != nil {
			t.Errorf("%s applied once to a million digits: %v", c.kw, err)
		}
	}
}

// TestUniqueItemsCharged: uniqueItems hashes every item's text at each
// application, and was charged one step a value: 4,900 applications to
// 100 distinct strings of 10 KB (1 MB) stayed within the budget and hashed
// 4.9 GB (0.5 s), and to 100,000 numbers took a second. The control is the
// old charge against the bytes read, from the data; the defence charges
// the text too.
func TestUniqueItemsCharged(t *testing.T) {
	const times = 4900
	var b strings.Builder
	b.WriteString("[")
	for i := range 100 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"%s%03d"`, strings.Repeat("x", 10_000), i)
	}
	b.WriteString("]")
	in := b.String()
	budget := baseSteps + stepsPerNode*102
	if old, reads := times*(2+101), int64(times)*int64(len(in)); old > budget || reads < 4e9 {
		t.Fatalf("control: old charge %d (budget %d), %d bytes hashed", old, budget, reads)
	}
	doc := `{"allOf":[` + strings.TrimSuffix(strings.Repeat(`{"$ref":"#/$defs/s"},`, times), ",") + `],"$defs":{"s":{"uniqueItems":true}}}`
	s, err := Compile([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var v validator
	if _, _, err := s.validate(&v, []byte(in), Limits{}); !errors.Is(err, ErrTooComplex) {
		t.Errorf("got %v, want ErrTooComplex", err)
	}
	once, err := Compile([]byte(`{"uniqueItems":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, vs, err := once.Validate([]byte(in), Limits{}); err != nil || len(vs) != 0 {
		t.Errorf("applied once: %v, %v", vs, err)
	}
}
