package jsonschema

import (
	"math/big"
	"math/bits"
	"strconv"
)

// A decimal is an exact JSON number: (-1)^neg × digits × 10^exp. digits has
// no leading or trailing zeros; zero has no digits. Working on the decimal
// text keeps comparisons exact (no float rounding) and cheap even for
// literals such as 1e999999999, which math/big would expand digit by digit.
type decimal struct {
	neg    bool
	digits []byte
	exp    int64
}

// expLimit caps exponents. Literals beyond it are astronomically large or
// small; saturating keeps the arithmetic in int64 without changing any
// comparison with a schema bound of reasonable size.
const expLimit = 1 << 40

// parseDecimal converts a literal accepted by jsontext.ReadNumber. buf is
// scratch space for the digits of literals with a fraction; the result may
// alias lit or buf.
func parseDecimal(lit, buf []byte) decimal {
	var d decimal
	i := 0
	if i < len(lit) && lit[i] == '-' {
		d.neg = true
		i++
	}
	intStart := i
	for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
		i++
	}
	intPart := lit[intStart:i]
	var frac []byte
	if i < len(lit) && lit[i] == '.' {
		i++
		fs := i
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
		frac = lit[fs:i]
	}
	var e int64
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		eneg := false
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			eneg = lit[i] == '-'
			i++
		}
		for ; i < len(lit); i++ {
			if e < expLimit {
				e = e*10 + int64(lit[i]-'0')
			}
		}
		if e > expLimit {
			e = expLimit
		}
		if eneg {
			e = -e
		}
	}
	digits := intPart
	if len(frac) > 0 {
		trimmed := trimRightZeros(frac)
		if len(trimmed) > 0 {
			digits = append(append(buf[:0], intPart...), trimmed...)
			e -= int64(len(trimmed))
		}
	}
	// Strip leading zeros, then move trailing zeros into the exponent.
	j := 0
	for j < len(digits) && digits[j] == '0' {
		j++
	}
	digits = digits[j:]
	t := trimRightZeros(digits)
	e += int64(len(digits) - len(t))
	digits = t
	if len(digits) == 0 {
		return decimal{}
	}
	d.digits = digits
	d.exp = clampExp(e)
	return d
}

func clampExp(e int64) int64 {
	switch {
	case e > expLimit:
		return expLimit
	case e < -expLimit:
		return -expLimit
	}
	return e
}

func trimRightZeros(b []byte) []byte {
	n := len(b)
	for n > 0 && b[n-1] == '0' {
		n--
	}
	return b[:n]
}

func (d decimal) isZero() bool    { return len(d.digits) == 0 }
func (d decimal) isInteger() bool { return d.isZero() || d.exp >= 0 }

