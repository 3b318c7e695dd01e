package plugins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/jsonduration"
	"github.com/miniopenclaw/tool/internal/loopback"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/sandbox"
)

// MaxConfigBytes bounds a configuration file.
const MaxConfigBytes = 4 << 20

// minSecret is the length under which an expanded value is not redacted:
// hiding every "1" or "on" would make messages unreadable.
const minSecret = 4

// A Config is a parsed configuration file. Its shape is the "mcpServers"
// file of the desktop agent hosts, extended:
//
//	{
//	  "mcpServers": {NAME: Server, ...},
//	  "wasmModules": {NAME: Module, ...},
//	  "defaults": Defaults,
//	  "sandboxPolicy": "FILE",
//	  "permissions": "FILE"
//	}
//
// "servers" is read as "mcpServers" too (the editors' name for it). Keys
// the package does not know are ignored, so a host's whole settings file
// can be read as it is.
type Config struct {
	// Servers are the MCP servers, by name.
	Servers map[string]Server `json:"mcpServers"`
	// Modules are the WebAssembly tool modules, by name.
	Modules map[string]Module `json:"wasmModules,omitempty"`
	// Defaults apply to the registry the tools are loaded into.
	Defaults Defaults `json:"defaults,omitzero"`
	// SandboxPolicy names a sandbox policy file (see [sandbox.ReadPolicyFile]),
	// relative to the configuration file. Its paths and limits bound every
	// WebAssembly module, and it is the default confinement of every
	// stdio MCP server (see [Server.SandboxPolicy]): such a server runs in
	// the native sandbox under it, unless it sets "unsandboxed" (see
	// [Server.Unsandboxed]).
	SandboxPolicy string `json:"sandboxPolicy,omitempty"`
	// Sandbox is the policy SandboxPolicy names, as [ReadFile] read it;
	// nil when SandboxPolicy is empty. A Config made otherwise that sets
	// SandboxPolicy but not Sandbox has the file read by [Host.Apply].
	Sandbox *sandbox.Policy `json:"-"`
	// Permissions names a permissions policy file for the host to apply,
	// resolved by [ReadFile] against the configuration file's directory;
	// the package keeps it for the host and does not read it.
	Permissions string `json:"permissions,omitempty"`

	// secrets are the values environment references expanded to in env,
	// headers, args and url; Redact hides them.
	secrets []string
	// secretRefs are, by server or module, the references to
	// secret-named variables of the host's environment in a server's
	// Command, Cwd, Workspace, Args and Env, or a module's Env, as Parse
	// expanded them.
	secretRefs map[string][]secretRef
}

// A secretRef is a reference to a variable of the host's environment
// whose name looks like a secret (sandbox.SecretWord), in a field of a
// stdio server's entry that reaches the server's process: a confined
// server may have it only with its entry's consent (see serverPolicy).
type secretRef struct {
	where string // the field: command, cwd, workspace, args[i], env "NAME"
	env   string // the env variable it is in; "" outside env
	name  string // the variable referenced
}

