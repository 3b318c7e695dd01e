package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/plugins"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpConnectTimeout bounds the start of one MCP server and its handshake.
const mcpConnectTimeout = 30 * time.Second

// mcpFlags are the repeatable --mcp and --mcp-url flags, each adding the
// tools of one MCP server to the command's registry, with --prefix and
// --no-builtins.
type mcpFlags struct {
	servers    []mcpServer
	prefix     string // the last --prefix
	dangling   bool   // the last --prefix has no server after it
	noBuiltins bool
	maxTools   int // --max-tools; 0: mcptool's default
	// elicit, when set, answers the servers' requests for input (set by
	// call, which has a person to ask; serve relays them instead).
	elicit mcptool.ElicitationHandler
	// relay, without elicit, relays the questions of the servers' tasks
	// to the client of the call awaiting them (set by serve).
	relay bool
}

// mcpServer is one --mcp or --mcp-url.
type mcpServer struct {
	argv   []string // a server to start (stdio)
	url    string   // or a Streamable HTTP endpoint
	prefix string
}

// desc names the server in messages.
func (s mcpServer) desc() string {
	if s.url != "" {
		return s.url
	}
	return fmt.Sprintf("%q", strings.Join(s.argv, " "))
}

func addMCPFlags(fs *flag.FlagSet) *mcpFlags {
	m := &mcpFlags{}
	fs.Func("mcp", "add the tools of the MCP server that `\"CMD ARGS\"` starts (stdio); repeatable", func(s string) error {
		argv, err := splitCommand(s)
		if err != nil {
			return err
		}
		if len(argv) == 0 {
			return errors.New("empty command")
		}
		m.servers = append(m.servers, mcpServer{argv: argv, prefix: m.prefix})
		m.dangling = false
		return nil
	})
	fs.Func("mcp-url", "add the tools of the MCP server at `URL` (Streamable HTTP, e.g. http://127.0.0.1:8080/mcp); repeatable", func(s string) error {
		if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
			return fmt.Errorf("%q is not an http:// or https:// URL", s)
		}
		m.servers = append(m.servers, mcpServer{url: s, prefix: m.prefix})
		m.dangling = false
		return nil
	})
	fs.Func("prefix", "prepend `P` to the names of the tools of the --mcp and --mcp-url servers that follow (until the next --prefix), e.g. fs_", func(s string) error {
		for i := 0; i < len(s); i++ {
			if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				return fmt.Errorf("%q: a prefix is made of letters, digits, _ and -", s)
			}
		}
		m.prefix, m.dangling = s, true
		return nil
	})
	fs.IntVar(&m.maxTools, "max-tools", 0, fmt.Sprintf("import at most `N` tools of each --mcp and --mcp-url server (0: the default, %d); a server that lists more is cut there, with a warning saying how many were left out", mcptool.DefaultMaxTools))
	fs.BoolVar(&m.noBuiltins, "no-builtins", false, "leave out the built-in tools: only the tools of --mcp and --mcp-url servers")
	return m
}

// check reports flags that make no sense together.
func (m *mcpFlags) check() error {
	if m.dangling {
		return fmt.Errorf("--prefix %q must come before the --mcp or --mcp-url whose tools it names", m.prefix)
	}
	if m.maxTools < 0 || m.maxTools > plugins.MaxServerTools {
		return fmt.Errorf("--max-tools %d: want a number of tools from 1 to %d", m.maxTools, plugins.MaxServerTools)
	}
	return nil
}

// base returns a new registry holding the built-in tools, unless
// --no-builtins was given, deciding calls as pf's --policy says.
func (m *mcpFlags) base(pf *policyFlags) (*tool.Registry, error) {
	opts, err := pf.options()
	if err != nil {
		return nil, err
	}
	r := tool.NewRegistry(opts...)
	if m.noBuiltins {
		return r, nil
	}
	if err := registerBuiltins(r); err != nil {
		return nil, fmt.Errorf("built-in tools: %w", err)
	}
	return r, nil
}

// importInto connects to every server the flags name, in order, and
// imports its tools into r (see connect). A server that cannot be reached
// is an error. The registry stays in sync with the servers until cleanup
// is called, which disconnects them and stops the processes.
func (m *mcpFlags) importInto(ctx context.Context, e *env, r *tool.Registry) (cleanup func(), err error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	var clients []*mcptool.Client
	cleanup = func() { closeAll(clients) }
	for _, s := range m.servers {
		c, err := m.connect(ctx, e, r, s)
		if err != nil {
			cleanup()
			return nil, err
		}
		clients = append(clients, c)
	}
	return cleanup, nil
}

