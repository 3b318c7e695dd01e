package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveEndpoint is the path of the Streamable HTTP endpoint.
const serveEndpoint = "/mcp"

func runServe(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "serve", "[--http ADDR] [flags]", `Serve serves the tools as an MCP server: over standard input and output
(the stdio transport) by default, or over Streamable HTTP at
http://ADDR/mcp with --http. ADDR defaults to host 127.0.0.1 when it
gives only a port (":8080" or "8080"); port 0 picks a free port. The URL
is printed on standard error. With --mcp and --mcp-url, the tools of
those servers are served too, so one clawtool serve can aggregate
several MCP servers.`)
	addr := fs.String("http", "", "serve Streamable HTTP on `ADDR` instead of stdio")
	pageSize := fs.Int("page-size", 0, "list at most `N` tools per tools/list page (0: the default, 1000)")
	jsonResponse := fs.Bool("json-response", false, "with --http, answer every request with one JSON body, never an event stream (progress is then not streamed)")
	rf := addRegistryFlags(fs)
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "clawtool serve: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	r, cleanup, ok := rf.open(ctx, e, "serve")
	if !ok {
		return exitToolError
	}
	defer cleanup()
	opts := []mcptool.ServerOption{mcptool.WithPageSize(*pageSize)}
	if *jsonResponse {
		opts = append(opts, mcptool.WithJSONResponse())
	}
	srv := mcptool.NewServer(r, opts...)
	defer srv.Close()

	if *addr == "" {
		t := &mcp.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopWriteCloser{e.stdout}}
		if err := srv.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			fmt.Fprintf(e.stderr, "clawtool serve: %v\n", err)
			return exitToolError
		}
		return exitOK
	}

	ln, err := net.Listen("tcp", loopbackDefault(*addr))
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool serve: %v\n", err)
		return exitUsage
	}
	mux := http.NewServeMux()
	mux.Handle(serveEndpoint, srv)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stderr, "clawtool: serving MCP at http://%s%s\n", ln.Addr(), serveEndpoint)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(e.stderr, "clawtool serve: %v\n", err)
		return exitToolError
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close() // streams still open: cut them
	}
	<-errc
	return exitOK
}

// loopbackDefault gives an address without a host the host 127.0.0.1.
func loopbackDefault(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return net.JoinHostPort("127.0.0.1", addr) // just a port
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// nopWriteCloser keeps the session from closing the command's stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
