package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miniopenclaw/tool/internal/jsonschema"
)

// Defaults of a [Registry] made by [NewRegistry] with no options.
const (
	DefaultTimeout      = 60 * time.Second
	DefaultGracePeriod  = 2 * time.Second
	DefaultMaxOutput    = 64 << 10
	DefaultMaxArgsBytes = 1 << 20
	DefaultMaxArgsDepth = 64
)

// A Registry holds tools by name and runs calls to them safely (see
// [Registry.Execute]). It is safe for concurrent use. Make one with
// [NewRegistry].
//
// # Duplicate names
//
// A registry holds one tool per name. What happens when a second tool
// comes with a name already taken depends on who adds it:
//
//   - [Registry.Register] is the program adding one tool of its own
//     choice: it replaces the tool of the same name, logs the replacement
//     as a warning naming the tool (see [WithLogger]), and tells the
//     [Registry.OnChange] watchers as for any change.
//   - [Registry.RegisterUnique] refuses: it returns an error wrapping
//     [ErrDuplicate] that names the tool, and leaves the registered tool
//     in place.
//   - Everything that adds tools in bulk on the program's behalf never
//     displaces a tool the program already has: toolbox.Register, the
//     RegisterTools functions that clawtool gen writes, and MCP import
//     (mcptool) all use RegisterUnique and report [ErrDuplicate] naming
//     the tool. Tools added before the refused one stay registered.
//     RegisterUnique also refuses a name that differs from a registered
//     one only in ASCII case and in its '-' and '_' ("Read_File",
//     "read-file" or "readfile" beside "read_file"): a model told of both
//     could call the one it did not mean, and a server imported without a
//     prefix could pass its tool off as a built-in.
//
// To replace a tool on purpose, [Registry.Remove] it first or call
// Register with the new one.
type Registry struct {
	cfg registryConfig

	mu       sync.RWMutex
	tools    map[string]*entry
	folded   map[string]int // foldName of a name → how many registered names fold to it
	sorted   []*entry       // name order; nil when stale; never modified in place
	order    []*entry       // a sorted list whose names are still the registry's (only replacements since); nil when unknown
	patches  []patch        // the replacements since order, while few; nil with order, or when too many to patch
	watchers map[int]func(string)
	nextID   int

	ignoredContext atomic.Uint64
	stillRunning   atomic.Int64
	sweeper        sweeper // of ExecuteHere's calls
	limits         limiter // of tools with Options.SharedTimer
}

// entry is a registered tool with what the registry derived from it once.
type entry struct {
	tool   Tool
	name   string
	opts   Options
	def    []byte             // {"type":"function","function":{...}}
	check  *jsonschema.Schema // validator for tools that do not check their own arguments
	direct checkedTool        // set for tools built by New: they check arguments themselves
}

// checkedTool is implemented by tools built with New: they parse and
// validate arguments themselves, with validation compiled from Go types.
// prepare returns the call to run, or an error Result and an
// *ArgumentError when the arguments are invalid.
type checkedTool interface {
	prepare(args []byte, lim argLimits) (c pendingCall, res Result, err error)
}

// A pendingCall is a call whose arguments have been checked. run calls the
// tool; finish builds the Result from what it returned. The registry runs
// them in different goroutines, run first.
type pendingCall interface {
	run(ctx context.Context)
	finish() (Result, error)
	checkedArgs() ([]byte, error)               // the arguments as the tool receives them, for an Authorizer
	argument(name string) (ArgumentValue, bool) // one of them, for AccessRequest.Argument
}

// argLimits bounds the arguments a call accepts.
type argLimits struct {
	maxBytes int
	maxDepth int
}

var defaultLimits = argLimits{maxBytes: DefaultMaxArgsBytes, maxDepth: DefaultMaxArgsDepth}

type registryConfig struct {
	logger    *slog.Logger
	timeout   time.Duration
	grace     time.Duration
	maxOutput int
	limits    argLimits

	authorizer Authorizer
	// What NewRegistry learned of authorizer, whose answers do not
	// change: whether it defers the arguments, and itself as an
	// OutcomeRecorder when it records outcomes, else nil.
	defersArgs bool
	recorder   OutcomeRecorder
}

// A RegistryOption configures a [Registry] made by [NewRegistry].
type RegistryOption func(*registryConfig)

// WithLogger sets the logger that receives recovered panics (with their
// stacks), tools that ignore their context, and other events the model is
// not told in detail. The default is [slog.Default] at the time of logging.
func WithLogger(l *slog.Logger) RegistryOption {
	return func(c *registryConfig) { c.logger = l }
}

// WithDefaultTimeout sets the time limit of calls to tools whose
// [Options.Timeout] is zero. The default is [DefaultTimeout]; zero or a
// negative d means no registry-wide limit.
func WithDefaultTimeout(d time.Duration) RegistryOption {
	return func(c *registryConfig) { c.timeout = d }
}

