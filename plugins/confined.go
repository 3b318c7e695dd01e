package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverPolicy is the policy the stdio server s runs under, made from p:
// the entry's workspace instead of p's, p's environment allowlist plus
// the entry's variables, and the directory of a command found outside
// the system paths (node under a version manager in the home directory)
// readable, without the rest of the home directory. refs are the
// references to secret-named variables of the host's environment that
// the entry's fields expanded (Config.secretRefs).
func serverPolicy(p *sandbox.Policy, s Server, refs []secretRef) (*sandbox.Policy, error) {
	c := *p
	c.ReadOnly = slices.Clone(p.ReadOnly)
	if s.Workspace != "" {
		c.Workspace = s.Workspace
	}
	if s.Cwd != "" && filepath.Clean(s.Cwd) != filepath.Clean(c.Workspace) {
		return nil, fmt.Errorf(`"cwd" %q cannot be applied to a confined server: its working directory is its workspace (%q); set "workspace" instead`, s.Cwd, c.Workspace)
	}
	env := slices.Clone(p.Env)
	if env == nil {
		env = sandbox.DefaultEnv()
	}
	set := func(k, v string) {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
		env = append(env, k+"="+v)
	}
	for _, k := range sortedKeys(s.Env) {
		if w := sandbox.SecretWord(k); w != "" && !slices.Contains(s.Secrets, k) {
			return nil, fmt.Errorf(`env %q looks like a secret (its name contains %s): the sandbox passes it only to a server whose entry names it in "secrets"`, k, w)
		}
		set(k, s.Env[k])
	}
	// A secret of the host's environment reaches a confined server only
	// through an env variable its entry names in "secrets": not under
	// another name (whose value the sandbox cannot tell from any other),
	// nor in its arguments, command or directories, unless the
	// variable itself is named there.
	for _, r := range refs {
		if slices.Contains(s.Secrets, r.env) || r.env == "" && slices.Contains(s.Secrets, r.name) {
			continue
		}
		w := sandbox.SecretWord(r.name)
		if r.env != "" {
			return nil, fmt.Errorf(`%s expands ${%s}, a variable of this environment whose name looks like a secret (it contains %s): a confined server gets it only when its entry names %q in "secrets"`, r.where, r.name, w, r.env)
		}
		return nil, fmt.Errorf(`%s expands ${%s}, a variable of this environment whose name looks like a secret (it contains %s): a confined server gets it only through "env" and "secrets" (set "env": {%q: "${%s}"} and "secrets": [%q])`, r.where, r.name, w, r.name, r.name, r.name)
	}
	c.Secrets = slices.Clone(p.Secrets)
	for _, k := range s.Secrets {
		if !slices.Contains(c.Secrets, k) {
			c.Secrets = append(c.Secrets, k)
		}
	}
	if s.Image != "" {
		c.Image = s.Image
	}
	// A command in a container is the image's: nothing of the host's is
	// looked up for it.
	if path, err := exec.LookPath(s.Command); c.Image == "" && err == nil && filepath.IsAbs(path) {
		real, err := filepath.EvalSymlinks(path)
		if err == nil && !inside(real, append(sandbox.SystemReadOnly(), c.ReadOnly...)) {
			c.ReadOnly = append(c.ReadOnly, commandReadable(real))
			pathVar := "/usr/local/bin:/usr/bin:/bin"
			for _, kv := range env {
				if v, ok := strings.CutPrefix(kv, "PATH="); ok {
					pathVar = v
				}
			}
			set("PATH", filepath.Dir(path)+":"+pathVar)
		}
	}
	c.Env = env
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("sandboxPolicy: %w", err)
	}
	return &c, nil
}

// commandReadable is what of the command at real (a path without links,
// outside the system paths) a confined server may read: the
// installation's prefix (the parent of its bin directory, for a lib
// beside it), or else the command's directory, or else the command
// alone; never the home directory or a directory that holds it (a command
// installed as ~/bin/server or ~/server would make the whole home
// readable). Without a home directory known, the command alone.
func commandReadable(real string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || !filepath.IsAbs(home) {
		return real
	}
	homes := []string{filepath.Clean(home)}
	if r, err := filepath.EvalSymlinks(home); err == nil {
		homes = append(homes, r)
	}
	holdsHome := func(dir string) bool {
		return slices.ContainsFunc(homes, func(h string) bool { return inside(h, []string{dir}) })
	}
	dir := filepath.Dir(real)
	if filepath.Base(dir) == "bin" && !holdsHome(filepath.Dir(dir)) {
		return filepath.Dir(dir)
	}
	if !holdsHome(dir) {
		return dir
	}
	return real
}

// confinedTransport starts the stdio server s under p, in the native
// sandbox or, when p names an image, in a container of the backend
// containers returns, each connection a sandboxed run of its own;
// configure sets up the proxy of a run under an allow list.
func confinedTransport(name string, p sandbox.Policy, s Server, configure func(*sandbox.Proxy), containers func() (sandbox.Backend, error)) mcp.Transport {
	network := string(p.Network)
	if network == "" {
		network = string(sandbox.NetworkNone)
	}
	where := "native sandbox"
	if p.Image != "" {
		where = "container " + p.Image
	}
	label := fmt.Sprintf("%q (confined: %s, network %s)", name, where, network)
	return mcptool.ProcessTransport(label, func(stdin *os.File, stdout io.WriteCloser) (*mcptool.Process, error) {
		var backend sandbox.Backend
		if p.Image != "" {
			b, err := containers()
			if err != nil {
				return nil, fmt.Errorf("could not start in a container (it never runs unconfined): %w", err)
			}
			backend = b
		}
		ctx, kill := context.WithCancel(context.Background())
		cmd := sandbox.CommandContext(ctx, p, s.Command, s.Args...)
		cmd.Backend = backend
		cmd.ConfigureProxy = configure
		stderr := &tail{max: 4 << 10}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
		done := make(chan struct{})
		var end string
		go func() {
			defer close(done)
			err := cmd.Run()
			stdin.Close()
			stdout.Close()
			kill()
			end = describeEnd(err, stderr.String())
		}()
		return &mcptool.Process{Done: done, End: func() string { return end }, Kill: kill}, nil
	})
}

