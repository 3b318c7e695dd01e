package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/miniopenclaw/tool/mcptool"
)

// serveEndpoint is the path of the Streamable HTTP endpoint.
const serveEndpoint = "/mcp"

func runServe(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "serve", "[--http ADDR] [flags]", `Serve serves the tools as an MCP server: over standard input and output
(the stdio transport) by default, or over Streamable HTTP at
http://ADDR/mcp with --http. ADDR defaults to host 127.0.0.1 when it
gives only a port (":8080" or "8080"); port 0 picks a free port. The URL
is printed on standard error; binding an address that is not loopback
prints a warning, since the server has no authentication. With --mcp
and --mcp-url, the tools of those servers are served too, so one
clawtool serve can aggregate several MCP servers: serve answers at once
and connects to them in the background, and their tools reach the
client with notifications/tools/list_changed as they arrive.`)
	addr := fs.String("http", "", "serve Streamable HTTP on `ADDR` instead of stdio")
	pageSize := fs.Int("page-size", 0, "list at most `N` tools per tools/list page (0: the default, 1000)")
	ui := fs.Bool("ui", false, "with --http, also serve the inspector page at /ui/ (its URL, with a token, is printed; see clawtool inspect)")
	jsonResponse := fs.Bool("json-response", false, "with --http, answer every request with one JSON body, never an event stream (progress is then not streamed)")
	tasksOver := fs.Duration("tasks-over", 0, "also run calls of tools whose own timeout is at least `D` as MCP tasks, for clients that support tasks (others get plain calls); tools that declare task support always may")
	rf := addRegistryFlags(fs)
	rf.nats.addTrustFlag(fs, "durable task (--nats)")
	rf.nats.addAcceptKeyFlag(fs)
	rf.mcp.relay = true // the servers' questions go to this server's clients
	fs.BoolVar(&rf.policy.byClient, "approve-by-client", false, "with --policy, ask the MCP client's user (an elicitation) whether to run a call that needs an approval, when the client declared elicitation; else --approve's terminal, else the call waits for a grant")
	af := addAuthFlags(fs)
	cf := addConnFlags(fs)
	var allowHosts []string
	fs.Func("allow-host", "with --http and no --auth-key or --auth-jwks, also answer requests addressed to host `NAME` (repeatable); without authentication only localhost and IP addresses are answered, since a web page whose name resolves to this machine (DNS rebinding) could otherwise call every tool", func(s string) error {
		if s = strings.TrimSuffix(strings.TrimSpace(s), "."); s == "" {
			return errors.New("an empty host name")
		}
		allowHosts = append(allowHosts, s)
		return nil
	})
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *tasksOver < 0 {
		return usageError(fs, "--tasks-over %s: a duration below zero", *tasksOver)
	}
	if len(rf.nats.acceptKeys) > 0 && rf.nats.keyFile == "" {
		return usageError(fs, "--accept-principal-key needs --principal-key: the key this process signs with, accepted too")
	}
	if *addr == "" && af.set() {
		return usageError(fs, "--auth-key, --auth-jwks, --auth-issuer and --auth-audience need --http")
	}
	// Serve at once and import MCP servers in the background: a client
	// that waits a few seconds for its first answer must not time out
	// because a server it never heard of starts slowly. tools/list and
	// tools/call wait for the imports (bounded), and tools that arrive
	// later reach the client with notifications/tools/list_changed.
	r, pending, cleanup, err := rf.buildInBackground(ctx, e)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool serve: %v\n", err)
		return exitToolError
	}
	defer cleanup()
	opts := []mcptool.ServerOption{mcptool.WithPageSize(*pageSize), mcptool.WithToolsPending(pending, mcpConnectTimeout)}
	if *jsonResponse {
		opts = append(opts, mcptool.WithJSONResponse())
	}
	if *tasksOver > 0 {
		opts = append(opts, mcptool.WithTaskDecision(mcptool.TasksOver(*tasksOver)))
	}
	if keep := rf.policy.listFilter(r); keep != nil {
		opts = append(opts, mcptool.WithToolFilter(keep))
	}
	taskOpts, stopTasks, err := rf.nats.durableTasks(ctx, e, r, rf.policy)
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool serve: %v\n", err)
		return exitToolError
	}
	defer stopTasks()
	opts = append(opts, taskOpts...)
	rf.policy.reloadOnHangup(ctx, e.stderr)
	srv := mcptool.NewServer(r, opts...)
	defer srv.Close()

	if *addr == "" {
		if err := srv.ServeIO(ctx, e.stdin, e.stdout); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(e.stderr, "clawtool serve: %v\n", err)
			return exitToolError
		}
		return exitOK
	}

	ln, err := cf.listen(loopbackDefault(*addr))
	if err != nil {
		fmt.Fprintf(e.stderr, "clawtool serve: %v\n", err)
		return exitUsage
	}
	mux := http.NewServeMux()
	endpoint, err := af.protect(mux, srv, "http://"+ln.Addr().String())
	if err != nil {
		ln.Close()
		fmt.Fprintf(e.stderr, "clawtool serve: %v\n", err)
		return exitUsage
	}
	if af.key == "" && af.jwks == "" {
		// No authentication: the Host is all that tells a web page that
		// rebound its name to this machine from a client.
		endpoint = guardHosts(endpoint, allowHosts)
	}
	mux.Handle(serveEndpoint, endpoint)
	if *ui {
		mountInspector(e, mux, r, ln.Addr(), append(rf.policy.inspectorOptions(), rf.config.inspectorOptions()...)...)
	}
	hs := &http.Server{
		Handler:           bodyDeadline(mux, httpBodyTimeout),
		ReadHeaderTimeout: httpHeaderTimeout,
		IdleTimeout:       httpIdleTimeout,
		// No ReadTimeout or WriteTimeout: they would cut the server-sent
		// event streams that notifications and long calls travel on.
	}
	fmt.Fprintf(e.stderr, "clawtool: serving MCP at http://%s%s\n", ln.Addr(), serveEndpoint)
	if !loopback(ln.Addr()) && af.key == "" && af.jwks == "" {
		fmt.Fprintf(e.stderr, "clawtool: WARNING: %s is not a loopback address and this server has no authentication:\n"+
			"clawtool: WARNING: anyone who can reach it can call every tool it serves. Bind 127.0.0.1, or put it behind authentication.\n", ln.Addr())
	}
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

