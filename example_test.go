package tool_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/miniopenclaw/tool"
)

// Example defines a typed tool, registers it, exports its definition and
// runs two calls the way an agent loop would.
func Example() {
	type ShoutArgs struct {
		Text  string `json:"text" description:"the text to shout" minLength:"1"`
		Times int    `json:"times" default:"1" minimum:"1" maximum:"3"`
	}
	shout, err := tool.New("shout", "Upper-cases text.",
		func(ctx context.Context, in ShoutArgs) (string, error) {
			return strings.Repeat(strings.ToUpper(in.Text), in.Times), nil
		})
	if err != nil {
		log.Fatal(err)
	}
	r := tool.NewRegistry()
	if err := r.Register(shout); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(r.Definitions()))

	res := r.Execute(context.Background(), "shout", []byte(`{"text":"hi"}`))
	fmt.Printf("%q %v\n", res.Output, res.IsError)

	res = r.Execute(context.Background(), "shout", []byte(`{"text":"hi","times":5}`))
	fmt.Println(res.Kind)
	fmt.Println(res.Error)
	// Output:
	// [{"type":"function","function":{"name":"shout","description":"Upper-cases text.","parameters":{"type":"object","properties":{"text":{"type":"string","description":"the text to shout","minLength":1},"times":{"type":"integer","default":1,"minimum":1,"maximum":3}},"required":["text"],"additionalProperties":false}}}]
	// "HI" false
	// invalid_arguments
	// invalid arguments for tool "shout": /times: expected an integer between 1 and 3, got 5
	// received: {"text":"hi","times":5}
}

// ExampleNew shows a tool whose result is a struct: the Output is its JSON
// and the tool gets an output schema.
func ExampleNew() {
	type Unit string
	type Args struct {
		Celsius float64 `json:"celsius" description:"temperature in degrees Celsius"`
	}
	type Reading struct {
		Fahrenheit float64 `json:"fahrenheit"`
	}
	convert := tool.Must(tool.New("to_fahrenheit", "Converts Celsius to Fahrenheit.",
		func(ctx context.Context, in Args) (Reading, error) {
			return Reading{Fahrenheit: in.Celsius*9/5 + 32}, nil
		}, tool.WithAnnotations(tool.Annotations{ReadOnly: true, Idempotent: true})))

	fmt.Println(string(convert.Parameters()))
	fmt.Println(string(tool.OptionsOf(convert).OutputSchema))
	res, _ := convert.Execute(context.Background(), []byte(`{"celsius":100}`))
	fmt.Println(res.Output)
	// Output:
	// {"type":"object","properties":{"celsius":{"type":"number","description":"temperature in degrees Celsius"}},"required":["celsius"],"additionalProperties":false}
	// {"type":"object","properties":{"fahrenheit":{"type":"number"}},"required":["fahrenheit"],"additionalProperties":false}
	// {"fahrenheit":212}
}

// ExampleRegistry_Execute shows what the model reads when a call goes
// wrong: every problem at once, with where it is and what was expected.
func ExampleRegistry_Execute() {
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("search_flights", "Searches flights.", searchFlights)))

	res := r.Execute(context.Background(), "search_flights",
		[]byte(`{"from":"sfo","to":"JFK","passengers":12,"cabin":"premium","Airlines":["UA"]}`))
	fmt.Println(res.Error)

	res = r.Execute(context.Background(), "search_flight", []byte(`{}`))
	fmt.Println(res.Error)
	// Output:
	// invalid arguments for tool "search_flights" (5 problems):
	// - /from: expected a string matching ^[A-Z]{3}$, got "sfo"
	// - /passengers: expected an integer between 1 and 9, got 12
	// - /cabin: expected one of "economy", "business", "first", got "premium"
	// - /Airlines: expected no property "Airlines" (allowed: from, to, date, passengers, cabin, flexible, max_price, airlines), got ["UA"] (did you mean "airlines"? names are case-sensitive)
	// - /date: expected required property "date" (a string), got nothing
	// received: {"from":"sfo","to":"JFK","passengers":12,"cabin":"premium","Airlines":["UA"]}
	// unknown tool "search_flight". Did you mean "search_flights"? Available tools: search_flights.
}
