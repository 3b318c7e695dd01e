package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/showtext"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/plugins"
)

// mcpConnectTimeout bounds the start of one MCP server and its handshake.
const mcpConnectTimeout = plugins.DefaultConnectTimeout

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
	// call, which has a person to ask; serve relays them instead). It
	// answers those of the --config file's servers too.
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

// added returns the servers as entries of the plugins host, in flag
// order, so that each gets what an entry of a configuration file gets
// (its sandboxPolicy, OAuth, restarts; see docs/plugins.md). An entry is
// named by its command line or URL. What the host reports about one is
// written to w as clawtool's own lines (see flagReport); with background
// (serve), a server that fails is reported there too, and left out,
// while a command that waits for its tools makes it an error (failure).
func (m *mcpFlags) added(w io.Writer, background bool) []plugins.AddedServer {
	text := slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn})
	out := make([]plugins.AddedServer, 0, len(m.servers))
	used := map[string]int{}
	for _, s := range m.servers {
		name := s.url
		srv := plugins.Server{URL: s.url, Prefix: s.prefix, MaxTools: m.maxTools}
		hint := "log in with: clawtool auth login --mcp-url " + s.url
		if s.url == "" {
			name, hint = strings.Join(s.argv, " "), ""
			srv = plugins.Server{Command: s.argv[0], Args: s.argv[1:], Prefix: s.prefix, MaxTools: m.maxTools}
		}
		// The same server twice (with two prefixes) is two entries.
		if used[name]++; used[name] > 1 {
			name = fmt.Sprintf("%s #%d", name, used[name])
		}
		out = append(out, plugins.AddedServer{Name: name, Server: srv, LoginHint: hint,
			Logger: slog.New(flagReport{w: w, desc: s.desc(), background: background, text: text})})
	}
	return out
}

// failure returns the first flag server that failed to load, as an
// error, or nil.
func (m *mcpFlags) failure(h *plugins.Host, added []plugins.AddedServer) error {
	st := h.Status()
	for i, a := range added {
		for _, s := range st {
			if s.Name == a.Name && s.State == plugins.Failed {
				return fmt.Errorf("MCP server %s: %s", m.servers[i].desc(), showtext.Text(s.Err))
			}
		}
	}
	return nil
}

// flagReport writes what the plugins host logs about one --mcp or
// --mcp-url server as clawtool's warnings, with the advice of the flags
// (--prefix, --max-tools): the names taken on one line, a cut on one,
// and other problems one a line, at most five. Other records go to text.
type flagReport struct {
	w          io.Writer
	desc       string
	background bool
	text       slog.Handler
}

func (f flagReport) Enabled(ctx context.Context, l slog.Level) bool { return f.text.Enabled(ctx, l) }

func (f flagReport) Handle(ctx context.Context, r slog.Record) error {
	var event, msg string
	var taken []string
	var leftOut, maxTools int64
	var atLeast bool
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "event":
			event = a.Value.String()
		case "error":
			msg = showtext.Text(a.Value.String())
		case "taken":
			taken, _ = a.Value.Any().([]string)
		case "leftOut":
			leftOut = a.Value.Int64()
		case "maxTools":
			maxTools = a.Value.Int64()
		case "atLeast":
			atLeast = a.Value.Bool()
		}
		return true
	})
	switch event {
	case plugins.EventTaken:
		names := taken
		if len(names) > 8 {
			names = append(names[:8:8], fmt.Sprintf("and %d more", len(taken)-8))
		}
		fmt.Fprintf(f.w, "clawtool: warning: MCP server %s: %d of its tools left out, their names are taken: %s (use --prefix or --no-builtins)\n",
			f.desc, len(taken), strings.Join(names, ", "))
	case plugins.EventCut:
		n := fmt.Sprint(leftOut)
		if atLeast {
			n = "at least " + n
		}
		fmt.Fprintf(f.w, "clawtool: warning: MCP server %s: %s tools left out: the server lists more than the cap of %d tools (raise it with --max-tools)\n", f.desc, n, maxTools)
	case plugins.EventPartial:
		lines := strings.Split(msg, "\n")
		for i, l := range lines {
			if i == 5 {
				fmt.Fprintf(f.w, "clawtool: warning: MCP server %s: and %d more problems\n", f.desc, len(lines)-5)
				break
			}
			fmt.Fprintf(f.w, "clawtool: warning: MCP server %s: %s\n", f.desc, l)
		}
	case plugins.EventFailed:
		// A command that waits for its tools reports it as its error.
		if f.background {
			fmt.Fprintf(f.w, "clawtool: MCP server %s: %s; going on without its tools\n", f.desc, msg)
		}
	default:
		return f.text.Handle(ctx, r)
	}
	return nil
}

func (f flagReport) WithAttrs(as []slog.Attr) slog.Handler {
	f.text = f.text.WithAttrs(as)
	return f
}

func (f flagReport) WithGroup(name string) slog.Handler {
	f.text = f.text.WithGroup(name)
	return f
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
