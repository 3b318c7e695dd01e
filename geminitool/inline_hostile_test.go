package geminitool

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// fanOutSchema is a schema whose definitions refer to the one below three
// times each, levels deep, above a string with a long description: the
// dialect has no references, so inlining it copies the description 3^levels
// times.
func fanOutSchema(levels, descBytes int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"object","properties":{"x":{"$ref":"#/$defs/d%d"}},"$defs":{"d0":{"type":"string","description":%q}`, levels, strings.Repeat("d", descBytes))
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, `,"d%d":{"type":"object","properties":{"a":{"$ref":"#/$defs/d%d"},"b":{"$ref":"#/$defs/d%d"},"c":{"$ref":"#/$defs/d%d"}},"required":["a"]}`, i, i-1, i-1, i-1)
	}
	b.WriteString(`}}`)
	return b.String()
}

// TestInlinedReferencesBounded: a schema from an MCP server within the
// import bound (256 KiB) whose references fan out converted to gigabytes:
// nine levels of three references above a 200 KB description is 3^9
// copies, 3.9 GB, within the 100,000 nodes the conversion allowed. The
// control measures the output's growth at small sizes; the attack is
// refused, naming the bound, having allocated little.
func TestInlinedReferencesBounded(t *testing.T) {
	// Control: each level triples the output.
	small, err := Schema([]byte(fanOutSchema(3, 10_000)))
	if err != nil {
		t.Fatal(err)
	}
	bigger, err := Schema([]byte(fanOutSchema(4, 10_000)))
	if err != nil {
		t.Fatal(err)
	}
	if in := len(fanOutSchema(4, 10_000)); len(bigger) < 3*len(small)-1000 || len(bigger) < 50*in {
		t.Fatalf("control: outputs of %d and %d bytes (input %d): want each level to triple it", len(small), len(bigger), in)
	}

	attack := fanOutSchema(9, 200_000)
	if len(attack) > 256<<10 {
		t.Fatalf("the attack is %d bytes, over the import bound", len(attack))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Schema([]byte(attack))
	runtime.ReadMemStats(&after)
	var se *SchemaError
	if !errors.As(err, &se) || se.Keyword != "$ref" || !strings.Contains(se.Reason, "inlin") {
		t.Fatalf("got %v, want a SchemaError on $ref naming the inlining bound", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<20 {
		t.Errorf("refusing it allocated %d bytes", got)
	}
}