// A Server is one MCP server: a command to start (stdio) or a URL
// (Streamable HTTP), exactly as the agent hosts write them, plus a name
// prefix and a tool filter.
type Server struct {
	// Command and Args start a server that speaks MCP on its standard
	// input and output.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Env is added to the environment the command inherits.
	Env map[string]string `json:"env,omitempty"`
	// Cwd is the command's working directory; empty means the current one.
	Cwd string `json:"cwd,omitempty"`
	// URL is the server's Streamable HTTP endpoint, instead of a command.
	URL string `json:"url,omitempty"`
	// Headers are sent with every HTTP request to URL. An entry with
	// headers whose URL is plain http to another machine (not localhost
	// or a loopback address) is refused: they would cross the network
	// in clear.
	Headers map[string]string `json:"headers,omitempty"`
	// Type is the hosts' transport hint ("stdio", "http",
	// "streamable-http" or "sse"); Command or URL decides in the end.
	Type string `json:"type,omitempty"`
	// Disabled leaves the server out.
	Disabled bool `json:"disabled,omitempty"`
	// Prefix is prepended to the names of the server's tools.
	Prefix string `json:"prefix,omitempty"`
	// Tools, if not empty, keeps only the tools whose server-side names
	// match one of these patterns (path.Match syntax, e.g. "read_*").
	Tools []string `json:"tools,omitempty"`
	// ExcludeTools leaves out the tools whose names match one of these
	// patterns; it applies after Tools.
	ExcludeTools []string `json:"excludeTools,omitempty"`
	// Timeout bounds each call to one of the server's tools, as a Go
	// duration ("30s"); empty means the registry's default.
	Timeout Duration `json:"timeout,omitzero"`
	// OAuth configures MCP authorization for a URL server (see
	// [OAuth]); without it a URL server that asks for OAuth still gets
	// it, with dynamic registration and stored tokens.
	OAuth *OAuth `json:"oauth,omitempty"`
	// MaxTools caps how many of the server's tools (those Tools and
	// ExcludeTools keep) are imported; zero means mcptool.DefaultMaxTools
	// (10,000), and it must not be over MaxServerTools. The tools past it
	// are counted and reported ([Status.Cut], the log), not imported.
	MaxTools int `json:"maxTools,omitempty"`
	// SandboxPolicy names a sandbox policy file (see [sandbox.ReadPolicyFile]),
	// relative to the configuration file, that a stdio server runs
	// under in the native sandbox, instead of the configuration's
	// default "sandboxPolicy": the policy's read-only system and paths,
	// its workspace (or none), its network, its limits (over the
	// server's whole life; a server killed at one is restarted like one
	// that exited), and its environment allowlist plus the variables of
	// Env. A server that cannot run under it fails; it never runs
	// unconfined.
	SandboxPolicy string `json:"sandboxPolicy,omitempty"`
	// Workspace, relative to the configuration file, replaces the
	// policy's workspace for this server: the one directory a confined
	// server may write, and its working directory.
	Workspace string `json:"workspace,omitempty"`
	// Secrets names the variables of Env a confined server gets although
	// their names look like secrets (they contain KEY, SECRET, TOKEN,
	// PASSWORD ...; see sandbox.SecretWord) or their values hold a URL with
	// credentials (scheme://user:password@host): the sandbox refuses such a
	// variable unless the entry names it here, so a token reaches the one
	// server whose entry says so, knowingly. Each must be set in Env; its
	// value is redacted like an expanded reference (even when written
	// literally). [Status.Secrets] lists the names, never the values.
	Secrets []string `json:"secrets,omitempty"`
	// Image runs a stdio server in a fresh container of this image on a
	// Docker-compatible engine (the one $DOCKER_HOST names, or the default
	// socket) instead of the native sandbox, under the server's policy
	// (its "sandboxPolicy", the configuration's, or with neither the
	// default policy: no workspace, no network), as the container
	// backend applies it (sandbox/container): the workspace bound at
	// /workspace, the policy's read-only paths at their own paths, its
	// environment allowlist plus Env, its limits, its network (an allow
	// list through the proxy, as in the native sandbox). It replaces an
	// "image" the policy names; a policy that names one runs its servers
	// in containers without it. Command is looked up in the image, not on
	// the host. Without a reachable engine, or without the image in it
	// (it is never pulled), the server fails; it never runs unconfined.
	Image string `json:"image,omitempty"`
	// Unsandboxed runs a stdio server outside the sandbox although the
	// configuration or the entry names a "sandboxPolicy", knowingly.
	Unsandboxed bool `json:"unsandboxed,omitempty"`
	// NoTasks makes the client never ask the server for MCP tasks
	// (mcptool.WithoutTasks): every call is answered synchronously, and
	// a tool whose calls run only as tasks fails. By default a call the
	// server answers with a task is awaited within the call's timeout.
	NoTasks bool `json:"noTasks,omitempty"`
}

