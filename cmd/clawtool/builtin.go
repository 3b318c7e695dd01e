package main

import (
	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/toolbox"
)

// registerBuiltins adds the built-in tools (package toolbox) to r.
func registerBuiltins(r *tool.Registry) error {
	return toolbox.Register(r)
}
