package tool

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// An argsEncoder encodes a tool's bound arguments for an Authorizer
// exactly as encoding/json does, without its reflection walk, for the
// common shape of arguments: a struct whose fields are strings, booleans
// and integers with plain json tags. newArgsEncoder returns nil for any
// other type, and encode reports false for a value it does not write
// byte for byte as encoding/json would (a string that needs escaping);
// the caller then uses json.Marshal.
type argsEncoder struct {
	fields []encField
}

type encField struct {
	index int
	name  string // the member's name
	key   string // `"name":`
	kind  reflect.Kind
	omit  bool // omitempty or omitzero: left out when zero
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	isZeroer      = reflect.TypeFor[interface{ IsZero() bool }]()
)

// customEncoding reports whether encoding/json would call a method of t
// (or *t) to encode it.
func customEncoding(t reflect.Type) bool {
	for _, m := range []reflect.Type{t, reflect.PointerTo(t)} {
		if m.Implements(jsonMarshaler) || m.Implements(textMarshaler) {
			return true
		}
	}
	return false
}

func newArgsEncoder(t reflect.Type) *argsEncoder {
	if t.Kind() != reflect.Struct || customEncoding(t) {
		return nil
	}
	e := &argsEncoder{}
	seen := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil // embedded fields follow encoding/json's promotion rules
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		if !plainName(name) || seen[name] {
			return nil
		}
		seen[name] = true
		ef := encField{index: i, name: name, key: strconv.Quote(name) + ":", kind: f.Type.Kind()}
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "":
			case "omitempty":
				ef.omit = true
			case "omitzero":
				if f.Type.Implements(isZeroer) || reflect.PointerTo(f.Type).Implements(isZeroer) {
					return nil
				}
				ef.omit = true
			default:
				return nil // string, or an option this encoder does not know
			}
		}
		switch ef.kind {
		case reflect.String, reflect.Bool,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			return nil
		}
		if customEncoding(f.Type) {
			return nil
		}
		e.fields = append(e.fields, ef)
	}
	return e
}

// plainName reports whether a field's JSON name is one encoding/json
// uses as it is and writes without escapes.
func plainName(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return s != ""
}

// encode appends v's encoding to b. It reports false when it cannot
// encode v as encoding/json would.
func (e *argsEncoder) encode(v reflect.Value, b []byte) ([]byte, bool) {
	b = append(b, '{')
	first := true
	for _, f := range e.fields {
		fv := v.Field(f.index)
		if f.omit && fv.IsZero() {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, f.key...)
		switch f.kind {
		case reflect.String:
			s := fv.String()
			for i := range len(s) {
				if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
					return b, false
				}
			}
			b = append(b, '"')
			b = append(b, s...)
			b = append(b, '"')
		case reflect.Bool:
			b = strconv.AppendBool(b, fv.Bool())
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			b = strconv.AppendInt(b, fv.Int(), 10)
		default:
			b = strconv.AppendUint(b, fv.Uint(), 10)
		}
	}
	return append(b, '}'), true
}

// argument returns the member name of v's encoding as decoding it would
// give it (see AccessRequest.Argument). It reports false for a value
// whose decoding differs from the field's: a string that is not valid
// UTF-8, an unsigned integer beyond int64.
func (e *argsEncoder) argument(v reflect.Value, name string) (ArgumentValue, bool) {
	for i := range e.fields {
		f := &e.fields[i]
		if f.name != name {
			continue
		}
		fv := v.Field(f.index)
		if f.omit && fv.IsZero() {
			return ArgumentValue{}, true
		}
		switch f.kind {
		case reflect.String:
			s := fv.String()
			if !utf8.ValidString(s) {
				return ArgumentValue{}, false
			}
			return ArgumentValue{Kind: ArgumentString, String: s}, true
		case reflect.Bool:
			return ArgumentValue{Kind: ArgumentBool, Bool: fv.Bool()}, true
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return ArgumentValue{Kind: ArgumentInt64, Int64: fv.Int()}, true
		default:
			u := fv.Uint()
			if u > math.MaxInt64 {
				return ArgumentValue{}, false
			}
			return ArgumentValue{Kind: ArgumentInt64, Int64: int64(u)}, true
		}
	}
	return ArgumentValue{}, true // no field has that name
}
