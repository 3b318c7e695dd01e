package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"github.com/miniopenclaw/tool/internal/schema"
)

// New returns a Tool that calls fn, the way http.HandlerFunc adapts a
// function to http.Handler. It is the Go form of the @tool decorator of
// Python agent frameworks.
//
// The parameters schema is derived from In once, here (see the package
// documentation for the rules and the struct-tag grammar); In must be a
// struct type, a pointer to one, or a map with string keys. Every call is
// parsed strictly, validated and bound into In in one pass compiled from
// the type, with defaults applied, before fn runs: fn never sees arguments
// that do not match the schema. New returns an error naming the field path
// when In or Out contains something JSON cannot express (a channel, a
// function, a complex number, a map whose keys are not strings, an
// interface with methods) or a tag it cannot use (a malformed number, a
// pattern that does not compile, a default or enum value the field cannot
// hold); the error wraps [ErrInvalidSchema]. A name that a [Registry]
// would refuse gives an error wrapping [ErrInvalidName].
//
// Out becomes the Result. A string (or a type whose underlying type is
// string) is the Output as it is. Any other type is marshalled to JSON as
// the Output; when it marshals to a JSON object (a struct or a map), the
// same JSON is Result.Structured and its schema is Options.OutputSchema.
// When Out is Result itself, fn's Result is the call's (so that fn can
// return parts ([Part]) or mark a failure with a Kind), with no output schema.
// An error from fn becomes an error Result carrying the error's message.
func New[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...Option) (Tool, error) {
	if !ValidName(name) {
		return nil, fmt.Errorf("new tool %q: name must match ^[a-zA-Z0-9_-]{1,64}$: %w", name, ErrInvalidName)
	}
	if fn == nil {
		return nil, fmt.Errorf("new tool %q: nil function", name)
	}
	inType := reflect.TypeFor[In]()
	in, err := schema.For(inType, false)
	if err != nil {
		return nil, fmt.Errorf("new tool %q: parameters (%s): %w: %v", name, inType, ErrInvalidSchema, err)
	}
	if !in.IsObject() {
		return nil, fmt.Errorf("new tool %q: parameters (%s): %w: the argument type must be a struct, a pointer to a struct, or a map with string keys, because tool arguments are a JSON object", name, inType, ErrInvalidSchema)
	}
	t := &funcTool[In, Out]{name: name, description: description, fn: fn, in: in}
	outType := reflect.TypeFor[Out]()
	switch {
	case outType == reflect.TypeFor[Result]():
		t.outResult = true // fn builds the Result itself
	case outType.Kind() == reflect.String:
		t.outString = true
	case outType.Kind() == reflect.Interface:
		// Unknown until run time: no output schema.
	default:
		out, err := schema.For(outType, true)
		if err != nil {
			return nil, fmt.Errorf("new tool %q: result (%s): %w: %v", name, outType, ErrInvalidSchema, err)
		}
		if out.IsObject() {
			t.structured = true
			t.opts.OutputSchema = out.Schema()
		}
	}
	// No methods: encoding/json writes these as strconv does.
	_, t.outScalar = scalarJSON(reflect.Zero(outType).Interface())
	for _, opt := range opts {
		opt(&t.opts)
	}
	if r := t.opts.resolve; r != nil {
		fn, ok := r.(func(*In) error)
		if !ok {
			return nil, fmt.Errorf("new tool %q: WithResolve's function takes %s, not *%s", name, reflect.TypeOf(r).In(0), inType)
		}
		t.resolve, t.opts.resolve = fn, nil
	}
	return t, nil
}

// Must returns t, or panics if err is not nil. It is for tools built at
// program start, as in
//
//	var search = tool.Must(tool.New("search", "Searches the web.", searchFn))
func Must(t Tool, err error) Tool {
	if err != nil {
		panic(err)
	}
	return t
}

