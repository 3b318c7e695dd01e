package schema

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/miniopenclaw/tool/internal/jsonschema"
	"github.com/miniopenclaw/tool/internal/jsontext"
	"github.com/miniopenclaw/tool/internal/recost"
	suggestpkg "github.com/miniopenclaw/tool/internal/suggest"
)

// A Violation is one way in which a value failed its schema. It mirrors
// the root package's Violation.
type Violation struct {
	Pointer  string
	Expected string
	Got      string
	Hint     string
}

// cap bounds each field of v to jsonschema.MaxViolationText bytes and
// escapes hidden characters in it (see jsontext.Visible): the text of a
// type's own errors and of its schema's names is echoed here too.
func (v *Violation) cap() {
	for _, f := range []*string{&v.Pointer, &v.Expected, &v.Got, &v.Hint} {
		*f = capText(jsontext.Visible(capText(*f)))
	}
}

func capText(s string) string {
	if len(s) <= jsonschema.MaxViolationText {
		return s
	}
	cut := jsonschema.MaxViolationText - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// MaxViolations is the most violations Decode lists; past it, they are
// counted in a last entry, so that a hostile input cannot make the report
// grow with it.
const MaxViolations = 20

// decoder is the state of one Decode call.
type decoder struct {
	data     []byte
	maxDepth int
	viol     []Violation
	dropped  int // violations past MaxViolations
	path     []segment
	buf      []byte

	steps   int  // work charged so far (pattern matches)
	tooMuch bool // the work passed its budget; one violation says so

	maxBytes     int  // bound on the arguments with defaults; 0 for none
	defaultBytes int  // bytes of the defaults applied so far
	defaultsOver bool // a default was left out for passing maxBytes
}

// full reports whether no more violations are listed, counting the one
// the caller was about to record.
func (d *decoder) full() bool {
	if len(d.viol) < MaxViolations {
		return false
	}
	d.dropped++
	return true
}

// segment is one step of the JSON pointer to the value being decoded.
type segment struct {
	key   string
	index int // -1 for keys
}

// spend charges n steps of work to the decoding, whose budget is what
// jsonschema's Validate allows for data of its size, and reports whether
// it is still within it. The first charge past it records a violation;
// every check that charges after fails without one.
func (d *decoder) spend(n int) bool {
	if d.tooMuch {
		return false
	}
	d.steps += n
	if d.steps <= jsonschema.Budget(len(d.data)) {
		return true
	}
	d.tooMuch = true
	if !d.full() {
		d.viol = append(d.viol, Violation{Pointer: d.pointer(""),
			Expected: "arguments this tool can check within its work limit",
			Got:      "values its patterns or uniqueItems would take more work than that to check",
			Hint:     "send shorter, fewer or less deeply nested values"})
	}
	return false
}

// pointer returns the JSON pointer (RFC 6901) of the current value, with
// extra appended when not empty.
// Keys are shortened and hidden characters escaped (see
// jsontext.AppendPointerToken), so that the pointer of a long or hostile
// key stays short and readable.
func (d *decoder) pointer(extra string) string {
	var b []byte
	for _, s := range d.path {
		b = append(b, '/')
		if s.index >= 0 {
			b = strconv.AppendInt(b, int64(s.index), 10)
		} else {
			b = jsontext.AppendPointerToken(b, s.key)
		}
	}
	if extra != "" {
		b = append(b, '/')
		b = jsontext.AppendPointerToken(b, extra)
	}
	return string(b)
}

func (d *decoder) violate(expected, got, hint string) {
	if d.full() {
		return
	}
	d.add(expected, got, hint)
}

// violateUse records that the current value is not what u allows. What u
// allows is described only for a violation that is listed: a value that
// is not one of 600 enum values described them all, for each of 250,000
// values past the 20 listed (1.2 s and 487 MiB for 750 KB of arguments:
// TestViolationsPastTheListAreNotDescribed).
func (d *decoder) violateUse(u *use, got, hint string) {
	if d.full() {
		return
	}
	d.add(expect(u), got, hint)
}

// add lists a violation of the current value; the caller checked full.
func (d *decoder) add(expected, got, hint string) {
	d.viol = append(d.viol, Violation{Pointer: d.pointer(""), Expected: expected, Got: got, Hint: hint})
}

// mismatch records that the value at i is not what u allows and skips it.
func (d *decoder) mismatch(i int, u *use, depth int) (int, error) {
	end, err := jsontext.SkipValue(d.data, i, depth, d.maxDepth)
	if err != nil {
		return end, err
	}
	if !d.full() {
		d.viol = append(d.viol, Violation{Pointer: d.pointer(""), Expected: expect(u), Got: describe(d.data[i:end])})
	}
	return end, nil
}

// decode decodes the value at data[i] into v as u describes. Violations
// are collected; a syntax error stops decoding.
func (d *decoder) decode(i int, u *use, v reflect.Value, depth int) (int, error) {
	data := d.data
	i = jsontext.SkipSpace(data, i)
	if i >= len(data) {
		return i, jsontext.UnexpectedEnd(i)
	}
	c := data[i]
	n := u.n
	switch n.kind {
	case kPointer:
		if c == 'n' {
			i, err := jsontext.ReadLiteral(data, i, "null")
			if err == nil {
				v.SetZero()
			}
			return i, err
		}
		p := reflect.New(n.typ.Elem())
		i, err := d.decode(i, n.elem, p.Elem(), depth)
		v.Set(p)
		return i, err

	case kString:
		if c != '"' {
			return d.mismatch(i, u, depth)
		}
		s, next, err := jsontext.ReadString(data, i, d.buf)
		if err != nil {
			return next, err
		}
		if d.checkString(u, s, i, next) {
			v.SetString(string(s))
		}
		return next, nil

	case kBool:
		if u.stringOpt {
			return d.quoted(i, u, v, depth)
		}
		switch c {
		case 't':
			next, err := jsontext.ReadLiteral(data, i, "true")
			if err == nil && d.checkEnum(u, i, next, enumValue{b: true, isBool: true}) {
				v.SetBool(true)
			}
			return next, err
		case 'f':
			next, err := jsontext.ReadLiteral(data, i, "false")
			if err == nil && d.checkEnum(u, i, next, enumValue{isBool: true}) {
				v.SetBool(false)
			}
			return next, err
		}
		return d.mismatch(i, u, depth)

	case kInt, kUint, kFloat:
		if u.stringOpt {
			return d.quoted(i, u, v, depth)
		}
		if c != '-' && (c < '0' || c > '9') {
			return d.mismatch(i, u, depth)
		}
		lit, next, err := jsontext.ReadNumber(data, i)
		if err != nil {
			return next, err
		}
		d.setNumber(u, v, lit, i, next)
		return next, nil

	case kNumber:
		if c != '-' && (c < '0' || c > '9') {
			return d.mismatch(i, u, depth)
		}
		lit, next, err := jsontext.ReadNumber(data, i)
		if err != nil {
			return next, err
		}
		if f, ok := d.checkNumber(u, lit, i, next); ok {
			_ = f
			v.SetString(string(lit))
		}
		return next, nil

	case kBytes:
		if c != '"' {
			return d.mismatch(i, u, depth)
		}
		s, next, err := jsontext.ReadString(data, i, d.buf)
		if err != nil {
			return next, err
		}
		b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
		m, err := base64.StdEncoding.Strict().Decode(b, s)
		if err != nil || strings.ContainsAny(string(s), "\r\n") {
			d.violateUse(u, value(data[i:next]), "")
			return next, nil
		}
		v.SetBytes(b[:m])
		return next, nil

	case kSlice:
		if c != '[' {
			return d.mismatch(i, u, depth)
		}
		return d.decodeSlice(i, u, v, depth)

	case kArray:
		if c != '[' {
			return d.mismatch(i, u, depth)
		}
		return d.decodeArray(i, u, v, depth)

	case kMap:
		if c != '{' {
			return d.mismatch(i, u, depth)
		}
		return d.decodeMap(i, u, v, depth)

	case kStruct:
		if c != '{' {
			return d.mismatch(i, u, depth)
		}
		return d.decodeStruct(i, n, v, depth)

	case kAny:
		x, next, err := d.decodeAny(i, depth)
		if err == nil && x != nil {
			v.Set(reflect.ValueOf(x))
		}
		return next, err

	case kRaw:
		next, err := jsontext.SkipValue(data, i, depth, d.maxDepth)
		if err != nil {
			return next, err
		}
		v.SetBytes(append([]byte(nil), data[i:next]...))
		return next, nil

	case kTime:
		if c != '"' {
			return d.mismatch(i, u, depth)
		}
		s, next, err := jsontext.ReadString(data, i, d.buf)
		if err != nil {
			return next, err
		}
		// RFC 3339 first: time.Time's own parser also takes forms (a
		// +24:00 offset, a comma before the fraction) that RFC 3339 and
		// json.Marshal refuse.
		if _, ok := jsontext.CheckFormat("date-time", s); !ok {
			d.violateUse(u, value(data[i:next]), "")
			return next, nil
		}
		// Checked, s is ASCII and its seconds are s[17:19]. A time.Time
		// has no second 60; the schema says so with timePattern.
		if s[17] == '6' {
			d.violateUse(u, value(data[i:next]), "a leap second (second 60) cannot be represented here")
			return next, nil
		}
		// RFC 3339 allows a lowercase t and z (section 5.6), which
		// time.Time's parser refuses.
		up := bytes.ToUpper(s)
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText(up); err != nil {
			d.violateUse(u, value(data[i:next]), shortMessage(err))
		}
		return next, nil

	case kText:
		next, err := jsontext.SkipValue(data, i, depth, d.maxDepth)
		if err != nil {
			return next, err
		}
		if n.check != nil {
			if vs := n.check.check(data[i:next], d.pointer("")); len(vs) > 0 {
				d.viol = append(d.viol, vs...)
				return next, nil
			}
		}
		if c != '"' {
			d.violateUse(u, describe(data[i:next]), "")
			return next, nil
		}
		s, _, err := jsontext.ReadString(data, i, d.buf)
		if err != nil {
			return next, err
		}
		if n.bigNum != notBig && !d.bigTextOK(n.bigNum, data[i:next], s) {
			return next, nil
		}
		if err := unmarshaler[encoding.TextUnmarshaler](v).UnmarshalText(s); err != nil {
			d.violateUse(u, value(data[i:next]), shortMessage(err))
		}
		return next, nil

	case kCustom:
		next, err := jsontext.SkipValue(data, i, depth, d.maxDepth)
		if err != nil {
			return next, err
		}
		raw := data[i:next]
		if n.check != nil {
			if vs := n.check.check(raw, d.pointer("")); len(vs) > 0 {
				d.viol = append(d.viol, vs...)
				return next, nil
			}
		}
		if n.bigNum != notBig {
			text := raw
			if c == '"' && len(raw) <= MaxBigNumberText+2 {
				if text, _, err = jsontext.ReadString(data, i, d.buf); err != nil {
					return next, err
				}
			}
			if !d.bigTextOK(n.bigNum, raw, text) {
				return next, nil
			}
		}
		if err := unmarshaler[json.Unmarshaler](v).UnmarshalJSON(raw); err != nil {
			d.violateUse(u, value(raw), shortMessage(err))
		}
		return next, nil
	}
	return i, fmt.Errorf("internal error: no decoder for kind %d", n.kind)
}

// MaxBigNumberText is the most characters of the JSON text (a number, or
// a string's quotes and contents) decoded into a math/big value (big.Int,
// big.Float, big.Rat, or a type that embeds one), and the largest
// exponent a big.Rat's text may have (a big.Rat expands 1e999999 into a
// million digits). Converting decimal text costs more than linear work:
// a million digits took 1.5 s of CPU. Longer text is a violation naming
// the field, and nothing is converted.
const MaxBigNumberText = 10_000

// MaxRegexpInsts bounds the program a regular expression decoded into a
// regexp.Regexp (or a type embedding one) compiles to, estimated before
// it is built, as a schema's pattern is bounded.
const MaxRegexpInsts = 1 << 14

// bigTextOK reports whether raw, the JSON text of a value decoded into a
// math/big type, and text, what its conversion reads, are within
// MaxBigNumberText (for a regexp.Regexp, whether text's program is within
// MaxRegexpInsts); if not, it records a violation saying so.
func (d *decoder) bigTextOK(k bigKind, raw, text []byte) bool {
	if k == regexpProgram {
		// A regular expression's text is compiled: a counted repetition
		// makes a short text a large program (\pL{999} repeated 100
		// times, 800 bytes, is hundreds of thousands of instructions).
		parsed, err := syntax.Parse(string(text), syntax.Perl)
		if err == nil && recost.Insts(parsed, MaxRegexpInsts) > MaxRegexpInsts {
			d.violate(fmt.Sprintf("a regular expression whose program holds at most %d instructions", MaxRegexpInsts),
				value(raw), "a counted repetition such as {999} repeats what it applies to; repeat less")
			return false
		}
		return true // a syntax error is the conversion's to report
	}
	if len(raw) > MaxBigNumberText+2 {
		d.violate(fmt.Sprintf("a number of at most %d digits", MaxBigNumberText),
			fmt.Sprintf("%d characters", len(raw)),
			"numbers decoded into math/big values are bounded so that converting them stays cheap; send fewer digits")
		return false
	}
	if k == bigRational {
		if e, ok := ratExponent(text); ok && e > MaxBigNumberText {
			d.violate(fmt.Sprintf("a number whose exponent is at most %d", MaxBigNumberText),
				value(raw),
				"its exponent would expand into that many digits; send a smaller exponent")
			return false
		}
	}
	return true
}

// ratExponent returns the magnitude of the exponent of big.Rat text
// (decimal e or E, binary p or P; a hexadecimal mantissa has only p),
// saturated at MaxBigNumberText+1, and whether it has one.
func ratExponent(t []byte) (int, bool) {
	i := 0
	for i < len(t) && (t[i] == '+' || t[i] == '-' || t[i] == ' ') {
		i++
	}
	hex := len(t) >= i+2 && t[i] == '0' && (t[i+1] == 'x' || t[i+1] == 'X')
	at := -1
	for j := i; j < len(t); j++ {
		if c := t[j] | 0x20; c == 'p' || c == 'e' && !hex {
			at = j
			break
		}
	}
	if at < 0 {
		return 0, false
	}
	e := 0
	for _, c := range t[at+1:] {
		if c >= '0' && c <= '9' {
			e = min(e*10+int(c-'0'), MaxBigNumberText+1)
		}
	}
	return e, true
}

// unmarshaler returns v's implementation of I, through its address when
// the method has a pointer receiver.
func unmarshaler[I any](v reflect.Value) I {
	if x, ok := v.Addr().Interface().(I); ok {
		return x
	}
	return v.Interface().(I)
}

// shortMessage keeps the plain-words tail of a type's own decoding error
// ("IPv4 address too short" from `ParseAddr("1.2.3"): IPv4 address too
// short`) for the model, and drops it when it still looks like code: the
// model must not see Go syntax, and a third-party error may hold anything.
func shortMessage(err error) string {
	msg := strings.ToValidUTF8(err.Error(), "\uFFFD")
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	if len(msg) > 120 || strings.ContainsAny(msg, "(){}[]*/\\\"`") || looksQualified(msg) {
		return ""
	}
	return msg
}

// looksQualified reports whether s holds a Go qualified name such as
// strconv.ParseFloat or *net.AddrError.
func looksQualified(s string) bool {
	for _, w := range strings.Fields(s) {
		if i := strings.IndexByte(w, '.'); i > 0 && i < len(w)-1 && isIdent(w[:i]) && isIdent(strings.TrimRight(w[i+1:], ",;:")) {
			return true
		}
	}
	return false
}

func isIdent(s string) bool {
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// quoted decodes a number or boolean carried inside a string (the
// ,string option).
func (d *decoder) quoted(i int, u *use, v reflect.Value, depth int) (int, error) {
	if d.data[i] != '"' {
		return d.mismatch(i, u, depth)
	}
	s, next, err := jsontext.ReadString(d.data, i, d.buf)
	if err != nil {
		return next, err
	}
	bad := func() (int, error) {
		d.violateUse(u, value(d.data[i:next]), "")
		return next, nil
	}
	if u.n.kind == kBool {
		switch string(s) {
		case "true":
			if d.checkEnum(u, i, next, enumValue{b: true, isBool: true}) {
				v.SetBool(true)
			}
		case "false":
			if d.checkEnum(u, i, next, enumValue{isBool: true}) {
				v.SetBool(false)
			}
		default:
			return bad()
		}
		return next, nil
	}
	lit := append([]byte(nil), s...)
	if len(lit) == 0 {
		return bad()
	}
	if u.enumSet != nil && !slices.Contains(u.enumSet.strs, string(lit)) {
		// The schema lists the strings; compare the text, not the number.
		return bad()
	}
	if u.n.kind != kFloat && !isPlainInt(lit, u.n.kind == kUint) {
		return bad()
	}
	if end, err := readWholeNumber(lit); err != nil || end != len(lit) {
		return bad()
	}
	d.setNumber(u, v, lit, i, next)
	return next, nil
}

func isPlainInt(lit []byte, unsigned bool) bool {
	for k, c := range lit {
		if c == '-' && k == 0 && !unsigned && len(lit) > 1 {
			continue
		}
		if c < '0' || c > '9' {
			return false
		}
	}
	return !(len(lit) > 1 && lit[0] == '0') && !(len(lit) > 2 && lit[0] == '-' && lit[1] == '0')
}

func readWholeNumber(lit []byte) (int, error) {
	_, end, err := jsontext.ReadNumber(lit, 0)
	return end, err
}

// setNumber checks a number literal against u and stores it in v.
func (d *decoder) setNumber(u *use, v reflect.Value, lit []byte, i, next int) {
	n := u.n
	switch n.kind {
	case kInt:
		x, ok := parseInt(lit)
		if !ok || n.bits < 64 && (x < -(1<<(n.bits-1)) || x > 1<<(n.bits-1)-1) {
			d.violateUse(u, value(d.data[i:next]), outOfRange(u, lit))
			return
		}
		if d.checkNumberValue(u, float64(x), lit, i, next, enumValue{f: float64(x)}) {
			v.SetInt(x)
		}
	case kUint:
		x, ok := parseUint(lit)
		if !ok || n.bits < 64 && x > 1<<n.bits-1 {
			d.violateUse(u, value(d.data[i:next]), outOfRange(u, lit))
			return
		}
		if d.checkNumberValue(u, float64(x), lit, i, next, enumValue{f: float64(x)}) {
			v.SetUint(x)
		}
	case kFloat:
		// Constraints apply to the number written, as a generic validator
		// sees it, not to its float32 rounding.
		f, err := strconv.ParseFloat(string(lit), 64)
		if err == nil && n.bits == 32 {
			_, err = strconv.ParseFloat(string(lit), 32)
		}
		if err != nil {
			d.violateUse(u, value(d.data[i:next]), outOfRange(u, lit))
			return
		}
		if d.checkNumberValue(u, f, lit, i, next, enumValue{f: f}) {
			v.SetFloat(f)
		}
	}
}

// outOfRange returns the hint for a number literal that a Go integer or
// float of u's kind cannot hold: "out of range" with the range, when the
// literal is a number of the right kind (an integer for integer kinds)
// and the schema states no bound of its own (which the message names
// already), else "".
func outOfRange(u *use, lit []byte) string {
	n := u.n
	if u.c.min != nil || u.c.max != nil {
		return ""
	}
	switch n.kind {
	case kInt:
		if !exactInteger(lit) {
			return ""
		}
		hi := uint64(1)<<(n.bits-1) - 1
		return fmt.Sprintf("out of range: this parameter holds integers from -%d to %d", hi+1, hi)
	case kUint:
		if !exactInteger(lit) {
			return ""
		}
		hi := uint64(1)<<n.bits - 1
		if n.bits == 64 {
			hi = math.MaxUint64
		}
		return fmt.Sprintf("out of range: this parameter holds integers from 0 to %d", hi)
	case kFloat:
		hi := strconv.FormatFloat(math.MaxFloat64, 'g', -1, 64)
		if n.bits == 32 {
			hi = strconv.FormatFloat(math.MaxFloat32, 'g', -1, 32)
		}
		return fmt.Sprintf("out of range: this parameter holds numbers from -%s to %s", hi, hi)
	}
	return ""
}

// parseInt parses an integer literal; it accepts integral values written
// with a fraction or exponent (3.0, 1e2) as JSON Schema's "integer" does.
func parseInt(lit []byte) (int64, bool) {
	neg := len(lit) > 0 && lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	if len(digits) > 0 && len(digits) <= 18 {
		var x int64
		plain := true
		for _, c := range digits {
			if c < '0' || c > '9' {
				plain = false
				break
			}
			x = x*10 + int64(c-'0')
		}
		if plain {
			if neg {
				x = -x
			}
			return x, true
		}
	}
	if !exactInteger(lit) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || f != math.Trunc(f) || f < -9.223372036854775808e18 || f >= 9.223372036854775808e18 {
		if err == nil || !jsontext.IsInteger(lit) {
			return 0, false
		}
		x, err := strconv.ParseInt(string(lit), 10, 64)
		return x, err == nil
	}
	if isDigits(digits) {
		x, err := strconv.ParseInt(string(lit), 10, 64)
		return x, err == nil
	}
	return int64(f), true
}

func parseUint(lit []byte) (uint64, bool) {
	if len(lit) > 0 && lit[0] == '-' {
		x, ok := parseInt(lit)
		return 0, ok && x == 0
	}
	if isDigits(lit) {
		x, err := strconv.ParseUint(string(lit), 10, 64)
		return x, err == nil
	}
	if !exactInteger(lit) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || f != math.Trunc(f) || f < 0 || f >= 1.8446744073709551616e19 {
		return 0, false
	}
	return uint64(f), true
}

// exactInteger reports whether a number literal is an integer in exact
// decimal arithmetic: 3.0 and 1e2 are, 0.99999999999999999999 is not,
// though it rounds to 1 as a float64.
func exactInteger(lit []byte) bool {
	return jsonschema.IsIntegerLiteral(lit)
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// checkNumber checks a json.Number literal.
func (d *decoder) checkNumber(u *use, lit []byte, i, next int) (float64, bool) {
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		f = math.Inf(1)
		if lit[0] == '-' {
			f = math.Inf(-1)
		}
	}
	return f, d.checkNumberValue(u, f, lit, i, next, enumValue{f: f})
}

// checkNumberValue checks bounds, multipleOf and enum; it records a
// violation and returns false when the value fails.
func (d *decoder) checkNumberValue(u *use, f float64, lit []byte, i, next int, ev enumValue) bool {
	c := u.c
	if lo := c.min; lo != nil && (f < lo.v || lo.exclusive && f == lo.v) {
		d.violateUse(u, value(d.data[i:next]), "")
		return false
	}
	if hi := c.max; hi != nil && (f > hi.v || hi.exclusive && f == hi.v) {
		d.violateUse(u, value(d.data[i:next]), "")
		return false
	}
	if c.multipleOf > 0 && !isMultiple(lit, c.multipleOfLit) {
		d.violateUse(u, value(d.data[i:next]), "")
		return false
	}
	return d.checkEnum(u, i, next, ev)
}

// isMultiple reports whether the number written lit is a multiple of m,
// in exact decimal arithmetic as JSON Schema asks (0.3 is a multiple of
// 0.1, 1000000.0001 is not a multiple of 0.01). Its work is linear in the
// length of lit.
func isMultiple(lit []byte, m string) bool {
	return jsonschema.IsMultiple(lit, []byte(m))
}

// checkString checks length, pattern, format and enum of a string.
func (d *decoder) checkString(u *use, s []byte, i, next int) bool {
	c := u.c
	if c.minLength >= 0 || c.maxLength >= 0 {
		n := utf8.RuneCount(s)
		if n < c.minLength || c.maxLength >= 0 && n > c.maxLength {
			d.violateUse(u, value(d.data[i:next]), "it has "+plural(n, "character", "characters"))
			return false
		}
	}
	if c.pattern != nil {
		if !d.spend(c.pattern.Work(len(s))) {
			return false
		}
		if !c.pattern.Regexp().Match(s) {
			d.violateUse(u, value(d.data[i:next]), "")
			return false
		}
	}
	if c.format != "" {
		if known, ok := jsontext.CheckFormat(c.format, s); known && !ok {
			d.violateUse(u, value(d.data[i:next]), "")
			return false
		}
	}
	if u.enumSet != nil {
		for _, e := range u.enumSet.strs {
			if e == string(s) {
				return true
			}
		}
		if !d.full() {
			d.add(expect(u), value(d.data[i:next]), closeEnum(string(s), u.enumSet.strs))
		}
		return false
	}
	return true
}

func (d *decoder) checkEnum(u *use, i, next int, ev enumValue) bool {
	if u.enumSet == nil || u.enumSet.has(ev) {
		return true
	}
	d.violateUse(u, value(d.data[i:next]), "")
	return false
}

func closeEnum(s string, allowed []string) string {
	for _, a := range allowed {
		if strings.EqualFold(a, s) {
			return fmt.Sprintf("did you mean %q?", a)
		}
	}
	return ""
}

// object reads the object whose '{' is at data[i] and returns the offset
// just past its '}'. It calls member for each member with the key and the
// offset of the value; member returns the offset just past the value. The
// key aliases the decoder's buffer: member must be done with it before it
// decodes the value.
func (d *decoder) object(i, depth int, member func(key []byte, at int) (int, error)) (int, error) {
	if depth >= d.maxDepth {
		return i, depthError(i, d.maxDepth)
	}
	data := d.data
	i = jsontext.SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, nil
	}
	for {
		i = jsontext.SkipSpace(data, i)
		if i >= len(data) {
			return i, jsontext.UnexpectedEnd(i)
		}
		if data[i] != '"' {
			return i, jsontext.Unexpected(data, i, "a string key")
		}
		key, next, err := jsontext.ReadString(data, i, d.buf)
		if err != nil {
			return next, err
		}
		i = jsontext.SkipSpace(data, next)
		if i >= len(data) {
			return i, jsontext.UnexpectedEnd(i)
		}
		if data[i] != ':' {
			return i, jsontext.Unexpected(data, i, "':'")
		}
		if i, err = member(key, i+1); err != nil {
			return i, err
		}
		i = jsontext.SkipSpace(data, i)
		if i >= len(data) {
			return i, jsontext.UnexpectedEnd(i)
		}
		if data[i] == '}' {
			return i + 1, nil
		}
		if data[i] != ',' {
			return i, jsontext.Unexpected(data, i, "',' or '}'")
		}
		i++
	}
}

// array reads the array whose '[' is at data[i] and returns the offset
// just past its ']'. It calls item for each item with its index and
// offset; item returns the offset just past the item.
func (d *decoder) array(i, depth int, item func(k, at int) (int, error)) (int, error) {
	if depth >= d.maxDepth {
		return i, depthError(i, d.maxDepth)
	}
	data := d.data
	i = jsontext.SkipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1, nil
	}
	for k := 0; ; k++ {
		var err error
		if i, err = item(k, i); err != nil {
			return i, err
		}
		i = jsontext.SkipSpace(data, i)
		if i >= len(data) {
			return i, jsontext.UnexpectedEnd(i)
		}
		if data[i] == ']' {
			return i + 1, nil
		}
		if data[i] != ',' {
			return i, jsontext.Unexpected(data, i, "',' or ']'")
		}
		i++
	}
}

