package residual

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cedar-policy/cedar-go"
)

// identifier is a name a message shows unquoted.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// MaxDepth bounds the nesting of values converted to Cedar. The
// registry has already bounded the arguments' size and depth; this keeps
// attributes given by the host bounded too.
const MaxDepth = 64

// CedarValue converts a JSON-like Go value to a Cedar value, as
// cedarValue does; ok is false for a value Cedar cannot hold.
func CedarValue(v any) (cedar.Value, bool) { return cedarValue(v, 0) }

// Unmodelled returns the path (such as org.teams[2]) of the first value
// in attrs, keys in sorted order, that CedarValue would leave out
// although it is not null: a number with more than four decimal places
// or beyond what Cedar holds, a Go type it has no conversion for, or a
// value nested past MaxDepth; and the value's Go type. It returns ""
// when there is none. Left out, such a value would read as absent, and
// a forbid guarded by has would not apply.
func Unmodelled(attrs map[string]any) (path, typ string) {
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		if p, t := unmodelled(attrs[k], k, 1); p != "" {
			return p, t
		}
	}
	return "", ""
}

func unmodelled(v any, path string, depth int) (string, string) {
	if depth > MaxDepth {
		return path, "a value nested past depth " + strconv.Itoa(MaxDepth)
	}
	switch v := v.(type) {
	case nil, string, bool, int, int64, []string:
		return "", ""
	case json.Number:
		if _, ok := numberValue(string(v)); !ok {
			return path, "number " + shortNumber(string(v))
		}
		return "", ""
	case float64:
		if _, ok := numberValue(strconv.FormatFloat(v, 'f', -1, 64)); !ok {
			return path, "number " + shortNumber(strconv.FormatFloat(v, 'g', -1, 64))
		}
		return "", ""
	case []any:
		for i, e := range v {
			if p, t := unmodelled(e, path+"["+strconv.Itoa(i)+"]", depth+1); p != "" {
				return p, t
			}
		}
		return "", ""
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if p, t := unmodelled(v[k], path+"."+k, depth+1); p != "" {
				return p, t
			}
		}
		return "", ""
	}
	return path, fmt.Sprintf("%T", v)
}

// shortNumber cuts a number's text for a message.
func shortNumber(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// cedarValue converts a JSON-like Go value to a Cedar value. Cedar has no
// null and no floating point: null and absent values are left out of
// records and sets (a policy tests them with has), and a non-integer
// number becomes a decimal when it has at most four decimal places, else
// it is left out. Values are converted as data only: a JSON object is
// always a record, never an entity reference or extension value, whatever
// its keys.
func cedarValue(v any, depth int) (cedar.Value, bool) {
	if depth > MaxDepth {
		return nil, false
	}
	switch v := v.(type) {
	case string:
		return cedar.String(v), true
	case bool:
		return cedar.Boolean(v), true
	case json.Number:
		return numberValue(string(v))
	case float64:
		return numberValue(strconv.FormatFloat(v, 'f', -1, 64))
	case int:
		return cedar.Long(v), true
	case int64:
		return cedar.Long(v), true
	case []string:
		vals := make([]cedar.Value, len(v))
		for i, s := range v {
			vals[i] = cedar.String(s)
		}
		return cedar.NewSet(vals...), true
	case []any:
		vals := make([]cedar.Value, 0, len(v))
		for _, e := range v {
			if cv, ok := cedarValue(e, depth+1); ok {
				vals = append(vals, cv)
			}
		}
		return cedar.NewSet(vals...), true
	case map[string]any:
		m := make(cedar.RecordMap, len(v))
		for k, e := range v {
			if cv, ok := cedarValue(e, depth+1); ok {
				m[cedar.String(k)] = cv
			}
		}
		return cedar.NewRecord(m), true
	}
	return nil, false
}

// numberValue converts a number of a principal's attributes: a Long when
// it is a whole number in 64 bits (whatever its spelling, see
// wholeNumber), a decimal when it has at most four decimal places, else
// nothing.
func numberValue(s string) (cedar.Value, bool) {
	if n, whole, _ := wholeNumber([]byte(s)); whole {
		return cedar.Long(n), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, false
	}
	txt := strconv.FormatFloat(f, 'f', -1, 64)
	if dot := strings.IndexByte(txt, '.'); dot >= 0 && len(txt)-dot-1 > 4 {
		return nil, false
	}
	d, err := cedar.NewDecimalFromFloat(f)
	if err != nil {
		return nil, false
	}
	return d, true
}

// DecodeArgs parses checked arguments, numbers kept exact, and returns
// them with their canonical encoding: keys sorted, no insignificant space.
func DecodeArgs(args []byte) (map[string]any, []byte, error) {
	m := map[string]any{}
	if len(bytes.TrimSpace(args)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, nil, fmt.Errorf("arguments: %w", err)
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, nil, fmt.Errorf("arguments: %w", err)
	}
	return m, bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// wholeNumber reads lit, a JSON number, exactly: n is its value and whole
// is true when it is a whole number from math.MinInt64 to math.MaxInt64,
// however it is written (150, 150.0, 1.5e2, 15000e-2, -0). whole is false
// for any other number (150.5, 1e300, 9223372036854775808, 1e-9), and
// valid is false when lit is not a JSON number at all. The work is linear
// in len(lit), whatever the exponent says, and nothing is allocated.
func wholeNumber(lit []byte) (n int64, whole, valid bool) {
	i := 0
	neg := i < len(lit) && lit[i] == '-'
	if neg {
		i++
	}
	digitsFrom := func(j int) int {
		for j < len(lit) && lit[j] >= '0' && lit[j] <= '9' {
			j++
		}
		return j
	}
	intPart := lit[i:digitsFrom(i)]
	i += len(intPart)
	if len(intPart) == 0 || intPart[0] == '0' && len(intPart) > 1 {
		return 0, false, false // no digit, or a leading zero
	}
	var frac []byte
	if i < len(lit) && lit[i] == '.' {
		frac = lit[i+1 : digitsFrom(i+1)]
		if len(frac) == 0 {
			return 0, false, false
		}
		i += 1 + len(frac)
	}
	var exp int64
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		eneg := i < len(lit) && lit[i] == '-'
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			i++
		}
		end := digitsFrom(i)
		if end == i {
			return 0, false, false
		}
		for _, c := range lit[i:end] {
			if exp < 1<<40 { // saturated: far beyond any whole Long either way
				exp = exp*10 + int64(c-'0')
			}
		}
		if eneg {
			exp = -exp
		}
		i = end
	}
	if i != len(lit) {
		return 0, false, false
	}
	// The value is D × 10^(exp - len(frac)), D the digits of intPart and
	// frac read as one integer.
	digit := func(k int) byte {
		if k < len(intPart) {
			return intPart[k]
		}
		return frac[k-len(intPart)]
	}
	nd := len(intPart) + len(frac)
	first, last := 0, nd-1
	for first < nd && digit(first) == '0' {
		first++
	}
	if first == nd {
		return 0, true, true // zero, however written: 0, -0.0, 0e999
	}
	for digit(last) == '0' {
		last--
	}
	e := exp - int64(len(frac)) + int64(nd-1-last) // trailing zeros move into the exponent
	sig := int64(last - first + 1)
	if e < 0 || sig+e > 19 {
		return 0, false, true // a fraction, or at least 10^19
	}
	var u uint64 // below 10^19, so it fits
	for k := first; k <= last; k++ {
		u = u*10 + uint64(digit(k)-'0')
	}
	for range e {
		u *= 10
	}
	switch {
	case !neg && u <= math.MaxInt64:
		return int64(u), true, true
	case neg && u <= 1<<63:
		return int64(-u), true, true
	}
	return 0, false, true
}

