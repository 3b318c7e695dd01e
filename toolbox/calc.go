package toolbox

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miniopenclaw/tool"
)

// Limits of the calc tool.
const (
	calcMaxLen   = 1000 // bytes of an expression
	calcMaxDepth = 64   // nesting of parentheses, calls and signs
)

// calcArgs are the arguments of the calc tool.
type calcArgs struct {
	Expression string `json:"expression" minLength:"1" maxLength:"1000" examples:"[\"(2 + 3) * 4\", \"sqrt(2) ^ 2\", \"round(100 / 7, 2)\"]" description:"The expression, such as 2 * (3 + 4) or max(1, sqrt(10))."`
}

// Calc returns the tool "calc", a calculator for arithmetic expressions.
// It parses the expression with its own recursive-descent parser and
// evaluates nothing else: numbers, + - * / % ^ (and ** for ^), parentheses,
// signs, the constants pi and e, and a fixed set of functions. Arithmetic is
// float64; division by zero, a result too large for float64 and a result
// that is not a real number are errors that say where they happened.
func Calc() tool.Tool {
	return tool.Must(tool.New("calc",
		"Evaluates an arithmetic expression and returns the number. "+
			"Supports + - * / % (remainder) and ^ (power), parentheses, signs, the constants pi and e, and the functions "+
			strings.Join(funcNames(), ", ")+
			"; round(x, n) rounds to n decimals. Uses 64-bit floating point; angles are in radians.",
		calc,
		tool.WithAnnotations(tool.Annotations{Title: "Calculator", ReadOnly: true, Idempotent: true}),
		tool.WithTimeout(5*time.Second), tool.WithInline()))
}

func calc(ctx context.Context, in calcArgs) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	v, err := eval(in.Expression)
	if err != nil {
		return "", err
	}
	return formatNumber(v), nil
}

// formatNumber formats v with at most 15 significant digits, so that
// float64 noise such as 0.1+0.2 = 0.30000000000000004 does not show, and
// whole numbers below 10^15 in full.
func formatNumber(v float64) string {
	if v == 0 {
		return "0" // also for -0
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	s := strconv.FormatFloat(v, 'g', 15, 64)
	// 'g' with a precision keeps trailing zeros in the mantissa: drop them.
	mant, exp, hasExp := strings.Cut(s, "e")
	if strings.Contains(mant, ".") {
		mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
	}
	if hasExp {
		return mant + "e" + exp
	}
	return mant
}

// A calcError is an error in an expression at a column (1-based).
type calcError struct {
	col int
	msg string
}

func (e *calcError) Error() string {
	return fmt.Sprintf("at column %d: %s", e.col, e.msg)
}

// eval parses and evaluates an expression:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("+" | "-") unary | power
//	power   = primary [ ("^" | "**") unary ]
//	primary = number | name | name "(" expr { "," expr } ")" | "(" expr ")"
//
// so ^ binds tighter than a sign and groups to the right: -2^2 = -4 and
// 2^3^2 = 2^9.
func eval(s string) (float64, error) {
	if len(s) > calcMaxLen {
		return 0, fmt.Errorf("the expression has %d bytes; the limit is %d", len(s), calcMaxLen)
	}
	p := &parser{src: s}
	p.skipSpace()
	if p.pos == len(s) {
		return 0, &calcError{col: 1, msg: "the expression is empty"}
	}
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	if p.pos != len(s) {
		return 0, p.errorf(p.pos, "expected an operator or the end of the expression, found %s", p.found())
	}
	return v, nil
}

type parser struct {
	src   string
	pos   int
	depth int
}

func (p *parser) errorf(pos int, format string, args ...any) error {
	return &calcError{col: pos + 1, msg: fmt.Sprintf(format, args...)}
}

// found describes the input at p.pos for messages.
func (p *parser) found() string {
	if p.pos >= len(p.src) {
		return "the end of the expression"
	}
	r := []rune(p.src[p.pos:min(len(p.src), p.pos+8)])
	return strconv.Quote(string(r[0]))
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.pos]) >= 0 {
		p.pos++
	}
}

// accept consumes tok (and the space after it) if the input continues
// with it.
func (p *parser) accept(tok string) bool {
	if strings.HasPrefix(p.src[p.pos:], tok) {
		p.pos += len(tok)
		p.skipSpace()
		return true
	}
	return false
}

