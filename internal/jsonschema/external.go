package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/miniopenclaw/tool/internal/jsontext"
	santhosh "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schemas that use unevaluatedProperties, unevaluatedItems, $dynamicRef,
// a standard meta-schema by reference or a custom meta-schema are
// evaluated by santhosh-tekuri/jsonschema (draft 2020-12), "the external
// validator": this package does not evaluate those keywords itself. Its
// compiler still reads the whole schema, so the checks of Compile (sizes,
// reference cycles, exponential growth with the instance's depth) bound
// the external validator's work too, and Validate parses the instance
// itself first, with the same limits.

// maxNumberWork bounds the digits and exponents of the numbers of one
// instance given to the external validator, which turns each number into
// an exact fraction: 1e999999 alone would take megabytes.
const maxNumberWork = 1 << 16

// The work budget of one call to the external validator, in subschema
// applications (a pattern reading 64 bytes counts as one). It is smaller
// than this package's own (baseSteps, stepsPerNode): the external
// validator takes about a microsecond for each, and the estimate is made
// before it starts, from Compile's bound of the schemas that can apply to
// one value, so it assumes the worst: each schema that applies to a string
// or a number reads it whole, and so does each pattern. A schema that
// applies at most 16 subschemas to a value validates instances of any
// size whose strings and numbers hold up to 1 MiB in all.
const (
	extBaseSteps     = 1 << 18
	extStepsPerValue = 16
)

// extPatternWeight is how many patterns of one instruction a byte p reads
// costs as much as, for the external validator's estimate: a program's
// size counts (the 12 bytes [a-z]{1000}! are a thousand instructions,
// and matching tracks up to one thread per instruction), as in matchWork.
// An ignored pattern (nil) matches everything and weighs one.
func extPatternWeight(p *pattern) int {
	if p == nil {
		return 1
	}
	return max(1, p.insts/matchInsts)
}

// maxExternalNodes bounds the subschemas of a schema the external
// validator evaluates: its compiler looks each subschema up in a list of
// those it has queued, so its work grows with their square (5,000 took
// 0.35 s, 10,000 1.9 s, 20,000 8 s, from 250 KB a server may send).
const maxExternalNodes = 4096

// compileExternal compiles the schema for the external validator, giving it
// the document and the registered documents it uses, and nothing else.
func (c *compiler) compileExternal() (*santhosh.Schema, error) {
	sc := santhosh.NewCompiler()
	sc.DefaultDraft(santhosh.Draft2020)
	sc.UseLoader(refuseLoader{})
	strict := c.opts.StrictPatterns
	sc.UseRegexpEngine(func(src string) (santhosh.Regexp, error) {
		re, err := compilePattern(src)
		if err != nil {
			if strict {
				return nil, err
			}
			return matchAll(src), nil // reported by the compiler already
		}
		return re, nil
	})
	if c.opts.AssertFormat {
		sc.AssertFormat()
		for name := range formats {
			sc.RegisterFormat(&santhosh.Format{Name: name, Validate: func(v any) error {
				s, ok := v.(string)
				if !ok || checkFormat(formats[name], []byte(s)) {
					return nil
				}
				return errors.New("invalid " + name)
			}})
		}
	}
	add := func(uri string, doc []byte) error {
		v, err := santhosh.UnmarshalJSON(bytes.NewReader(doc))
		if err != nil {
			return err
		}
		return sc.AddResource(uri, v)
	}
	if err := add(defaultBase, c.res.rootDoc); err != nil {
		return nil, &SchemaError{Msg: "not valid JSON: " + err.Error()}
	}
	for uri, doc := range c.res.loaded {
		if err := add(uri, doc); err != nil {
			return nil, &SchemaError{Msg: fmt.Sprintf("registered schema %s: %v", quote(uri), err)}
		}
	}
	s, err := sc.Compile(defaultBase)
	if err != nil {
		return nil, &SchemaError{Pointer: c.res.externalLoc, Msg: fmt.Sprintf("the schema uses %s, which the external validator evaluates, and it refuses the schema: %s",
			c.res.external, shorten(strings.ReplaceAll(err.Error(), defaultBase, "the schema"), 300))}
	}
	return s, nil
}

