// Command mcpgoserver serves one trivial tool, calc, over mcp-go's
// Streamable HTTP server at http://ADDR/mcp: the mcp-go peer of the MCP
// over HTTP benchmark.
package main

import (
	"context"
	"flag"
	"log"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen on `ADDR`")
	flag.Parse()
	s := server.NewMCPServer("mcpgo-bench", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("calc",
		mcp.WithDescription("Adds two integers written as A+B."),
		mcp.WithString("expression", mcp.Required()),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		expr, err := req.RequireString("expression")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(add(expr)), nil
	})
	log.Fatal(server.NewStreamableHTTPServer(s).Start(*addr))
}

// add evaluates "A+B" for integers A and B, the work of the trivial tool.
func add(expr string) string {
	a, b, _ := strings.Cut(expr, "+")
	x, _ := strconv.Atoi(strings.TrimSpace(a))
	y, _ := strconv.Atoi(strings.TrimSpace(b))
	return strconv.Itoa(x + y)
}