func (p *parser) enter(pos int) error {
	p.depth++
	if p.depth > calcMaxDepth {
		return p.errorf(pos, "the expression is nested too deeply (more than %d levels)", calcMaxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) expr() (float64, error) {
	v, err := p.term()
	if err != nil {
		return 0, err
	}
	for {
		at := p.pos
		switch {
		case p.accept("+"):
			w, err := p.term()
			if err != nil {
				return 0, err
			}
			if v, err = p.check(at, v+w, "+"); err != nil {
				return 0, err
			}
		case p.accept("-"):
			w, err := p.term()
			if err != nil {
				return 0, err
			}
			if v, err = p.check(at, v-w, "-"); err != nil {
				return 0, err
			}
		default:
			return v, nil
		}
	}
}

func (p *parser) term() (float64, error) {
	v, err := p.unary()
	if err != nil {
		return 0, err
	}
	for {
		at := p.pos
		var op string
		switch {
		case p.accept("*"):
			op = "*"
		case p.accept("/"):
			op = "/"
		case p.accept("%"):
			op = "%"
		default:
			return v, nil
		}
		w, err := p.unary()
		if err != nil {
			return 0, err
		}
		switch op {
		case "*":
			v = v * w
		case "/":
			if w == 0 {
				return 0, p.errorf(at, "division by zero")
			}
			v = v / w
		case "%":
			if w == 0 {
				return 0, p.errorf(at, "remainder of a division by zero")
			}
			v = math.Mod(v, w)
		}
		if v, err = p.check(at, v, op); err != nil {
			return 0, err
		}
	}
}

func (p *parser) unary() (float64, error) {
	at := p.pos
	neg := false
	switch {
	case p.accept("-"):
		neg = true
	case p.accept("+"):
	default:
		return p.power()
	}
	if err := p.enter(at); err != nil {
		return 0, err
	}
	defer p.leave()
	v, err := p.unary()
	if neg {
		v = -v
	}
	return v, err
}

func (p *parser) power() (float64, error) {
	base, err := p.primary()
	if err != nil {
		return 0, err
	}
	at := p.pos
	if !p.accept("^") && !p.accept("**") {
		return base, nil
	}
	if err := p.enter(at); err != nil {
		return 0, err
	}
	defer p.leave()
	exp, err := p.unary()
	if err != nil {
		return 0, err
	}
	if base == 0 && exp < 0 {
		return 0, p.errorf(at, "zero to a negative power (a division by zero)")
	}
	return p.check(at, math.Pow(base, exp), "^")
}

// check turns an infinite or NaN result of the operation at pos into an
// error.
func (p *parser) check(pos int, v float64, op string) (float64, error) {
	switch {
	case math.IsInf(v, 0):
		return 0, p.errorf(pos, "the result of %s is too large for a 64-bit float (about ±1.8e308)", op)
	case math.IsNaN(v):
		return 0, p.errorf(pos, "the result of %s is not a real number", op)
	}
	return v, nil
}

func (p *parser) primary() (float64, error) {
	at := p.pos
	if p.pos >= len(p.src) {
		return 0, p.errorf(at, "expected a number, a name or '(' but the expression ends")
	}
	switch c := p.src[p.pos]; {
	case c == '(':
		if err := p.enter(at); err != nil {
			return 0, err
		}
		defer p.leave()
		p.accept("(")
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if !p.accept(")") {
			return 0, p.errorf(p.pos, "expected ')' to close the '(' at column %d, found %s", at+1, p.found())
		}
		return v, nil
	case c >= '0' && c <= '9' || c == '.':
		return p.number()
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_':
		return p.name()
	default:
		return 0, p.errorf(at, "expected a number, a name or '(', found %s", p.found())
	}
}

func (p *parser) number() (float64, error) {
	at := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	n := digits()
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		n += digits()
	}
	if n == 0 {
		return 0, p.errorf(at, "expected a number, found %s", strconv.Quote(p.src[at:p.pos]))
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		save := p.pos
		p.pos++
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			p.pos = save // not an exponent: "2e" is 2 followed by the name e
		}
	}
	lit := p.src[at:p.pos]
	v, err := strconv.ParseFloat(lit, 64)
	if err != nil && math.IsInf(v, 0) {
		return 0, p.errorf(at, "the number %s is too large for a 64-bit float (about ±1.8e308)", lit)
	}
	if err != nil {
		return 0, p.errorf(at, "%s is not a number", strconv.Quote(lit))
	}
	p.skipSpace()
	return v, nil
}

// A calcFunc is a function the calculator knows, taking minArgs to
// maxArgs arguments (maxArgs < 0: no limit).
type calcFunc struct {
	minArgs, maxArgs int
	fn               func(x []float64) (float64, string) // the result, or why there is none
}

func unary(f func(float64) float64) calcFunc {
	return calcFunc{1, 1, func(x []float64) (float64, string) { return f(x[0]), "" }}
}

