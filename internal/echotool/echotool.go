// Package echotool provides a tool whose parameters schema is given as
// text and whose result is its own arguments. The provider adapters' tests
// use it to stand for a tool written by hand or imported from MCP or
// another process: what matters to them is the schema, exactly as written.
package echotool

import (
	"context"
	"encoding/json"

	"github.com/miniopenclaw/tool"
)

type echo struct{ name, description, parameters string }

// New returns a tool named name with the given description whose
// Parameters are the bytes of parameters, unchecked and unchanged, and
// whose Execute succeeds with the arguments it was given, as they are, for
// its Output.
func New(name, description, parameters string) tool.Tool {
	return echo{name, description, parameters}
}

func (e echo) Name() string                { return e.name }
func (e echo) Description() string         { return e.description }
func (e echo) Parameters() json.RawMessage { return json.RawMessage(e.parameters) }

func (e echo) Execute(_ context.Context, args json.RawMessage) (tool.Result, error) {
	return tool.Result{Output: string(args)}, nil
}
