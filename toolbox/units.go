package toolbox

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/miniopenclaw/tool"
)

// A Unit is a unit of measurement that the convert_units tool knows, named
// by its usual symbol: "km", "lb", "C", "mph", "GiB". Its Enum method lists
// them, so the schema offers exactly these values.
type Unit string

// Enum returns every Unit, grouped by the quantity it measures.
func (Unit) Enum() []any {
	all := make([]any, len(units))
	for i, u := range units {
		all[i] = u.sym
	}
	return all
}

// A unitDef defines a unit by the quantity it measures and its size in the
// quantity's base unit. Temperatures, which have offsets, use toC and fromC
// instead.
type unitDef struct {
	sym      Unit
	quantity string
	scale    float64 // base units in one of this unit
	toC      func(float64) float64
	fromC    func(float64) float64
}

func linear(q string, sym Unit, scale float64) unitDef {
	return unitDef{sym: sym, quantity: q, scale: scale}
}

// US customary units for volume; exact definitions throughout.
const (
	usGallon = 3.785411784e-3 // m³
	usFlOz   = usGallon / 128
)

// units lists every unit, grouped by quantity. Base units: metre,
// kilogram, degree Celsius, cubic metre, square metre, metre per second,
// second, byte, joule and pascal.
var units = []unitDef{
	linear("length", "m", 1),
	linear("length", "km", 1e3),
	linear("length", "cm", 1e-2),
	linear("length", "mm", 1e-3),
	linear("length", "um", 1e-6),
	linear("length", "nm", 1e-9),
	linear("length", "in", 0.0254),
	linear("length", "ft", 0.3048),
	linear("length", "yd", 0.9144),
	linear("length", "mi", 1609.344),
	linear("length", "nmi", 1852),

	linear("mass", "kg", 1),
	linear("mass", "g", 1e-3),
	linear("mass", "mg", 1e-6),
	linear("mass", "t", 1e3),
	linear("mass", "lb", 0.45359237),
	linear("mass", "oz", 0.45359237/16),
	linear("mass", "st", 0.45359237*14),

	{sym: "C", quantity: "temperature", toC: func(v float64) float64 { return v }, fromC: func(c float64) float64 { return c }},
	{sym: "F", quantity: "temperature", toC: func(v float64) float64 { return (v - 32) * 5 / 9 }, fromC: func(c float64) float64 { return c*9/5 + 32 }},
	{sym: "K", quantity: "temperature", toC: func(v float64) float64 { return v - 273.15 }, fromC: func(c float64) float64 { return c + 273.15 }},

	linear("volume", "m3", 1),
	linear("volume", "l", 1e-3),
	linear("volume", "ml", 1e-6),
	linear("volume", "gal", usGallon),
	linear("volume", "qt", usGallon/4),
	linear("volume", "pt", usGallon/8),
	linear("volume", "cup", usGallon/16),
	linear("volume", "floz", usFlOz),
	linear("volume", "tbsp", usFlOz/2),
	linear("volume", "tsp", usFlOz/6),

	linear("area", "m2", 1),
	linear("area", "km2", 1e6),
	linear("area", "ha", 1e4),
	linear("area", "ft2", 0.3048*0.3048),
	linear("area", "acre", 4046.8564224),
	linear("area", "mi2", 1609.344*1609.344),

	linear("speed", "m/s", 1),
	linear("speed", "km/h", 1/3.6),
	linear("speed", "mph", 0.44704),
	linear("speed", "kn", 1852.0/3600),
	linear("speed", "ft/s", 0.3048),

	linear("duration", "ms", 1e-3),
	linear("duration", "s", 1),
	linear("duration", "min", 60),
	linear("duration", "h", 3600),
	linear("duration", "d", 86400),
	linear("duration", "wk", 7*86400),

	linear("data", "bit", 0.125),
	linear("data", "B", 1),
	linear("data", "kB", 1e3),
	linear("data", "MB", 1e6),
	linear("data", "GB", 1e9),
	linear("data", "TB", 1e12),
	linear("data", "KiB", 1<<10),
	linear("data", "MiB", 1<<20),
	linear("data", "GiB", 1<<30),
	linear("data", "TiB", 1<<40),

	linear("energy", "J", 1),
	linear("energy", "kJ", 1e3),
	linear("energy", "cal", 4.184),
	linear("energy", "kcal", 4184),
	linear("energy", "Wh", 3600),
	linear("energy", "kWh", 3.6e6),

	linear("pressure", "Pa", 1),
	linear("pressure", "kPa", 1e3),
	linear("pressure", "bar", 1e5),
	linear("pressure", "atm", 101325),
	linear("pressure", "psi", 0.45359237*9.80665/(0.0254*0.0254)),
	linear("pressure", "mmHg", 133.322387415),
}

