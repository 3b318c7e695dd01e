package tool

import (
	"context"
	"encoding/json"
	"time"
)

// A Tool is a capability a model can call by name with JSON arguments.
//
// Name identifies the tool; a [Registry] accepts names that match
// ^[a-zA-Z0-9_-]{1,64}$, the set every model API accepts. Description tells
// the model what the tool does and when to use it.
//
// Parameters returns a JSON Schema (draft 2020-12) whose root is an object
// schema ({"type":"object",...}). It must return the same bytes on every call;
// the Registry reads it once, at registration, and callers must not modify
// the returned slice.
//
// Execute runs the tool. It may be called concurrently with itself, and it
// must honour ctx: when ctx is done it should stop and return promptly. args
// is a JSON object. When Execute is called through a [Registry], args have
// already been parsed strictly and validated against Parameters, with
// defaults applied; a tool called directly must not assume that.
//
// A failure the model should read is reported either as a Result with IsError
// set, or as a non-nil error, which the Registry turns into an error Result
// carrying the error's message. When Execute returns both an error and a
// Result with IsError set, the Result is what the model sees and the error is
// the cause kept for the program (see [Registry.Execute]).
type Tool interface {
	Name() string
	Description() string
	Parameters() json.RawMessage
	Execute(ctx context.Context, args json.RawMessage) (Result, error)
}

// Annotations describe how a tool behaves, for people, policies and
// protocol adapters (they mirror MCP's tool annotations). They are hints
// from the tool's author, not guarantees.
//
// The zero value claims nothing: a tool that is not ReadOnly should be
// treated as able to change state, whatever Destructive says.
type Annotations struct {
	// Title is a short human-readable name, such as "Search flights".
	Title string
	// ReadOnly reports that the tool does not change its environment.
	ReadOnly bool
	// Destructive reports that the tool may delete or overwrite data,
	// as opposed to only adding to it. Meaningful when ReadOnly is false.
	Destructive bool
	// Idempotent reports that calling the tool again with the same
	// arguments has no additional effect. Retries rely on it.
	Idempotent bool
	// OpenWorld reports that the tool reaches outside the program,
	// for example the network or a third-party service.
	OpenWorld bool
}

// Options are optional properties of a tool that the [Registry] and protocol
// adapters read. A tool makes them known by implementing [Configured]; tools
// built with [New] or wrapped with [With] do.
//
// The zero Options means "use the registry's defaults" for every field.
type Options struct {
	// Annotations describe the tool's behaviour.
	Annotations Annotations

	// OutputSchema is a JSON Schema for the structured content of the
	// tool's results (Result.Structured). Nil means the tool has none.
	OutputSchema json.RawMessage

	// ForeignSchema says the tool's Parameters schema was written
	// elsewhere (by an MCP server, say) rather than for this program. The
	// registry then reads it as JSON Schema draft 2020-12 does by default:
	// format is an annotation, not an assertion, and a pattern that
	// cannot be translated to Go's RE2 syntax is ignored rather than
	// refusing the tool.
	ForeignSchema bool

	// Timeout bounds each call. Zero means the registry's default
	// (see [WithDefaultTimeout]); a negative value means no timeout of the
	// tool's own, so only the caller's context bounds the call.
	Timeout time.Duration

	// MaxOutputBytes bounds Result.Output. Longer output is cut at a UTF-8
	// boundary and a notice is appended that tells the model what was cut.
	// Zero means the registry's default (see [WithDefaultMaxOutput]); a
	// negative value means no limit.
	MaxOutputBytes int

	// Inline makes [Registry.Execute] run the tool in the caller's
	// goroutine instead of one of its own, which saves a goroutine switch
	// (about 2 µs a call on a 2-core machine; see BENCHMARKS.md). Argument
	// checks, the timeout context, the panic guard and the result budget
	// are the same. What is lost is the abandonment of a tool that ignores
	// its context: an inline tool that does not return holds its caller
	// until it does. Set it only on tools that return promptly, such as
	// pure computations, or that always honor their context.
	Inline bool

	// SharedTimer has the registry end the tool's calls at their time
	// limit with one timer it shares among calls, rather than a
	// context.WithTimeout per call, whose timer of its own costs about a
	// µs in a tight loop and up to three between network round trips
	// (see BENCHMARKS.md).
	// The tool's context is the same to the tool: Deadline reports the
	// limit (or the caller's earlier deadline), and when the limit
	// passes, Done is closed, Err is [context.DeadlineExceeded] and
	// [context.Cause] is [ErrTimeout]. What differs is a context the tool
	// derives from it: when the limit ends the call, that one ends with
	// [context.Canceled] and the cause ErrTimeout, not with
	// DeadlineExceeded. Set it on tools that wait on their context's Done
	// and read its cause, not the Err of contexts they derive, such as the
	// tools natstool imports.
	SharedTimer bool

	// MaxInFlight bounds how many calls of the tool an [Executor] runs at
	// once, for a tool that holds a scarce resource such as a browser.
	// Zero means the default: one at a time for a tool whose Annotations
	// say it is Destructive and not ReadOnly, otherwise no limit of the
	// tool's own (the executor's parallelism still applies). A negative
	// value means no limit.
	MaxInFlight int

	// Sequential makes an [Executor] run each call of the tool alone: the
	// call starts when no other call of the batch is running, nothing else
	// starts until it ends, and ready calls emitted after it do not
	// overtake it.
	Sequential bool

	// Retry is how an [Executor] retries failed calls of the tool. The
	// zero value means no retries. Retries happen only when
	// Annotations.Idempotent is set and the error is marked with
	// [Transient].
	Retry RetryPolicy

	// Task says whether an MCP server (mcptool) may answer the tool's
	// calls with a task handle instead of waiting for the result: for
	// tools that take longer than a client should hold a request open
	// (builds, crawls, a human's approval). The zero value, TaskNever,
	// keeps every call synchronous.
	Task TaskMode

	resolve any // WithResolve's function, until New takes it
}