// A Module is a WebAssembly (WASI preview 1) module and the tools it
// serves. See the package documentation for the module ABI.
type Module struct {
	// Path is the .wasm file, relative to the configuration file.
	Path string `json:"path"`
	// Tools are the module's tools; at least one.
	Tools []ToolSpec `json:"tools"`
	// Prefix is prepended to the names of the module's tools.
	Prefix string `json:"prefix,omitempty"`
	// Env is the module's whole environment (names containing KEY,
	// SECRET, TOKEN or PASSWORD are refused, and so is a reference to a
	// host variable with such a name, ${DB_PASSWORD}, under any name).
	Env map[string]string `json:"env,omitempty"`
	// Workspace is a directory, relative to the configuration file, that
	// the module sees read-only at "/"; empty means no file system.
	Workspace string `json:"workspace,omitempty"`
	// MemoryPages caps the module's memory in 64 KiB pages; zero means
	// 256 (16 MiB).
	MemoryPages uint32 `json:"memoryPages,omitempty"`
	// Timeout is the deadline of one call; zero means
	// DefaultModuleTimeout.
	Timeout Duration `json:"timeout,omitzero"`
	// Disabled leaves the module out.
	Disabled bool `json:"disabled,omitempty"`
	// ABI is how the module is called: ABICommand (a process per call,
	// arguments on standard input) or ABIReactor (instantiated once and
	// kept warm, called through exported functions). Empty means
	// ABIReactor when the module exports clawtool_call, ABICommand
	// otherwise. See the package documentation.
	ABI string `json:"abi,omitempty"`
	// Instances is how many warm instances of a reactor module serve
	// calls at once; zero means 1, at most MaxInstances.
	Instances int `json:"instances,omitempty"`
}

// MaxServerTools bounds Server.MaxTools.
const MaxServerTools = 100_000

// The WebAssembly tool ABIs (Module.ABI).
const (
	ABICommand = "command"
	ABIReactor = "reactor"
)

// MaxInstances bounds Module.Instances.
const MaxInstances = 16

// A ToolSpec defines one tool of a module.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// InputSchema is the JSON Schema of the arguments, an object schema;
	// empty means {"type":"object"}. Arguments that do not match are
	// refused before the module runs.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// ReadOnly, Destructive, Idempotent and OpenWorld are the tool's
	// annotations.
	ReadOnly    bool `json:"readOnly,omitempty"`
	Destructive bool `json:"destructive,omitempty"`
	Idempotent  bool `json:"idempotent,omitempty"`
	OpenWorld   bool `json:"openWorld,omitempty"`
}

// Defaults are registry settings (see [Config.RegistryOptions]).
type Defaults struct {
	// Timeout is the registry's default time limit of a call.
	Timeout Duration `json:"timeout,omitzero"`
	// MaxOutput is the registry's default result budget, in bytes.
	MaxOutput int `json:"maxOutput,omitempty"`
}

// A Duration is a time.Duration written as a Go duration string ("30s")
// or a number of milliseconds.
type Duration time.Duration

// UnmarshalJSON reads "30s" or 30000 (milliseconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	v, err := jsonduration.Parse(b)
	*d = Duration(v)
	return err
}

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// RegistryOptions returns the registry options the defaults ask for.
func (c *Config) RegistryOptions() []tool.RegistryOption {
	var opts []tool.RegistryOption
	if c.Defaults.Timeout > 0 {
		opts = append(opts, tool.WithDefaultTimeout(time.Duration(c.Defaults.Timeout)))
	}
	if c.Defaults.MaxOutput > 0 {
		opts = append(opts, tool.WithDefaultMaxOutput(c.Defaults.MaxOutput))
	}
	return opts
}

// Redact hides the secrets in s: every value of four bytes or more that
// an environment reference in "env", "headers", "args" or "url" expanded
// to is replaced with a marker, as in
//
//	Authorization: Bearer [redacted]
func (c *Config) Redact(s string) string {
	for _, v := range c.secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// ReadFile reads and parses a configuration file (see [Parse]); relative
// paths in it are resolved against the file's directory. On Unix a file
// that is not a regular file, that its group or others may write, or
// that a user other than this process's or root owns is refused, and so
// is such a sandbox policy or permissions file: another user could make
// the host run their commands, widen a confined server's sandbox, or
// rewrite the permissions calls are decided by.
func ReadFile(name string) (*Config, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Checked on the file opened, so a file swapped in after the check
	// is not the one read.
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	if err := checkTrusted(name, fi); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxConfigBytes+1)); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if buf.Len() > MaxConfigBytes {
		return nil, fmt.Errorf("%s: longer than %d bytes", name, MaxConfigBytes)
	}
	c, err := Parse(buf.Bytes(), os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	dir := filepath.Dir(name)
	if c.Permissions != "" {
		c.Permissions = resolve(dir, c.Permissions)
		// Others who may write the permissions would write what every
		// call is decided by. A missing file is left to the program that
		// loads it, which refuses it.
		if err := checkTrustedFile(c.Permissions); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: permissions: %w", name, err)
		}
	}
	if c.SandboxPolicy != "" {
		c.SandboxPolicy = resolve(dir, c.SandboxPolicy)
		if err := checkTrustedFile(c.SandboxPolicy); err != nil {
			return nil, fmt.Errorf("%s: sandboxPolicy: %w", name, err)
		}
		if c.Sandbox, err = sandbox.ReadPolicyFile(c.SandboxPolicy); err != nil {
			return nil, fmt.Errorf("%s: sandboxPolicy: %w", name, err)
		}
	}
	for n, s := range c.Servers {
		if s.SandboxPolicy != "" {
			s.SandboxPolicy = resolve(dir, s.SandboxPolicy)
		}
		if s.Workspace != "" {
			s.Workspace = resolve(dir, s.Workspace)
		}
		c.Servers[n] = s
	}
	for n, m := range c.Modules {
		m.Path = resolve(dir, m.Path)
		if m.Workspace != "" {
			m.Workspace = resolve(dir, m.Workspace)
		}
		c.Modules[n] = m
	}
	return c, nil
}