// WithGracePeriod sets how long Execute waits for a tool after the call's
// context has ended before it gives up on the tool, reports the call as
// timed out or canceled, and counts it in [Stats]. The default is
// [DefaultGracePeriod].
func WithGracePeriod(d time.Duration) RegistryOption {
	return func(c *registryConfig) { c.grace = max(d, 0) }
}

// WithDefaultMaxOutput sets the result-size budget of tools whose
// [Options.MaxOutputBytes] is zero. The default is [DefaultMaxOutput];
// zero or a negative n means no registry-wide budget.
func WithDefaultMaxOutput(n int) RegistryOption {
	return func(c *registryConfig) { c.maxOutput = n }
}

// WithArgumentLimits bounds the arguments of every call: at most maxBytes
// bytes and at most maxDepth levels of nesting. Arguments over a limit are
// refused before they are parsed. Zero keeps the default
// ([DefaultMaxArgsBytes], [DefaultMaxArgsDepth]).
func WithArgumentLimits(maxBytes, maxDepth int) RegistryOption {
	return func(c *registryConfig) {
		if maxBytes > 0 {
			c.limits.maxBytes = maxBytes
		}
		if maxDepth > 0 {
			c.limits.maxDepth = maxDepth
		}
	}
}

// NewRegistry returns an empty Registry configured by opts.
func NewRegistry(opts ...RegistryOption) *Registry {
	r := &Registry{
		cfg: registryConfig{
			timeout:   DefaultTimeout,
			grace:     DefaultGracePeriod,
			maxOutput: DefaultMaxOutput,
			limits:    defaultLimits,
		},
		tools:  make(map[string]*entry),
		folded: make(map[string]int),
	}
	for _, opt := range opts {
		opt(&r.cfg)
	}
	if a := r.cfg.authorizer; a != nil {
		r.cfg.defersArgs = defersArgs(a)
		r.cfg.recorder, _ = recorderOf(a)
	}
	return r
}

func (r *Registry) logger() *slog.Logger {
	if r.cfg.logger != nil {
		return r.cfg.logger
	}
	return slog.Default()
}

// Register adds t to the registry. A tool already registered under the
// same name is replaced, and the replacement is logged as a warning; use
// [Registry.RegisterUnique] to refuse duplicates instead (see "Duplicate
// names" at [Registry]).
//
// Register checks t before adding it and returns an error naming the tool
// and the problem: an error wrapping [ErrInvalidName] if the name does not
// match ^[a-zA-Z0-9_-]{1,64}$, or one wrapping [ErrInvalidSchema] if
// Parameters is not an object schema that compiles or if its defaults
// together are longer than the argument limit (see [WithArgumentLimits]).
// A default that applies to every item of an array can still make one
// call's arguments outgrow the limit: that call is refused. The schema is compiled
// once, here; the tool's definition is rendered once, here.
func (r *Registry) Register(t Tool) error {
	replaced, err := r.Replace(t)
	if replaced {
		r.logger().LogAttrs(context.Background(), slog.LevelWarn, "tool replaced: a tool of the same name was already registered",
			slog.String("tool", t.Name()))
	}
	return err
}

// Replace is [Registry.Register] without the warning: it adds t, in place
// of the tool registered under the same name if there is one, and reports
// whether there was. It is for the code that owns a name updating its own
// tool (an importer registering the new version of a tool its source
// changed), which reports the change itself if it wants to; code that
// cannot know whether the name is its own uses Register or
// [Registry.RegisterUnique]. It checks t as Register does, and on error
// changes nothing.
func (r *Registry) Replace(t Tool) (replaced bool, err error) {
	e, err := r.entryFor(t)
	if err != nil {
		return false, err
	}
	r.mu.Lock()
	_, replaced = r.tools[e.name]
	r.tools[e.name] = e
	if !replaced {
		r.folded[foldName(e.name)]++
	}
	if replaced {
		r.replacedLocked(e)
	} else {
		r.changedLocked()
	}
	watchers := r.watchersLocked()
	r.mu.Unlock()
	notify(watchers, e.name)
	return replaced, nil
}