// refuseLoader is the external validator's loader: every document it may
// use is given to it in advance, so any other is refused.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("no schema is registered under %s; schemas are never fetched", url)
}

// matchAll stands in for a pattern that is ignored.
type matchAll string

func (m matchAll) MatchString(string) bool { return true }
func (m matchAll) String() string          { return string(m) }

var _ santhosh.Regexp = (*pattern)(nil)

// validateExternal is Validate for a schema the external validator
// evaluates. It adds no defaults.
func (s *Schema) validateExternal(data []byte, lim Limits) ([]byte, []Violation, error) {
	if lim.MaxBytes > 0 && len(data) > lim.MaxBytes {
		return nil, nil, &jsontext.SyntaxError{Offset: lim.MaxBytes,
			Msg: fmt.Sprintf("input is %d bytes, more than the limit of %d", len(data), lim.MaxBytes)}
	}
	depth := lim.MaxDepth
	if depth <= 0 {
		depth = 64
	}
	v := validators.Get().(*validator)
	defer v.release()
	v.reset(data, depth)
	if err := v.parse(); err != nil {
		return nil, nil, err
	}
	// The external validator has no budget of its own: bound its work
	// before it starts, by what the schema can apply to each value
	// (Compile's growth bound) and the patterns' reading of the text
	// (extPatterns weighs each by its program).
	// Each schema that applies to a string or a number may read it whole
	// (a length, a format, a pattern, a bound), up to extFanout times:
	// 2,000 schemas applied to a 1 MB string took 15 s for
	// "format":"uri" when the estimate counted the value once.
	text := 0
	for i := range v.tape {
		if t := &v.tape[i]; t.kind == kString || t.kind == kNumber {
			text += int(t.end - t.start)
		}
	}
	steps := float64(len(v.tape))*s.extFanout + s.extFanout*float64(text)*float64(1+s.extPatterns)/64
	if steps > float64(extBaseSteps+extStepsPerValue*len(v.tape)) {
		return nil, nil, ErrTooComplex
	}
	work := 0
	for i := range v.tape {
		if t := &v.tape[i]; t.kind == kNumber {
			work += numberWork(data[t.start:t.end])
			if work > maxNumberWork {
				return nil, nil, ErrTooComplex
			}
		}
	}
	var out []Violation
	if s.fold {
		v.path = v.path[:0]
		out = v.foldedKeys(s.extNames, 0, out)
	}
	inst, err := santhosh.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, nil, &jsontext.SyntaxError{Msg: err.Error()}
	}
	err = s.ext.Validate(inst)
	if err == nil && len(out) == 0 {
		return data, nil, nil
	}
	var ve *santhosh.ValidationError
	if err != nil && !errors.As(err, &ve) {
		return nil, nil, err
	}
	dropped := 0
	externalViolations(ve, inst, func() bool {
		if len(out) >= MaxViolations {
			dropped++
			return false
		}
		return true
	}, func(x Violation) {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	})
	// A property with a violation of its own was not evaluated
	// successfully, so unevaluatedProperties reports it too: keep the
	// cause only.
	out = slices.DeleteFunc(out, func(x Violation) bool {
		if !strings.HasSuffix(x.Expected, unevaluatedSuffix) {
			return false
		}
		for _, y := range out {
			if y.Pointer == x.Pointer && y != x || strings.HasPrefix(y.Pointer, x.Pointer+"/") {
				return true
			}
		}
		return false
	})
	if len(out) == 0 {
		out = append(out, Violation{Expected: "a value the schema accepts", Got: gotAny(inst, true)})
	}
	if dropped > 0 {
		out = append(out, Violation{
			Expected: fmt.Sprintf("at most %d problems listed", MaxViolations),
			Got:      plural(int64(dropped), "more problem", "more problems"),
			Hint:     "fix the ones listed and try again",
		})
	}
	return data, out, nil
}

