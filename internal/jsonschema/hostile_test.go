package jsonschema

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestHostileSchemas compiles and uses schemas built to be expensive. Each
// must be refused or handled within a bounded time.
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
		{"huge exponents", `{"multipleOf":7,"maximum":1e999999999999}`, "", `[1e999999999999]`},
		{"huge exponent multipleOf", `{"multipleOf":7}`, "", `7e999999999999`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			s, err := Compile([]byte(tc.schema))
			if tc.refuse != "" {
				var se *SchemaError
				if !errors.As(err, &se) || !strings.Contains(se.Msg, tc.refuse) {
					t.Fatalf("got %v, want a SchemaError saying %q", err, tc.refuse)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if s != nil {
				if _, _, err := s.Validate([]byte(tc.instance), Limits{}); err != nil && !errors.Is(err, ErrTooComplex) {
					t.Fatal(err)
				}
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
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
