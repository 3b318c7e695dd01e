package jsonschema

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// gen builds random schemas and instances from small vocabularies, so
// that random schemas and instances often meet on the same values.
type gen struct{ r *rand.Rand }

var (
	genNumbers = []string{"0", "-1", "1", "1.0", "2.5", "3", "10", "1e2", "0.1", "0.3", "-0", "7"}
	genStrings = []string{`""`, `"a"`, `"ab"`, `"abc"`, `"SFO"`, `"2026-12-24"`, `"x@y.z"`, `"é"`, `"A1"`,
		`"2026-12-24T09:30:00Z"`, `"2026-02-30"`, `"::1"`, `"192.168.0.1"`, `"https://a.b/c"`, `"a:b"`, `"09:30:00Z"`,
		`"123e4567-e89b-12d3-a456-426614174000"`, `"1.2.3"`, `"x-1"`}
	genKeys     = []string{"a", "b", "c", "x-1"}
	genPatterns = []string{"^a", "b$", "^[A-Z]{3}$", "^[a-z]*$", "[0-9]", "^x-"}
	genFormats  = []string{"date", "email", "ipv4", "ipv6", "uuid", "date-time", "time", "uri"}
	genTypes    = []string{"null", "boolean", "object", "array", "number", "integer", "string"}
)

func (g gen) pick(list []string) string { return list[g.r.IntN(len(list))] }