// Configured is implemented by tools that have [Options]. The Registry
// and adapters discover it with a type assertion, the way database/sql
// discovers optional driver interfaces. Options must return the same value
// on every call.
type Configured interface {
	Tool
	Options() Options
}

// An Option sets a field of [Options]. Options are given to [New] and [With].
type Option func(*Options)

// WithTimeout sets [Options.Timeout]: each call of the tool gets at most d,
// after which it is reported as timed out. A negative d disables the tool's
// own timeout.
func WithTimeout(d time.Duration) Option {
	return func(o *Options) { o.Timeout = d }
}

// WithMaxOutput sets [Options.MaxOutputBytes], the result-size budget of the
// tool. A negative n disables the budget.
func WithMaxOutput(n int) Option {
	return func(o *Options) { o.MaxOutputBytes = n }
}

// WithInline sets [Options.Inline]: calls of the tool run in the
// caller's goroutine. Use it only for tools that return promptly.
func WithInline() Option {
	return func(o *Options) { o.Inline = true }
}

// WithSharedTimer sets [Options.SharedTimer]: the registry ends the
// tool's calls at their time limit with a timer shared among calls.
func WithSharedTimer() Option {
	return func(o *Options) { o.SharedTimer = true }
}

// WithAnnotations sets [Options.Annotations].
func WithAnnotations(a Annotations) Option {
	return func(o *Options) { o.Annotations = a }
}

// WithOutputSchema sets [Options.OutputSchema]. [New] derives the output
// schema from its Out type; this option overrides it.
func WithOutputSchema(schema json.RawMessage) Option {
	return func(o *Options) { o.OutputSchema = schema }
}

// TaskMode says whether a tool's calls may run as MCP tasks; see
// Options.Task.
type TaskMode int

// The TaskMode values.
const (
	// TaskNever: every call is answered synchronously (the default).
	TaskNever TaskMode = iota
	// TaskOptional: a call becomes a task when the client supports tasks;
	// for other clients it runs synchronously.
	TaskOptional
	// TaskRequired: a call must run as a task; a 2026-07-28 client that
	// does not declare the tasks extension is refused (-32021), and a
	// 2025-11-25 call without params.task gets -32601, as that version
	// says. Where mcptool serves no tasks (after Server.MCP, or for a
	// caller its tool filter hides the tool from) the call runs
	// synchronously, as with TaskOptional.
	TaskRequired
)

// WithTask sets Options.Task.
func WithTask(m TaskMode) Option {
	return func(o *Options) { o.Task = m }
}

// OptionsOf returns t's Options, or the zero Options if t does not
// implement [Configured].
func OptionsOf(t Tool) Options {
	if c, ok := t.(Configured); ok {
		return c.Options()
	}
	return Options{}
}

// With returns a tool that behaves like t, with opts applied on top of t's
// own Options. It is how a hand-written tool gains a timeout, a result
// budget or annotations without implementing [Configured] itself.
func With(t Tool, opts ...Option) Tool {
	o := OptionsOf(t)
	for _, opt := range opts {
		opt(&o)
	}
	if o.resolve != nil {
		panic("tool: With cannot add WithResolve to a tool; give WithResolve to New")
	}
	return &configured{Tool: t, opts: o}
}

type configured struct {
	Tool
	opts Options
}

func (c *configured) Options() Options { return c.opts }

// unwrapTool lets the Registry see through [With] to the tool it wraps.
func (c *configured) unwrapTool() Tool { return c.Tool }
