// Package jsonobj reads and writes JSON objects with their members in
// document order. The provider adapters use it to rewrite JSON Schemas into
// a vendor's dialect without reordering properties: models answer in schema
// key order, and prompt caches depend on stable bytes.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// A Member is one name/value pair of an [Object].
type Member struct {
	Key   string
	Value json.RawMessage
}

// An Object is a JSON object as an ordered list of members. A key appears
// at most once: Parse keeps the last of duplicates in the position of the
// first.
type Object []Member

// ErrNotObject is returned by Parse for JSON that is not an object.
var ErrNotObject = errors.New("not a JSON object")

// Parse reads a JSON object. It returns an error wrapping [ErrNotObject]
// when data holds another JSON value, and a syntax error for malformed
// JSON.
func Parse(data []byte) (Object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%w: %s", ErrNotObject, kind(tok))
	}
	var o Object
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key is not a string")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.Set(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) > 0 {
		return nil, fmt.Errorf("data after the object")
	}
	return o, nil
}

func kind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return string(v)
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// Get returns the value of key.
func (o Object) Get(key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// Has reports whether o has key.
func (o Object) Has(key string) bool {
	_, ok := o.Get(key)
	return ok
}

// Set sets key to v, keeping the key's position if it exists and appending
// it otherwise.
func (o *Object) Set(key string, v json.RawMessage) {
	for i := range *o {
		if (*o)[i].Key == key {
			(*o)[i].Value = v
			return
		}
	}
	*o = append(*o, Member{key, v})
}

// Delete removes key.
func (o *Object) Delete(key string) {
	for i := range *o {
		if (*o)[i].Key == key {
			*o = append((*o)[:i:i], (*o)[i+1:]...)
			return
		}
	}
}

// Keys returns the keys in order.
func (o Object) Keys() []string {
	keys := make([]string, len(o))
	for i, m := range o {
		keys[i] = m.Key
	}
	return keys
}

// MarshalJSON writes o compactly with its members in order. Values are
// written as they are, compacted.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := String(m.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		if err := json.Compact(&b, m.Value); err != nil {
			return nil, fmt.Errorf("member %q: %w", m.Key, err)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// String encodes s as a JSON string without HTML escaping: [Marshal] for
// a string.
func String(s string) ([]byte, error) {
	return Marshal(s)
}

// Unquote returns the string v holds, or "" when v is not a JSON string
// (a number, null, malformed JSON, nothing at all).
func Unquote(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// Quote is [String] for the callers that need no error: encoding a Go
// string as JSON cannot fail (invalid UTF-8 becomes U+FFFD).
func Quote(s string) json.RawMessage {
	b, _ := String(s)
	return b
}

// Strings encodes ss as a JSON array of strings, without HTML escaping;
// a nil ss gives null, as with [Marshal].
func Strings(ss []string) json.RawMessage {
	b, _ := Marshal(ss)
	return b
}

// Array joins vals, as they are, into a JSON array.
func Array(vals []json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(v)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// Compact returns v without insignificant white space, as text for a
// message or a description; v is returned as it is when it is not valid
// JSON.
func Compact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// Marshal encodes v without HTML escaping and without a trailing newline.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Kind names the kind of JSON value in v: "object", "array", "string",
// "number", "boolean", "null", or "invalid".
func Kind(v json.RawMessage) string {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return "invalid"
	}
	switch c := v[0]; {
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case c == '-' || c >= '0' && c <= '9':
		return "number"
	}
	return "invalid"
}
