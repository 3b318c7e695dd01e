package toolbox

import (
	"testing"
)

func TestConvertValue(t *testing.T) {
	for _, tt := range []struct {
		v        float64
		from, to Unit
		want     float64
	}{
		{1, "km", "m", 1000},
		{1, "mi", "km", 1.609344},
		{5, "km", "mi", 3.10685596119},
		{12, "in", "ft", 1},
		{1, "ft", "in", 12},
		{1, "nmi", "m", 1852},
		{1, "m", "m", 1},
		{100, "C", "F", 212},
		{32, "F", "C", 0},
		{-40, "C", "F", -40},
		{0, "K", "C", -273.15},
		{-459.67, "F", "K", 0},
		{98.6, "F", "C", 37},
		{300, "K", "F", 80.33},
		{1, "lb", "kg", 0.45359237},
		{1, "kg", "lb", 2.20462262185},
		{16, "oz", "lb", 1},
		{1, "st", "lb", 14},
		{1, "gal", "l", 3.785411784},
		{1, "gal", "floz", 128},
		{1, "cup", "tbsp", 16},
		{1, "tbsp", "tsp", 3},
		{1, "GiB", "MB", 1073.741824},
		{8, "bit", "B", 1},
		{1, "kWh", "J", 3.6e6},
		{1, "kcal", "kJ", 4.184},
		{1, "atm", "psi", 14.6959487755},
		{1, "bar", "kPa", 100},
		{60, "mph", "km/h", 96.56064},
		{1, "kn", "km/h", 1.852},
		{1, "wk", "h", 168},
		{90, "min", "h", 1.5},
		{1, "acre", "m2", 4046.8564224},
		{1, "km2", "ha", 100},
		{-3, "m", "cm", -300},
		{0, "m", "km", 0},
		{1e308, "km", "km", 1e308},
	} {
		got, err := convertValue(tt.v, tt.from, tt.to)
		if err != nil || got != tt.want {
			t.Errorf("convertValue(%v, %s, %s) = %v, %v; want %v", tt.v, tt.from, tt.to, got, err, tt.want)
		}
	}
}

func TestConvertValueErrors(t *testing.T) {
	for _, tt := range []struct {
		v        float64
		from, to Unit
		want     string
	}{
		{1, "kg", "m", "cannot convert kg (mass) to m (length): they measure different quantities"},
		{1, "C", "J", "cannot convert C (temperature) to J (energy): they measure different quantities"},
		{-300, "C", "K", "-300 C is below absolute zero (0 K, -273.15 C, -459.67 F)"},
		{-1, "K", "C", "-1 K is below absolute zero (0 K, -273.15 C, -459.67 F)"},
		{1e308, "km", "mm", "1e+308 km in mm is too large for a 64-bit float (about ±1.8e308)"},
		{1e308, "C", "F", "1e+308 C in F is too large for a 64-bit float (about ±1.8e308)"},
		{1, "furlong", "m", `unknown unit "furlong"`},
		{1, "m", "M", `unknown unit "M"`},
	} {
		_, err := convertValue(tt.v, tt.from, tt.to)
		if err == nil || err.Error() != tt.want {
			t.Errorf("convertValue(%v, %s, %s) error = %v, want %s", tt.v, tt.from, tt.to, err, tt.want)
		}
	}
}

// The unit table: symbols are unique, and every quantity but temperature
// has its base unit (scale 1) and only positive scales.
func TestUnits(t *testing.T) {
	seen := make(map[Unit]bool)
	base := make(map[string]bool)
	for _, u := range units {
		if seen[u.sym] {
			t.Errorf("unit %q is listed twice", u.sym)
		}
		seen[u.sym] = true
		switch {
		case u.toC != nil:
			if u.quantity != "temperature" || u.fromC == nil {
				t.Errorf("unit %q has an offset but is not a temperature with both conversions", u.sym)
			}
		case u.scale <= 0:
			t.Errorf("unit %q has scale %v", u.sym, u.scale)
		case u.scale == 1:
			base[u.quantity] = true
		}
	}
	for _, u := range units {
		if u.toC == nil && !base[u.quantity] {
			t.Errorf("quantity %s has no base unit", u.quantity)
		}
	}
	if got := len(Unit("").Enum()); got != len(units) {
		t.Errorf("Unit.Enum() has %d values, want %d", got, len(units))
	}
}
