package geminitool

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/golden"
)

type unit string

func (unit) Enum() []any { return []any{"metric", "imperial"} }

type place struct {
	City    string `json:"city" minLength:"1"`
	Country string `json:"country,omitempty" pattern:"^[A-Z]{2}$"`
}

type forecastQuery struct {
	Where place    `json:"where" description:"Where to look."`
	Days  int      `json:"days" default:"3" minimum:"1" maximum:"14"`
	Units unit     `json:"units,omitempty"`
	Hours []int    `json:"hours,omitempty" maxItems:"24"`
	Alert *float64 `json:"alert_above,omitempty" exclusiveMinimum:"0"`
}

// A typed tool (tool.New) converts like a hand-written one.
func TestGoldenTypedDefinitions(t *testing.T) {
	tl, err := tool.New("forecast", "Weather forecast.", func(context.Context, forecastQuery) (string, error) { return "", nil })
	if err != nil {
		t.Fatalf("tool.New: %v", err)
	}
	defs, err := Tools([]tool.Tool{tl})
	if err != nil {
		t.Fatal(err)
	}
	golden.JSON(t, "definitions_typed", json.RawMessage(defs))
}