func (d decimal) sign() int {
	switch {
	case d.isZero():
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// cmpDecimal returns -1, 0 or +1 as a < b, a == b or a > b.
func cmpDecimal(a, b decimal) int {
	sa, sb := a.sign(), b.sign()
	if sa != sb {
		if sa < sb {
			return -1
		}
		return 1
	}
	if sa == 0 {
		return 0
	}
	r := cmpMagnitude(a, b)
	if sa < 0 {
		return -r
	}
	return r
}

func cmpMagnitude(a, b decimal) int {
	ma := int64(len(a.digits)) + a.exp
	mb := int64(len(b.digits)) + b.exp
	if ma != mb {
		if ma < mb {
			return -1
		}
		return 1
	}
	n := min(len(a.digits), len(b.digits))
	for i := 0; i < n; i++ {
		if a.digits[i] != b.digits[i] {
			if a.digits[i] < b.digits[i] {
				return -1
			}
			return 1
		}
	}
	// With no trailing zeros, the longer one has more nonzero digits.
	switch {
	case len(a.digits) < len(b.digits):
		return -1
	case len(a.digits) > len(b.digits):
		return 1
	}
	return 0
}

// isMultiple reports whether v is an integer multiple of m (m > 0). Its
// work is linear in the digits of v when m has at most 18 significant
// digits, and proportional to the product of their digit counts
// otherwise; multipleWork says how much.
func isMultiple(v, m decimal) bool {
	if v.isZero() {
		return true
	}
	// v = a×10^e1, m = b×10^e2, with a and b not divisible by 10. If
	// e1 < e2, a would have to be divisible by 10.
	if v.exp < m.exp {
		return false
	}
	k := v.exp - m.exp // v/m = a×10^k / b
	if len(m.digits) <= 18 {
		b := uint64(0)
		for _, c := range m.digits {
			b = b*10 + uint64(c-'0')
		}
		r := uint64(0)
		for _, c := range v.digits { // r*10+9 < 10*b < 2^64
			r = (r*10 + uint64(c-'0')) % b
		}
		return r == 0 || mulMod(r, powMod(10, k, b), b) == 0
	}
	// Long divisor: reduce a modulo b a chunk of 18 digits at a time, so
	// that no big number longer than b is ever built.
	b, ok := new(big.Int).SetString(string(m.digits), 10)
	if !ok {
		return false
	}
	r, chunk := new(big.Int), new(big.Int)
	scale := big.NewInt(1e18)
	digits := v.digits
	for len(digits) > 0 {
		n := len(digits) % 18
		if n == 0 {
			n = 18
		}
		x := uint64(0)
		for _, c := range digits[:n] {
			x = x*10 + uint64(c-'0')
		}
		digits = digits[n:]
		if n == 18 {
			r.Mul(r, scale)
		} else {
			r.Mul(r, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil))
		}
		r.Add(r, chunk.SetUint64(x)).Mod(r, b)
	}
	if r.Sign() != 0 && k > 0 {
		t := new(big.Int).Exp(big.NewInt(10), big.NewInt(k), b)
		r.Mul(r, t).Mod(r, b)
	}
	return r.Sign() == 0
}

// multipleWork estimates the work of isMultiple(v, m), in validator steps.
func multipleWork(v, m decimal) int {
	w := 1 + len(v.digits)>>4
	if len(m.digits) > 18 {
		w *= 1 + len(m.digits)>>3
	}
	return w
}

// mulMod returns x×y mod m without overflow.
func mulMod(x, y, m uint64) uint64 {
	hi, lo := bits.Mul64(x, y)
	_, r := bits.Div64(hi%m, lo, m)
	return r
}

// powMod returns x^k mod m (m > 0) by repeated squaring.
func powMod(x uint64, k int64, m uint64) uint64 {
	r, x := 1%m, x%m
	for ; k > 0; k >>= 1 {
		if k&1 == 1 {
			r = mulMod(r, x, m)
		}
		x = mulMod(x, x, m)
	}
	return r
}

// IsMultiple reports whether the JSON number lit is an integer multiple of
// the JSON number of (which must be greater than 0), exactly in decimal:
// 0.3 is a multiple of 0.1 and 1000000.0001 is not a multiple of 0.01. Its
// work is linear in len(lit) when of has at most 18 significant digits.
func IsMultiple(lit, of []byte) bool {
	m := parseDecimal(of, nil)
	if m.sign() <= 0 {
		return false
	}
	return isMultiple(parseDecimal(lit, nil), m)
}

// smallInt returns the value of an integer literal of at most 18 digits
// with no fraction or exponent: the fast path for the common case.
func smallInt(lit []byte) (int64, bool) {
	i := 0
	neg := false
	if len(lit) > 0 && lit[0] == '-' {
		neg = true
		i = 1
	}
	if len(lit)-i == 0 || len(lit)-i > 18 {
		return 0, false
	}
	var n int64
	for ; i < len(lit); i++ {
		c := lit[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// A number is a compiled numeric keyword value.
type number struct {
	lit   string // as written in the schema, for messages
	d     decimal
	small int64
	isSm  bool
}

func newNumber(lit string) number {
	n := number{lit: lit, d: parseDecimal([]byte(lit), nil)}
	n.small, n.isSm = smallInt([]byte(lit))
	return n
}

// cmpLit compares an instance literal with n.
func (n *number) cmpLit(lit, buf []byte) int {
	if n.isSm {
		if v, ok := smallInt(lit); ok {
			switch {
			case v < n.small:
				return -1
			case v > n.small:
				return 1
			}
			return 0
		}
	}
	return cmpDecimal(parseDecimal(lit, buf), n.d)
}

// numEqual reports whether two number literals denote the same value.
func numEqual(a, b, buf1, buf2 []byte) bool {
	if string(a) == string(b) {
		return true
	}
	return cmpDecimal(parseDecimal(a, buf1), parseDecimal(b, buf2)) == 0
}

// CanonicalNumber returns a text for the JSON number lit that is the same
// for every literal of the same value (1.0, 1 and 10e-1 alike), in time
// and space linear in len(lit): unlike big.Rat, it never expands an
// exponent such as 1e1000000 into its digits.
func CanonicalNumber(lit []byte) string {
	d := parseDecimal(lit, nil)
	if d.isZero() {
		return "0"
	}
	b := make([]byte, 0, len(d.digits)+24)
	if d.neg {
		b = append(b, '-')
	}
	b = append(b, d.digits...)
	b = append(b, 'e')
	b = strconv.AppendInt(b, d.exp, 10)
	return string(b)
}

// IsIntegerLiteral reports whether the JSON number lit has an integral
// value, exactly in decimal (3.0 and 1e2 do; 0.99999999999999999999 does
// not, though it rounds to 1 as a float64). Its work is linear in len(lit).
func IsIntegerLiteral(lit []byte) bool { return isIntegerLit(lit) }

// isIntegerLit reports whether a number literal has an integral value.
func isIntegerLit(lit []byte) bool {
	for _, c := range lit {
		if c == '.' || c == 'e' || c == 'E' {
			var buf [32]byte
			return parseDecimal(lit, buf[:0]).isInteger()
		}
	}
	return true
}
