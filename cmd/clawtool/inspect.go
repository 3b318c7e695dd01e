package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/inspector"
)

func runInspect(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "inspect", "[--addr ADDR] [flags]", `Inspect serves a web page for trying the tools by hand: a searchable list
with each tool's definition in every format of clawtool schema, a form
generated from each tool's input schema that calls it and shows the result
(progress and log messages stream in while it runs), and a batch runner
that draws the calls of a batch, or a trace written by clawtool call
--trace, on a timeline. The page works offline: nothing is loaded from
elsewhere.

It listens on 127.0.0.1 (port 0 picks a free port) and prints the page's
URL on standard error. The URL holds a random token, new each time: only
someone who has it can use the page, and the page refuses requests from
other web sites and other host names. It runs until it is interrupted.`)
	addr := fs.String("addr", "127.0.0.1:0", "listen on `ADDR` (host:port; a bare port means 127.0.0.1)")
	rf := addRegistryFlags(fs)
	cf := addConnFlags(fs)
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	r, cleanup, ok := rf.open(ctx, e, "inspect")
	if !ok {
		return exitToolError
	}
	defer cleanup()
	ln, err := cf.listen(loopbackDefault(*addr))
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool inspect: %v\n", err)
		return exitUsage
	}
	h := newInspector(r, append(rf.policy.inspectorOptions(), rf.config.inspectorOptions()...)...)
	hs := &http.Server{
		Handler:           bodyDeadline(h, httpBodyTimeout),
		ReadHeaderTimeout: httpHeaderTimeout,
		IdleTimeout:       httpIdleTimeout,
		// No WriteTimeout: a call's events stream for as long as it runs.
	}
	fmt.Fprintf(e.stderr, "clawtool: inspector at %s\n", h.URL("http://"+ln.Addr().String()+"/"))
	warnExposed(e, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(e.stderr, "clawtool inspect: %v\n", err)
		return exitToolError
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	<-errc
	return exitOK
}

// mountInspector serves the inspector for r under /ui/ on mux, for serve
// --http --ui, and prints its URL.
func mountInspector(e *env, mux *http.ServeMux, r *tool.Registry, addr net.Addr, opts ...inspector.Option) {
	h := newInspector(r, opts...)
	mux.Handle("/ui/", http.StripPrefix("/ui", h))
	fmt.Fprintf(e.stderr, "clawtool: inspector at %s\n", h.URL("http://"+addr.String()+"/ui/"))
}

// warnExposed warns when the inspector listens beyond loopback: its Host
// check refuses other names, but the token then crosses the network in
// the clear.
func warnExposed(e *env, addr net.Addr) {
	if !loopback(addr) {
		fmt.Fprintf(e.stderr, "clawtool: WARNING: the inspector listens on %s, not loopback: its token crosses the network unencrypted, and it answers only to loopback host names\n", addr)
	}
}

// newInspector returns the inspector for r with the definition formats of
// clawtool schema and the source of each tool, and opts.
func newInspector(r *tool.Registry, opts ...inspector.Option) *inspector.Handler {
	builtins := map[string]bool{}
	br := tool.NewRegistry()
	if registerBuiltins(br) == nil {
		for _, t := range br.List() {
			builtins[t.Name()] = true
		}
	}
	return inspector.New(r, append([]inspector.Option{
		inspector.WithDefinitions(providerFormats(), renderDefinitions),
		inspector.WithSource(func(name string) string {
			t, ok := r.Get(name)
			if !ok {
				return ""
			}
			return toolSource(t, builtins[name])
		})}, opts...)...)
}

// toolSource says where a tool comes from, from the package of its type.
func toolSource(t tool.Tool, builtin bool) string {
	if builtin {
		return "built-in"
	}
	typ := reflect.TypeOf(t)
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch p := typ.PkgPath(); {
	case strings.HasSuffix(p, "/mcptool"):
		return "MCP server"
	case strings.HasSuffix(p, "/natstool"):
		return "NATS"
	case strings.Contains(p, "/sandbox"):
		return "workspace"
	}
	return ""
}