const unevaluatedSuffix = " (no schema evaluates it)"

// foldedKeys appends to out a violation for each key of the instance (at
// tape index i and below) that is not one of the property names of names
// but equals one when case is ignored; see CaseSensitive. Which schema
// applies to which object is only known to the external validator, so
// every property name of the schema counts.
func (v *validator) foldedKeys(names *node, i int32, out []Violation) []Violation {
	t := &v.tape[i]
	switch t.kind {
	case kObject:
		for k := i + 1; k < t.next; k = v.tape[k+1].next {
			key := v.str(&v.tape[k])
			v.pushKey(k)
			if names.prop(key) == nil {
				var name string
				name, v.foldBuf = names.foldMatch(key, v.foldBuf)
				if name != "" && len(out) < MaxViolations {
					out = append(out, Violation{Pointer: v.pointer(),
						Expected: fmt.Sprintf("no property %s (property names are case-sensitive)", quote(shorten(string(key), gotWidth))),
						Got:      v.got(k+1, false), Hint: "did you mean " + quote(name) + "?"})
				}
			}
			out = v.foldedKeys(names, k+1, out)
			v.pop()
		}
	case kArray:
		idx := 0
		for k := i + 1; k < t.next; k = v.tape[k].next {
			v.pushIdx(idx)
			out = v.foldedKeys(names, k, out)
			v.pop()
			idx++
		}
	}
	return out
}

// propertyNames returns a node whose properties are every property name
// the schema declares.
func propertyNames(nodes []*node) *node {
	n := &node{}
	seen := map[string]bool{}
	for _, m := range nodes {
		for _, p := range m.props {
			if !seen[p.name] {
				seen[p.name] = true
				n.props = append(n.props, prop{name: p.name, n: p.n})
			}
		}
	}
	if len(n.props) > 8 {
		n.propIndex = make(map[string]*node, len(n.props))
		for _, p := range n.props {
			n.propIndex[p.name] = p.n
		}
		// Every key of the instance not declared is looked up ignoring
		// case: without the index, among all the names one by one.
		n.foldIndex = foldIndex(n.props)
	}
	return n
}

// numberWork estimates what an exact fraction of the number literal lit
// costs: its digits plus the size of its exponent.
func numberWork(lit []byte) int {
	mant, exp, hasExp := bytes.Cut(bytes.ToLower(lit), []byte("e"))
	w := len(mant)
	if hasExp {
		e, err := strconv.Atoi(strings.TrimPrefix(string(exp), "+"))
		if err != nil || e > maxNumberWork || e < -maxNumberWork {
			return maxNumberWork + 1
		}
		w += max(e, -e)
	}
	return w
}

