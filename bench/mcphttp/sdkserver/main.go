// Command sdkserver serves one trivial tool, calc, over go-sdk's own
// Streamable HTTP handler at http://ADDR/mcp: the go-sdk peer of the MCP
// over HTTP benchmark. With -stateless it uses go-sdk's stateless mode.
package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type calcArgs struct {
	Expression string `json:"expression"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen on `ADDR`")
	stateless := flag.Bool("stateless", false, "serve go-sdk's stateless mode")
	jsonResponse := flag.Bool("json", false, "answer with application/json rather than SSE")
	flag.Parse()
	s := mcp.NewServer(&mcp.Implementation{Name: "sdk-bench", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "calc", Description: "Adds two integers written as A+B."},
		func(_ context.Context, _ *mcp.CallToolRequest, in calcArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: add(in.Expression)}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: *stateless, JSONResponse: *jsonResponse})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	log.Fatal(http.ListenAndServe(*addr, mux))
}

// add evaluates "A+B" for integers A and B, the work of the trivial tool.
func add(expr string) string {
	a, b, _ := strings.Cut(expr, "+")
	x, _ := strconv.Atoi(strings.TrimSpace(a))
	y, _ := strconv.Atoi(strings.TrimSpace(b))
	return strconv.Itoa(x + y)
}
