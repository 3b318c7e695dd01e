// Package oteltool records OpenTelemetry traces and metrics for the calls
// a [tool.Executor] runs, following the OpenTelemetry semantic conventions
// for generative AI.
//
// Each call gets a span named "execute_tool {gen_ai.tool.name}" of kind
// internal, with the attributes gen_ai.operation.name ("execute_tool"),
// gen_ai.tool.name, gen_ai.tool.call.id, gen_ai.tool.type ("function")
// and, when the call failed, error.type (the result's [tool.ErrorKind],
// such as "timeout" or "invalid_arguments") and an error status. Each
// batch gets a parent span named "tool_batch". Three instruments record
// every call: the counters clawtool.tool.calls and clawtool.tool.errors
// (by error.type) and the histogram clawtool.tool.duration, in seconds.
// Their attributes take bounded sets of values: a call of a name no tool
// has counts under the tool name "_OTHER", and an error kind the library
// does not report under the error.type "_OTHER". Spans keep the name,
// call ID and kind as sent, cut to 64 bytes.
//
// Use it through the executor's middleware options:
//
//	tel := oteltool.New(oteltool.WithTracerProvider(tp), oteltool.WithMeterProvider(mp))
//	ex := tool.NewExecutor(reg,
//		tool.WithBatchMiddleware(tel.BatchMiddleware),
//		tool.WithMiddleware(tel.Middleware))
//
// Without options, New uses the global providers (otel.GetTracerProvider
// and otel.GetMeterProvider), which do nothing until the program installs
// real ones, so the middleware costs little when telemetry is not
// configured. Package tool itself does not depend on OpenTelemetry.
package oteltool

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/showtext"
)

// scope is the instrumentation scope name of the tracer and the meter.
const scope = "github.com/miniopenclaw/tool/oteltool"

// Attribute keys of the GenAI semantic conventions, and of this package.
const (
	keyOperation = attribute.Key("gen_ai.operation.name")
	keyToolName  = attribute.Key("gen_ai.tool.name")
	keyCallID    = attribute.Key("gen_ai.tool.call.id")
	keyToolType  = attribute.Key("gen_ai.tool.type")
	keyArguments = attribute.Key("gen_ai.tool.call.arguments")
	keyResult    = attribute.Key("gen_ai.tool.call.result")
	keyErrorType = attribute.Key("error.type")
	keyBatchSize = attribute.Key("clawtool.batch.size")
	keyFailed    = attribute.Key("clawtool.batch.failed")

	keySandboxLayers   = attribute.Key("sandbox.layers")
	keySandboxOutcome  = attribute.Key("sandbox.outcome")
	keySandboxExitCode = attribute.Key("sandbox.exit_code")
	keySandboxMode     = attribute.Key("sandbox.mode")
)

var (
	opExecuteTool = keyOperation.String("execute_tool")
	typeFunction  = keyToolType.String("function")
)

// durationBuckets are the bucket boundaries, in seconds, that the GenAI
// semantic conventions recommend for operation durations.
var durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}

// An Option configures [New].
type Option func(*config)

type config struct {
	tp      trace.TracerProvider
	mp      metric.MeterProvider
	content bool
}

// WithTracerProvider sets the provider of the tracer that records spans.
// The default is otel.GetTracerProvider() at the time New is called.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider sets the provider of the meter that records metrics.
// The default is otel.GetMeterProvider() at the time New is called.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithContent records each call's arguments and output on its span, as
// the attributes gen_ai.tool.call.arguments and gen_ai.tool.call.result.
// They may hold sensitive data, so the conventions make them opt-in; they
// are off by default.
func WithContent() Option {
	return func(c *config) { c.content = true }
}

// Telemetry records spans and metrics for an executor. Its methods are
// middleware for [tool.WithMiddleware] and [tool.WithBatchMiddleware]. It
// is safe for concurrent use.
type Telemetry struct {
	tracer   trace.Tracer
	content  bool
	calls    metric.Int64Counter
	errors   metric.Int64Counter
	duration metric.Float64Histogram
}

