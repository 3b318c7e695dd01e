package jsonschema

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/miniopenclaw/tool/internal/jsontext"
)

// ErrTooComplex is returned by Validate when checking an instance would
// take more work than a budget proportional to the instance's size: a
// schema that fans out (for example anyOf alternatives that recurse into
// themselves) can otherwise make the work grow exponentially with depth.
var ErrTooComplex = errors.New("the schema is too complex to check this value")

// MaxViolations is the most violations Validate reports; past it, the
// last one says how many more there were.
const MaxViolations = 20

// Work budget for one Validate call: subschema applications allowed.
const (
	baseSteps    = 1 << 20
	stepsPerNode = 16
)

var validators = sync.Pool{New: func() any { return new(validator) }}

// A validator holds the state of one Validate call.
type validator struct {
	parser
	path     []pathSeg
	recs     []vrec
	dropped  int  // violations past MaxViolations
	fold     bool // reject keys that match a property only ignoring case
	steps    int
	maxSteps int
	tooMuch  bool
	nb1, nb2 []byte // scratch for number digits
	foldBuf  []byte // scratch for folded keys
	maxOut   int    // Limits.MaxBytes, for the instance with defaults
	outOver  bool   // adding defaults would pass maxOut
	nodeBuf  []*node
	out      []byte
}

// A pathSeg is one step of the instance location: a member (key is the
// tape index of its key) or an array element (key is -1).
type pathSeg struct {
	key int32
	idx int32
}

type vrec struct {
	off int32 // instance offset, for document order
	v   Violation
}

// Validate parses data strictly and validates it against s. It returns
// the instance with defaults applied (data itself when nothing was added,
// or when the instance is invalid), every violation found in document
// order, or an error: a *jsontext.SyntaxError when data is not strict JSON
// (including duplicate keys, invalid UTF-8, lone surrogates, nesting deeper
// than lim.MaxDepth and input longer than lim.MaxBytes), or ErrTooComplex.
func (s *Schema) Validate(data []byte, lim Limits) (out []byte, violations []Violation, err error) {
	if s.ext != nil {
		return s.validateExternal(data, lim)
	}
	if lim.MaxBytes > 0 && len(data) > lim.MaxBytes {
		return nil, nil, &jsontext.SyntaxError{Offset: lim.MaxBytes,
			Msg: fmt.Sprintf("input is %d bytes, more than the limit of %d", len(data), lim.MaxBytes)}
	}
	v := validators.Get().(*validator)
	defer v.release()
	return s.validate(v, data, lim)
}

// validate is Validate with the validator state given, so that tests can
// read the work it counted.
func (s *Schema) validate(v *validator, data []byte, lim Limits) (out []byte, violations []Violation, err error) {
	depth := lim.MaxDepth
	if depth <= 0 {
		depth = 64
	}
	v.reset(data, depth)
	v.fold = s.fold
	if err := v.parse(); err != nil {
		return nil, nil, err
	}
	v.path = v.path[:0]
	v.recs, v.dropped = v.recs[:0], 0
	v.steps, v.tooMuch = 0, false
	v.maxSteps = baseSteps + stepsPerNode*len(v.tape)
	if !v.eval(s.root, 0, true) {
		if v.tooMuch {
			return nil, nil, ErrTooComplex
		}
		if len(v.recs) == 0 && v.dropped == 0 { // never reached: every failure reports
			v.add(0, describe(s.root), v.got(0, true), "")
		}
		return data, v.violations(), nil
	}
	if !s.defaults {
		return data, nil, nil
	}
	v.maxOut, v.outOver = lim.MaxBytes, false
	out = v.applyDefaults(s.root)
	if v.tooMuch {
		return nil, nil, ErrTooComplex
	}
	if v.outOver {
		return data, []Violation{{
			Expected: fmt.Sprintf("arguments that fit in %d bytes once the schema's defaults are added", lim.MaxBytes),
			Got:      "arguments that would grow past that with the defaults of the properties they leave out",
			Hint:     "send fewer items, or give those properties values of your own",
		}}, nil
	}
	if out == nil {
		return data, nil, nil
	}
	// Defaults can break the instance (a default outside its own schema,
	// maxProperties, oneOf...). Keep them only if the result still holds.
	v.reset(out, depth+MaxSchemaDepth)
	if v.parse() != nil {
		return data, nil, nil
	}
	v.recs = v.recs[:0]
	v.steps = 0
	v.maxSteps = baseSteps + stepsPerNode*len(v.tape)
	if !v.eval(s.root, 0, false) {
		return data, nil, nil
	}
	return out, nil, nil
}

