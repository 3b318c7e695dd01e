// Package jsonschema compiles JSON Schema (draft 2020-12) documents and
// validates JSON arguments against them, reporting every violation.
//
// PLACEHOLDER: this file fixes the API; the implementation is being written.
package jsonschema

import (
	"encoding/json"
	"errors"

	"github.com/miniopenclaw/tool/internal/jsontext"
)

// Limits bound the input a Validate call accepts.
type Limits struct {
	MaxBytes int // 0 means no limit
	MaxDepth int // 0 means 64
}

// A Violation is one way in which an instance fails a schema.
type Violation struct {
	Pointer  string // JSON pointer of the instance location, "" for the root
	Expected string // what the schema allows, in plain words
	Got      string // what came, shortened
	Hint     string // optional suggestion
}

// A Schema is a compiled schema, safe for concurrent use.
type Schema struct {
	raw []byte
}

// Compile compiles a schema document. It reports a clear error for
// documents that are not valid JSON, use an unsupported keyword, or refer
// to anything outside the document.
func Compile(doc []byte) (*Schema, error) {
	var v map[string]any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	if v["type"] != "object" {
		return nil, errors.New(`the root must be an object schema ({"type":"object",...})`)
	}
	return &Schema{raw: doc}, nil
}

// Validate parses data strictly and validates it. It returns the instance
// with defaults applied (data itself when nothing was added), the
// violations found, or a *jsontext.SyntaxError when data is not strict JSON.
func (s *Schema) Validate(data []byte, lim Limits) (out []byte, violations []Violation, err error) {
	depth := lim.MaxDepth
	if depth == 0 {
		depth = 64
	}
	i, err := jsontext.SkipValue(data, 0, 0, depth)
	if err != nil {
		return nil, nil, err
	}
	if i = jsontext.SkipSpace(data, i); i != len(data) {
		return nil, nil, jsontext.Unexpected(data, i, "end of input")
	}
	return data, nil, nil
}