func (g gen) value(depth int) string {
	k := g.r.IntN(6)
	if depth > 2 {
		k = g.r.IntN(4)
	}
	switch k {
	case 0:
		return g.pick([]string{"null", "true", "false"})
	case 1, 2:
		return g.pick(genNumbers)
	case 3:
		return g.pick(genStrings)
	case 4:
		n := g.r.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = g.value(depth + 1)
		}
		return "[" + strings.Join(parts, ",") + "]"
	default:
		n := g.r.IntN(4)
		seen := map[string]bool{}
		var parts []string
		for range n {
			key := g.pick(genKeys)
			if seen[key] {
				continue
			}
			seen[key] = true
			parts = append(parts, fmt.Sprintf("%q:%s", key, g.value(depth+1)))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
}

func (g gen) schema(depth int) string {
	if depth > 2 || g.r.IntN(8) == 0 {
		if g.r.IntN(3) == 0 {
			return g.pick([]string{"true", "false"})
		}
		return fmt.Sprintf(`{"type":%q}`, g.pick(genTypes))
	}
	kw := map[string]string{}
	for range 1 + g.r.IntN(3) {
		g.fragment(kw, depth)
	}
	var parts []string
	for k, v := range kw {
		parts = append(parts, fmt.Sprintf("%q:%s", k, v))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func (g gen) list(n, depth int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = g.schema(depth + 1)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (g gen) keys(n int) string {
	perm := g.r.Perm(len(genKeys))[:n]
	parts := make([]string, n)
	for i, p := range perm {
		parts[i] = fmt.Sprintf("%q", genKeys[p])
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (g gen) fragment(kw map[string]string, depth int) {
	small := func() string { return fmt.Sprint(g.r.IntN(4)) }
	switch g.r.IntN(16) {
	case 0:
		if g.r.IntN(2) == 0 {
			kw["type"] = fmt.Sprintf("%q", g.pick(genTypes))
		} else {
			kw["type"] = fmt.Sprintf("[%q,%q]", g.pick(genTypes[:3]), g.pick(genTypes[3:]))
		}
	case 1:
		n := 1 + g.r.IntN(3)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = g.value(2)
		}
		kw["enum"] = "[" + strings.Join(parts, ",") + "]"
	case 2:
		kw["const"] = g.value(1)
	case 3:
		kw[g.pick([]string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})] = g.pick(genNumbers)
		if g.r.IntN(3) == 0 {
			kw["multipleOf"] = g.pick([]string{"2", "0.5", "0.1", "3", "1e-1"})
		}
	case 4:
		kw[g.pick([]string{"minLength", "maxLength"})] = small()
		if g.r.IntN(2) == 0 {
			kw["pattern"] = fmt.Sprintf("%q", g.pick(genPatterns))
		}
	case 5:
		kw["format"] = fmt.Sprintf("%q", g.pick(genFormats))
	case 6:
		kw["properties"] = fmt.Sprintf(`{%q:%s,%q:%s}`, genKeys[0], g.schema(depth+1), genKeys[1], g.schema(depth+1))
		kw["required"] = g.keys(g.r.IntN(3))
		if g.r.IntN(2) == 0 {
			kw["additionalProperties"] = g.schema(depth + 1)
		}
	case 7:
		kw["patternProperties"] = fmt.Sprintf(`{%q:%s}`, g.pick(genPatterns), g.schema(depth+1))
		kw["propertyNames"] = fmt.Sprintf(`{"maxLength":%s}`, small())
	case 8:
		kw[g.pick([]string{"minProperties", "maxProperties"})] = small()
		kw["dependentRequired"] = fmt.Sprintf(`{%q:%s}`, g.pick(genKeys), g.keys(1))
		kw["dependentSchemas"] = fmt.Sprintf(`{%q:%s}`, g.pick(genKeys), g.schema(depth+1))
	case 9:
		kw["items"] = g.schema(depth + 1)
		if g.r.IntN(2) == 0 {
			kw["prefixItems"] = g.list(1+g.r.IntN(2), depth)
		}
	case 10:
		kw[g.pick([]string{"minItems", "maxItems"})] = small()
		kw["uniqueItems"] = g.pick([]string{"true", "false"})
	case 11:
		kw["contains"] = g.schema(depth + 1)
		if g.r.IntN(2) == 0 {
			kw[g.pick([]string{"minContains", "maxContains"})] = small()
		}
	case 12:
		kw[g.pick([]string{"allOf", "anyOf", "oneOf"})] = g.list(1+g.r.IntN(3), depth)
	case 13:
		kw["not"] = g.schema(depth + 1)
	case 14:
		kw["if"] = g.schema(depth + 1)
		kw["then"] = g.schema(depth + 1)
		if g.r.IntN(2) == 0 {
			kw["else"] = g.schema(depth + 1)
		}
	case 15:
		if depth > 0 { // references resolve against the root
			kw["type"] = fmt.Sprintf("%q", g.pick(genTypes))
			return
		}
		kw["$defs"] = fmt.Sprintf(`{"d":%s}`, g.schema(depth+1))
		kw["$ref"] = `"#/$defs/d"`
	}
}

// randomExceptions are the formats whose definitions differ between this
// package and the oracle (see differentialExceptions).
func randomException(schema, instance string) bool {
	return strings.Contains(schema, `"email"`) && strings.Contains(instance, "@")
}

// TestRandomDifferential compares valid/invalid with the oracle on
// generated schemas × generated instances (a fixed seed, so failures
// reproduce).
func TestRandomDifferential(t *testing.T) {
	n := 3000 * randomScale
	if testing.Short() {
		n = 300
	}
	g := gen{rand.New(rand.NewPCG(1, 2))}
	agreed, failed, valid := 0, 0, 0
	for range n {
		schema := g.schema(0)
		s, err := Compile([]byte(schema))
		if err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		o, err := oracle(t, schema)
		if err != nil {
			t.Fatalf("oracle refuses %s: %v", schema, err)
		}
		for range 6 {
			in := g.value(0)
			_, vs, err := s.Validate([]byte(in), Limits{})
			if err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			got, want := len(vs) == 0, oracleValid(t, o, in)
			if got != want && !randomException(schema, in) {
				failed++
				if failed <= 10 {
					t.Errorf("schema %s\ninstance %s: valid here %v, oracle %v %v", schema, in, got, want, vs)
				}
				continue
			}
			agreed++
			if got {
				valid++
			}
		}
	}
	t.Logf("%d pairs agree (%d of them valid), %d differ", agreed, valid, failed)
}

// randomScale multiplies the number of generated schemas (set it higher
// by hand for a longer search).
var randomScale = 1