// element decodes one item or member value at data[at] into v, with seg
// on the path for messages.
func (d *decoder) element(seg segment, at int, u *use, v reflect.Value, depth int) (int, error) {
	d.path = append(d.path, seg)
	end, err := d.decode(at, u, v, depth)
	d.path = d.path[:len(d.path)-1]
	return end, err
}

// violateAt records a violation at the member key of the current value.
func (d *decoder) violateAt(key, expected, got, hint string) {
	d.path = append(d.path, segment{key: key, index: -1})
	d.violate(expected, got, hint)
	d.path = d.path[:len(d.path)-1]
}

func (d *decoder) decodeSlice(i int, u *use, v reflect.Value, depth int) (int, error) {
	start := i
	n := u.n
	var s reflect.Value
	var spans []int // start and end of each item, for uniqueItems
	count := 0
	end, err := d.array(i, depth, func(k, at int) (int, error) {
		if !s.IsValid() {
			s = reflect.MakeSlice(n.typ, 4, 4)
		} else if k == s.Len() {
			ns := reflect.MakeSlice(n.typ, 2*k, 2*k)
			reflect.Copy(ns, s)
			s = ns
		}
		if u.c.uniqueItems {
			spans = append(spans, jsontext.SkipSpace(d.data, at))
		}
		next, err := d.element(segment{index: k}, at, n.elem, s.Index(k), depth+1)
		if u.c.uniqueItems {
			spans = append(spans, next)
		}
		count = k + 1
		return next, err
	})
	if err != nil {
		return end, err
	}
	if !s.IsValid() {
		s = reflect.MakeSlice(n.typ, 0, 0)
	}
	s = s.Slice(0, count)
	if d.checkItems(u, count, spans, start, end) {
		v.Set(s)
	}
	return end, nil
}

