package toolbox

import (
	"strings"
	"testing"
)

func TestEval(t *testing.T) {
	for _, tt := range []struct {
		expr string
		want string
	}{
		{"1+2", "3"},
		{"  7  ", "7"},
		{"2*3+4*5", "26"},
		{"2*(3+4)", "14"},
		{"10 - 4 - 3", "3"},
		{"64 / 4 / 2", "8"},
		{"-2^2", "-4"},
		{"(-2)^2", "4"},
		{"2^3^2", "512"},
		{"2^-1", "0.5"},
		{"2 ** 10", "1024"},
		{"--3", "3"},
		{"+3", "3"},
		{"1 - -1", "2"},
		{"10 % 3", "1"},
		{"-7 % 3", "-1"},
		{"7.5 % 2", "1.5"},
		{"0.1 + 0.2", "0.3"},
		{"1/3", "0.333333333333333"},
		{"100/7", "14.2857142857143"},
		{".5 * 4", "2"},
		{"1e3 + 1", "1001"},
		{"2.5E-1", "0.25"},
		{"1e15", "1e+15"},
		{"2^53", "9.00719925474099e+15"},
		{"0.000001", "1e-06"},
		{"-0", "0"},
		{"pi", "3.14159265358979"},
		{"e", "2.71828182845905"},
		{"2 * PI", "6.28318530717959"},
		{"sqrt(16)", "4"},
		{"SQRT(2)^2", "2"},
		{"cbrt(27)", "3"},
		{"abs(-3)", "3"},
		{"min(3, 1, 2)", "1"},
		{"max(1, sqrt(10))", "3.16227766016838"},
		{"round(2.5)", "3"},
		{"round(-2.5)", "-3"},
		{"round(3.14159, 2)", "3.14"},
		{"round(1234, -2)", "1200"},
		{"round(1e300, 15)", "1e+300"},
		{"floor(-1.5)", "-2"},
		{"ceil(1.2)", "2"},
		{"trunc(-1.7)", "-1"},
		{"hypot(3, 4)", "5"},
		{"exp(0)", "1"},
		{"ln(e)", "1"},
		{"log10(1000)", "3"},
		{"log2(8)", "3"},
		{"sin(0) + cos(0)", "1"},
		{"atan(1) * 4", "3.14159265358979"},
		{"acos(1) + asin(0) + tan(0)", "0"},
		{"((((1))))", "1"},
		{strings.Repeat("(", 60) + "1" + strings.Repeat(")", 60), "1"},
		{strings.Repeat("1+", 400) + "1", "401"},
	} {
		v, err := eval(tt.expr)
		if err != nil {
			t.Errorf("eval(%q) returned error %v, want %s", tt.expr, err, tt.want)
			continue
		}
		if got := formatNumber(v); got != tt.want {
			t.Errorf("eval(%q) = %s, want %s", tt.expr, got, tt.want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	for _, tt := range []struct {
		expr string
		want string // the whole message
	}{
		{"", "at column 1: the expression is empty"},
		{"   ", "at column 1: the expression is empty"},
		{"1/0", "at column 2: division by zero"},
		{"2 * 3 / (1 - 1)", "at column 7: division by zero"},
		{"1 % 0", "at column 3: remainder of a division by zero"},
		{"0^-1", "at column 2: zero to a negative power (a division by zero)"},
		{"2^10000", "at column 2: the result of ^ is too large for a 64-bit float (about ±1.8e308)"},
		{"1e308 * 10", "at column 7: the result of * is too large for a 64-bit float (about ±1.8e308)"},
		{"1e308 + 1e308", "at column 7: the result of + is too large for a 64-bit float (about ±1.8e308)"},
		{"exp(1000)", "at column 1: the result of exp is too large for a 64-bit float (about ±1.8e308)"},
		{"1e400", "at column 1: the number 1e400 is too large for a 64-bit float (about ±1.8e308)"},
		{"(-8)^(1/3)", "at column 5: the result of ^ is not a real number"},
		{"sqrt(-1)", "at column 1: sqrt needs an argument that is not negative"},
		{"ln(0)", "at column 1: ln needs a positive argument"},
		{"asin(2)", "at column 1: asin needs an argument between -1 and 1"},
		{"foo(1)", `at column 1: unknown function "foo"; the functions are abs, acos, asin, atan, cbrt, ceil, cos, exp, floor, hypot, ln, log10, log2, max, min, round, sin, sqrt, tan, trunc`},
		{"x", `at column 1: unknown name "x"; the constants are pi and e`},
		{"2 * sqrt", "at column 5: sqrt is a function: write sqrt(x)"},
		{"(1+2", "at column 5: expected ')' to close the '(' at column 1, found the end of the expression"},
		{"1+", "at column 3: expected a number, a name or '(' but the expression ends"},
		{"2 3", `at column 3: expected an operator or the end of the expression, found "3"`},
		{"2pi", `at column 2: expected an operator or the end of the expression, found "p"`},
		{"1, 2", `at column 2: expected an operator or the end of the expression, found ","`},
		{"1 +* 2", `at column 4: expected a number, a name or '(', found "*"`},
		{"1..2", `at column 3: expected an operator or the end of the expression, found "."`},
		{".", `at column 1: expected a number, found "."`},
		{"1 ＋ 2", `at column 3: expected an operator or the end of the expression, found "＋"`},
		{"max()", "at column 1: max takes at least 1 argument(s), got 0"},
		{"hypot(1)", "at column 1: hypot takes 2 argument(s), got 1"},
		{"round(1, 2, 3)", "at column 1: round takes 1 or 2 argument(s), got 3"},
		{"round(1, 0.5)", "at column 1: round's second argument is a whole number of decimals from -15 to 15"},
		{"min(1; 2)", `at column 6: expected ',' or ')' in the call of min, found ";"`},
		{strings.Repeat("(", 65) + "1" + strings.Repeat(")", 65), "at column 65: the expression is nested too deeply (more than 64 levels)"},
		{strings.Repeat("-", 65) + "1", "at column 65: the expression is nested too deeply (more than 64 levels)"},
		{strings.Repeat("2^", 65) + "1", "at column 130: the expression is nested too deeply (more than 64 levels)"},
		{strings.Repeat("1", 1001), "the expression has 1001 bytes; the limit is 1000"},
	} {
		_, err := eval(tt.expr)
		if err == nil || err.Error() != tt.want {
			t.Errorf("eval(%.40q) error = %v, want %s", tt.expr, err, tt.want)
		}
	}
}

func FuzzEval(f *testing.F) {
	for _, s := range []string{"1+2", "2*(3+4)", "-2^2", "round(1.25, 1)", "max(1,2,3)", "((((", "1e400", "sqrt(-1)", "2**", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := eval(s) // must not panic or recurse without bound
		if err == nil && formatNumber(v) == "" {
			t.Errorf("eval(%q) = %v formats as nothing", s, v)
		}
	})
}