// validates reports whether data is strict JSON that n accepts.
func validates(n *node, data []byte) bool {
	v := validators.Get().(*validator)
	defer v.release()
	v.reset(data, MaxSchemaDepth)
	if v.parse() != nil {
		return false
	}
	v.path, v.recs = v.path[:0], v.recs[:0]
	v.steps, v.tooMuch = 0, false
	v.maxSteps = baseSteps + stepsPerNode*len(v.tape)
	return v.eval(n, 0, false)
}

// spend charges n steps of work and reports whether the call is still
// within its budget. Once it is not, every check fails fast and Validate
// returns ErrTooComplex.
func (v *validator) spend(n int) bool {
	v.steps += n
	if v.steps > v.maxSteps {
		v.tooMuch = true
	}
	return !v.tooMuch
}

// stringBytesPerStep is how many bytes of a string counting its
// characters or checking its format costs a step for.
const stringBytesPerStep = 32

// listNamesPerStep is how many names of a required or dependency list
// checking one object costs a step for.
const listNamesPerStep = 32

// Work of one regular expression match: a fixed cost for starting the
// matcher, plus for each byte of input a cost that grows with the
// pattern's length and with its program's size (Go's matchers do work per
// byte for each instruction they track, and a counted repetition makes
// the 12 bytes [a-z]{1000}x a program of a thousand: 1 MB matched against
// it took 10^9 steps). Many patterns against many keys and one pattern
// against long strings are both charged for what they cost.
const (
	matchSteps        = 8
	matchPatternBytes = 32 // pattern bytes that add a step per byte of input
	matchInsts        = 8  // instructions that add a step per byte of input
)

// matchWork is the work of matching p against n bytes: every regular
// expression of the pattern (its lookaround checks too) reads them, or
// the first span+1 of them for a program anchored at the start with a
// longest match (Go's matchers stop there).
func matchWork(p *pattern, n int) int {
	work := matchSteps + reWork(p.re, p.cost, n)
	for _, c := range p.checks {
		work += reWork(c.re, c.cost, n)
	}
	return work
}

// reWork is the work of one program reading n bytes.
func reWork(re *regexp.Regexp, c reCost, n int) int {
	if c.bounded {
		n = min(n, c.span+1)
	}
	return n * (1 + max(len(re.String())/matchPatternBytes, c.insts/matchInsts))
}

// match reports whether p matches s, charging the work to the budget. It
// reports false, with v.tooMuch set, when the budget is spent.
func (v *validator) match(p *pattern, s []byte) bool {
	if !v.spend(matchWork(p, len(s))) {
		return false
	}
	return p.Match(s)
}

func (v *validator) release() {
	v.data = nil
	v.fold = false
	if cap(v.tape) > 1<<16 || cap(v.arena) > 1<<20 || cap(v.nb1)+cap(v.nb2)+cap(v.foldBuf) > 1<<16 {
		return // do not keep large buffers alive
	}
	v.out = nil
	clear(v.recs)
	v.recs = v.recs[:0]
	clear(v.nodeBuf)
	v.nodeBuf = v.nodeBuf[:0]
	validators.Put(v)
}

// violations returns the recorded violations in document order, without
// duplicates.
func (v *validator) violations() []Violation {
	slices.SortStableFunc(v.recs, func(a, b vrec) int { return int(a.off) - int(b.off) })
	out := make([]Violation, 0, len(v.recs))
	for i, r := range v.recs {
		dup := false
		for j := i - 1; j >= 0 && v.recs[j].off == r.off; j-- {
			if v.recs[j].v == r.v {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, r.v)
		}
	}
	if v.dropped > 0 {
		out = append(out, Violation{
			Expected: fmt.Sprintf("at most %d problems listed", MaxViolations),
			Got:      plural(int64(v.dropped), "more problem", "more problems"),
			Hint:     "fix the ones listed and try again",
		})
	}
	return out
}

// MaxViolationText is the most bytes of each field of a Violation; a
// longer one is cut, ending in "…". Values are shown shortened anyway; the
// cap bounds what a schema's own text (long property names, long lists of
// alternatives) adds.
const MaxViolationText = 1000

// record adds r unless MaxViolations are already recorded.
func (v *validator) record(r vrec) {
	if len(v.recs) >= MaxViolations {
		v.dropped++
		return
	}
	for _, f := range []*string{&r.v.Pointer, &r.v.Expected, &r.v.Got, &r.v.Hint} {
		*f = capText(visible(capText(*f)))
	}
	v.recs = append(v.recs, r)
}