func resolve(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// Parse parses a configuration. Every ${NAME} in a string value of a
// server or module (command, args, env, cwd, url, headers, path,
// workspace) is replaced with the variable's value as lookup finds it;
// "$$" is a literal "$". A reference to a variable that is not set is an
// error naming the variable, never its value. The values references in
// env, headers, args and url expand to are secrets: [Config.Redact]
// hides them, and Parse's errors never show them. The references of one
// configuration expand to at most 4 MiB in all; past that, Parse fails.
func Parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	var raw struct {
		Config
		Editors map[string]Server `json:"servers"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("not a valid configuration: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a valid configuration: text after the JSON object")
	}
	c := raw.Config
	if c.Servers == nil {
		c.Servers = raw.Editors
	} else {
		for n, s := range raw.Editors {
			if _, dup := c.Servers[n]; dup {
				return nil, fmt.Errorf("server %q is named in both mcpServers and servers", n)
			}
			c.Servers[n] = s
		}
	}
	x := &expander{lookup: lookup}
	var errs []error
	for _, n := range sortedKeys(c.Servers) {
		s := c.Servers[n]
		var refs []secretRef
		if err := x.server(&s, &refs); err != nil {
			errs = append(errs, fmt.Errorf("server %q: %w", n, err))
			continue
		}
		if err := s.check(); err != nil {
			errs = append(errs, fmt.Errorf("server %q: %w", n, err))
		}
		if len(refs) > 0 {
			if c.secretRefs == nil {
				c.secretRefs = map[string][]secretRef{}
			}
			c.secretRefs[n] = refs
		}
		c.Servers[n] = s
	}
	for _, n := range sortedKeys(c.Modules) {
		if _, dup := c.Servers[n]; dup {
			errs = append(errs, fmt.Errorf("module %q: a server has the same name", n))
		}
		m := c.Modules[n]
		var refs []secretRef
		if err := x.module(&m, &refs); err != nil {
			errs = append(errs, fmt.Errorf("module %q: %w", n, err))
			continue
		}
		if err := m.check(); err != nil {
			errs = append(errs, fmt.Errorf("module %q: %w", n, err))
		}
		if len(refs) > 0 {
			if c.secretRefs == nil {
				c.secretRefs = map[string][]secretRef{}
			}
			c.secretRefs[n] = refs // a module's name is no server's
		}
		c.Modules[n] = m
	}
	if c.Defaults.Timeout < 0 || c.Defaults.MaxOutput < 0 {
		errs = append(errs, errors.New("defaults: timeout and maxOutput must not be negative"))
	}
	c.secrets = x.secrets
	// Longest first, so that a secret containing another is hidden whole.
	sort.Slice(c.secrets, func(i, j int) bool { return len(c.secrets[i]) > len(c.secrets[j]) })
	if err := errors.Join(errs...); err != nil {
		return nil, errors.New(c.Redact(err.Error()))
	}
	return &c, nil
}

func (s *Server) check() error {
	switch {
	case s.Command == "" && s.URL == "":
		return errors.New(`neither "command" nor "url" is set`)
	case s.Command != "" && s.URL != "":
		return errors.New(`both "command" and "url" are set`)
	case s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
		return errors.New(`"url" is not an http:// or https:// URL`)
	case s.Type == "sse":
		return errors.New(`"type": "sse" (the old HTTP+SSE transport) is not supported; use the server's Streamable HTTP endpoint`)
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil {
			// The parse error quotes the URL, which may hold a password.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return fmt.Errorf(`"url" is not a URL: %v`, err)
		}
		// Go's HTTP client sends a URL's user and password with every
		// request, as Basic authorization: a credential as "headers" are.
		switch {
		case len(s.Headers) > 0 && loopback.Cleartext(u):
			return fmt.Errorf(`"headers" would cross the network in clear: "url" is plain http to %s, another machine; use https, or a loopback address`, u.Hostname())
		case u.User != nil && loopback.Cleartext(u):
			return fmt.Errorf(`the user and password in "url" would cross the network in clear: it is plain http to %s, another machine; use https, or a loopback address`, u.Hostname())
		}
	}
	if err := checkPrefix(s.Prefix); err != nil {
		return err
	}
	for _, p := range slices.Concat(s.Tools, s.ExcludeTools) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("tool pattern %q: %w", p, err)
		}
	}
	if s.Timeout < 0 {
		return errors.New("timeout must not be negative")
	}
	for _, name := range s.Secrets {
		if _, ok := s.Env[name]; !ok {
			return fmt.Errorf(`"secrets" names %q, which "env" does not set`, name)
		}
	}
	if s.Image != "" && (s.URL != "" || s.Unsandboxed) {
		return errors.New(`"image" runs a stdio server in a container: it cannot be set with "url" or "unsandboxed"`)
	}
	if len(s.Secrets) > 0 && s.URL != "" {
		return errors.New(`"secrets" applies to a stdio server's "env"; a URL server has none`)
	}
	if s.MaxTools < 0 || s.MaxTools > MaxServerTools {
		return fmt.Errorf(`"maxTools" %d: want a number of tools from 1 to %d (0 or absent: the default, %d)`, s.MaxTools, MaxServerTools, mcptool.DefaultMaxTools)
	}
	return s.checkOAuth()
}

