package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"text/tabwriter"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/inspector"
	"github.com/miniopenclaw/tool/internal/showtext"
	"github.com/miniopenclaw/tool/plugins"
)

// configFlags is --config: the tools of the MCP servers and WebAssembly
// modules a configuration file names, loaded by one plugins host with
// the --mcp and --mcp-url servers (mcp), which start first, in order.
type configFlags struct {
	file  string
	watch bool // reload the file when it changes (serve, chat)
	mcp   *mcpFlags

	// reloaded, if set, is called after each reload (configpolicy.go),
	// and stderr is where it reports.
	reloaded func(h *plugins.Host, err error)
	stderr   io.Writer

	host atomic.Pointer[plugins.Host] // the host loading the file, once made
}

func addConfigFlags(fs *flag.FlagSet, m *mcpFlags) *configFlags {
	c := &configFlags{mcp: m}
	fs.StringVar(&c.file, "config", "", "add the tools of the MCP servers and WebAssembly modules the configuration `FILE` names (the hosts' mcpServers JSON; see clawtool plugins -h)")
	return c
}

// none reports whether there is nothing to load: no file, no server.
func (c *configFlags) none() bool { return c.file == "" && len(c.mcp.servers) == 0 }

// newHost returns a host loading into r that reports on e.stderr, with
// the flag servers added.
func (c *configFlags) newHost(e *env, r *tool.Registry, added []plugins.AddedServer) *plugins.Host {
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := []plugins.Option{plugins.WithLogger(logger), plugins.WithCacheDir(wasmCacheDir()), plugins.WithServers(added...)}
	switch {
	case c.mcp.elicit != nil:
		opts = append(opts, plugins.WithElicitationHandler(c.mcp.elicit))
	case c.mcp.relay:
		opts = append(opts, plugins.WithElicitationRelay())
	}
	var h *plugins.Host
	if c.reloaded != nil {
		c.stderr = e.stderr
		opts = append(opts, plugins.WithReloadFunc(func(err error) { c.reloaded(h, err) }))
	}
	h = plugins.NewHost(r, opts...)
	c.host.Store(h)
	return h
}

// load applies the file, or only the flag servers when there is none.
func (c *configFlags) load(ctx context.Context, h *plugins.Host) error {
	if c.file == "" {
		h.Apply(ctx, &plugins.Config{})
		return nil
	}
	return h.Reload(ctx, c.file)
}

// inspectorOptions shows the host's entries in the inspector's Sources
// tab, as clawtool plugins prints them: state, tools, and what a cut
// import left out.
func (c *configFlags) inspectorOptions() []inspector.Option {
	if c.none() {
		return nil
	}
	return []inspector.Option{inspector.WithSources(func() []inspector.Source {
		h := c.host.Load()
		if h == nil {
			return nil
		}
		var out []inspector.Source
		for _, s := range h.Status() {
			out = append(out, sourceOf(s))
		}
		return out
	})}
}

// sourceOf is an entry's row in the inspector's Sources tab: what
// clawtool plugins prints of it, the names of its secrets but never
// their values.
func sourceOf(s plugins.Status) inspector.Source {
	src := inspector.Source{Name: s.Name, Kind: s.Kind, State: string(s.State), Tools: s.Tools, Error: s.Err,
		Confinement: strings.TrimSpace(s.Confinement + " " + s.Image), Network: s.Network, Allow: s.Allow, Secrets: s.Secrets,
		NetworkDenied: s.NetworkDenied}
	if s.NetworkDenied > 0 {
		src.NetworkDenials = denialLines(s)
	}
	if cut := s.Cut; cut != nil {
		src.MaxTools, src.LeftOut, src.AtLeast = cut.MaxTools, cut.LeftOut, cut.AtLeast
	}
	return src
}

// importInto loads the flag servers, in order, then the file's entries
// into r, waiting for them. A flag server that fails and a file that
// cannot be read are errors; an entry of the file that fails is reported
// on stderr and left out. With watch set, the file is then reloaded
// whenever it changes, until cleanup.
func (c *configFlags) importInto(ctx context.Context, e *env, r *tool.Registry) (cleanup func(), err error) {
	if err := c.mcp.check(); err != nil {
		return nil, err
	}
	if c.none() {
		return func() {}, nil
	}
	added := c.mcp.added(e.stderr, false)
	h := c.newHost(e, r, added)
	err = c.load(ctx, h)
	if err == nil {
		err = c.mcp.failure(h, added)
	}
	if err != nil {
		h.Close()
		return nil, err
	}
	if !c.watch || c.file == "" {
		return func() { h.Close() }, nil
	}
	return c.watchFrom(ctx, e, h, nil), nil
}