// funcTool is the Tool New returns.
type funcTool[In, Out any] struct {
	name, description string
	fn                func(context.Context, In) (Out, error)
	in                *schema.Codec
	encOnce           sync.Once       // enc is built on first use: only an Authorizer reads it
	enc               *argsEncoder    // encodes In for an Authorizer, when it can; else json.Marshal
	resolve           func(*In) error // WithResolve's, or nil
	opts              Options
	outString         bool
	outResult         bool
	outScalar         bool // Out is bool or a predeclared integer type: written with strconv
	structured        bool
}

func (t *funcTool[In, Out]) Name() string                { return t.name }
func (t *funcTool[In, Out]) Description() string         { return t.description }
func (t *funcTool[In, Out]) Parameters() json.RawMessage { return t.in.Schema() }
func (t *funcTool[In, Out]) Options() Options            { return t.opts }
func (t *funcTool[In, Out]) defaultBytes() int           { return t.in.DefaultBytes() }

// Execute parses, validates and binds args with the default limits, then
// calls the function. Invalid arguments give an error Result of kind
// [KindInvalidArguments] together with an [*ArgumentError]; the function
// is not called.
func (t *funcTool[In, Out]) Execute(ctx context.Context, args json.RawMessage) (Result, error) {
	c, res, err := t.prepare(args, defaultLimits)
	if c == nil {
		return res, err
	}
	c.run(ctx)
	return c.finish()
}

// prepare parses, validates and binds args. It returns the call to run,
// or, when the arguments are invalid, an error Result and an
// *ArgumentError.
func (t *funcTool[In, Out]) prepare(args []byte, lim argLimits) (pendingCall, Result, error) {
	if len(args) > lim.maxBytes {
		err := tooLarge(t.name, args, lim.maxBytes)
		return nil, errorResult(KindInvalidArguments, err.Error()), err
	}
	in := new(In)
	vs, err := t.in.DecodeWithin(args, reflect.ValueOf(in).Elem(), lim.maxDepth, lim.maxBytes)
	if err != nil || len(vs) > 0 {
		ae := &ArgumentError{Tool: t.name, Args: shortenArgs(args)}
		if err != nil {
			ae.Violations = []Violation{{Expected: "valid JSON", Got: err.Error()}}
		} else {
			ae.Violations = make([]Violation, len(vs))
			for i, v := range vs {
				ae.Violations[i] = Violation(v)
			}
		}
		return nil, errorResult(KindInvalidArguments, ae.Error()), ae
	}
	if t.resolve != nil {
		if err := t.resolve(in); err != nil {
			ae := resolveRefusal(err)
			ae.Tool, ae.Args = t.name, shortenArgs(args)
			return nil, errorResult(KindInvalidArguments, ae.Error()), ae
		}
	}
	return &funcCall[In, Out]{t: t, in: in}, Result{}, nil
}

// WithResolve makes a tool built with [New] hand each call's arguments,
// once they are parsed, validated and bound, to resolve, which may change
// them in place: a file tool turns the path the model wrote into the
// file it will open. The call goes on with what resolve leaves, which is
// what an [Authorizer] decides on and what the tool's function receives:
// a name is resolved once, by the tool, and the decision is about what
// the tool will act on, not about what the model wrote.
//
// A non-nil error from resolve refuses the call as invalid arguments
// ([KindInvalidArguments]); the function does not run and no Authorizer
// is asked. When the error is an [*ArgumentError], its violations are the
// call's (say there what the model can do instead); any other error
// becomes one violation that quotes it. resolve runs before the call's
// time limit starts, in the caller's goroutine, so its work must be
// bounded.
//
// resolve must take a pointer to the tool's argument type: New fails
// otherwise. WithResolve applies to New only: [With] panics when given it,
// since the tool it wraps binds its arguments itself.
func WithResolve[In any](resolve func(in *In) error) Option {
	return func(o *Options) { o.resolve = resolve }
}

// resolveRefusal returns the ArgumentError a WithResolve function's error
// becomes: a copy of it when it is one, else one violation quoting it.
func resolveRefusal(err error) *ArgumentError {
	var ae *ArgumentError
	if errors.As(err, &ae) {
		cp := *ae
		cp.Violations = slices.Clone(ae.Violations)
		return &cp
	}
	return &ArgumentError{Violations: []Violation{{Expected: "arguments the tool can resolve", Got: err.Error()}}}
}