func domain(f func(float64) float64, ok func(float64) bool, why string) calcFunc {
	return calcFunc{1, 1, func(x []float64) (float64, string) {
		if !ok(x[0]) {
			return 0, why
		}
		return f(x[0]), ""
	}}
}

var calcFuncs = map[string]calcFunc{
	"abs":   unary(math.Abs),
	"acos":  domain(math.Acos, func(x float64) bool { return x >= -1 && x <= 1 }, "acos needs an argument between -1 and 1"),
	"asin":  domain(math.Asin, func(x float64) bool { return x >= -1 && x <= 1 }, "asin needs an argument between -1 and 1"),
	"atan":  unary(math.Atan),
	"cbrt":  unary(math.Cbrt),
	"ceil":  unary(math.Ceil),
	"cos":   unary(math.Cos),
	"exp":   unary(math.Exp),
	"floor": unary(math.Floor),
	"hypot": {2, 2, func(x []float64) (float64, string) { return math.Hypot(x[0], x[1]), "" }},
	"ln":    domain(math.Log, func(x float64) bool { return x > 0 }, "ln needs a positive argument"),
	"log10": domain(math.Log10, func(x float64) bool { return x > 0 }, "log10 needs a positive argument"),
	"log2":  domain(math.Log2, func(x float64) bool { return x > 0 }, "log2 needs a positive argument"),
	"max":   {1, -1, func(x []float64) (float64, string) { return slices.Max(x), "" }},
	"min":   {1, -1, func(x []float64) (float64, string) { return slices.Min(x), "" }},
	"round": {1, 2, round},
	"sin":   unary(math.Sin),
	"sqrt":  domain(math.Sqrt, func(x float64) bool { return x >= 0 }, "sqrt needs an argument that is not negative"),
	"tan":   unary(math.Tan),
	"trunc": unary(math.Trunc),
}

var calcConsts = map[string]float64{"pi": math.Pi, "e": math.E}

// round(x) rounds half away from zero; round(x, n) to n decimals, or to a
// multiple of 10^-n for a negative n.
func round(x []float64) (float64, string) {
	if len(x) == 1 {
		return math.Round(x[0]), ""
	}
	n := x[1]
	if n != math.Trunc(n) || n < -15 || n > 15 {
		return 0, "round's second argument is a whole number of decimals from -15 to 15"
	}
	p := math.Pow(10, n)
	if math.IsInf(x[0]*p, 0) {
		return x[0], "" // too large to have that many decimals: already round
	}
	return math.Round(x[0]*p) / p, ""
}

func funcNames() []string {
	names := make([]string, 0, len(calcFuncs))
	for name := range calcFuncs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (p *parser) name() (float64, error) {
	at := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			break
		}
		p.pos++
	}
	name := p.src[at:p.pos]
	p.skipSpace()
	lower := strings.ToLower(name)
	if p.pos >= len(p.src) || p.src[p.pos] != '(' {
		if v, ok := calcConsts[lower]; ok {
			return v, nil
		}
		if _, ok := calcFuncs[lower]; ok {
			return 0, p.errorf(at, "%s is a function: write %s(x)", name, name)
		}
		return 0, p.errorf(at, "unknown name %q; the constants are pi and e", name)
	}
	f, ok := calcFuncs[lower]
	if !ok {
		hint := ""
		if lower == "log" {
			hint = " (use ln for the natural logarithm, log10 or log2)"
		}
		return 0, p.errorf(at, "unknown function %q%s; the functions are %s", name, hint, strings.Join(funcNames(), ", "))
	}
	if err := p.enter(at); err != nil {
		return 0, err
	}
	defer p.leave()
	p.accept("(")
	var args []float64
	if !p.accept(")") {
		for {
			v, err := p.expr()
			if err != nil {
				return 0, err
			}
			args = append(args, v)
			if p.accept(")") {
				break
			}
			if !p.accept(",") {
				return 0, p.errorf(p.pos, "expected ',' or ')' in the call of %s, found %s", name, p.found())
			}
		}
	}
	switch {
	case len(args) < f.minArgs || f.maxArgs >= 0 && len(args) > f.maxArgs:
		want := fmt.Sprintf("%d", f.minArgs)
		switch {
		case f.maxArgs < 0:
			want = fmt.Sprintf("at least %d", f.minArgs)
		case f.maxArgs != f.minArgs:
			want = fmt.Sprintf("%d or %d", f.minArgs, f.maxArgs)
		}
		return 0, p.errorf(at, "%s takes %s argument(s), got %d", name, want, len(args))
	}
	v, why := f.fn(args)
	if why != "" {
		return 0, p.errorf(at, "%s", why)
	}
	return p.check(at, v, name)
}
