// Package tool is a tool system for LLM agents: a model asks to call a tool
// by name with JSON arguments, and this package makes that call safe, fast
// and portable.
//
// # Defining tools
//
// A [Tool] has a name, a description, a JSON Schema for its parameters and
// an Execute method. There are two ways to define one:
//
//   - Implement the [Tool] interface on a type of your own. This suits tools
//     with state (a store, a client, a cache). Add [Options] (annotations, a
//     timeout, a result budget, an output schema) by implementing
//     [Configured] or by wrapping the tool with [With].
//   - Adapt a typed function with [New], the Go form of a @tool decorator.
//
// For example:
//
//	type WeatherArgs struct {
//		City string `json:"city" description:"city name, e.g. Paris"`
//		Unit string `json:"unit,omitempty" enum:"celsius,fahrenheit" default:"celsius"`
//	}
//
//	weather, err := tool.New("get_weather", "Reports the current weather in a city.",
//		func(ctx context.Context, in WeatherArgs) (Report, error) { … })
//
// New derives the parameters schema from the argument type once, and checks
// every call against it with a decoder compiled from the same type, so the
// schema the model sees is exactly what the function accepts.
//
// # Schemas from Go types
//
// Types map to JSON Schema as follows: strings to
// "string", all integer kinds to "integer" (with their range when it is
// narrower than 64 bits, and minimum 0 when unsigned), floats to "number",
// bool to "boolean", slices and arrays to "array" (arrays with exactly their
// length), maps with string keys and structs to "object", and any (an empty
// interface) to any JSON value. Python's tool decorators fall back to
// "string" for unannotated parameters; Go has no unannotated parameters, so
// the only untyped case is any, which accepts any value and binds it the way
// encoding/json fills an interface (objects as map[string]any, numbers as
// float64).
//
// The rest follows what a JSON decoder binds: json tag names, "-",
// omitempty and omitzero, the ",string" option on numbers and booleans (a
// string holding the literal), embedded structs flattened with the
// shallowest and then the tagged field winning (an ambiguous name is an
// error), pointers (which also accept null), []byte as a base64 string,
// time.Time as an RFC 3339 date-time string, time.Duration as an integer
// count of nanoseconds, json.Number as a number kept as text,
// json.RawMessage as any JSON value kept as text. A type that implements
// json.Unmarshaler is any JSON value handed to its UnmarshalJSON, and one
// that implements encoding.TextUnmarshaler is a string handed to its
// UnmarshalText; either can describe itself with a JSONSchema method
// ([Schemer]), which is then also checked before its decoder runs.
// Recursive types are written once under $defs and referred to with $ref.
// Channels, functions, complex numbers, maps with non-string keys and
// interfaces with methods make New fail with an error naming the field.
//
// A property is required unless its field is a pointer, has omitempty or
// omitzero, or has a default. Defaults are applied before the function
// runs, including inside arrays of objects. Struct objects do not allow
// other properties ("additionalProperties": false).
//
// # The struct-tag grammar
//
// A struct tag named after a JSON Schema keyword sets that keyword on the
// field's property:
//
//	description:"…"     the property's description (jsonschema:"…" is accepted too)
//	title:"…"           a short title
//	enum:"a,b,c"        allowed values, comma-separated, or a JSON array: enum:'["a,b","c"]'
//	default:"…"         the value used when the property is missing
//	examples:"a,b"      example values, the same list syntax as enum
//	minimum:"1"  maximum:"9"  exclusiveMinimum:"0"  exclusiveMaximum:"1"  multipleOf:"0.5"
//	minLength:"1"  maxLength:"80"  pattern:"^[A-Z]{3}$"  format:"date"
//	minItems:"1"  maxItems:"10"  uniqueItems:"true"
//	minProperties:"1"  maxProperties:"20"
//	deprecated:"true"
//
// Values of enum, default and examples are read in the field's type: the
// text itself for strings, JSON otherwise (default:"10", default:"[1,2]").
// Patterns use Go's regexp (RE2) syntax. The formats date-time, date, time,
// email, uuid, ipv4, ipv6 and uri are checked; others are annotations. Tag
// values are checked by New: a malformed number, a pattern that does not
// compile, or a default or enum value the field itself would refuse is an
// error.
//
// A named type can list its values with an Enum method ([Enumer]), and a
// struct type can describe its fields from outside its tags with a
// FieldDescriptions method ([FieldDescriber]); the clawtool generator
// writes that method from doc comments.
//
// # Running calls
//
// A [Registry] holds tools by name. [Registry.Definitions] exports them in
// the OpenAI Chat Completions shape; packages openaitool, anthropictool
// and geminitool export other shapes. [Registry.Execute] runs one call
// safely: it never panics and never lets a tool break the caller, and
// every failure is a [Result] with IsError set, a message the model can act
// on and a [ErrorKind]. See Execute for the full list of checks. An
// [Executor] runs many calls at once.
//
// A successful Result carries text in Output and, optionally, structured
// content and parts ([Part]): images, audio and resources, which providers and
// MCP clients that take them receive as they are ([Result.Text] describes
// them for the others). While it runs, a tool can report progress with
// [ReportProgress] and write messages for its caller with [ClientLogger].
//
// # Errors
//
// There are two channels. The model reads Result.Error. The program gets Go
// errors it can inspect with errors.Is and errors.As: the sentinels of
// this package ([ErrNotFound], [ErrTimeout], [ErrInvalidArguments], …),
// [*ArgumentError] with every [Violation], and [*PanicError] with the stack.
//
// # Security
//
// Arguments come from a model and are untrusted: they are size-capped,
// parsed strictly (duplicate keys, case-variant keys, invalid UTF-8 and
// lone surrogates are refused rather than guessed at) and validated before
// any tool code runs. Messages to the model never include stacks or host
// paths.
//
// Timeouts in Go are cooperative. Execute runs each tool in a goroutine of
// its own and gives it a context that ends at the tool's time limit; a tool
// that ignores its context is abandoned after a grace period, reported and
// counted in [Stats], but its goroutine keeps running, because Go cannot
// kill a goroutine. Work that is untrusted, or that may not stop, belongs
// in a subprocess sandbox that can be killed as a whole.
package tool