// guardHosts refuses, with 403, a request whose Host is a name other
// than localhost or one of allowed, compared without regard to case or a
// trailing dot; an IP address passes. It guards serve --http without
// authentication, where nothing but the Host tells a client from a web
// page whose name its DNS server answers with this machine's address
// (DNS rebinding): to the browser that page's requests are of its own
// origin, so the Origin check passes them, and go-sdk's Host check
// guards loopback listeners only.
func guardHosts(h http.Handler, allowed []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			host = hh
		}
		host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
		ok := strings.EqualFold(host, "localhost") || net.ParseIP(host) != nil
		for _, a := range allowed {
			ok = ok || strings.EqualFold(host, a)
		}
		if !ok {
			http.Error(w, fmt.Sprintf("clawtool serve: refused: the request is addressed to host %q, and this server has no authentication: "+
				"a web page whose name resolves to this machine (DNS rebinding) must not call its tools. Use localhost or an IP address, "+
				"or start serve with --allow-host %s", host, host), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
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

// Deadlines of serve --http, variables for the tests.
var (
	// httpHeaderTimeout bounds reading a request's headers.
	httpHeaderTimeout = 10 * time.Second
	// httpBodyTimeout bounds reading a request's body, from the end of
	// its headers.
	httpBodyTimeout = 30 * time.Second
	// httpIdleTimeout bounds how long a keep-alive connection waits for
	// its next request.
	httpIdleTimeout = 2 * time.Minute
)

// bodyDeadline bounds reading each request's body by d. The deadline is
// lifted as soon as the body has been read, so the response (a
// server-sent event stream, for one) can last as long as it needs; a
// request without a body gets none.
func bodyDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(d)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline once the body ends or is closed.
type deadlineBody struct {
	io.ReadCloser
	lift   func()
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.lifted {
		b.lifted = true
		b.lift()
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	if !b.lifted {
		b.lifted = true
		b.lift()
	}
	return b.ReadCloser.Close()
}

// loopback reports whether addr is a loopback address.
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