func (m *Module) check() error {
	if m.Path == "" {
		return errors.New(`"path" is not set`)
	}
	if len(m.Tools) == 0 {
		return errors.New(`"tools" is empty: a module serves at least one tool`)
	}
	if err := checkPrefix(m.Prefix); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, t := range m.Tools {
		if !tool.ValidName(m.Prefix + t.Name) {
			return fmt.Errorf("tool %q: a name is 1 to 64 letters, digits, _ and -", m.Prefix+t.Name)
		}
		if seen[t.Name] {
			return fmt.Errorf("tool %q is defined twice", t.Name)
		}
		seen[t.Name] = true
	}
	if m.Timeout < 0 {
		return errors.New("timeout must not be negative")
	}
	switch m.ABI {
	case "", ABICommand, ABIReactor:
	default:
		return fmt.Errorf(`"abi" %q: want %q or %q`, m.ABI, ABICommand, ABIReactor)
	}
	if m.Instances < 0 || m.Instances > MaxInstances {
		return fmt.Errorf(`"instances" must be between 0 and %d`, MaxInstances)
	}
	return nil
}

func checkPrefix(p string) error {
	for i := 0; i < len(p); i++ {
		if c := p[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("prefix %q: a prefix is made of letters, digits, _ and -", p)
		}
	}
	return nil
}

// keeps reports whether the server's filter keeps the tool it calls name.
func (s *Server) keeps(name string) bool {
	match := func(ps []string) bool {
		return slices.ContainsFunc(ps, func(p string) bool { ok, _ := path.Match(p, name); return ok })
	}
	return (len(s.Tools) == 0 || match(s.Tools)) && !match(s.ExcludeTools)
}

// expander expands ${NAME} references and collects the secrets.
type expander struct {
	lookup   func(string) (string, bool)
	secrets  []string
	secret   map[string]bool // in secrets
	expanded int             // bytes the references expanded to
	// refs, when not nil, collects the references to secret-named
	// variables, each in the field at.
	refs *[]secretRef
	at   secretRef
}

// maxExpandedBytes bounds what the references of one configuration expand
// to, in all: a file of 4 MiB holds 300,000 references, which a variable
// of a kilobyte made 300 MB.
const maxExpandedBytes = MaxConfigBytes

