package jsonschema

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestHostileSchemas compiles and uses schemas and instances built to be
// expensive. Each must be refused, or handled within the work budget of
// Validate and with memory proportional to its input. The test bounds
// work, never time: the budget counts the steps Validate takes (regular
// expression matches weighed by their input's length), and memory is
// what the runtime counted as allocated.
func TestHostileSchemas(t *testing.T) {
	chain := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"$defs":{`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			if i == n-1 {
				fmt.Fprintf(&b, `"d%d":{"type":"integer"}`, i)
			} else {
				fmt.Fprintf(&b, `"d%d":{"$ref":"#/$defs/d%d"}`, i, i+1)
			}
		}
		b.WriteString(`},"$ref":"#/$defs/d0"}`)
		return b.String()
	}
	manyProps := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"type":"object","additionalProperties":false,"properties":{`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"p%d":{"type":"integer"}`, i)
		}
		b.WriteString(`}}`)
		return b.String()
	}
	bigEnum := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"items":{"enum":[`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"v%d"`, i)
		}
		b.WriteString(`]}}`)
		return b.String()
	}
	manyPatterns := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"type":"object","patternProperties":{`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"^p%d$":{"type":"integer"}`, i)
		}
		b.WriteString(`}}`)
		return b.String()
	}
	manyKeys := func(n int) string {
		var b strings.Builder
		b.WriteString(`{`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"k%d":0`, i)
		}
		b.WriteString(`}`)
		return b.String()
	}
	longNumber := "7" + strings.Repeat("1234567", 1<<20/7) + ".7"
	tests := []struct {
		name, schema string
		refuse       string // a SchemaError containing this, or "" to compile
		instance     string
	}{
		{"ref chain of 200", chain(200), "", `5`},
		{"ref chain of 300", chain(300), "more than 256 subschemas chained", ""},
		{"50000 properties", manyProps(50000), "", `{"p49999":1,"q":2}`},
		{"too many values", manyProps(120000), "more than 200000 values", ""},
		{"catastrophic backtracking pattern", `{"pattern":"^(a+)+$"}`, "", `"` + strings.Repeat("a", 100000) + `!"`},
		{"big enum × many items", bigEnum(50000), "", `[` + strings.Repeat(`"zz",`, 20000) + `"v1"]`},
		{"deep instance, recursive schema", `{"items":{"$ref":"#"}}`, "", strings.Repeat("[", 64) + strings.Repeat("]", 64)},
		{"uniqueItems on a large array", `{"uniqueItems":true}`, "", `[` + strings.Repeat(`{"a":[1,2,3]},`, 1) + strings.Repeat(`[1,2],`, 1) + numbers(50000) + `]`},
		{"uniqueItems on large equal objects", `{"uniqueItems":true}`, "", `[` + manyKeys(20000) + `,` + manyKeys(20000) + `]`},
		{"huge exponents", `{"multipleOf":7,"maximum":1e999999999999}`, "", `[1e999999999999]`},
		{"huge exponent multipleOf", `{"multipleOf":7}`, "", `7e999999999999`},
		{"1 MB number, multipleOf 0.1", `{"multipleOf":0.1}`, "", longNumber},
		{"1 MB number, multipleOf 0.7", `{"multipleOf":0.7}`, "", longNumber},
		{"1 MB number, 30-digit multipleOf", `{"multipleOf":123456789012345678901234567890}`, "", longNumber},
		{"1000 patterns × 20000 keys", manyPatterns(1000), "", manyKeys(20000)},
		{"long keys × patterns", manyPatterns(100), "", `{"` + strings.Repeat("p", 1<<20-8) + `":1}`},
		{"enum of arrays × many arrays", `{"items":{"enum":[` + strings.TrimSuffix(strings.Repeat(`[1,2,3,4],`, 100), ",") + `]}}`, "", `[` + strings.TrimSuffix(strings.Repeat(`[1,2,3,5],`, 20000), ",") + `]`},
		{"anyOf fan-out × many items", `{"items":{"$ref":"#/$defs/a"},"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"},{"$ref":"#/$defs/b"}]},"b":{"anyOf":[{"$ref":"#/$defs/c"},{"$ref":"#/$defs/c"}]},"c":{"anyOf":[{"type":"string"},{"type":"string"}]}}}`, "", `[` + strings.TrimSuffix(strings.Repeat(`1,`, 100000), ",") + `]`},
		{"dependentRequired × many keys", `{"dependentRequired":{` + deps(5000) + `}}`, "", manyKeys(20000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			s, err := Compile([]byte(tc.schema))
			if tc.refuse != "" {
				var se *SchemaError
				if !errors.As(err, &se) || !strings.Contains(se.Msg, tc.refuse) {
					t.Fatalf("got %v, want a SchemaError saying %q", err, tc.refuse)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			var v validator
			if s != nil {
				if _, _, err := s.validate(&v, []byte(tc.instance), Limits{}); err != nil && !errors.Is(err, ErrTooComplex) {
					t.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			// One charge may overshoot the budget before the check that
			// stops the work: a regexp match on the longest string.
			if slack := matchSteps + len(tc.instance)*(1+len(tc.schema)/matchPatternBytes); v.steps > v.maxSteps+slack {
				t.Errorf("validation took %d steps, more than its budget of %d", v.steps, v.maxSteps)
			}
			in := len(tc.schema) + len(tc.instance)
			if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(200*in+16<<20); got > limit {
				t.Errorf("allocated %d bytes for %d bytes of input, more than %d", got, in, limit)
			}
		})
	}
}

func numbers(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%d", i)
	}
	return b.String()
}

// deps returns n dependentRequired entries, each on a key of manyKeys.
func deps(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":["x%d"]`, i, i)
	}
	return b.String()
}