// RegisterUnique is like [Registry.Register] but returns an error wrapping
// [ErrDuplicate], naming the tool, if a tool of the same name, or of a
// name that differs only in ASCII case and in its '-' and '_' (read-file,
// readfile, Read_File beside read_file), is already registered, leaving
// that tool in place (see "Duplicate names" at [Registry]).
func (r *Registry) RegisterUnique(t Tool) error {
	e, err := r.entryFor(t)
	if err != nil {
		return err
	}
	r.mu.Lock()
	if _, dup := r.tools[e.name]; dup {
		r.mu.Unlock()
		return fmt.Errorf("register %q: %w", e.name, ErrDuplicate)
	}
	folded := foldName(e.name)
	if r.folded[folded] > 0 {
		r.mu.Unlock()
		return fmt.Errorf("register %q: a tool whose name differs only in case, '-' or '_' is registered: %w", e.name, ErrDuplicate)
	}
	r.tools[e.name] = e
	r.folded[folded]++
	r.changedLocked()
	watchers := r.watchersLocked()
	r.mu.Unlock()
	notify(watchers, e.name)
	return nil
}

// Remove removes the tool with the given name and reports whether there
// was one. Calls already running finish normally.
func (r *Registry) Remove(name string) bool {
	r.mu.Lock()
	if _, ok := r.tools[name]; !ok {
		r.mu.Unlock()
		return false
	}
	delete(r.tools, name)
	if folded := foldName(name); r.folded[folded] > 1 {
		r.folded[folded]--
	} else {
		delete(r.folded, folded)
	}
	r.changedLocked()
	watchers := r.watchersLocked()
	r.mu.Unlock()
	notify(watchers, name)
	return true
}

// OnChange arranges for fn to be called with a tool's name after that tool
// is registered, replaced or removed. fn runs synchronously in the
// goroutine that made the change, after the registry's lock is released;
// it may call the registry. The returned stop function unregisters fn.
func (r *Registry) OnChange(fn func(name string)) (stop func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watchers == nil {
		r.watchers = make(map[int]func(string))
	}
	id := r.nextID
	r.nextID++
	r.watchers[id] = fn
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.watchers, id)
	}
}

func (r *Registry) changedLocked() {
	r.sorted = nil
	r.order = nil
	r.patches = nil
}

// A patch is a replacement since Registry.order: the entry now at index i.
type patch struct {
	i int
	e *entry
}

// replacedLocked records that an entry replaced the one of its name: the names
// and their order stay, so the next sorted list is the last one with the
// current entries put in, rather than a sort (a reload replaces tools one
// by one; each replacement costs O(1), the next export O(n)).
//
// While the replacements since are fewer than an eighth of the tools, each
// is also kept as a patch, found by binary search (O(log n)): the next
// sorted list is then a copy of the last with them put in, rather than a
// lookup of every name.
func (r *Registry) replacedLocked(e *entry) {
	if r.sorted != nil {
		r.order, r.patches = r.sorted, make([]patch, 0, 4)
	}
	r.sorted = nil
	if r.patches == nil {
		return
	}
	i, found := sort.Find(len(r.order), func(i int) int { return strings.Compare(e.name, r.order[i].name) })
	if !found || len(r.patches) >= len(r.order)/8 {
		r.patches = nil // the lookup of every name
		return
	}
	r.patches = append(r.patches, patch{i, e})
}

func (r *Registry) watchersLocked() []func(string) {
	if len(r.watchers) == 0 {
		return nil
	}
	ids := make([]int, 0, len(r.watchers))
	for id := range r.watchers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fns := make([]func(string), len(ids))
	for i, id := range ids {
		fns[i] = r.watchers[id]
	}
	return fns
}

func notify(watchers []func(string), name string) {
	for _, fn := range watchers {
		fn(name)
	}
}

// Get returns the tool registered under name.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	e := r.tools[name]
	r.mu.RUnlock()
	if e == nil {
		return nil, false
	}
	return e.tool, true
}

// Len returns the number of registered tools.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.tools)
}

// List returns the registered tools in name order. The order is stable so
// that prompts built from it cache well.
func (r *Registry) List() []Tool {
	entries := r.entries()
	tools := make([]Tool, len(entries))
	for i, e := range entries {
		tools[i] = e.tool
	}
	return tools
}