// New returns Telemetry configured by opts. If an instrument cannot be
// created, the error is reported to otel.Handle and a no-op instrument is
// used instead, so New never fails.
func New(opts ...Option) *Telemetry {
	var c config
	for _, opt := range opts {
		opt(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	meter := c.mp.Meter(scope)
	t := &Telemetry{tracer: c.tp.Tracer(scope), content: c.content}
	var err error
	if t.calls, err = meter.Int64Counter("clawtool.tool.calls",
		metric.WithDescription("Tool calls executed."), metric.WithUnit("{call}")); err != nil {
		otel.Handle(err)
		t.calls = noop.Int64Counter{}
	}
	if t.errors, err = meter.Int64Counter("clawtool.tool.errors",
		metric.WithDescription("Tool calls that failed, by error.type."), metric.WithUnit("{call}")); err != nil {
		otel.Handle(err)
		t.errors = noop.Int64Counter{}
	}
	if t.duration, err = meter.Float64Histogram("clawtool.tool.duration",
		metric.WithDescription("Duration of tool calls, retries included."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		otel.Handle(err)
		t.duration = noop.Float64Histogram{}
	}
	return t
}

// Middleware is a [tool.Middleware]: it records a span and metrics for
// each call. Put it first in [tool.WithMiddleware] so that its span covers
// the hooks and retries inside it.
func (t *Telemetry) Middleware(next tool.Step) tool.Step {
	return func(ctx context.Context, c tool.Call) (tool.Result, error) {
		name := spanName(c.Name)
		attrs := []attribute.KeyValue{opExecuteTool, keyToolName.String(name), keyCallID.String(spanName(c.ID)), typeFunction}
		if t.content {
			attrs = append(attrs, keyArguments.String(string(c.Args)))
		}
		ctx, span := t.tracer.Start(ctx, "execute_tool "+name,
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		start := time.Now()
		res, err := next(ctx, c)
		elapsed := time.Since(start).Seconds()

		metricName := keyToolName.String(c.Name)
		if res.Kind == tool.KindNotFound {
			// No tool has the name: whatever a model invents would
			// otherwise be a series of its own.
			metricName = keyToolName.String(otherValue)
		}
		metricAttrs := []attribute.KeyValue{opExecuteTool, metricName}
		if res.IsError || err != nil {
			kind := string(res.Kind)
			if kind == "" {
				kind = string(tool.KindToolError)
			}
			span.SetAttributes(keyErrorType.String(spanName(kind)))
			span.SetStatus(codes.Error, res.Error)
			metricAttrs = append(metricAttrs, keyErrorType.String(metricKind(res.Kind)))
			t.errors.Add(ctx, 1, metric.WithAttributes(metricAttrs...))
		} else if t.content {
			span.SetAttributes(keyResult.String(res.Text()))
		}
		sandboxAttributes(span, res.Metadata)
		set := metric.WithAttributes(metricAttrs...)
		t.calls.Add(ctx, 1, set)
		t.duration.Record(ctx, elapsed, set)
		span.End()
		return res, err
	}
}

// sandboxAttributes records on span what confined a sandboxed command and
// how it ended, from the metadata the exec tool of package
// sandbox/workspace gives its results ("sandbox_layers", "outcome",
// "exit_code", "sandbox_mode"). Results without "sandbox_layers" add
// nothing.
func sandboxAttributes(span trace.Span, md map[string]any) {
	layers, ok := md["sandbox_layers"].([]string)
	if !ok {
		return
	}
	attrs := []attribute.KeyValue{keySandboxLayers.StringSlice(layers)}
	if v, ok := md["outcome"].(string); ok {
		attrs = append(attrs, keySandboxOutcome.String(v))
	}
	if v, ok := md["exit_code"].(int); ok {
		attrs = append(attrs, keySandboxExitCode.Int(v))
	}
	if v, ok := md["sandbox_mode"].(string); ok {
		attrs = append(attrs, keySandboxMode.String(v))
	}
	span.SetAttributes(attrs...)
}

// BatchMiddleware is a [tool.BatchMiddleware]: it records a "tool_batch"
// span around each batch, the parent of the calls' spans, with the number
// of calls and of failed outcomes. A batch Run refused (an invalid
// dependency graph, or a canceled context) gets an error status and
// error.type.
func (t *Telemetry) BatchMiddleware(next tool.BatchStep) tool.BatchStep {
	return func(ctx context.Context, calls []tool.Call) ([]tool.Outcome, error) {
		ctx, span := t.tracer.Start(ctx, "tool_batch",
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(keyBatchSize.Int(len(calls))))
		defer span.End()
		outs, err := next(ctx, calls)
		failed := 0
		for _, o := range outs {
			if o.Result.IsError {
				failed++
			}
		}
		span.SetAttributes(keyFailed.Int(failed))
		if err != nil {
			span.SetAttributes(keyErrorType.String(batchErrorType(err)))
			span.SetStatus(codes.Error, err.Error())
		}
		return outs, err
	}
}

func batchErrorType(err error) string {
	switch {
	case errors.Is(err, tool.ErrInvalidBatch):
		return "invalid_batch"
	case errors.Is(err, context.Canceled):
		return string(tool.KindCanceled)
	case errors.Is(err, context.DeadlineExceeded):
		return string(tool.KindTimeout)
	}
	return "_OTHER"
}

// otherValue is what the metrics say for a value outside the set they
// model (OpenTelemetry's convention for error.type): a tool name no tool
// has, an error kind the library does not report.
const otherValue = "_OTHER"

// maxNameBytes is how much of a call's tool name, ID or error kind a
// span keeps; a registered tool's name is at most 64 bytes.
const maxNameBytes = 64

// spanName returns s cut to maxNameBytes (at a rune boundary), with "…"
// when it was cut: a model's call names whatever it likes, a megabyte
// long.
func spanName(s string) string { return showtext.Cut(s, maxNameBytes) }

// metricKind returns the error.type of a failed call for the metrics:
// the kind when it is one the library reports (or empty: a tool error),
// otherValue for any other. A result's kind may come from elsewhere (a
// remote worker sets its own), and each distinct value would be a series
// of its own.
func metricKind(k tool.ErrorKind) string {
	switch k {
	case "":
		return string(tool.KindToolError)
	case tool.KindNotFound, tool.KindInvalidArguments, tool.KindToolError, tool.KindPanic,
		tool.KindTimeout, tool.KindCanceled, tool.KindDenied, tool.KindUnavailable:
		return string(k)
	}
	return otherValue
}
