package weather

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miniopenclaw/tool"
)

// The hand-written equivalents of what clawtool gen derives from doc
// comments: the schemas of the generated tools must equal theirs.
type (
	getWeatherTagged struct {
		City string `json:"city" description:"the city name, e.g. \"Paris\""`
		Unit Unit   `json:"unit" description:"temperature unit (default: celsius)" default:"celsius"`
	}

	convertTagged struct {
		Value float64 `json:"value" description:"the temperature to convert"`
		From  Unit    `json:"from" description:"the unit of value"`
		To    Unit    `json:"to" description:"the unit to convert to (default: fahrenheit)" default:"fahrenheit"`
	}

	reportTagged struct {
		City        string  `json:"city" description:"City is the city the report is for."`
		Temperature float64 `json:"temperature" description:"Temperature is in Unit."`
		Unit        Unit    `json:"unit" description:"the unit asked for"`
		Conditions  string  `json:"conditions" description:"Conditions is a short summary, such as \"sunny\"."`
	}

	forecastTagged struct {
		City string `json:"city" description:"City is the city name, e.g. \"Tokyo\"."`
		Days int    `json:"days" minimum:"1" maximum:"7" default:"3" description:"Days is how many days ahead to forecast."`
	}
)

// Struct descriptions have no tag; the hand-written types supply them
// through the same hook, with only the "" key.
func (reportTagged) FieldDescriptions() map[string]string {
	return map[string]string{"": "A Report is the weather in a city."}
}

func (forecastTagged) FieldDescriptions() map[string]string {
	return map[string]string{"": "ForecastArgs asks for a forecast."}
}

func TestParametersEqualHandWritten(t *testing.T) {
	for _, tt := range []struct {
		name      string
		generated func() tool.Tool
		tagged    func() (tool.Tool, error)
	}{
		{"get_weather", func() tool.Tool { return NewGetWeatherTool() }, func() (tool.Tool, error) {
			return tool.New("get_weather", "", func(context.Context, getWeatherTagged) (reportTagged, error) { return reportTagged{}, nil })
		}},
		{"convert_temperature", func() tool.Tool { return NewConvertTemperatureTool() }, func() (tool.Tool, error) {
			return tool.New("convert_temperature", "", func(context.Context, convertTagged) (float64, error) { return 0, nil })
		}},
		{"forecast", NewForecastTool, func() (tool.Tool, error) {
			return tool.New("forecast", "", func(context.Context, forecastTagged) (string, error) { return "", nil })
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, err := tt.tagged()
			if err != nil {
				t.Fatalf("tool.New(hand-written): %v", err)
			}
			got := tt.generated()
			if diff := cmp.Diff(decode(t, want.Parameters()), decode(t, got.Parameters())); diff != "" {
				t.Errorf("Parameters() mismatch (-hand-written +generated):\n%s", diff)
			}
			if diff := cmp.Diff(decode(t, tool.OptionsOf(want).OutputSchema), decode(t, tool.OptionsOf(got).OutputSchema)); diff != "" {
				t.Errorf("OutputSchema mismatch (-hand-written +generated):\n%s", diff)
			}
		})
	}
}

func TestGeneratedToolDescriptions(t *testing.T) {
	for _, tt := range []struct {
		tool tool.Tool
		name string
		desc string
	}{
		{NewGetWeatherTool(), "get_weather", "Reports the current weather in a city."},
		{NewConvertTemperatureTool(), "convert_temperature", "Converts a temperature between units, rounded to a tenth of a degree."},
	} {
		if got := tt.tool.Name(); got != tt.name {
			t.Errorf("Name() = %q, want %q", got, tt.name)
		}
		if got := tt.tool.Description(); got != tt.desc {
			t.Errorf("%s: Description() = %q, want %q", tt.name, got, tt.desc)
		}
	}
}

func TestRegisterTools(t *testing.T) {
	r := tool.NewRegistry()
	if err := RegisterTools(r); err != nil {
		t.Fatalf("RegisterTools: %v", err)
	}
	var names []string
	for _, tl := range r.List() {
		names = append(names, tl.Name())
	}
	if diff := cmp.Diff([]string{"convert_temperature", "get_weather"}, names); diff != "" {
		t.Errorf("registered tools (-want +got):\n%s", diff)
	}

	for _, tt := range []struct {
		name, args string
		wantErr    bool
		output     string
	}{
		{"get_weather", `{"city":"Paris"}`, false, `{"city":"Paris","temperature":14,"unit":"celsius","conditions":"cloudy"}`},
		{"get_weather", `{"city":"Paris","unit":"fahrenheit"}`, false, `{"city":"Paris","temperature":57.2,"unit":"fahrenheit","conditions":"cloudy"}`},
		{"convert_temperature", `{"value":100,"from":"celsius"}`, false, `212`},
		{"get_weather", `{"city":"Paris","unit":"kelvin"}`, true, ""},
		{"get_weather", `{}`, true, ""},
		{"get_weather", `{"city":"Atlantis"}`, true, ""},
	} {
		res := r.Execute(context.Background(), tt.name, json.RawMessage(tt.args))
		if res.IsError != tt.wantErr {
			t.Errorf("Execute(%s, %s).IsError = %v, want %v (result %+v)", tt.name, tt.args, res.IsError, tt.wantErr, res)
			continue
		}
		if !tt.wantErr && res.Output != tt.output {
			t.Errorf("Execute(%s, %s).Output = %s, want %s", tt.name, tt.args, res.Output, tt.output)
		}
	}
}

// TestRegisterToolsKeepsExisting checks that RegisterTools never displaces
// a tool the program registered: it refuses with an error naming the
// tool, and the program's tool stays.
func TestRegisterToolsKeepsExisting(t *testing.T) {
	r := tool.NewRegistry()
	mine := tool.Must(tool.New("get_weather", "The program's own forecast.", func(context.Context, struct{}) (string, error) { return "mine", nil }))
	if err := r.Register(mine); err != nil {
		t.Fatal(err)
	}
	err := RegisterTools(r)
	if !errors.Is(err, tool.ErrDuplicate) || !strings.Contains(err.Error(), `"get_weather"`) {
		t.Errorf("RegisterTools = %v, want an error naming get_weather, wrapping ErrDuplicate", err)
	}
	if got, _ := r.Get("get_weather"); got != mine {
		t.Errorf("RegisterTools displaced the program's get_weather tool")
	}
}

func decode(t *testing.T, b json.RawMessage) any {
	t.Helper()
	if b == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("schema is not JSON: %v\n%s", err, b)
	}
	return v
}

func Example() {
	r := tool.NewRegistry()
	if err := RegisterTools(r); err != nil {
		fmt.Println(err)
		return
	}
	res := r.Execute(context.Background(), "get_weather", json.RawMessage(`{"city":"Tokyo"}`))
	fmt.Println(res.Output)
	// Output: {"city":"Tokyo","temperature":21,"unit":"celsius","conditions":"sunny"}
}
