package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miniopenclaw/tool"
)

// forecastTool is a hand-written tool: it reports the weather of a city,
// taking 50ms as a real web service might.
type forecastTool struct{}

func (forecastTool) Name() string        { return "forecast" }
func (forecastTool) Description() string { return "Returns the weather forecast for a city." }
func (forecastTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
}

func (forecastTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct {
		City string `json:"city"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	select {
	case <-time.After(50 * time.Millisecond):
	case <-ctx.Done():
		return tool.Result{}, ctx.Err()
	}
	if in.City == "Atlantis" {
		return tool.Result{}, fmt.Errorf("no weather station in %s", in.City)
	}
	return tool.Result{Output: fmt.Sprintf("%s: sunny, %d°C", in.City, 15+len(in.City))}, nil
}

// geocodeTool is a hand-written tool with structured output.
type geocodeTool struct{}

func (geocodeTool) Name() string        { return "geocode" }
func (geocodeTool) Description() string { return "Finds the city nearest to a place." }
func (geocodeTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"place":{"type":"string"}},"required":["place"]}`)
}

func (geocodeTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	out := json.RawMessage(`{"nearest":{"city":"Lyon","country":"FR"},"distance_km":12}`)
	return tool.Result{Output: string(out), Structured: out}, nil
}

// A model asked for three forecasts in one turn: they run at the same
// time, and the outcomes come back in the order of the calls. A failed
// call is an outcome like the others; it does not stop its siblings.
func ExampleExecutor_Run() {
	reg := tool.NewRegistry()
	if err := reg.Register(forecastTool{}); err != nil {
		log.Fatal(err)
	}
	ex := tool.NewExecutor(reg)

	outcomes, err := ex.Run(context.Background(), []tool.Call{
		{ID: "call_1", Name: "forecast", Args: json.RawMessage(`{"city":"Oslo"}`)},
		{ID: "call_2", Name: "forecast", Args: json.RawMessage(`{"city":"Atlantis"}`)},
		{ID: "call_3", Name: "forecast", Args: json.RawMessage(`{"city":"Lima"}`)},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range outcomes {
		if o.Result.IsError {
			fmt.Printf("%s: %s error: %s\n", o.ID, o.Result.Kind, o.Result.Error)
			continue
		}
		fmt.Printf("%s: %s\n", o.ID, o.Result.Output)
	}
	// Output:
	// call_1: Oslo: sunny, 19°C
	// call_2: tool_error error: no weather station in Atlantis
	// call_3: Lima: sunny, 19°C
}

// A call can use another call's output: {"$output": ID} is replaced by
// that call's output before the arguments are validated, and a "pointer"
// picks a part of structured output. The reference makes the forecast wait
// for the geocoding; DependsOn orders calls that pass nothing.
func ExampleExecutor_Run_dependencies() {
	reg := tool.NewRegistry()
	for _, t := range []tool.Tool{forecastTool{}, geocodeTool{}} {
		if err := reg.Register(t); err != nil {
			log.Fatal(err)
		}
	}
	var timeline []string
	trace := func(next tool.Step) tool.Step {
		return func(ctx context.Context, c tool.Call) (tool.Result, error) {
			timeline = append(timeline, fmt.Sprintf("%s(%s) after [%s]", c.Name, c.Args, strings.Join(c.DependsOn, " ")))
			return next(ctx, c)
		}
	}
	// One call at a time, so that the timeline prints in a fixed order.
	ex := tool.NewExecutor(reg, tool.WithMaxParallel(1), tool.WithMiddleware(trace))

	outcomes, err := ex.Run(context.Background(), []tool.Call{
		{ID: "weather", Name: "forecast", Args: json.RawMessage(`{"city":{"$output":"where","pointer":"/nearest/city"}}`)},
		{ID: "where", Name: "geocode", Args: json.RawMessage(`{"place":"Villeurbanne"}`)},
		{ID: "again", Name: "forecast", Args: json.RawMessage(`{"city":"Oslo"}`), DependsOn: []string{"weather"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range timeline {
		fmt.Println(line)
	}
	for _, o := range outcomes {
		fmt.Printf("%s: %s\n", o.ID, o.Result.Output)
	}
	// Output:
	// geocode({"place":"Villeurbanne"}) after []
	// forecast({"city":"Lyon"}) after [where]
	// forecast({"city":"Oslo"}) after [weather]
	// weather: Lyon: sunny, 19°C
	// where: {"nearest":{"city":"Lyon","country":"FR"},"distance_km":12}
	// again: Oslo: sunny, 19°C
}

// flakyTool fails with a transient error until it has been called three
// times.
type flakyTool struct{ calls atomic.Int32 }

func (*flakyTool) Name() string                { return "fetch" }
func (*flakyTool) Description() string         { return "Fetches a page from a busy server." }
func (*flakyTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }

func (t *flakyTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if n := t.calls.Add(1); n < 3 {
		return tool.Result{}, tool.Transient(fmt.Errorf("503 service unavailable (call %d)", n))
	}
	return tool.Result{Output: "fetched"}, nil
}

// Transient marks an error that an Executor may retry: the tool must be
// annotated as idempotent and have a retry policy. The result's metadata
// says how many attempts were made.
func ExampleTransient() {
	reg := tool.NewRegistry()
	err := reg.Register(tool.With(&flakyTool{},
		tool.WithAnnotations(tool.Annotations{ReadOnly: true, Idempotent: true}),
		tool.WithRetry(tool.RetryPolicy{MaxAttempts: 5, Backoff: time.Millisecond})))
	if err != nil {
		log.Fatal(err)
	}
	outcomes, _ := tool.NewExecutor(reg).Run(context.Background(), []tool.Call{{ID: "1", Name: "fetch"}})
	fmt.Println(outcomes[0].Result.Output, "after", outcomes[0].Result.Metadata["attempts"], "attempts")
	// Output: fetched after 3 attempts
}
