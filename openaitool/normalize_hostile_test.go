package openaitool

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
)

// branchySchema is a recursive strict schema: a node is one of branches
// objects that do not fit the arguments, or one that nests another node.
// Normalize picks an anyOf branch by reading the object against each.
func branchySchema(branches int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"r":{"$ref":"#/$defs/n"}},"required":["r"],"additionalProperties":false,"$defs":{"n":{"anyOf":[`)
	for i := range branches {
		fmt.Fprintf(&b, `{"type":"object","properties":{"q%d":{"type":"string"}},"required":["q%d"],"additionalProperties":false},`, i, i)
	}
	b.WriteString(`{"type":"object","properties":{"z":{"$ref":"#/$defs/n"},"o":{"type":"string","default":"d"}},"required":[],"additionalProperties":false}]}}}`)
	return b.String()
}

// deepArgs nests depth objects through "z", the deepest holding a long
// "o" and each a null "o" (an optional property strict mode sends as null).
func deepArgs(depth, size int) string {
	return `{"r":` + strings.Repeat(`{"o":null,"z":`, depth) + `{"o":"` + strings.Repeat("x", size) + `"}` + strings.Repeat("}", depth) + `}`
}

// TestNormalizeBounded: Normalize runs on a model's calls before the
// registry's argument limit, with a plan from a schema an MCP server
// sent. It parsed the value again at each level, and again for each anyOf
// branch it tried there, so its work was the arguments' size times their
// depth times the branches. The control counts the bytes allocated; the
// defence bounds the work by the arguments' size.
func TestNormalizeBounded(t *testing.T) {
	normalize := func(branches int, args string) (json.RawMessage, uint64) {
		ts, err := NewTools([]tool.Tool{echotool.New("t", "d", branchySchema(branches))}, WithStrict(StrictOn))
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := ts.Strict("t"); !s {
			t.Fatal("the tool is not strict")
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		calls := ts.Normalize([]tool.Call{{ID: "1", Name: "t", Args: json.RawMessage(args)}})
		runtime.ReadMemStats(&after)
		return calls[0].Args, after.TotalAlloc - before.TotalAlloc
	}
	// An honest call is normalized: the nulls become the default, at
	// each of 14 levels with 64 KB at the bottom too.
	for _, a := range []string{deepArgs(3, 4), deepArgs(14, 64<<10)} {
		if got, _ := normalize(2, a); !strings.Contains(string(got), `"o":"d"`) || strings.Contains(string(got), "null") {
			t.Fatalf("normalized %.200s", got)
		}
	}
	// The attack: 256 KB nested 30 deep (about the most the plan's depth
	// bound lets through) beside 50 branches. Before the defence each
	// level parsed the value once for each branch it tried: 66 KB so
	// nested took 1.2 GB of allocation.
	args := deepArgs(30, 256<<10)
	ts, err := NewTools([]tool.Tool{echotool.New("t", "d", branchySchema(50))}, WithStrict(StrictOn))
	if err != nil {
		t.Fatal(err)
	}
	r := ts.byName["t"].fix
	// Control: without the bound on work, parsing each level once (as
	// apply now does, whatever the branches) still costs the size times
	// the depth the plan allows.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	unbounded := math.MaxInt
	r.apply(r.plan, json.RawMessage(args), nil, 0, false, &unbounded)
	runtime.ReadMemStats(&after)
	control := after.TotalAlloc - before.TotalAlloc
	out, got := normalize(50, args)
	t.Logf("%d bytes of arguments: %d bytes allocated unbounded, %d bounded", len(args), control, got)
	if control < 40*uint64(len(args)) {
		t.Fatalf("control: normalizing without the bound allocated %d bytes, want over 40 times the %d of the arguments", control, len(args))
	}
	if got > 100*uint64(len(args))+4<<20 || got > control/2 {
		t.Errorf("normalizing %d bytes allocated %d bytes", len(args), got)
	}
	// Past the bound the arguments are left as they came: their nulls
	// are the registry's to refuse.
	if string(out) != args {
		t.Error("arguments changed by a normalization cut short")
	}
	if out, _ := normalize(2, deepArgs(1, 5<<20)); string(out) != deepArgs(1, 5<<20) {
		t.Error("arguments over 4 MiB were normalized")
	}
}