// funcCall is one call of a funcTool. run and finish are separate so that
// the registry can run the function in a goroutine of its own and encode
// the result in the caller's.
type funcCall[In, Out any] struct {
	t   *funcTool[In, Out]
	in  *In
	out Out
	err error

	argsOnce sync.Once // the arguments are encoded for an Authorizer once, before the call runs
	args     []byte
	argsErr  error
}

func (c *funcCall[In, Out]) run(ctx context.Context) { c.out, c.err = c.t.fn(ctx, *c.in) }

func (c *funcCall[In, Out]) checkedArgs() ([]byte, error) {
	c.argsOnce.Do(func() {
		if enc := c.t.encoder(); enc != nil {
			if b, ok := enc.encode(reflect.ValueOf(c.in).Elem(), make([]byte, 0, 64)); ok {
				c.args = b
				return
			}
		}
		c.args, c.argsErr = json.Marshal(c.in)
	})
	return c.args, c.argsErr
}

func (c *funcCall[In, Out]) argument(name string) (ArgumentValue, bool) {
	enc := c.t.encoder()
	if enc == nil {
		return ArgumentValue{}, false
	}
	return enc.argument(reflect.ValueOf(c.in).Elem(), name)
}

// encoder returns the tool's argsEncoder, or nil when In is a type it
// does not encode. It is built on the first call of a tool that an
// Authorizer looks into, not by New: most tools never need it.
func (t *funcTool[In, Out]) encoder() *argsEncoder {
	t.encOnce.Do(func() { t.enc = newArgsEncoder(reflect.TypeFor[In]()) })
	return t.enc
}

func (c *funcCall[In, Out]) finish() (Result, error) {
	if c.err != nil {
		return errorResult(KindToolError, c.err.Error()), c.err
	}
	return c.t.result(c.out)
}

var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// result turns fn's return value into a Result.
func (t *funcTool[In, Out]) result(out Out) (Result, error) {
	if t.outResult {
		return any(out).(Result), nil
	}
	if t.outString {
		if s, ok := any(out).(string); ok {
			return Result{Output: s}, nil
		}
		return Result{Output: reflect.ValueOf(&out).Elem().String()}, nil
	}
	if t.outScalar {
		if out, ok := scalarJSON(any(out)); ok {
			return Result{Output: out}, nil
		}
	}
	buf := encodeBuffers.Get().(*bytes.Buffer)
	defer encodeBuffers.Put(buf)
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		err = fmt.Errorf("tool %q returned a result that cannot be encoded as JSON: %w", t.name, err)
		return errorResult(KindToolError, err.Error()), err
	}
	b := bytes.TrimRight(buf.Bytes(), "\n")
	res := Result{Output: string(b)}
	if t.structured && len(b) > 0 && b[0] == '{' {
		res.Structured = json.RawMessage(res.Output)
	}
	return res, nil
}

// scalarJSON returns v as encoding/json writes it, for a bool or a value
// of a predeclared integer type, whose encoding is strconv's; ok is false
// for anything else.
func scalarJSON(v any) (s string, ok bool) {
	switch v := v.(type) {
	case bool:
		return strconv.FormatBool(v), true
	case int:
		return strconv.FormatInt(int64(v), 10), true
	case int8:
		return strconv.FormatInt(int64(v), 10), true
	case int16:
		return strconv.FormatInt(int64(v), 10), true
	case int32:
		return strconv.FormatInt(int64(v), 10), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case uint:
		return strconv.FormatUint(uint64(v), 10), true
	case uint8:
		return strconv.FormatUint(uint64(v), 10), true
	case uint16:
		return strconv.FormatUint(uint64(v), 10), true
	case uint32:
		return strconv.FormatUint(uint64(v), 10), true
	case uint64:
		return strconv.FormatUint(v, 10), true
	case uintptr:
		return strconv.FormatUint(uint64(v), 10), true
	}
	return "", false
}