func (d *decoder) decodeArray(i int, u *use, v reflect.Value, depth int) (int, error) {
	start := i
	n := u.n
	count := 0
	var spans []int
	end, err := d.array(i, depth, func(k, at int) (int, error) {
		count = k + 1
		if k >= n.length {
			return jsontext.SkipValue(d.data, at, depth+1, d.maxDepth)
		}
		if u.c.uniqueItems {
			spans = append(spans, jsontext.SkipSpace(d.data, at))
		}
		next, err := d.element(segment{index: k}, at, n.elem, v.Index(k), depth+1)
		if u.c.uniqueItems {
			spans = append(spans, next)
		}
		return next, err
	})
	if err != nil {
		return end, err
	}
	if count != n.length {
		d.violateUse(u, "an array of "+plural(count, "item", "items"), "")
		return end, nil
	}
	d.checkItems(u, count, spans, start, end)
	return end, nil
}

// checkItems checks minItems, maxItems and uniqueItems. spans holds the
// start and end offsets of each item when uniqueItems is set.
func (d *decoder) checkItems(u *use, count int, spans []int, start, end int) bool {
	c := u.c
	if count < c.minItems || c.maxItems >= 0 && count > c.maxItems {
		d.violateUse(u, "an array of "+plural(count, "item", "items"), "")
		return false
	}
	if c.uniqueItems {
		// Comparing reads the items' text as values, at each array's
		// level: a recursive type's nested arrays were read again at
		// every level (31 levels around 900 KB took 2.4 s), so the
		// bytes read are charged to the work budget, uniqueBytesStep
		// steps each.
		if !d.spend(uniqueBytesStep * (end - start)) {
			return false
		}
		if j, k, dup := duplicateItems(d.data, spans); dup {
			d.violateUse(u, value(d.data[start:end]), fmt.Sprintf("items %d and %d are equal", j, k))
			return false
		}
	}
	return true
}

