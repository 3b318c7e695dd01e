// Command clawtool lists, inspects, calls and serves tools.
//
// Usage:
//
//	clawtool list                         a table of the tools
//	clawtool schema [--format F] [NAME…]  tool definitions as JSON
//	clawtool call NAME [JSON | -]         call a tool and print its result
//	clawtool search QUERY...              the tools that best match a query, with scores
//	clawtool serve [--http ADDR]          serve the tools over MCP
//	clawtool chat ["PROMPT"]              talk to a model that calls the tools
//	clawtool inspect [--addr ADDR]        a web page to try the tools and watch batches
//	clawtool approvals list|show|approve|deny  answer the calls waiting for a person's approval
//	clawtool version                      the module and Go versions
//
// Flags may come before or after a command's arguments. Run
// "clawtool help" or "clawtool COMMAND -h" for every command and flag.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