// capText cuts s to at most MaxViolationText bytes at a character
// boundary, ending in "…".
func capText(s string) string {
	if len(s) <= MaxViolationText {
		return s
	}
	cut := MaxViolationText - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// pointer returns the JSON pointer of the current instance location.
func (v *validator) pointer() string {
	var b []byte
	for _, s := range v.path {
		b = append(b, '/')
		if s.key < 0 {
			b = strconv.AppendInt(b, int64(s.idx), 10)
			continue
		}
		b = appendToken(b, v.str(&v.tape[s.key]))
	}
	return string(b)
}

// appendToken appends the pointer token of key, shortened and with hidden
// characters escaped; only a prefix of a long key is read.
func appendToken(b, key []byte) []byte {
	const enough = 4*jsontext.MaxPointerToken + 4 // more runes than are kept
	return jsontext.AppendPointerToken(b, string(key[:min(len(key), enough)]))
}

func (v *validator) pushKey(k int32) { v.path = append(v.path, pathSeg{key: k}) }
func (v *validator) pushIdx(i int)   { v.path = append(v.path, pathSeg{key: -1, idx: int32(i)}) }
func (v *validator) pop()            { v.path = v.path[:len(v.path)-1] }

// room reports whether another violation can be recorded, counting it
// as dropped if not. Callers check it before building a message.
func (v *validator) room() bool {
	if len(v.recs) >= MaxViolations {
		v.dropped++
		return false
	}
	return true
}

// add records a violation at the current location for the value at tape
// index at.
func (v *validator) add(at int32, expected, got, hint string) {
	v.record(vrec{off: v.tape[at].start, v: Violation{Pointer: v.pointer(), Expected: expected, Got: got, Hint: hint}})
}

func (v *validator) typeOK(types uint8, t *tnode) bool {
	switch t.kind {
	case kNull:
		return types&tNull != 0
	case kTrue, kFalse:
		return types&tBoolean != 0
	case kObject:
		return types&tObject != 0
	case kArray:
		return types&tArray != 0
	case kString:
		return types&tString != 0
	case kNumber:
		if types&tNumber != 0 {
			return true
		}
		return types&tInteger != 0 && isIntegerLit(v.data[t.start:t.end])
	}
	return false
}

// eval applies n to the value at tape index i. With rep it records every
// violation; without it, it stops at the first failure.
func (v *validator) eval(n *node, i int32, rep bool) bool {
	if !v.spend(1) {
		return false
	}
	if n.boolean {
		if !n.accept && rep {
			if v.room() {
				v.add(i, "no value here (the schema allows nothing)", v.got(i, true), "")
			}
		}
		return n.accept
	}
	t := &v.tape[i]
	if n.types != 0 && !v.typeOK(n.types, t) {
		if rep {
			if v.room() {
				v.add(i, describe(n), v.got(i, true), "")
			}
		}
		return false
	}
	ok := true
	if n.enum != nil {
		found := false
		if n.enumSet != nil {
			_, found = n.enumSet[string(v.str(t))]
			found = found && t.kind == kString
		} else {
			for _, e := range n.enum {
				if !v.spend(1) {
					return false
				}
				if v.equal(i, e) {
					found = true
					break
				}
			}
		}
		if !found {
			if !rep {
				return false
			}
			if v.room() {
				v.add(i, describe(n), v.got(i, false), v.enumHint(n, i))
			}
			ok = false
		}
	}
	if n.hasConst && !v.equal(i, n.constVal) {
		if !rep {
			return false
		}
		if v.room() {
			v.add(i, describe(n), v.got(i, false), "")
		}
		ok = false
	}
	switch t.kind {
	case kString:
		if ok && !v.stringOK(n, t) {
			if !rep {
				return false
			}
			if v.room() {
				v.add(i, describe(n), v.got(i, false), v.stringHint(n, t))
			}
			ok = false
		}
	case kNumber:
		if ok && !v.numberOK(n, t) {
			if !rep {
				return false
			}
			if v.room() {
				v.add(i, describe(n), v.got(i, false), "")
			}
			ok = false
		}
	case kObject:
		if !v.object(n, i, rep) {
			if !rep {
				return false
			}
			ok = false
		}
	case kArray:
		if !v.array(n, i, rep) {
			if !rep {
				return false
			}
			ok = false
		}
	}
	if n.ref != nil && !v.eval(n.ref, i, rep) {
		if !rep {
			return false
		}
		ok = false
	}
	for _, m := range n.allOf {
		if !v.eval(m, i, rep) {
			if !rep {
				return false
			}
			ok = false
		}
	}
	if n.anyOf != nil {
		found := false
		for _, m := range n.anyOf {
			if v.eval(m, i, false) {
				found = true
				break
			}
		}
		if !found {
			if !rep {
				return false
			}
			v.alternatives(n.anyOf, i)
			ok = false
		}
	}
	if n.oneOf != nil {
		first, second := -1, -1
		for k, m := range n.oneOf {
			if v.eval(m, i, false) {
				if first < 0 {
					first = k
				} else {
					second = k
					break
				}
			}
		}
		if first < 0 || second >= 0 {
			if !rep {
				return false
			}
			if first < 0 {
				v.alternatives(n.oneOf, i)
			} else {
				if v.room() {
					v.add(i, "exactly one of: "+describeList(n.oneOf), fmt.Sprintf("%s, which matches both alternative %d (%s) and alternative %d (%s)",
						v.got(i, false), first+1, describeDepth(n.oneOf[first], 1), second+1, describeDepth(n.oneOf[second], 1)), "")
				}
			}
			ok = false
		}
	}
	if n.not != nil && v.eval(n.not, i, false) {
		if !rep {
			return false
		}
		if v.room() {
			v.add(i, "anything except "+strings.TrimPrefix(describeDepth(n.not, 1), "exactly "), v.got(i, true), "")
		}
		ok = false
	}
	if n.ifN != nil {
		branch := n.elseN
		if v.eval(n.ifN, i, false) {
			branch = n.thenN
		}
		if branch != nil && !v.eval(branch, i, rep) {
			if !rep {
				return false
			}
			ok = false
		}
	}
	if v.tooMuch {
		return false
	}
	return ok
}

// alternatives reports an instance that matches none of alts: through the
// one alternative it plausibly meant, or as a summary of all of them.
func (v *validator) alternatives(alts []*node, i int32) {
	only := -1
	for k, m := range alts {
		if v.plausible(m, i) {
			if only >= 0 {
				only = -2
				break
			}
			only = k
		}
	}
	if only >= 0 {
		v.eval(alts[only], i, true)
		return
	}
	if v.room() {
		v.add(i, "one of: "+describeList(alts), v.got(i, true), "")
	}
}

// plausible reports whether alternative m was probably meant for the value
// at i: its type admits the value and, for objects, no property with a
// single allowed value (a discriminator) disagrees.
func (v *validator) plausible(m *node, i int32) bool {
	m = deref(m)
	if m.boolean {
		return m.accept
	}
	t := &v.tape[i]
	if m.types != 0 && !v.typeOK(m.types, t) {
		return false
	}
	if t.kind != kObject {
		return true
	}
	for k := i + 1; k < t.next; k = v.tape[k+1].next {
		if !v.spend(1) {
			return false
		}
		pn := m.prop(v.str(&v.tape[k]))
		if pn == nil {
			continue
		}
		pn = deref(pn)
		if pn.hasConst && !v.equal(k+1, pn.constVal) {
			return false
		}
		if len(pn.enum) == 1 && !v.equal(k+1, pn.enum[0]) {
			return false
		}
	}
	return true
}

// deref follows a chain of schemas that are only a $ref.
func deref(n *node) *node {
	for k := 0; k < 32 && n.onlyRef && n.ref != nil; k++ {
		n = n.ref
	}
	return n
}

func (v *validator) stringOK(n *node, t *tnode) bool {
	s := v.str(t)
	// Counting characters and checking a format read the whole string,
	// each time a schema applies: 4,900 schemas applied to 1 MB (a $ref
	// repeated in an allOf) took 21 s for "format":"uri", charged a step
	// each.
	if (n.minLen >= 0 || n.maxLen >= 0 || n.format != fNone) && !v.spend(len(s)/stringBytesPerStep) {
		return false
	}
	if n.minLen >= 0 || n.maxLen >= 0 {
		l := int64(utf8.RuneCount(s))
		if n.minLen >= 0 && l < n.minLen || n.maxLen >= 0 && l > n.maxLen {
			return false
		}
	}
	if n.pattern != nil && !v.match(n.pattern, s) {
		return false
	}
	if n.format != fNone && !checkFormat(n.format, s) {
		return false
	}
	return true
}

// maxHintWork bounds the work of one match made for a hint.
const maxHintWork = 1 << 12

// stringOKText is stringOK for a string that is not on the tape, for a
// hint: it reports false for a match costing more than maxHintWork.
func (v *validator) stringOKText(n *node, s string) bool {
	if n.minLen >= 0 || n.maxLen >= 0 {
		l := int64(utf8.RuneCountInString(s))
		if n.minLen >= 0 && l < n.minLen || n.maxLen >= 0 && l > n.maxLen {
			return false
		}
	}
	// A hint is not worth much work: a pattern whose program is large
	// (not charged to the budget here) gives none.
	if n.pattern != nil && (matchWork(n.pattern, len(s)) > maxHintWork || !n.pattern.MatchString(s)) {
		return false
	}
	return n.format == fNone || checkFormat(n.format, []byte(s))
}

func (v *validator) numberOK(n *node, t *tnode) bool {
	lit := v.data[t.start:t.end]
	if n.minimum != nil && n.minimum.cmpLit(lit, v.nb1) < 0 {
		return false
	}
	if n.maximum != nil && n.maximum.cmpLit(lit, v.nb1) > 0 {
		return false
	}
	if n.exclMin != nil && n.exclMin.cmpLit(lit, v.nb1) <= 0 {
		return false
	}
	if n.exclMax != nil && n.exclMax.cmpLit(lit, v.nb1) >= 0 {
		return false
	}
	if m := n.multipleOf; m != nil {
		if m.isSm {
			if x, ok := smallInt(lit); ok {
				return x%m.small == 0
			}
		}
		d := parseDecimal(lit, v.nb1)
		if !v.spend(multipleWork(d, m.d)) {
			return false
		}
		return isMultiple(d, m.d)
	}
	return true
}

func (v *validator) object(n *node, i int32, rep bool) bool {
	t := v.tape[i]
	ok := true
	if n.minProps >= 0 && int64(t.n) < n.minProps || n.maxProps >= 0 && int64(t.n) > n.maxProps {
		if !rep {
			return false
		}
		if v.room() {
			v.add(i, "an object with "+countPhrase(n.minProps, n.maxProps, "property", "properties"), plural(int64(t.n), "property", "properties"), "")
		}
		ok = false
	}
	// The lists of required names and dependencies are read whole for
	// each object, whatever it holds: an array of empty objects against
	// 25,000 required names was 30,000 × 25,000 checks, charged as one
	// step an object.
	if !v.spend((len(n.required) + len(n.depRequired) + len(n.depSchemas)) / listNamesPerStep) {
		return false
	}
	members := n.props != nil || n.patternProps != nil || n.additional != nil || n.propNames != nil
	var found uint64
	var foundBig []bool
	if len(n.required) > 64 {
		foundBig = make([]bool, len(n.required))
	}
	for k := i + 1; k < t.next; k = v.tape[k+1].next {
		if !v.spend(1) {
			return false
		}
		key := v.str(&v.tape[k])
		if n.required != nil {
			if r := n.requiredIndex(key); r >= 0 {
				if foundBig != nil {
					foundBig[r] = true
				} else {
					found |= 1 << r
				}
			}
		}
		if !members {
			continue
		}
		val := k + 1
		matched := false
		if pn := n.prop(key); pn != nil {
			matched = true
			v.pushKey(k)
			var good bool
			if pn.boolean && !pn.accept {
				if rep && v.room() {
					v.add(k, "no property "+quote(shorten(keyText(key), gotWidth)), v.got(val, false), "")
				}
			} else {
				good = v.eval(pn, val, rep)
			}
			v.pop()
			if !good {
				if !rep {
					return false
				}
				ok = false
			}
		}
		for _, pp := range n.patternProps {
			if !v.match(pp.re, key) {
				if v.tooMuch {
					return false
				}
				continue
			}
			matched = true
			v.pushKey(k)
			good := v.eval(pp.n, val, rep)
			v.pop()
			if !good {
				if !rep {
					return false
				}
				ok = false
			}
		}
		if !matched && v.fold && !(n.additional != nil && n.additional.boolean && !n.additional.accept) {
			var name string
			name, v.foldBuf = n.foldMatch(key, v.foldBuf)
			if !v.spend(1 + len(key)/16) {
				return false
			}
			if name != "" {
				if !rep {
					return false
				}
				if v.room() {
					v.pushKey(k)
					v.add(k, fmt.Sprintf("no property %s (property names are case-sensitive)", quote(shorten(keyText(key), gotWidth))),
						v.got(val, false), "did you mean "+quote(name)+"?")
					v.recs[len(v.recs)-1].off = v.tape[k].start
					v.pop()
				}
				ok = false
				continue
			}
		}
		if !matched && n.additional != nil {
			if !rep && n.additional.boolean && !n.additional.accept {
				return false
			}
			v.pushKey(k)
			if n.additional.boolean && !n.additional.accept {
				v.unknownProperty(n, i, k)
				ok = false
			} else if !v.eval(n.additional, val, rep) {
				if !rep {
					v.pop()
					return false
				}
				ok = false
			}
			v.pop()
		}
		if n.propNames != nil && !v.eval(n.propNames, k, false) {
			if !rep {
				return false
			}
			v.pushKey(k)
			if v.room() {
				v.add(k, "a property name that is "+describeDepth(n.propNames, 1), v.got(k, false), "")
			}
			v.pop()
			ok = false
		}
	}
	for r, name := range n.required {
		var has bool
		if foundBig != nil {
			has = foundBig[r]
		} else {
			has = found&(1<<r) != 0
		}
		if !has {
			if !rep {
				return false
			}
			if v.room() { // the message is made only when it is kept
				v.missing(n, i, name, "required property "+quote(name))
			}
			ok = false
		}
	}
	for _, d := range n.depRequired {
		if v.member(i, d.prop) < 0 {
			continue
		}
		for _, r := range d.req {
			if v.member(i, r) < 0 {
				if !rep {
					return false
				}
				if v.room() {
					v.missing(n, i, r, "required property "+quote(r)+" (because "+quote(d.prop)+" is present)")
				}
				ok = false
			}
		}
	}
	for _, d := range n.depSchemas {
		if v.member(i, d.prop) >= 0 && !v.eval(d.n, i, rep) {
			if !rep {
				return false
			}
			ok = false
		}
	}
	return ok
}

// member returns the tape index of the value of member name of the object
// at i, or -1.
func (v *validator) member(i int32, name string) int32 {
	t := &v.tape[i]
	for k := i + 1; k < t.next; k = v.tape[k+1].next {
		if !v.spend(1) {
			return -1
		}
		if string(v.str(&v.tape[k])) == name {
			return k + 1
		}
	}
	return -1
}

func (v *validator) array(n *node, i int32, rep bool) bool {
	t := v.tape[i]
	ok := true
	if n.minItems >= 0 && int64(t.n) < n.minItems || n.maxItems >= 0 && int64(t.n) > n.maxItems {
		if !rep {
			return false
		}
		if v.room() {
			v.add(i, "an array of "+countPhrase(n.minItems, n.maxItems, "item", "items"), plural(int64(t.n), "item", "items"), "")
		}
		ok = false
	}
	if n.prefixItems != nil || n.items != nil {
		idx := 0
		for k := i + 1; k < t.next; k = v.tape[k].next {
			sn := n.items
			if idx < len(n.prefixItems) {
				sn = n.prefixItems[idx]
			}
			if sn != nil {
				v.pushIdx(idx)
				var good bool
				if sn.boolean && !sn.accept {
					good = false
					if rep {
						if v.room() {
							v.add(k, fmt.Sprintf("no item here (at most %s)", plural(int64(len(n.prefixItems)), "item", "items")), v.got(k, true), "")
						}
					}
				} else {
					good = v.eval(sn, k, rep)
				}
				v.pop()
				if !good {
					if !rep {
						return false
					}
					ok = false
				}
			}
			idx++
		}
	}
	if n.contains != nil {
		count := int64(0)
		for k := i + 1; k < t.next; k = v.tape[k].next {
			if v.eval(n.contains, k, false) {
				count++
			}
		}
		lo := n.minContains
		if lo < 0 {
			lo = 1
		}
		if count < lo || n.maxContains >= 0 && count > n.maxContains {
			if !rep {
				return false
			}
			if v.room() {
				v.add(i, fmt.Sprintf("an array with %s matching: %s", countPhrase(lo, n.maxContains, "item", "items"), describeDepth(n.contains, 1)),
					plural(count, "matching item", "matching items"), "")
			}
			ok = false
		}
	}
	if n.unique {
		if a, b := v.duplicateItems(i); a >= 0 {
			if !rep {
				return false
			}
			if v.room() {
				v.add(i, "an array of unique items", fmt.Sprintf("items %d and %d are equal", a, b), "")
			}
			ok = false
		}
	}
	return ok
}