// importInBackground is importInto without waiting, and watching: serve
// answers at once and the tools reach its clients with list_changed as
// they load and as the file changes; a flag server that fails is
// reported and left out. loaded is closed once the flag servers and the
// file's entries have been tried the first time.
func (c *configFlags) importInBackground(ctx context.Context, e *env, r *tool.Registry) (cleanup func(), loaded <-chan struct{}, err error) {
	if err := c.mcp.check(); err != nil {
		return nil, nil, err
	}
	done := make(chan struct{})
	if c.none() {
		close(done)
		return func() {}, done, nil
	}
	h := c.newHost(e, r, c.mcp.added(e.stderr, true))
	return c.watchFrom(ctx, e, h, func() {
		c.load(ctx, h)
		close(done)
	}), done, nil
}

// watchFrom runs first, if not nil, then, when there is a file, h.Watch
// until cleanup, which closes h.
func (c *configFlags) watchFrom(ctx context.Context, e *env, h *plugins.Host, first func()) (cleanup func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if first != nil {
			first()
		}
		if c.file == "" {
			return
		}
		if err := h.Watch(ctx, c.file); err != nil {
			fmt.Fprintf(e.stderr, "clawtool: %v\n", err)
		}
	}()
	return func() {
		// Closed first, so that an entry still loading ends quietly.
		h.Close()
		cancel()
		<-done
	}
}

// wasmCacheDir is where compiled WebAssembly modules are kept across runs,
// or "" when there is no cache directory.
func wasmCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	dir = filepath.Join(dir, "clawtool", "wasm")
	if os.MkdirAll(dir, 0o700) != nil {
		return ""
	}
	return dir
}