// unitByName finds the unit with the symbol sym.
func unitByName(sym Unit) (unitDef, bool) {
	for _, u := range units {
		if u.sym == sym {
			return u, true
		}
	}
	return unitDef{}, false
}

// convertArgs are the arguments of the convert_units tool.
type convertArgs struct {
	Value float64 `json:"value" description:"The quantity to convert, in the unit from."`
	From  Unit    `json:"from" description:"The unit of value."`
	To    Unit    `json:"to" description:"The unit to convert to. It must measure the same quantity as from."`
}

// A Conversion is the result of the convert_units tool.
type Conversion struct {
	// Value is the converted quantity, rounded to 12 significant digits
	// (temperatures to 10 decimals).
	Value float64 `json:"value" description:"The converted quantity."`
	// Unit is the unit of Value, the one asked for.
	Unit string `json:"unit" description:"The unit of value."`
	// Text says the same for people: "5 km = 3.10685596119 mi".
	Text string `json:"text" description:"The conversion as text, such as 5 km = 3.10685596119 mi."`
}

// ConvertUnits returns the tool "convert_units", which converts a value
// between units of length, mass, temperature, volume, area, speed,
// duration, data size, energy and pressure. Its result is a [Conversion].
// Units are exact by definition (the international foot and pound, US
// customary volumes); converting between different quantities, a
// temperature below absolute zero and a result too large for float64 are
// errors.
func ConvertUnits() tool.Tool {
	var b strings.Builder
	last := ""
	for _, u := range units {
		if u.quantity != last {
			if last != "" {
				b.WriteString("; ")
			}
			b.WriteString(u.quantity)
			b.WriteString(": ")
			last = u.quantity
		} else {
			b.WriteString(", ")
		}
		b.WriteString(string(u.sym))
	}
	return tool.Must(tool.New("convert_units",
		"Converts a value from one unit to another of the same quantity. Units by quantity: "+b.String()+
			". Volumes are US customary (gal, qt, pt, cup, floz, tbsp, tsp); C, F and K are degrees Celsius, Fahrenheit and kelvin.",
		convert,
		tool.WithAnnotations(tool.Annotations{Title: "Unit converter", ReadOnly: true, Idempotent: true}),
		tool.WithTimeout(5*time.Second), tool.WithInline()))
}

func convert(ctx context.Context, in convertArgs) (Conversion, error) {
	if err := ctx.Err(); err != nil {
		return Conversion{}, err
	}
	v, err := convertValue(in.Value, in.From, in.To)
	if err != nil {
		return Conversion{}, err
	}
	return Conversion{
		Value: v,
		Unit:  string(in.To),
		Text:  fmt.Sprintf("%s %s = %s %s", formatNumber(in.Value), in.From, formatNumber(v), in.To),
	}, nil
}

// convertValue converts v from one unit to another.
func convertValue(v float64, from, to Unit) (float64, error) {
	f, ok := unitByName(from)
	if !ok {
		return 0, fmt.Errorf("unknown unit %q", from)
	}
	t, ok := unitByName(to)
	if !ok {
		return 0, fmt.Errorf("unknown unit %q", to)
	}
	if f.quantity != t.quantity {
		return 0, fmt.Errorf("cannot convert %s (%s) to %s (%s): they measure different quantities", from, f.quantity, to, t.quantity)
	}
	var out float64
	if f.toC != nil {
		c := f.toC(v)
		if c < -273.15-1e-9 {
			return 0, fmt.Errorf("%s %s is below absolute zero (0 K, -273.15 C, -459.67 F)", formatNumber(v), from)
		}
		out = t.fromC(c)
		if math.Abs(out) < 1e9 {
			out = math.Round(out*1e10) / 1e10
		}
	} else {
		out = roundSignificant(v*(f.scale/t.scale), 12)
	}
	if math.IsInf(out, 0) || math.IsNaN(out) {
		return 0, fmt.Errorf("%s %s in %s is too large for a 64-bit float (about ±1.8e308)", formatNumber(v), from, to)
	}
	if out == 0 {
		out = 0 // not -0
	}
	return out, nil
}

// roundSignificant rounds v to n significant digits, which hides the
// float64 noise of a conversion (0.3048/0.0254 = 12.000000000000002).
func roundSignificant(v float64, n int) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', n, 64), 64)
	if err != nil {
		return v
	}
	return r
}