// externalViolations calls f with a Violation for each failure in the
// tree of e, in the words of this package's own messages.
func externalViolations(e *santhosh.ValidationError, inst any, room func() bool, f func(Violation)) {
	if e == nil {
		return
	}
	switch e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				externalViolations(c, inst, room, f)
			}
			return
		}
	}
	if !room() {
		return
	}
	ptr := pointerOf(e.InstanceLocation)
	val, _ := valueAt(inst, e.InstanceLocation)
	got := func() string { return gotAny(val, false) }
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		f(Violation{Pointer: ptr, Expected: "a value the schema accepts", Got: gotAny(val, true)})
	case *kind.AnyOf:
		if len(e.Causes) == 1 {
			externalViolations(e.Causes[0], inst, room, f)
			return
		}
		f(Violation{Pointer: ptr, Expected: fmt.Sprintf("a value that matches one of the %d alternatives (anyOf)", len(e.Causes)), Got: gotAny(val, true)})
	case *kind.OneOf:
		if len(k.Subschemas) > 1 {
			f(Violation{Pointer: ptr, Expected: "exactly one of the alternatives (oneOf)",
				Got: fmt.Sprintf("%s, which matches alternatives %d and %d", got(), k.Subschemas[0]+1, k.Subschemas[1]+1)})
			return
		}
		if len(e.Causes) == 1 {
			externalViolations(e.Causes[0], inst, room, f)
			return
		}
		f(Violation{Pointer: ptr, Expected: fmt.Sprintf("a value that matches one of the %d alternatives (oneOf)", len(e.Causes)), Got: gotAny(val, true)})
	case *kind.Not:
		f(Violation{Pointer: ptr, Expected: `a value that the "not" schema rejects`, Got: gotAny(val, true)})
	case *kind.FalseSchema:
		exp := "no value here (the schema allows nothing)"
		loc := e.SchemaURL
		switch {
		case strings.HasSuffix(loc, "/unevaluatedProperties") || strings.HasSuffix(loc, "/additionalProperties"):
			name := ""
			if n := len(e.InstanceLocation); n > 0 {
				name = e.InstanceLocation[n-1]
			}
			exp = "no property " + quote(shorten(name, gotWidth)) + unevaluatedSuffix
		case strings.HasSuffix(loc, "/unevaluatedItems") || strings.HasSuffix(loc, "/items"):
			exp = "no item here"
		}
		f(Violation{Pointer: ptr, Expected: exp, Got: got()})
	case *kind.Type:
		var words []string
		for _, w := range k.Want {
			words = append(words, typeWord(w))
		}
		f(Violation{Pointer: ptr, Expected: joinOr(words), Got: gotAny(val, true)})
	case *kind.Enum:
		var vals []string
		for _, w := range k.Want {
			vals = append(vals, gotAny(w, false))
		}
		f(Violation{Pointer: ptr, Expected: "one of " + strings.Join(vals, ", "), Got: got()})
	case *kind.Const:
		f(Violation{Pointer: ptr, Expected: "exactly " + gotAny(k.Want, false), Got: got()})
	case *kind.Format:
		f(Violation{Pointer: ptr, Expected: "a string in format " + k.Want, Got: got()})
	case *kind.Required:
		for _, m := range k.Missing {
			f(Violation{Pointer: ptr + "/" + escapeToken(m), Expected: "required property " + quote(shorten(m, gotWidth)), Got: "nothing"})
		}
	case *kind.DependentRequired:
		for _, m := range k.Missing {
			f(Violation{Pointer: ptr + "/" + escapeToken(m), Expected: "required property " + quote(shorten(m, gotWidth)) + " (because " + quote(shorten(k.Prop, gotWidth)) + " is present)", Got: "nothing"})
		}
	case *kind.Dependency:
		for _, m := range k.Missing {
			f(Violation{Pointer: ptr + "/" + escapeToken(m), Expected: "required property " + quote(shorten(m, gotWidth)) + " (because " + quote(shorten(k.Prop, gotWidth)) + " is present)", Got: "nothing"})
		}
	case *kind.AdditionalProperties:
		obj, _ := val.(map[string]any)
		for _, p := range k.Properties {
			f(Violation{Pointer: ptr + "/" + escapeToken(p), Expected: "no property " + quote(shorten(p, gotWidth)), Got: gotAny(obj[p], false)})
		}
	case *kind.AdditionalItems:
		f(Violation{Pointer: ptr, Expected: "no more items", Got: plural(int64(k.Count), "extra item", "extra items")})
	case *kind.PropertyNames:
		f(Violation{Pointer: ptr + "/" + escapeToken(k.Property), Expected: "a property name the schema allows", Got: quote(shorten(k.Property, gotWidth))})
	case *kind.MinProperties:
		f(Violation{Pointer: ptr, Expected: "an object with " + countPhrase(int64(k.Want), -1, "property", "properties"), Got: plural(int64(k.Got), "property", "properties")})
	case *kind.MaxProperties:
		f(Violation{Pointer: ptr, Expected: "an object with " + countPhrase(-1, int64(k.Want), "property", "properties"), Got: plural(int64(k.Got), "property", "properties")})
	case *kind.MinItems:
		f(Violation{Pointer: ptr, Expected: "an array of " + countPhrase(int64(k.Want), -1, "item", "items"), Got: plural(int64(k.Got), "item", "items")})
	case *kind.MaxItems:
		f(Violation{Pointer: ptr, Expected: "an array of " + countPhrase(-1, int64(k.Want), "item", "items"), Got: plural(int64(k.Got), "item", "items")})
	case *kind.UniqueItems:
		f(Violation{Pointer: ptr, Expected: "an array of unique items", Got: fmt.Sprintf("items %d and %d are equal", k.Duplicates[0], k.Duplicates[1])})
	case *kind.Contains:
		f(Violation{Pointer: ptr, Expected: "an array with at least 1 matching item (contains)", Got: "0 matching items"})
	case *kind.MinContains:
		f(Violation{Pointer: ptr, Expected: "an array with " + countPhrase(int64(k.Want), -1, "matching item", "matching items"), Got: plural(int64(len(k.Got)), "matching item", "matching items")})
	case *kind.MaxContains:
		f(Violation{Pointer: ptr, Expected: "an array with " + countPhrase(-1, int64(k.Want), "matching item", "matching items"), Got: plural(int64(len(k.Got)), "matching item", "matching items")})
	case *kind.MinLength:
		f(Violation{Pointer: ptr, Expected: "a string of " + countPhrase(int64(k.Want), -1, "character", "characters"), Got: got()})
	case *kind.MaxLength:
		f(Violation{Pointer: ptr, Expected: "a string of " + countPhrase(-1, int64(k.Want), "character", "characters"), Got: got()})
	case *kind.Pattern:
		f(Violation{Pointer: ptr, Expected: "a string matching " + quote(shorten(k.Want, gotWidth)), Got: got()})
	case *kind.Minimum:
		f(Violation{Pointer: ptr, Expected: "a number of at least " + ratText(k.Want), Got: got()})
	case *kind.Maximum:
		f(Violation{Pointer: ptr, Expected: "a number of at most " + ratText(k.Want), Got: got()})
	case *kind.ExclusiveMinimum:
		f(Violation{Pointer: ptr, Expected: "a number greater than " + ratText(k.Want), Got: got()})
	case *kind.ExclusiveMaximum:
		f(Violation{Pointer: ptr, Expected: "a number less than " + ratText(k.Want), Got: got()})
	case *kind.MultipleOf:
		f(Violation{Pointer: ptr, Expected: "a number that is a multiple of " + ratText(k.Want), Got: got()})
	default:
		f(Violation{Pointer: ptr, Expected: "a value the schema accepts (" + shorten(e.ErrorKind.LocalizedString(printer), 200) + ")", Got: gotAny(val, true)})
	}
}

var printer = message.NewPrinter(language.English)

func typeWord(t string) string {
	switch t {
	case "null":
		return "null"
	case "integer", "object", "array":
		return "an " + t
	}
	return "a " + t
}

func ratText(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func pointerOf(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(escapeToken(shorten(tok, gotWidth)))
	}
	return b.String()
}

// valueAt returns the value at loc in v.
func valueAt(v any, loc []string) (any, bool) {
	for _, tok := range loc {
		switch x := v.(type) {
		case map[string]any:
			if v = x[tok]; v == nil {
				if _, ok := x[tok]; !ok {
					return nil, false
				}
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// gotAny describes a decoded value for a violation's Got field.
func gotAny(v any, withType bool) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return "a value"
	}
	text := shortJSON(raw, gotWidth)
	if !withType {
		return text
	}
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string " + text
	case json.Number:
		return "number " + text
	case bool:
		return "boolean " + text
	case map[string]any:
		return "object " + text
	case []any:
		return "array " + text
	}
	return text
}
