package mcptool

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// WithToolFilter makes tools/list show a tool only when keep(ctx, name)
// is true, ctx being the request's context: the way to show each caller
// only the tools it may call (package policy's Authorizer.CanList fits,
// with the principal set on the context). It filters listings only;
// calls are decided by the registry's Authorizer, so a hidden tool that
// a client calls anyway is refused there. Pages may hold fewer tools
// than the page size. A tool hidden from a caller never runs as a task for
// that caller: its call is answered synchronously.
func WithToolFilter(keep func(ctx context.Context, name string) bool) ServerOption {
	return func(c *serverConfig) { c.filter = keep }
}

// filterTools is the receiving middleware of WithToolFilter.
func filterTools(keep func(ctx context.Context, name string) bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method != "tools/list" || err != nil {
				return res, err
			}
			if list, ok := res.(*mcp.ListToolsResult); ok {
				kept := list.Tools[:0:0]
				for _, t := range list.Tools {
					if keep(ctx, t.Name) {
						kept = append(kept, t)
					}
				}
				list.Tools = kept
			}
			return res, nil
		}
	}
}