// uniqueBytesStep is the steps of work charged for each byte of an array
// whose items are compared for uniqueItems: they are decoded as values
// and written in a canonical form, which costs about as much as a pattern
// match of a program of 64 instructions.
const uniqueBytesStep = 8

// duplicateItems finds two equal items as JSON Schema compares them: as
// written, with objects compared regardless of key order and numbers by
// value (1 equals 1.0), not as bound (where an absent field would equal
// its zero value).
func duplicateItems(data []byte, spans []int) (int, int, bool) {
	seen := make(map[string]int, len(spans)/2)
	for k := 0; k+1 < len(spans); k += 2 {
		key, ok := canonicalJSON(data[spans[k]:spans[k+1]])
		if !ok {
			continue
		}
		if j, dup := seen[key]; dup {
			return j, k / 2, true
		}
		seen[key] = k / 2
	}
	return 0, 0, false
}

// canonicalJSON returns a form of a JSON value in which equal values are
// equal strings: object keys sorted, numbers as exact rationals.
func canonicalJSON(raw []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", false
	}
	var b strings.Builder
	writeCanonical(&b, v)
	return b.String(), true
}

func writeCanonical(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			writeCanonical(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case json.Number:
		b.WriteString(jsonschema.CanonicalNumber([]byte(x)))
	case string:
		b.WriteString(strconv.Quote(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	default:
		b.WriteString("null")
	}
}

func depthError(i, maxDepth int) error {
	return &jsontext.SyntaxError{Offset: i, Msg: fmt.Sprintf("%s (more than %d levels)", jsontext.ErrDepth, maxDepth)}
}

func (d *decoder) decodeMap(i int, u *use, v reflect.Value, depth int) (int, error) {
	n := u.n
	m := reflect.MakeMap(n.typ)
	keyType, elemType := n.typ.Key(), n.typ.Elem()
	count := 0
	end, err := d.object(i, depth, func(keyBytes []byte, at int) (int, error) {
		key := string(keyBytes)
		kv := reflect.ValueOf(key).Convert(keyType)
		if m.MapIndex(kv).IsValid() {
			d.violateAt(key, "each key once", fmt.Sprintf("a second %q", shortKey(key)), "")
			return jsontext.SkipValue(d.data, at, depth+1, d.maxDepth)
		}
		ev := reflect.New(elemType).Elem()
		next, err := d.element(segment{key: key, index: -1}, at, n.elem, ev, depth+1)
		m.SetMapIndex(kv, ev)
		count++
		return next, err
	})
	if err != nil {
		return end, err
	}
	c := u.c
	if count < c.minProps || c.maxProps >= 0 && count > c.maxProps {
		d.violateUse(u, "an object with "+plural(count, "property", "properties"), "")
		return end, nil
	}
	v.Set(m)
	return end, nil
}

func (d *decoder) decodeStruct(i int, n *node, v reflect.Value, depth int) (int, error) {
	var seenSmall uint64
	var seenBig []uint64
	if len(n.fields) > 64 {
		seenBig = make([]uint64, (len(n.fields)+63)/64)
	}
	var unknown []string
	end, err := d.object(i, depth, func(key []byte, at int) (int, error) {
		f := n.byName[string(key)]
		switch {
		case f == nil:
			name := string(key)
			next, err := jsontext.SkipValue(d.data, at, depth+1, d.maxDepth)
			if err != nil {
				return next, err
			}
			switch {
			case d.full():
			case contains(unknown, name):
				d.violateAt(name, "each key once", fmt.Sprintf("a second %q", shortKey(name)), "")
			default:
				unknown = append(unknown, name)
				expected := fmt.Sprintf("no property %q (allowed: %s)", shortKey(name), fieldNames(n))
				if len(n.fields) == 0 {
					expected = fmt.Sprintf("no property %q (this object takes none)", shortKey(name))
				}
				d.violateAt(name, expected, value(d.data[jsontext.SkipSpace(d.data, at):next]), suggest(name, n))
			}
			return next, nil
		case seen(seenSmall, seenBig, f.bit):
			d.violateAt(f.name, "each key once", fmt.Sprintf("a second %q", f.name), "")
			return jsontext.SkipValue(d.data, at, depth+1, d.maxDepth)
		}
		mark(&seenSmall, seenBig, f.bit)
		return d.element(segment{key: f.name, index: -1}, at, f.u, fieldOf(v, f.index), depth+1)
	})
	if err != nil {
		return end, err
	}
	for _, f := range n.fields {
		if seen(seenSmall, seenBig, f.bit) {
			continue
		}
		if dv := f.def; dv != nil {
			d.defaultBytes += len(dv.raw)
			if d.maxBytes > 0 && len(d.data)+d.defaultBytes > d.maxBytes {
				d.defaultsOver = true
				continue
			}
			dv.apply(fieldOf(v, f.index))
			continue
		}
		if f.required && !d.full() {
			d.viol = append(d.viol, Violation{
				Pointer:  d.pointer(f.name),
				Expected: fmt.Sprintf("required property %q (%s)", f.name, expect(f.u)),
				Got:      "nothing",
			})
		}
	}
	return end, nil
}

func contains(s []string, x string) bool {
	for _, e := range s {
		if e == x {
			return true
		}
	}
	return false
}

func seen(small uint64, big []uint64, bit uint) bool {
	if big != nil {
		return big[bit/64]&(1<<(bit%64)) != 0
	}
	return small&(1<<bit) != 0
}

func mark(small *uint64, big []uint64, bit uint) {
	if big != nil {
		big[bit/64] |= 1 << (bit % 64)
		return
	}
	*small |= 1 << bit
}

// fieldOf returns the field at index, allocating nil embedded pointers on
// the way as encoding/json does.
func fieldOf(v reflect.Value, index []int) reflect.Value {
	if len(index) == 1 {
		return v.Field(index[0])
	}
	for k, x := range index {
		if k > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

func fieldNames(n *node) string {
	var b strings.Builder
	for k, f := range n.fields {
		if k == 20 {
			fmt.Fprintf(&b, ", … %d more", len(n.fields)-20)
			break
		}
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.name)
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

func shortKey(k string) string {
	if len(k) > 60 {
		cut := 60
		for cut > 0 && !utf8.RuneStart(k[cut]) {
			cut--
		}
		return k[:cut] + "…"
	}
	return k
}

// suggest returns a hint naming the property closest to an unknown key.
func suggest(key string, n *node) string {
	names := make([]string, len(n.fields))
	for i, f := range n.fields {
		names[i] = f.name
	}
	close := suggestpkg.Closest(key, names, 1)
	if len(close) == 0 {
		return ""
	}
	if strings.EqualFold(close[0], key) {
		return fmt.Sprintf("did you mean %q? names are case-sensitive", close[0])
	}
	return fmt.Sprintf("did you mean %q?", close[0])
}

// decodeAny decodes any JSON value the way encoding/json fills an
// interface: objects as map[string]any, arrays as []any, numbers as
// float64.
func (d *decoder) decodeAny(i, depth int) (any, int, error) {
	data := d.data
	i = jsontext.SkipSpace(data, i)
	if i >= len(data) {
		return nil, i, jsontext.UnexpectedEnd(i)
	}
	switch c := data[i]; c {
	case '"':
		s, next, err := jsontext.ReadString(data, i, d.buf)
		return string(s), next, err
	case 't':
		next, err := jsontext.ReadLiteral(data, i, "true")
		return true, next, err
	case 'f':
		next, err := jsontext.ReadLiteral(data, i, "false")
		return false, next, err
	case 'n':
		next, err := jsontext.ReadLiteral(data, i, "null")
		return nil, next, err
	case '[':
		arr := []any{}
		end, err := d.array(i, depth, func(k, at int) (int, error) {
			d.path = append(d.path, segment{index: k})
			x, next, err := d.decodeAny(at, depth+1)
			d.path = d.path[:len(d.path)-1]
			arr = append(arr, x)
			return next, err
		})
		return arr, end, err
	case '{':
		obj := map[string]any{}
		end, err := d.object(i, depth, func(kb []byte, at int) (int, error) {
			key := string(kb)
			d.path = append(d.path, segment{key: key, index: -1})
			x, next, err := d.decodeAny(at, depth+1)
			if _, dup := obj[key]; dup && err == nil {
				d.violate("each key once", fmt.Sprintf("a second %q", shortKey(key)), "")
			}
			d.path = d.path[:len(d.path)-1]
			obj[key] = x
			return next, err
		})
		return obj, end, err
	default:
		lit, next, err := jsontext.ReadNumber(data, i)
		if err != nil {
			return nil, next, err
		}
		f, err := strconv.ParseFloat(string(lit), 64)
		if err != nil {
			d.violate("a number", value(lit), fmt.Sprintf("out of range: this parameter holds numbers from -%[1]s to %[1]s",
				strconv.FormatFloat(math.MaxFloat64, 'g', -1, 64)))
			return nil, next, nil
		}
		return f, next, nil
	}
}