// importInBackground is importInto without waiting: the servers are
// connected one after another while the caller goes on, so a server that
// starts slowly holds nothing up, and their tools appear in r as they
// arrive. A server that cannot be reached is reported on stderr and left
// out. done is closed when every server has been tried. cleanup stops
// what is still connecting and disconnects the rest.
func (m *mcpFlags) importInBackground(ctx context.Context, e *env, r *tool.Registry) (cleanup func(), done <-chan struct{}, err error) {
	if err := m.check(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var clients []*mcptool.Client
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for _, s := range m.servers {
			c, err := m.connect(ctx, e, r, s)
			if ctx.Err() != nil {
				if c != nil {
					c.Close()
				}
				return
			}
			if err != nil {
				fmt.Fprintf(e.stderr, "clawtool: %v; going on without its tools\n", err)
				continue
			}
			clients = append(clients, c)
		}
	}()
	return func() {
		cancel()
		<-finished
		closeAll(clients)
	}, finished, nil
}

// connect connects to one server and imports its tools into r under their
// own names (mapped into the registry's name set when needed) with the
// server's prefix. A tool that cannot be imported, or whose name is
// already taken by a built-in tool or an earlier server's, is left out,
// which a warning on stderr reports (one line for all the taken names).
func (m *mcpFlags) connect(ctx context.Context, e *env, r *tool.Registry, s mcpServer) (*mcptool.Client, error) {
	cctx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := []mcptool.ClientOption{mcptool.WithPrefix(s.prefix), mcptool.WithClientLogger(logger),
		mcptool.WithImportLimits(m.maxTools, max(mcptool.DefaultMaxPages, m.maxTools/10), 0)}
	switch {
	case m.elicit != nil:
		opts = append(opts, mcptool.WithElicitationHandler(m.elicit))
	case m.relay:
		opts = append(opts, mcptool.WithElicitationRelay())
	}
	var t mcp.Transport
	if s.url != "" {
		t = mcptool.URL(s.url)
	} else {
		t = mcptool.Command(s.argv[0], s.argv[1:]...)
	}
	c, err := mcptool.Connect(cctx, t, opts...)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %w", s.desc(), err)
	}
	err = c.Import(cctx, r)
	if err != nil && !errors.Is(err, tool.ErrInvalidSchema) && !errors.Is(err, tool.ErrInvalidName) &&
		!errors.Is(err, tool.ErrDuplicate) && !errors.Is(err, mcptool.ErrImportLimit) {
		c.Close()
		return nil, fmt.Errorf("MCP server %s: %w", s.desc(), err)
	}
	if err != nil {
		warnSkipped(e, s.desc(), err)
	}
	return c, nil
}

// warnSkipped reports what an import left out: one line for the tools
// whose names were taken, and one line per other problem, at most five.
func warnSkipped(e *env, desc string, err error) {
	var taken, other []string
	for _, err := range leafErrors(err) {
		if c, ok := err.(*mcptool.ToolCapError); ok {
			n := fmt.Sprint(c.LeftOut)
			if c.AtLeast {
				n = "at least " + n
			}
			fmt.Fprintf(e.stderr, "clawtool: warning: MCP server %s: %s tools left out: the server lists more than the cap of %d tools (raise it with --max-tools)\n", desc, n, c.Max)
			continue
		}
		var te *mcptool.ToolError
		if errors.As(err, &te) && errors.Is(err, tool.ErrDuplicate) {
			taken = append(taken, te.Tool)
			continue
		}
		other = append(other, err.Error())
	}
	if len(taken) > 0 {
		names := taken
		if len(names) > 8 {
			names = append(names[:8:8], fmt.Sprintf("and %d more", len(taken)-8))
		}
		fmt.Fprintf(e.stderr, "clawtool: warning: MCP server %s: %d of its tools left out, their names are taken: %s (use --prefix or --no-builtins)\n",
			desc, len(taken), strings.Join(names, ", "))
	}
	for i, msg := range other {
		if i == 5 {
			fmt.Fprintf(e.stderr, "clawtool: warning: MCP server %s: and %d more problems\n", desc, len(other)-5)
			break
		}
		fmt.Fprintf(e.stderr, "clawtool: warning: MCP server %s: %s\n", desc, msg)
	}
}

// leafErrors flattens errors joined with errors.Join.
func leafErrors(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var leaves []error
	for _, e := range j.Unwrap() {
		if e != nil {
			leaves = append(leaves, leafErrors(e)...)
		}
	}
	return leaves
}

// closeAll closes clients concurrently.
func closeAll(clients []*mcptool.Client) {
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() { c.Close() })
	}
	wg.Wait()
}

// splitCommand splits a command line into words the way a POSIX shell
// would for the simple cases: words are separated by blanks, and single
// quotes, double quotes and backslashes quote. There is no expansion of
// any kind.
func splitCommand(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' in command")
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
			if i == len(s) {
				return nil, errors.New(`unterminated " in command`)
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