// A NumberError refuses a call one of whose policies reads a value it
// cannot hold exactly: a number that is not a whole Long, or a null in an
// array (Cedar has no null; a set without it would look emptier than the
// tool's array). Its message is for the model.
type NumberError struct {
	Top string // the top-level argument it is in
	At  string // where the value is: amount, order.total, items[2]
	Lit string // the number as the call wrote it; "" for a null
}

func (e *NumberError) Error() string {
	if e.Lit == "" {
		return fmt.Sprintf("argument %s is null, which the permission policies cannot hold in a set; leave it out of the array", e.At)
	}
	lit := e.Lit
	if len(lit) > 40 {
		lit = lit[:40] + "…"
	}
	return fmt.Sprintf("argument %s = %s cannot be compared exactly by the permission policies, which compare numbers as whole numbers from %d to %d",
		e.At, lit, math.MinInt64, math.MaxInt64)
}

// FirstInexact returns the first number, in the members of args (a JSON
// object) that use reads, that is not a whole number in 64 bits (see
// wholeNumber): Cedar holds a number as a Long or a decimal, and a
// decimal cannot be ordered with <, nor a number beyond both be held at
// all, so a policy reading it could not decide the call as written. A
// null in an array is refused the same way (see NumberError). It
// returns nil when there is none, and when args is not a well-formed
// object (which ArgsRecord refuses). Members are visited in key order.
func FirstInexact(args []byte, use Use) *NumberError {
	p := argParser{b: args}
	p.space()
	if p.i == len(p.b) || p.skip(0) != nil || !p.odd {
		return nil // no number that is not a plain integer: the common case
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !use.All && !slices.Contains(use.Args, k) {
			continue
		}
		if e := inexactIn(m[k], ArgName(k), 0); e != nil {
			e.Top = k
			return e
		}
	}
	return nil
}

// inexactIn is FirstInexact within one value, at the path at.
func inexactIn(v any, at string, depth int) *NumberError {
	if depth > MaxDepth {
		return nil // ArgsRecord refuses it
	}
	switch v := v.(type) {
	case json.Number:
		if _, whole, _ := wholeNumber([]byte(v)); !whole {
			return &NumberError{At: at, Lit: string(v)}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if e := inexactIn(v[k], at+"."+ArgName(k), depth+1); e != nil {
				return e
			}
		}
	case []any:
		for i, e := range v {
			at := at + "[" + strconv.Itoa(i) + "]"
			if e == nil {
				return &NumberError{At: at}
			}
			if e := inexactIn(e, at, depth+1); e != nil {
				return e
			}
		}
	}
	return nil
}

// ArgName is an argument's name in a message: as it is when it is a
// plain identifier, else quoted and cut to 64 bytes.
func ArgName(k string) string {
	if identifier.MatchString(k) && len(k) <= 64 {
		return k
	}
	if len(k) > 64 {
		k = k[:64] + "…"
	}
	return strconv.Quote(k)
}
