// Package weather shows tools defined with Go doc comments and clawtool gen.
//
// GetWeather and ConvertTemperature are plain Go functions marked with
// //clawtool:tool; their doc comments name and describe the parameters.
// ForecastArgs is the argument struct of a tool built with tool.New; its
// field doc comments become the property descriptions. The go:generate
// line below writes clawtool_tools.gen.go, which is checked in; a test
// regenerates it and fails when it is out of date.
//
// The weather is made up: the package holds a small fixed table, so the
// tools work offline and give the same answers every time.
package weather

//go:generate go run github.com/miniopenclaw/tool/cmd/clawtool gen

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/miniopenclaw/tool"
)

// A Unit is a temperature unit.
type Unit string

// The units the tools accept.
const (
	Celsius    Unit = "celsius"
	Fahrenheit Unit = "fahrenheit"
)

// Enum lists the units, so the schema of a Unit is an enum (the
// tool.Enumer hook).
func (Unit) Enum() []any { return []any{Celsius, Fahrenheit} }

// A Report is the weather in a city.
type Report struct {
	// City is the city the report is for.
	City string `json:"city"`
	// Temperature is in Unit.
	Temperature float64 `json:"temperature"`
	Unit        Unit    `json:"unit"` // the unit asked for
	// Conditions is a short summary, such as "sunny".
	Conditions string `json:"conditions"`
}

// climate is the made-up weather, in degrees Celsius.
var climate = map[string]struct {
	celsius    float64
	conditions string
}{
	"paris":     {14, "cloudy"},
	"tokyo":     {21, "sunny"},
	"reykjavik": {3, "windy"},
}

// GetWeather reports the current weather in a city.
//
// Parameters:
//   - city: the city name, e.g. "Paris"
//   - unit: temperature unit (default: celsius)
//
//clawtool:tool
func GetWeather(ctx context.Context, city string, unit Unit) (Report, error) {
	c, ok := climate[strings.ToLower(city)]
	if !ok {
		return Report{}, fmt.Errorf("no weather for %q: try Paris, Tokyo or Reykjavik", city)
	}
	t, err := ConvertTemperature(c.celsius, Celsius, unit)
	if err != nil {
		return Report{}, err
	}
	return Report{City: city, Temperature: t, Unit: unit, Conditions: c.conditions}, nil
}

// ConvertTemperature converts a temperature between units, rounded to a
// tenth of a degree.
//
// Args:
//
//	value: the temperature to convert
//	from: the unit of value
//	to: the unit to convert to (default: fahrenheit)
//
//clawtool:tool name=convert_temperature
func ConvertTemperature(value float64, from, to Unit) (float64, error) {
	var celsius float64
	switch from {
	case Celsius:
		celsius = value
	case Fahrenheit:
		celsius = (value - 32) * 5 / 9
	default:
		return 0, fmt.Errorf("unknown unit %q", from)
	}
	switch to {
	case Celsius:
		return math.Round(celsius*10) / 10, nil
	case Fahrenheit:
		return math.Round((celsius*9/5+32)*10) / 10, nil
	}
	return 0, fmt.Errorf("unknown unit %q", to)
}

// ForecastArgs asks for a forecast.
type ForecastArgs struct {
	// City is the city name, e.g. "Tokyo".
	City string `json:"city"`
	// Days is how many days ahead to forecast.
	Days int `json:"days" minimum:"1" maximum:"7" default:"3"`
}

// NewForecastTool returns the tool "forecast", built with tool.New from a
// struct whose field doc comments describe the parameters.
func NewForecastTool() tool.Tool {
	return tool.Must(tool.New("forecast", "Forecasts the weather in a city, one line per day.",
		func(ctx context.Context, in ForecastArgs) (string, error) {
			c, ok := climate[strings.ToLower(in.City)]
			if !ok {
				return "", fmt.Errorf("no forecast for %q: try Paris, Tokyo or Reykjavik", in.City)
			}
			var b strings.Builder
			for d := 1; d <= in.Days; d++ {
				fmt.Fprintf(&b, "day %d: %s, %.0f°C\n", d, c.conditions, c.celsius+float64(d%3)-1)
			}
			return b.String(), nil
		}))
}
