package jsonschema

import (
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestIsMultiple compares isMultiple, which reduces digit by digit, with
// big.Rat arithmetic, for short and long divisors.
func TestIsMultiple(t *testing.T) {
	for _, tc := range []struct {
		v, m string
		want bool
	}{
		{"0.3", "0.1", true},
		{"1000000.0001", "0.01", false},
		{"7e999999999999", "7", true},
		{"1e999999999999", "7", false},
		{"0", "0.7", true},
		{"-1.4", "0.7", true},
		{"123456789012345678901234567890", "123456789012345678901234567890", true},
		{"246913578024691357802469135780e5", "123456789012345678901234567890", true},
		{"246913578024691357802469135781", "123456789012345678901234567890", false},
		{"1e-5", "1e-6", true},
		{"1e-6", "1e-5", false},
		{"18446744073709551615", "999999999999999989", false},
		{"18446744073709551615e3", "999999999999999999", false},
		{"999999999999999999e2", "999999999999999999", true},
	} {
		if got := IsMultiple([]byte(tc.v), []byte(tc.m)); got != tc.want {
			t.Errorf("IsMultiple(%s, %s) = %v, want %v", tc.v, tc.m, got, tc.want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	lit := func(digits int) string {
		b := []byte(strconv.Itoa(1 + r.IntN(9)))
		for range digits {
			b = append(b, byte('0'+r.IntN(10)))
		}
		if len(b) > 1 && r.IntN(2) == 0 {
			k := 1 + r.IntN(len(b)-1)
			b = append(b[:k], append([]byte{'.'}, b[k:]...)...)
		}
		return string(b) + "e" + strconv.Itoa(r.IntN(10)-5)
	}
	for range 2000 {
		v := lit(r.IntN(60))
		m := lit(r.IntN(30))
		if r.IntN(3) == 0 { // make a multiple
			x, _ := new(big.Rat).SetString(m)
			x.Mul(x, big.NewRat(int64(1+r.IntN(1000)), 1))
			v = x.FloatString(40)
		}
		x, _ := new(big.Rat).SetString(v)
		y, _ := new(big.Rat).SetString(m)
		want := x.Quo(x, y).IsInt()
		if got := IsMultiple([]byte(v), []byte(m)); got != want {
			t.Errorf("IsMultiple(%s, %s) = %v, want %v", v, m, got, want)
		}
	}
}
