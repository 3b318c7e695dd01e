package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
)

// mcpConnectTimeout bounds the start of one MCP server and its handshake.
const mcpConnectTimeout = 30 * time.Second

// mcpFlags are the repeatable --mcp and --mcp-url flags: each adds the
// tools of one MCP server to the command's registry.
type mcpFlags struct {
	commands [][]string // argv of servers to start (stdio)
	urls     []string   // Streamable HTTP endpoints
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
		m.commands = append(m.commands, argv)
		return nil
	})
	fs.Func("mcp-url", "add the tools of the MCP server at `URL` (Streamable HTTP, e.g. http://127.0.0.1:8080/mcp); repeatable", func(s string) error {
		if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
			return fmt.Errorf("%q is not an http:// or https:// URL", s)
		}
		m.urls = append(m.urls, s)
		return nil
	})
	return m
}

// importInto connects to every server the flags name and imports its
// tools into r, under their own names (mapped into the registry's name
// set when needed). A tool that cannot be imported, or whose name is
// already taken by a built-in tool or an earlier server's, is skipped with
// a warning on stderr; a server that cannot be reached is an error. The
// registries stay in sync with the servers until cleanup is called, which
// disconnects them and stops the processes.
func (m *mcpFlags) importInto(ctx context.Context, e *env, r *tool.Registry) (cleanup func(), err error) {
	var clients []*mcptool.Client
	cleanup = func() {
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() { c.Close() })
		}
		wg.Wait()
	}
	connect := func(dial func() (desc string, c *mcptool.Client, err error)) error {
		desc, c, err := dial()
		if err != nil {
			return fmt.Errorf("MCP server %s: %w", desc, err)
		}
		clients = append(clients, c)
		err = c.Import(ctx, r)
		if err != nil && !errors.Is(err, tool.ErrInvalidSchema) && !errors.Is(err, tool.ErrInvalidName) && !errors.Is(err, tool.ErrDuplicate) {
			return fmt.Errorf("MCP server %s: %w", desc, err)
		}
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(e.stderr, "clawtool: warning: MCP server %s: %s\n", desc, line)
			}
		}
		return nil
	}
	for _, argv := range m.commands {
		err := connect(func() (string, *mcptool.Client, error) {
			desc := fmt.Sprintf("%q", strings.Join(argv, " "))
			cmd := exec.Command(argv[0], argv[1:]...)
			stderr := &headBuffer{max: 4 << 10}
			cmd.Stderr = stderr
			// A grandchild (npx starts node) may hold stderr open after the
			// server exits; do not let that hold up closing.
			cmd.WaitDelay = time.Second
			cctx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
			defer cancel()
			c, err := mcptool.Connect(cctx, mcptool.CommandTransport(cmd))
			if err != nil && stderr.String() != "" {
				err = fmt.Errorf("%w\nits standard error:\n%s", err, strings.TrimSpace(stderr.String()))
			}
			return desc, c, err
		})
		if err != nil {
			cleanup()
			return nil, err
		}
	}
	for _, url := range m.urls {
		err := connect(func() (string, *mcptool.Client, error) {
			cctx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
			defer cancel()
			c, err := mcptool.Connect(cctx, mcptool.URL(url))
			return url, c, err
		})
		if err != nil {
			cleanup()
			return nil, err
		}
	}
	return cleanup, nil
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.max - len(h.b); n > 0 {
		h.b = append(h.b, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.b)
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
