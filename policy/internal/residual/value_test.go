package residual

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"testing"
)

// jsonNumber is the grammar of a JSON number (RFC 8259, section 6).
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// wholeNumberCases are number forms with what wholeNumber must say of
// them; want is the value when it is whole.
var wholeNumberCases = []struct {
	lit          string
	whole, valid bool
	want         int64
}{
	{"150", true, true, 150},
	{"1.5e2", true, true, 150},
	{"150.0", true, true, 150},
	{"150.000", true, true, 150},
	{"15000e-2", true, true, 150},
	{"1.5E+2", true, true, 150},
	{"0.15e3", true, true, 150},
	{"-0", true, true, 0},
	{"-0.0", true, true, 0},
	{"0e999999999999999999999", true, true, 0},
	{"0.000e-5", true, true, 0},
	{"9223372036854775807", true, true, math.MaxInt64},
	{"9223372036854775807.0", true, true, math.MaxInt64},
	{"9.223372036854775807e18", true, true, math.MaxInt64},
	{"-9223372036854775808", true, true, math.MinInt64},
	{"-9223372036854775808.000", true, true, math.MinInt64},
	{"4700000000000000000.0", true, true, 4700000000000000000},
	{"1e18", true, true, 1000000000000000000},
	{"00", false, false, 0},
	{"150.5", false, true, 0},
	{"100.00001", false, true, 0},
	{"1e300", false, true, 0},
	{"9.3e18", false, true, 0},
	{"1e19", false, true, 0},
	{"1e20", false, true, 0},
	{"9223372036854775808", false, true, 0},
	{"-9223372036854775809", false, true, 0},
	{"1e-9", false, true, 0},
	{"-1e-400", false, true, 0},
	{"1e999999999999999999999", false, true, 0},
	{"1e-999999999999999999999", false, true, 0},
	{"100000000000000000000e-2", true, true, 1000000000000000000},
	{"1", true, true, 1},
	{"", false, false, 0},
	{"-", false, false, 0},
	{"01", false, false, 0},
	{"1.", false, false, 0},
	{".5", false, false, 0},
	{"1e", false, false, 0},
	{"1e+", false, false, 0},
	{"1-2", false, false, 0},
	{"--1", false, false, 0},
	{"+1", false, false, 0},
	{"1 ", false, false, 0},
	{"0x10", false, false, 0},
	{"NaN", false, false, 0},
}

func TestWholeNumber(t *testing.T) {
	for _, tc := range wholeNumberCases {
		n, whole, valid := wholeNumber([]byte(tc.lit))
		if whole != tc.whole || valid != tc.valid || whole && n != tc.want {
			t.Errorf("wholeNumber(%q) = %d, %v, %v; want %d, %v, %v", tc.lit, n, whole, valid, tc.want, tc.whole, tc.valid)
		}
	}
	if n := testing.AllocsPerRun(100, func() { wholeNumber([]byte("1.5e2")) }); n != 0 {
		t.Errorf("wholeNumber allocates %v times", n)
	}
}

// FuzzWholeNumber compares wholeNumber with math/big: a literal is valid
// exactly when it is a JSON number, and whole exactly when its value is
// an integer within int64, which is then n. Exponents of more than four
// digits are left to TestWholeNumber (math/big would expand them).
func FuzzWholeNumber(f *testing.F) {
	for _, tc := range wholeNumberCases {
		f.Add(tc.lit)
	}
	expDigits := regexp.MustCompile(`[eE][+-]?[0-9]{5,}`)
	f.Fuzz(func(t *testing.T, lit string) {
		n, whole, valid := wholeNumber([]byte(lit))
		if want := jsonNumber.MatchString(lit); valid != want {
			t.Fatalf("wholeNumber(%q): valid %v, want %v", lit, valid, want)
		}
		if !valid || expDigits.MatchString(lit) || len(lit) > 2000 {
			return
		}
		r, ok := new(big.Rat).SetString(lit)
		if !ok {
			t.Fatalf("math/big cannot read %q", lit)
		}
		wantWhole := r.IsInt() && r.Num().IsInt64()
		if whole != wantWhole {
			t.Fatalf("wholeNumber(%q): whole %v, want %v", lit, whole, wantWhole)
		}
		if whole && n != r.Num().Int64() {
			t.Fatalf("wholeNumber(%q) = %d, want %s", lit, n, r.Num())
		}
		if plainInteger([]byte(lit)) && (!whole || strconv.FormatInt(n, 10) != trimNegZero(lit)) {
			t.Fatalf("plainInteger(%q) but wholeNumber says %d, %v", lit, n, whole)
		}
	})
}

// trimNegZero is lit with -0 written 0, as strconv writes it.
func trimNegZero(lit string) string {
	if lit == "-0" {
		return "0"
	}
	return lit
}
