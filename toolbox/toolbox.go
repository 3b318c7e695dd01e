// Package toolbox holds the built-in tools that clawtool serves: small,
// safe tools that are worth trying with a model and that show both ways of
// defining a tool.
//
// [KV] implements [tool.Tool] by hand, with a hand-written JSON Schema and
// state held in the tool. [Calc], [ConvertUnits], [CurrentTime] and [Wait]
// are typed function tools built with [tool.New], whose schemas are derived
// from Go types and struct tags. [Wait] may run as an MCP task.
//
// Every tool here is safe for concurrent use, bounded in the input it
// accepts and the work it does, and touches nothing outside the process:
// no files, no network, no environment.
package toolbox

import (
	"context"
	"fmt"

	"github.com/miniopenclaw/tool"
)

// Tools returns a new instance of every built-in tool, in name order:
// calc, convert_units, current_time, kv and wait. Each call returns a new
// [KV] with its own, empty store.
//
// Tools panics only if a tool cannot be built, which the package's tests
// rule out.
func Tools() []tool.Tool {
	return []tool.Tool{Calc(), ConvertUnits(), CurrentTime(), NewKV(), Wait()}
}

// Register registers the tools of [Tools] in r with
// [tool.Registry.RegisterUnique], so that it never replaces a tool r
// already has: a name already taken is an error wrapping
// [tool.ErrDuplicate] (the rule is set out at [tool.Registry]). It stops at
// the first error, which names the tool; the tools registered before it
// stay.
func Register(r *tool.Registry) error { return register(r, Tools()) }

// RegisterPerCaller is [Register] with a kv store for each caller (see
// [NewKVPerCaller]): what a program serving several users registers, so
// that none reads, overwrites or fills the notes of another.
func RegisterPerCaller(r *tool.Registry, caller func(ctx context.Context) string) error {
	tools := Tools()
	for i, t := range tools {
		if t.Name() == "kv" {
			tools[i] = NewKVPerCaller(caller)
		}
	}
	return register(r, tools)
}

func register(r *tool.Registry, tools []tool.Tool) error {
	for _, t := range tools {
		if err := r.RegisterUnique(t); err != nil {
			return fmt.Errorf("toolbox: %w", err)
		}
	}
	return nil
}