func runPlugins(ctx context.Context, e *env, args []string) int {
	fs := newFlags(e, "plugins", "--config FILE [--json]", `Plugins loads every MCP server and WebAssembly module the configuration
file names, prints each one's state (ready or failed, with the reason),
kind and number of tools, and stops them again. It exits with status 1
when the file cannot be read or an entry failed.

The file is the "mcpServers" JSON of the desktop agent hosts and editors
({"mcpServers": {NAME: {"command", "args", "env"} or {"url", "headers"}}}),
which may add per server "prefix", "tools" and "excludeTools" (name
patterns), "timeout", "maxTools" (how many of its tools to import, 10000
by default; a server that lists more is cut there, and ERROR and the
JSON's "cut" say how many were left out), "sandboxPolicy" and "workspace"
(the server's own confinement), "image" (run the server in a container of
IMAGE on the Docker-compatible engine, under its policy) and "unsandboxed"; "wasmModules" ({NAME: {"path",
"tools", "abi" (command or reactor), "instances", "workspace", "env",
"memoryPages", "timeout"}}); "defaults" ({"timeout", "maxOutput"}); and
"sandboxPolicy" and "permissions" file names ("sandboxPolicy" bounds the
modules' files and limits, and every stdio server runs in the native
sandbox under it, or under its own, unless marked "unsandboxed";
CONFINEMENT and the JSON's "confinement", "image", "network" and "allow" say which
(and "secrets", the names of the secret-looking variables of "env" an entry
passes knowingly: the sandbox refuses any other),
and the connections an allow list's proxy refused a server are listed
after the table and in the JSON's "networkDenials";
"permissions", a Cedar policy file, applies as --policy would). ${NAME} is replaced with the environment variable's
value. A server that exits is restarted, with backoff; STATE shows
"restarting" meanwhile. With --config, list, call, schema, search, chat
and serve add the file's tools; serve and chat reload it when it
changes.`)
	file := fs.String("config", "", "the configuration `FILE`")
	asJSON := fs.Bool("json", false, "print a JSON array of the entries instead of a table")
	if code := parseFlags(fs, args, e.stdout); code >= 0 {
		return code
	}
	if *file == "" {
		return usageError(fs, "--config FILE is required")
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	h := plugins.NewHost(tool.NewRegistry(), plugins.WithCacheDir(wasmCacheDir()))
	defer h.Close()
	if err := h.Reload(ctx, *file); err != nil {
		fmt.Fprintf(e.stderr, "clawtool plugins: %v\n", err)
		return exitToolError
	}
	st := h.Status()
	code := exitOK
	for _, s := range st {
		if s.State != plugins.Ready {
			code = exitToolError
		}
	}
	if *asJSON {
		type cut struct {
			MaxTools int  `json:"maxTools"`
			LeftOut  int  `json:"leftOut"`
			AtLeast  bool `json:"atLeast,omitempty"`
		}
		type entry struct {
			Name     string `json:"name"`
			Kind     string `json:"kind"`
			State    string `json:"state"`
			Tools    int    `json:"tools"`
			Cut      *cut   `json:"cut,omitempty"`
			Error    string `json:"error,omitempty"`
			Restarts int    `json:"restarts,omitempty"`
			// Confinement and Network: where a stdio server runs and the
			// network its policy gives it.
			Confinement string `json:"confinement,omitempty"`
			Image       string `json:"image,omitempty"` // of a server in a container
			Network     string `json:"network,omitempty"`
			// Allow is an allow list's rules; NetworkDenials the latest
			// connections its proxy refused, NetworkDenied all of them.
			Allow          []string        `json:"allow,omitempty"`
			Secrets        []string        `json:"secrets,omitempty"` // names only
			NetworkDenials []networkDenial `json:"networkDenials,omitempty"`
			NetworkDenied  int             `json:"networkDenied,omitempty"`
		}
		out := make([]entry, 0, len(st))
		for _, s := range st {
			en := entry{Name: s.Name, Kind: s.Kind, State: string(s.State), Tools: s.Tools, Error: s.Err, Restarts: s.Restarts,
				Confinement: s.Confinement, Image: s.Image, Network: s.Network, Allow: s.Allow, Secrets: s.Secrets, NetworkDenied: s.NetworkDenied}
			for _, d := range s.NetworkDenials {
				en.NetworkDenials = append(en.NetworkDenials, networkDenial{d.Host, d.Port, d.Addr, d.Reason})
			}
			if c := s.Cut; c != nil {
				en.Cut = &cut{c.MaxTools, c.LeftOut, c.AtLeast}
			}
			out = append(out, en)
		}
		writeJSON(e.stdout, out)
		return code
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSTATE\tTOOLS\tCONFINEMENT\tERROR")
	var long []plugins.Status // entries whose error has more than one line
	for _, s := range st {
		msg := "-"
		if s.Err != "" {
			var more bool
			msg, _, more = strings.Cut(s.Err, "\n")
			msg = showtext.Text(msg)
			if more {
				msg += " (in full below)"
				long = append(long, s)
			}
		}
		confinement := orDash(s.Confinement)
		if s.Image != "" {
			confinement += " " + s.Image
		}
		if s.Network != "" {
			confinement += " (network " + s.Network
			if len(s.Allow) > 0 {
				confinement += ": " + strings.Join(s.Allow, ", ")
			}
			if len(s.Secrets) > 0 {
				confinement += "; secrets: " + strings.Join(s.Secrets, ", ")
			}
			confinement += ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", s.Name, s.Kind, s.State, s.Tools, confinement, msg)
	}
	tw.Flush()
	for _, s := range long {
		fmt.Fprintf(e.stdout, "\n%s:\n%s", s.Name, indentBounded(showtext.Text(s.Err), maxErrorLines, maxErrorBytes))
	}
	for _, s := range st {
		if s.NetworkDenied > 0 {
			fmt.Fprintf(e.stdout, "\n%s: %s\n", s.Name, showtext.Text(denialsText(s)))
		}
	}
	if c := h.Config(); c != nil && (c.SandboxPolicy != "" || c.Permissions != "") {
		fmt.Fprintf(e.stdout, "\nsandbox policy: %s\npermissions: %s\n", orDash(c.SandboxPolicy), orDash(c.Permissions))
	}
	return code
}

// A networkDenial is one connection a confined server's proxy refused,
// as --json prints it.
type networkDenial struct {
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Addr   string `json:"addr,omitempty"`
	Reason string `json:"reason"`
}

// denialLines are an entry's latest network denials, "HOST port N:
// REASON" each.
func denialLines(s plugins.Status) []string {
	out := make([]string, len(s.NetworkDenials))
	for i, d := range s.NetworkDenials {
		out[i] = fmt.Sprintf("%s port %d: %s", d.Host, d.Port, d.Reason)
	}
	return out
}

// denialsText says how many connections an entry's proxy refused and
// lists the latest, one an indented line.
func denialsText(s plugins.Status) string {
	what := "denials"
	if s.NetworkDenied == 1 {
		what = "denial"
	}
	head := fmt.Sprintf("%d network %s:", s.NetworkDenied, what)
	if s.NetworkDenied > len(s.NetworkDenials) {
		head = fmt.Sprintf("%d network %s, the latest %d:", s.NetworkDenied, what, len(s.NetworkDenials))
	}
	return head + "\n  " + strings.Join(denialLines(s), "\n  ")
}

// Bounds of one entry's error in the text of clawtool plugins; --json
// gives it whole.
const (
	maxErrorLines = 40
	maxErrorBytes = 8 << 10
)

// indentBounded indents each line of s by two spaces and ends it with a
// newline, up to maxLines lines and about maxBytes bytes, then says how
// many lines were left out.
func indentBounded(s string, maxLines, maxBytes int) string {
	var b strings.Builder
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if i == maxLines || b.Len()+len(l) > maxBytes {
			fmt.Fprintf(&b, "  … %d more lines (clawtool plugins --json gives them all)\n", len(lines)-i)
			break
		}
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