// describeEnd says how a confined server ended: how its run ended, what
// the sandbox refused it (the lines of its standard error that report a
// denial), then the end of its standard error.
func describeEnd(err error, stderr string) string {
	var ee *sandbox.ExitError
	var what string
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ee):
		what = ee.Summary()
	default:
		return "could not start in the sandbox (it never runs unconfined): " + err.Error()
	}
	var proxied []string
	for _, d := range ee.NetworkDenials {
		if len(proxied) == 5 {
			proxied = append(proxied, fmt.Sprintf("(%d more)", len(ee.NetworkDenials)+ee.NetworkDenialsDropped-5))
			break
		}
		proxied = append(proxied, describeDenial(d))
	}
	var refused, last []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		last = append(last, l)
		if denial(l) && len(refused) < 5 && !slices.Contains(refused, l) {
			refused = append(refused, l)
		}
	}
	if len(last) > 10 {
		last = last[len(last)-10:]
	}
	msg := what
	if len(proxied) > 0 {
		msg += "; the network proxy refused it:\n  " + strings.Join(proxied, "\n  ")
	}
	if len(refused) > 0 {
		msg += "; the sandbox refused it:\n  " + strings.Join(refused, "\n  ")
		if slices.ContainsFunc(refused, func(l string) bool {
			l = strings.ToLower(l)
			return strings.Contains(l, "no such file") || strings.Contains(l, "enoent")
		}) {
			msg += "\n  " + absentNote
		}
	}
	if len(last) > 0 {
		msg += "\nthe end of its standard error:\n  " + strings.Join(last, "\n  ")
	}
	return msg
}

// describeDenial says what a server asked for and why the proxy refused.
func describeDenial(d sandbox.NetworkDenial) string {
	return fmt.Sprintf("%s port %d: %s", d.Host, d.Port, d.Reason)
}

// formatRule writes r as sandbox.ParseHostRule reads it.
func formatRule(r sandbox.HostRule) string {
	h := r.Host
	if len(r.Ports) == 0 {
		return h
	}
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	ports := make([]string, len(r.Ports))
	for i, p := range r.Ports {
		ports[i] = strconv.Itoa(p)
	}
	return h + ":" + strings.Join(ports, ",")
}

// configureProxy sets up the allow-list proxy of one run of the entry's
// server: named after the server, each denial logged (redacted) and kept
// for Status as it happens, not only when the run ends.
func (e *entry) configureProxy(p *sandbox.Proxy) {
	p.Client = fmt.Sprintf("MCP server %q", e.name)
	p.Log = nil // the host logs it, redacted, below
	p.OnDenial = e.recordDenial
	if e.h.proxyHook != nil {
		e.h.proxyHook(p)
	}
}

// recordDenial keeps d for Status and logs it: the first
// sandbox.MaxNetworkDenials of the entry's denials, then one record
// saying the rest are counted (Status.NetworkDenied), not logged, so that
// a server opening denied connections in a loop cannot fill the host's
// log.
func (e *entry) recordDenial(d sandbox.NetworkDenial) {
	e.mu.Lock()
	e.denied++
	n := e.denied
	if len(e.denials) == MaxStatusDenials {
		e.denials = append(e.denials[:0], e.denials[1:]...)
	}
	e.denials = append(e.denials, d)
	e.mu.Unlock()
	switch {
	case n <= sandbox.MaxNetworkDenials:
		e.log.Warn("plugins: "+e.what()+": network denied", "event", EventNetworkDenied, "server", e.name,
			"host", e.redact(d.Host), "port", d.Port, "addr", d.Addr, "reason", e.redact(d.Reason))
	case n == sandbox.MaxNetworkDenials+1:
		e.log.Warn(fmt.Sprintf("plugins: %s: more than %d network denials; the rest are counted in its status, not logged", e.what(), sandbox.MaxNetworkDenials),
			"event", EventNetworkDenied, "server", e.name)
	}
}

// denialMarks are how programs report a refusal of the sandbox: Landlock
// and the read-only mounts give EACCES, EPERM and EROFS, seccomp EPERM
// or EAFNOSUPPORT, a missing network ENETUNREACH, and a path outside the
// policy's grants ENOENT (the native sandbox's root holds only the
// system paths and the grants; see absentNote).
var denialMarks = []string{
	"EACCES", "EPERM", "EROFS", "ENETUNREACH", "EAFNOSUPPORT", "ENOENT",
	"permission denied", "operation not permitted", "read-only file system",
	"network is unreachable", "address family not supported", "no such file or directory",
}

// absentNote follows the refusals when one of them is a missing path,
// which may be missing on the host too.
const absentNote = "(a path outside the policy's grants is not in the sandbox at all: \"no such file\" may mean it is not granted)"

func denial(line string) bool {
	l := strings.ToLower(line)
	return slices.ContainsFunc(denialMarks, func(m string) bool { return strings.Contains(l, strings.ToLower(m)) })
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
