package oteltool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/oteltool"
)

// Telemetry plugs into an executor as middleware. Here spans go to an
// in-memory recorder; a program would pass its configured providers.
func Example() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())

	reg := tool.NewRegistry()
	if err := reg.Register(echoTool{}); err != nil {
		log.Fatal(err)
	}
	tel := oteltool.New(oteltool.WithTracerProvider(tp))
	ex := tool.NewExecutor(reg, tool.WithBatchMiddleware(tel.BatchMiddleware), tool.WithMiddleware(tel.Middleware))
	if _, err := ex.Run(context.Background(), []tool.Call{
		{ID: "call_1", Name: "echo", Args: json.RawMessage(`{"Text":"hi"}`)},
	}); err != nil {
		log.Fatal(err)
	}
	for _, s := range spans.Ended() {
		fmt.Println(s.Name())
	}
	// Output:
	// execute_tool echo
	// tool_batch
}
