package main

import (
	"context"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
	"github.com/miniopenclaw/tool/toolbox"
)

// registerBuiltins adds the built-in tools (package toolbox) to r, with
// a kv store for each principal: clawtool serves several users over HTTP
// or NATS, and one store would let each read and fill the others' notes.
func registerBuiltins(r *tool.Registry) error {
	return toolbox.RegisterPerCaller(r, principalID)
}

// principalID names the principal a call is made for: its ID, or "" for
// a call that carries none (one user on stdio, or no authentication).
func principalID(ctx context.Context) string {
	p, _ := policy.PrincipalFrom(ctx)
	return p.ID
}
