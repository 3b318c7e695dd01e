package openaitool

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/golden"
)

// Cabin is a named string type with its own enum, as tool.New reads it.
type Cabin string

func (Cabin) Enum() []any { return []any{"economy", "business", "first"} }

type person struct {
	Name string `json:"name"`
	Age  *int   `json:"age,omitempty"`
}

// flightQuery is the search_flights benchmark workload, as a
// typed tool's input.
type flightQuery struct {
	From       string   `json:"from" pattern:"^[A-Z]{3}$" description:"IATA code of the departure airport."`
	To         string   `json:"to" pattern:"^[A-Z]{3}$"`
	Date       string   `json:"date" format:"date"`
	Passengers int      `json:"passengers" default:"1" minimum:"1" maximum:"9"`
	Cabin      Cabin    `json:"cabin,omitempty"`
	Flexible   bool     `json:"flexible,omitempty"`
	MaxPrice   *float64 `json:"max_price,omitempty"`
	Airlines   []string `json:"airlines,omitempty"`
	Traveller  *person  `json:"traveller,omitempty"`
}

func typedFlights(t *testing.T) tool.Tool {
	t.Helper()
	tl, err := tool.New("search_flights", "Searches flights between two airports.",
		func(_ context.Context, in flightQuery) (string, error) {
			return fmt.Sprintf("%s→%s on %s for %d in %q", in.From, in.To, in.Date, in.Passengers, in.Cabin), nil
		})
	if err != nil {
		t.Fatalf("tool.New: %v", err)
	}
	return tl
}

func TestGoldenTypedDefinitions(t *testing.T) {
	for _, tt := range []struct {
		name string
		mode StrictMode
	}{
		{"definitions_typed_chat", StrictOff},
		{"definitions_typed_chat_strict", StrictOn},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := NewTools([]tool.Tool{typedFlights(t)}, WithStrict(tt.mode))
			if err != nil {
				t.Fatal(err)
			}
			golden.JSON(t, tt.name, json.RawMessage(ts.Chat()))
		})
	}
	// A typed tool's schema loses nothing in the rewrite: auto makes it strict.
	ts, err := NewTools([]tool.Tool{typedFlights(t)}, WithStrict(StrictAuto))
	if err != nil {
		t.Fatal(err)
	}
	if strict, notes := ts.Strict("search_flights"); !strict {
		t.Errorf("typed tool not strict under auto: %v", notes)
	}
}

// The model, in strict mode, sends null for every optional field; the
// typed tool gets its defaults.
func TestStrictTypedToolGetsDefaults(t *testing.T) {
	r := tool.NewRegistry()
	if err := r.Register(typedFlights(t)); err != nil {
		t.Fatal(err)
	}
	ts, err := NewTools(r.List(), WithStrict(StrictOn))
	if err != nil {
		t.Fatal(err)
	}
	calls := ts.Normalize([]tool.Call{{ID: "c1", Name: "search_flights", Args: json.RawMessage(
		`{"from":"SFO","to":"JFK","date":"2026-12-24","passengers":null,"cabin":null,"flexible":null,"max_price":null,"airlines":null,"traveller":null}`)}})
	res := r.Execute(context.Background(), calls[0].Name, calls[0].Args)
	if res.IsError || res.Output != `SFO→JFK on 2026-12-24 for 1 in ""` {
		t.Errorf("result = %+v, want the default of 1 passenger", res)
	}
}