// addSecret remembers v as a secret, once.
func (x *expander) addSecret(v string) {
	if x.secret == nil {
		x.secret = make(map[string]bool)
	}
	if !x.secret[v] {
		x.secret[v] = true
		x.secrets = append(x.secrets, v)
	}
}

// tracked runs f with the references to secret-named variables it
// expands recorded in refs as made in the field at.
func (x *expander) tracked(refs *[]secretRef, at secretRef, f func() error) error {
	x.refs, x.at = refs, at
	defer func() { x.refs = nil }()
	return f()
}

// server expands s's references, recording those to secret-named
// variables in refs.
func (x *expander) server(s *Server, refs *[]secretRef) error {
	var err error
	for _, f := range []struct {
		p     *string
		where string
	}{{&s.Command, "command"}, {&s.Cwd, "cwd"}, {&s.SandboxPolicy, ""}, {&s.Workspace, "workspace"}, {&s.Image, ""}} {
		at := secretRef{where: f.where}
		if f.where == "" {
			// The policy file and the image name do not reach the
			// server's process.
			if *f.p, err = x.expand(*f.p, false); err != nil {
				return err
			}
			continue
		}
		if err = x.tracked(refs, at, func() (err error) { *f.p, err = x.expand(*f.p, false); return err }); err != nil {
			return err
		}
	}
	if s.URL, err = x.expand(s.URL, true); err != nil {
		return err
	}
	for i := range s.Args {
		if err = x.tracked(refs, secretRef{where: fmt.Sprintf("args[%d]", i)}, func() (err error) { s.Args[i], err = x.expand(s.Args[i], true); return err }); err != nil {
			return err
		}
	}
	if s.Env, err = x.env(s.Env, refs); err != nil {
		return err
	}
	for _, name := range s.Secrets {
		if v := s.Env[name]; len(v) >= minSecret {
			x.addSecret(v)
		}
	}
	if s.Headers, err = x.expandMap(s.Headers, "headers"); err != nil {
		return err
	}
	return x.oauth(s.OAuth)
}

// module expands m's references, recording those to secret-named
// variables in its env in refs.
func (x *expander) module(m *Module, refs *[]secretRef) error {
	var err error
	for _, p := range []*string{&m.Path, &m.Workspace} {
		if *p, err = x.expand(*p, false); err != nil {
			return err
		}
	}
	m.Env, err = x.env(m.Env, refs)
	return err
}

// env returns a copy of env with its values' references expanded, in
// key order, recording those to secret-named variables in refs; nil
// stays nil.
func (x *expander) env(env map[string]string, refs *[]secretRef) (map[string]string, error) {
	if env == nil {
		return nil, nil
	}
	out := make(map[string]string, len(env))
	for _, k := range sortedKeys(env) {
		if err := x.tracked(refs, secretRef{where: fmt.Sprintf("env %q", k), env: k}, func() (err error) { out[k], err = x.expand(env[k], true); return err }); err != nil {
			return nil, fmt.Errorf("env %q: %w", k, err)
		}
	}
	return out, nil
}

func (x *expander) expandMap(m map[string]string, what string) (map[string]string, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		e, err := x.expand(v, true)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", what, k, err)
		}
		out[k] = e
	}
	return out, nil
}

// expand replaces the references in s. With secret, the values substituted
// are remembered as secrets.
func (x *expander) expand(s string, secret bool) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] != '$':
			b.WriteByte(s[i])
		case strings.HasPrefix(s[i:], "$$"):
			b.WriteByte('$')
			i++
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", errors.New("unterminated ${ in a value")
			}
			name := s[i+2 : i+end]
			if name == "" {
				return "", errors.New("empty ${} in a value")
			}
			v, ok := x.lookup(name)
			if !ok {
				return "", fmt.Errorf("environment variable %s is not set", name)
			}
			if x.expanded += len(v); x.expanded > maxExpandedBytes {
				return "", fmt.Errorf("the references expand to more than %d bytes in all", maxExpandedBytes)
			}
			if x.refs != nil && sandbox.SecretWord(name) != "" {
				r := x.at
				r.name = name
				*x.refs = append(*x.refs, r)
			}
			if secret && len(v) >= minSecret {
				x.addSecret(v)
			}
			b.WriteString(v)
			i += end
		default:
			b.WriteByte('$')
		}
	}
	return b.String(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