// entries returns the registered entries in name order. The slice is
// shared: callers must not modify it.
func (r *Registry) entries() []*entry {
	r.mu.RLock()
	s, n := r.sorted, len(r.tools)
	r.mu.RUnlock()
	if s != nil || n == 0 {
		return s
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sorted == nil {
		s := make([]*entry, 0, len(r.tools))
		switch {
		case r.order != nil && len(r.order) == len(r.tools) && r.patches != nil:
			s = append(s, r.order...)
			for _, p := range r.patches {
				s[p.i] = p.e
			}
		case r.order != nil && len(r.order) == len(r.tools):
			for _, old := range r.order {
				s = append(s, r.tools[old.name])
			}
		default:
			for _, e := range r.tools {
				s = append(s, e)
			}
			sort.Slice(s, func(i, j int) bool { return s[i].name < s[j].name })
		}
		r.sorted, r.order, r.patches = s, nil, nil
	}
	return r.sorted
}

// Definitions returns the registered tools as the OpenAI Chat Completions
// "tools" array, in name order:
//
//	[{"type":"function","function":{"name":…,"description":…,"parameters":{…}}}]
//
// Each tool's part is rendered once, at registration; a call joins the
// parts into a new slice, which the caller owns. (Joining them costs what
// copying a kept array would, so none is kept: after a change, a kept
// array would cost a second copy.)
func (r *Registry) Definitions() json.RawMessage {
	return definitionsOf(r.entries())
}

// newEntry checks t and derives what the registry keeps about it.
func newEntry(t Tool) (*entry, error) {
	if t == nil {
		return nil, fmt.Errorf("register: nil tool: %w", ErrInvalidName)
	}
	name := t.Name()
	if !ValidName(name) {
		return nil, fmt.Errorf("register %q: name must match ^[a-zA-Z0-9_-]{1,64}$: %w", name, ErrInvalidName)
	}
	e := &entry{tool: t, name: name, opts: OptionsOf(t)}
	inner := t
	for {
		u, ok := inner.(interface{ unwrapTool() Tool })
		if !ok {
			break
		}
		inner = u.unwrapTool()
	}
	params := t.Parameters()
	if ct, ok := inner.(checkedTool); ok {
		e.direct = ct
	} else {
		s, err := compileObjectSchema(params, e.opts.ForeignSchema)
		if err != nil {
			return nil, fmt.Errorf("register %q: %w: %v", name, ErrInvalidSchema, err)
		}
		e.check = s
	}
	def, err := renderDefinition(name, t.Description(), params)
	if err != nil {
		return nil, fmt.Errorf("register %q: %w: %v", name, ErrInvalidSchema, err)
	}
	e.def = def
	return e, nil
}

// compileObjectSchema compiles a parameters schema and checks that its
// root is an object schema. A hand-written schema asserts formats and must
// have patterns RE2 can read; a foreign one is read as draft 2020-12 says
// by default (see Options.ForeignSchema).
func compileObjectSchema(params []byte, foreign bool) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(params)) == 0 {
		return nil, fmt.Errorf("parameters are empty; a tool without parameters uses {\"type\":\"object\"}")
	}
	var root struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(params, &root); err != nil {
		return nil, fmt.Errorf("parameters are not a JSON object: %v", err)
	}
	if string(bytes.TrimSpace(root.Type)) != `"object"` {
		return nil, fmt.Errorf(`parameters must be an object schema with "type":"object" at the root`)
	}
	opts := jsonschema.Options{AssertFormat: true, StrictPatterns: true}
	if foreign {
		opts = jsonschema.Options{}
	}
	s, err := jsonschema.CompileWith(params, opts)
	if err != nil {
		return nil, err
	}
	// Hand-written tools often decode with encoding/json, which binds a
	// key to a field ignoring case: refuse keys that differ from a
	// declared property only in case, so that what was validated is what
	// the tool reads.
	return s.CaseSensitive(), nil
}

// ValidName reports whether name is a tool name a Registry accepts: 1 to
// 64 characters from a-z, A-Z, 0-9, _ and -, the set every model API
// accepts.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// renderDefinition renders one element of the OpenAI tools array.
func renderDefinition(name, description string, params []byte) ([]byte, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, params); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"type":"function","function":{"name":`)
	writeJSONString(&b, name)
	b.WriteString(`,"description":`)
	writeJSONString(&b, description)
	b.WriteString(`,"parameters":`)
	b.Write(compact.Bytes())
	b.WriteString(`}}`)
	return b.Bytes(), nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

// Stats are counters a Registry keeps about calls that needed attention.
type Stats struct {
	// IgnoredContext counts calls whose tool was still running a grace
	// period after the call's context ended, since the registry was made.
	IgnoredContext uint64
	// StillRunning is how many of those calls have not returned yet: each
	// holds a goroutine that Go cannot stop.
	StillRunning int64
}

// Stats returns the registry's counters.
func (r *Registry) Stats() Stats {
	return Stats{IgnoredContext: r.ignoredContext.Load(), StillRunning: r.stillRunning.Load()}
}

// definitionsOf joins the rendered definitions of entries into a JSON
// array.
func definitionsOf(entries []*entry) []byte {
	n := 2
	for _, e := range entries {
		n += len(e.def) + 1
	}
	buf := make([]byte, 0, n)
	buf = append(buf, '[')
	for i, e := range entries {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, e.def...)
	}
	return append(buf, ']')
}

// foldName returns the form of a tool name that two names a model could
// take for each other share: lower-case, without '-' and '_' (names are
// ASCII letters, digits, '-' and '_').
func foldName(name string) string {
	b := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '-' || c == '_':
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		default:
			b = append(b, c)
		}
	}
	return string(b)
}
