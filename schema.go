package tool

import "encoding/json"

// The interfaces below are hooks that Go types implement to shape the
// schema [New] derives from them. New looks for them on every type it meets
// in In and Out, with value or pointer receivers.

// A Schemer is a type that supplies its own JSON Schema. Types that decode
// themselves (with UnmarshalJSON or UnmarshalText) implement it to tell the
// model what they accept; New validates the value against that schema and
// then hands it to the type's own decoder. Without the hook, a
// json.Unmarshaler is described as any JSON value and an
// encoding.TextUnmarshaler as a string.
type Schemer interface {
	JSONSchema() json.RawMessage
}

// An Enumer is a named type that lists the values it accepts, so that
//
//	type Unit string
//	const (Celsius Unit = "celsius"; Fahrenheit Unit = "fahrenheit")
//	func (Unit) Enum() []any { return []any{Celsius, Fahrenheit} }
//
// is described as {"type":"string","enum":["celsius","fahrenheit"]} and
// any other value is refused before the tool runs.
type Enumer interface {
	Enum() []any
}

// A FieldDescriber is a struct type that supplies descriptions from outside
// its struct tags, keyed by Go field name; the key "" describes the struct
// itself. A description in a field's tag wins over this one. The clawtool
// generator (clawtool gen) implements it from doc comments.
type FieldDescriber interface {
	FieldDescriptions() map[string]string
}
