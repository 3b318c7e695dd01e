package main

import "github.com/miniopenclaw/tool"

// registerBuiltins adds the built-in tools to r.
func registerBuiltins(r *tool.Registry) error {
	return nil
}
