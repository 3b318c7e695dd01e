package oteltool_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/oteltool"
)

// echoTool returns its "text" argument, or fails with "fail".
type echoTool struct{}

func (echoTool) Name() string                { return "echo" }
func (echoTool) Description() string         { return "Echoes text." }
func (echoTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (echoTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct{ Text, Fail string }
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, err
	}
	if in.Fail != "" {
		return tool.Result{}, errors.New(in.Fail)
	}
	return tool.Result{Output: in.Text}, nil
}

type setup struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	ex     *tool.Executor
}

func newSetup(t *testing.T, opts ...oteltool.Option) setup {
	t.Helper()
	return newSetupOf(t, []tool.Tool{echoTool{}}, opts...)
}

// newSetupOf is newSetup with the registry holding tools.
func newSetupOf(t *testing.T, tools []tool.Tool, opts ...oteltool.Option) setup {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	tel := oteltool.New(append([]oteltool.Option{oteltool.WithTracerProvider(tp), oteltool.WithMeterProvider(mp)}, opts...)...)
	reg := tool.NewRegistry()
	for _, tl := range tools {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	ex := tool.NewExecutor(reg, tool.WithBatchMiddleware(tel.BatchMiddleware), tool.WithMiddleware(tel.Middleware))
	return setup{spans: spans, reader: reader, ex: ex}
}

func attrs(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func TestSpans(t *testing.T) {
	s := newSetup(t)
	_, err := s.ex.Run(t.Context(), []tool.Call{
		{ID: "call_1", Name: "echo", Args: json.RawMessage(`{"Text":"hi"}`)},
		{ID: "call_2", Name: "echo", Args: json.RawMessage(`{"Fail":"no"}`)},
		{ID: "call_3", Name: "nope"},
		{ID: "call_4", Name: "echo", DependsOn: []string{"call_2"}}, // skipped: no span
	})
	if err != nil {
		t.Fatal(err)
	}
	ended := s.spans.Ended()
	byName := map[string]sdktrace.ReadOnlySpan{}
	var names []string
	for _, sp := range ended {
		names = append(names, sp.Name()+" "+attrs(sp.Attributes())["gen_ai.tool.call.id"])
		byName[sp.Name()+" "+attrs(sp.Attributes())["gen_ai.tool.call.id"]] = sp
	}
	slices.Sort(names)
	want := []string{"execute_tool echo call_1", "execute_tool echo call_2", "execute_tool nope call_3", "tool_batch "}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("span names (-want +got):\n%s", diff)
	}
	batch := byName["tool_batch "]
	for _, name := range want[:3] {
		sp := byName[name]
		if sp.Parent().SpanID() != batch.SpanContext().SpanID() {
			t.Errorf("%s: parent is not the batch span", name)
		}
		if sp.SpanKind() != trace.SpanKindInternal {
			t.Errorf("%s: kind %v, want internal", name, sp.SpanKind())
		}
	}
	if diff := cmp.Diff(map[string]string{
		"gen_ai.operation.name": "execute_tool",
		"gen_ai.tool.name":      "echo",
		"gen_ai.tool.call.id":   "call_1",
		"gen_ai.tool.type":      "function",
	}, attrs(byName["execute_tool echo call_1"].Attributes())); diff != "" {
		t.Errorf("call_1 attributes (-want +got):\n%s", diff)
	}
	failed := byName["execute_tool echo call_2"]
	if got := attrs(failed.Attributes())["error.type"]; got != "tool_error" {
		t.Errorf("call_2 error.type = %q, want tool_error", got)
	}
	if failed.Status().Code != codes.Error || failed.Status().Description != "no" {
		t.Errorf("call_2 status = %+v, want error \"no\"", failed.Status())
	}
	if got := attrs(byName["execute_tool nope call_3"].Attributes())["error.type"]; got != "not_found" {
		t.Errorf("call_3 error.type = %q, want not_found", got)
	}
	if diff := cmp.Diff(map[string]string{"clawtool.batch.size": "4", "clawtool.batch.failed": "3"}, attrs(batch.Attributes())); diff != "" {
		t.Errorf("batch attributes (-want +got):\n%s", diff)
	}
}

func TestBatchError(t *testing.T) {
	s := newSetup(t)
	_, err := s.ex.Run(t.Context(), []tool.Call{{ID: "a", Name: "echo", DependsOn: []string{"a"}}})
	if !errors.Is(err, tool.ErrInvalidBatch) {
		t.Fatalf("Run error = %v, want ErrInvalidBatch", err)
	}
	ended := s.spans.Ended()
	if len(ended) != 1 {
		t.Fatalf("%d spans, want only the batch span", len(ended))
	}
	if got := attrs(ended[0].Attributes())["error.type"]; got != "invalid_batch" || ended[0].Status().Code != codes.Error {
		t.Errorf("batch span error.type = %q, status %v; want invalid_batch, error", got, ended[0].Status())
	}
}

func TestContent(t *testing.T) {
	s := newSetup(t, oteltool.WithContent())
	if _, err := s.ex.Run(t.Context(), []tool.Call{{ID: "a", Name: "echo", Args: json.RawMessage(`{"Text":"hi"}`)}}); err != nil {
		t.Fatal(err)
	}
	var call sdktrace.ReadOnlySpan
	for _, sp := range s.spans.Ended() {
		if sp.Name() == "execute_tool echo" {
			call = sp
		}
	}
	a := attrs(call.Attributes())
	if a["gen_ai.tool.call.arguments"] != `{"Text":"hi"}` || a["gen_ai.tool.call.result"] != "hi" {
		t.Errorf("content attributes = %v", a)
	}
}

func TestMetrics(t *testing.T) {
	s := newSetup(t)
	if _, err := s.ex.Run(t.Context(), []tool.Call{
		{ID: "1", Name: "echo", Args: json.RawMessage(`{"Text":"a"}`)},
		{ID: "2", Name: "echo", Args: json.RawMessage(`{"Text":"b"}`)},
		{ID: "3", Name: "echo", Args: json.RawMessage(`{"Fail":"x"}`)},
		{ID: "4", Name: "echo", Args: json.RawMessage(`[1]`)},
	}); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{} // "metric error.type" -> value
	var histCount uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					et, _ := dp.Attributes.Value("error.type")
					got[m.Name+" "+et.Emit()] += dp.Value
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					histCount += dp.Count
				}
				if m.Unit != "s" {
					t.Errorf("%s unit %q, want s", m.Name, m.Unit)
				}
			}
		}
	}
	want := map[string]int64{
		"clawtool.tool.calls ":                   2,
		"clawtool.tool.calls tool_error":         1,
		"clawtool.tool.calls invalid_arguments":  1,
		"clawtool.tool.errors tool_error":        1,
		"clawtool.tool.errors invalid_arguments": 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	if histCount != 4 {
		t.Errorf("duration histogram has %d observations, want 4", histCount)
	}
}

// TestNoProvider checks that New with no options works with the global
// no-op providers.
func TestNoProvider(t *testing.T) {
	tel := oteltool.New()
	reg := tool.NewRegistry()
	if err := reg.Register(echoTool{}); err != nil {
		t.Fatal(err)
	}
	ex := tool.NewExecutor(reg, tool.WithBatchMiddleware(tel.BatchMiddleware), tool.WithMiddleware(tel.Middleware))
	outs, err := ex.Run(t.Context(), []tool.Call{{ID: "a", Name: "echo", Args: json.RawMessage(`{"Text":"ok"}`)}})
	if err != nil || outs[0].Result.Output != "ok" {
		t.Fatalf("Run = %+v, %v", outs, err)
	}
}
