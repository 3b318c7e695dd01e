package openaitool

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/jsonobj"
	"github.com/miniopenclaw/tool/internal/jsonschema"
)

// ChatTool is one element of a Chat Completions request's "tools" array:
//
//	{"type":"function","function":{"name":…,"description":…,"parameters":{…},"strict":true}}
type ChatTool struct {
	Type     string             `json:"type"` // always "function"
	Function FunctionDefinition `json:"function"`
}

// FunctionDefinition is the "function" member of a [ChatTool].
type FunctionDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	// Strict is set only for tools sent in strict mode.
	Strict bool `json:"strict,omitempty"`
}

// ResponsesTool is one element of a Responses API request's "tools" array,
// the flat shape:
//
//	{"type":"function","name":…,"description":…,"parameters":{…},"strict":false}
type ResponsesTool struct {
	Type        string          `json:"type"` // always "function"
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	// Strict is always sent: the Responses API requires it.
	Strict bool `json:"strict"`
	// DeferLoading keeps the tool out of the model's context until the
	// model finds it with tool search (see [Tools.ResponsesDeferred]).
	DeferLoading bool `json:"defer_loading,omitempty"`
}

// An Option configures [NewTools], [ChatTools] and [ResponsesTools].
type Option func(*options)

type options struct {
	mode    StrictMode
	perTool map[string]StrictMode
}

// WithStrict sets the strict mode of every tool. The default is
// [StrictOff].
func WithStrict(m StrictMode) Option {
	return func(o *options) { o.mode = m }
}

// WithToolStrict sets the strict mode of the tool with the given name,
// overriding [WithStrict] for it: for example StrictOff for one tool whose
// schema is an open map.
func WithToolStrict(name string, m StrictMode) Option {
	return func(o *options) {
		if o.perTool == nil {
			o.perTool = make(map[string]StrictMode)
		}
		o.perTool[name] = m
	}
}

// Tools is a list of tools converted once for the OpenAI APIs: their
// definitions for Chat Completions and Responses, and what is needed to
// undo strict mode's nullable rewrite in the model's arguments
// ([Tools.Normalize]). A Tools is immutable and safe for concurrent use;
// make a new one when the tool list changes (see [tool.Registry.OnChange]).
type Tools struct {
	list   []converted
	byName map[string]*converted
	chat   []byte
	resp   []byte
}

type converted struct {
	name, desc string
	params     json.RawMessage
	strict     bool
	lossy      []string
	fix        *strictResult // non-nil when null arguments need undoing
}

// NewTools converts tools in the order given (use [tool.Registry.List] for
// a registry: it is in name order, which keeps prompts cacheable).
//
// Every tool goes through the same conversion however it was built (with
// [tool.New], by hand, imported from MCP, wrapped with [tool.With]): the
// strict rewrite reads only Parameters. With [StrictOn], NewTools returns
// an error wrapping a [*StrictError] that names the first tool whose
// schema cannot be made strict and the keyword at fault; with
// [StrictAuto] such tools, and tools whose rewrite would lose something
// (see [StrictSchema]), are sent without strict. NewTools also fails
// for a nil tool or one whose Parameters are not a JSON object.
func NewTools(tools []tool.Tool, opts ...Option) (*Tools, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	ts := &Tools{list: make([]converted, 0, len(tools)), byName: make(map[string]*converted, len(tools))}
	for _, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("openaitool: nil tool")
		}
		c, err := convert(t, o)
		if err != nil {
			return nil, err
		}
		ts.list = append(ts.list, c)
	}
	chat := make([]ChatTool, len(ts.list))
	resp := make([]ResponsesTool, len(ts.list))
	for i := range ts.list {
		c := &ts.list[i]
		ts.byName[c.name] = c
		chat[i] = ChatTool{Type: "function", Function: FunctionDefinition{Name: c.name, Description: c.desc, Parameters: c.params, Strict: c.strict}}
		resp[i] = ResponsesTool{Type: "function", Name: c.name, Description: c.desc, Parameters: c.params, Strict: c.strict}
	}
	var err error
	if ts.chat, err = jsonobj.Marshal(chat); err != nil {
		return nil, fmt.Errorf("openaitool: %w", err)
	}
	if ts.resp, err = jsonobj.Marshal(resp); err != nil {
		return nil, fmt.Errorf("openaitool: %w", err)
	}
	return ts, nil
}

func convert(t tool.Tool, o options) (converted, error) {
	name := t.Name()
	mode := o.mode
	if m, ok := o.perTool[name]; ok {
		mode = m
	}
	params := t.Parameters()
	var compact bytes.Buffer
	if err := json.Compact(&compact, params); err != nil || jsonobj.Kind(params) != "object" {
		return converted{}, fmt.Errorf("openaitool: tool %q: parameters are not a JSON object schema", name)
	}
	c := converted{name: name, desc: t.Description(), params: compact.Bytes()}
	if mode == StrictOff {
		return c, nil
	}
	r, err := strictRewrite(params)
	if err != nil {
		if mode == StrictAuto {
			c.lossy = []string{err.Error()}
			return c, nil
		}
		if se, ok := err.(*StrictError); ok {
			se.Tool = name
		}
		return converted{}, fmt.Errorf("openaitool: %w", err)
	}
	if mode == StrictAuto && len(r.lossy) > 0 {
		c.lossy = r.lossy
		return c, nil
	}
	c.params, c.strict, c.lossy = r.schema, true, r.lossy
	if r.plan != nil {
		c.fix = r
	}
	return c, nil
}

// Chat returns the "tools" array for a Chat Completions request. The
// caller owns the returned slice.
func (ts *Tools) Chat() json.RawMessage { return bytes.Clone(ts.chat) }

// Responses returns the "tools" array for a Responses API request. The
// caller owns the returned slice.
func (ts *Tools) Responses() json.RawMessage { return bytes.Clone(ts.resp) }

// Strict reports whether the named tool is sent in strict mode, and lists
// what its strict rewrite changed or, in [StrictAuto], why the tool is not
// strict.
func (ts *Tools) Strict(name string) (strict bool, notes []string) {
	c, ok := ts.byName[name]
	if !ok {
		return false, nil
	}
	return c.strict, c.lossy
}

// Normalize undoes strict mode's rewrite in the arguments of calls, so
// that tools see the arguments they would have got without strict mode:
// a null sent for a property that strict mode made nullable (because it
// was optional) is replaced by the property's default when that default
// passes the property's own schema, and removed otherwise (no default, a
// null default on a type that is not nullable, a default outside its
// enum, ...), so that the result is what the tool's schema accepts for
// "not given". When the defaults put back would together make the
// arguments fail the tool's schema, none is put back. The registry then
// validates the arguments against the tool's own schema and applies its
// defaults as usual. Nulls for properties that were nullable to begin
// with are left alone.
//
// Calls to tools that are not strict, or whose arguments are not a JSON
// object, are returned unchanged (the registry reports malformed
// arguments). Normalize does not modify calls; it returns a new slice when
// it changes anything. [ChatCalls] and [ResponsesCalls] do not normalize:
// call Normalize on their result, as package agent does.
func (ts *Tools) Normalize(calls []tool.Call) []tool.Call {
	var out []tool.Call
	for i, c := range calls {
		t, ok := ts.byName[c.Name]
		if !ok || t.fix == nil {
			continue
		}
		args, changed := t.fix.normalize(c.Args)
		if !changed {
			continue
		}
		if out == nil {
			out = append([]tool.Call(nil), calls...)
		}
		out[i].Args = args
	}
	if out == nil {
		return calls
	}
	return out
}

// normalize applies r's plan to args. When the defaults it puts back make
// the arguments fail the original schema, where leaving the properties
// out might not (a maxProperties, say), it puts none back: the registry's
// validator adds defaults by the same rule.
//
// Its work is bounded by the arguments' size (normalizeWork), and
// arguments over 4 MiB are not read: past either bound, the arguments are
// left as the model sent them, and the registry refuses their nulls (or
// their size), saying so.
func (r *strictResult) normalize(args json.RawMessage) (json.RawMessage, bool) {
	if len(args) > maxNormalizeBytes {
		return args, false
	}
	work := normalizeWork(len(args))
	out, changed := r.apply(r.plan, args, nil, 0, false, &work)
	if work < 0 {
		return args, false
	}
	if changed && r.check != nil {
		if _, vs, err := r.check.Validate(out, jsonschema.Limits{}); err != nil || len(vs) > 0 {
			work = normalizeWork(len(args))
			out, changed = r.apply(r.plan, args, nil, 0, true, &work)
			if work < 0 {
				return args, false
			}
		}
	}
	return out, changed
}

// maxNormalizeBytes bounds the arguments Normalize reads: four times the
// registry's default argument limit (1 MiB), which refuses longer ones.
const maxNormalizeBytes = 4 << 20

// normalizeWork is the bytes Normalize may parse for arguments of n
// bytes: each level of nesting parses what it holds again, so nested
// arguments cost their size times their depth (a recursive plan from a
// server's schema allows about 30 levels), and each anyOf branch tried
// read the object again (66 KB took 1.2 GB). Sixteen levels are read.
func normalizeWork(n int) int { return 16*n + 256<<10 }

// apply undoes the nulls of p in v; with omit it removes every such
// property rather than put its default back. o is v parsed, when v is an
// object already parsed, else nil. It charges each value it parses to
// work, and stops, leaving work negative, once it is spent.
func (r *strictResult) apply(p *plan, v json.RawMessage, o jsonobj.Object, depth int, omit bool, work *int) (json.RawMessage, bool) {
	if p == nil || depth > maxSchemaDepth || *work < 0 {
		return v, false
	}
	if p.ref != "" {
		return r.apply(r.defs[p.ref], v, o, depth+1, omit, work)
	}
	switch jsonobj.Kind(v) {
	case "object":
		if o == nil {
			if *work -= len(v); *work < 0 {
				return v, false
			}
			var err error
			if o, err = jsonobj.Parse(v); err != nil {
				return v, false
			}
		}
		if p.props == nil {
			for _, b := range p.anyOf {
				if b.matchesObject(r, o) {
					return r.apply(b, v, o, depth+1, omit, work)
				}
			}
			return v, false
		}
		changed := false
		out := make(jsonobj.Object, 0, len(o))
		for _, m := range o {
			pp := p.props[m.Key]
			if pp == nil {
				out = append(out, m)
				continue
			}
			if pp.addedNull && string(bytes.TrimSpace(m.Value)) == "null" {
				changed = true
				if pp.def != nil && !omit {
					out = append(out, jsonobj.Member{Key: m.Key, Value: pp.def})
				}
				continue
			}
			nv, ch := r.apply(pp.child, m.Value, nil, depth+1, omit, work)
			changed = changed || ch
			out = append(out, jsonobj.Member{Key: m.Key, Value: nv})
		}
		if !changed || *work < 0 {
			return v, false
		}
		b, err := out.MarshalJSON()
		if err != nil {
			return v, false
		}
		return b, true
	case "array":
		if p.items == nil {
			return v, false
		}
		if *work -= len(v); *work < 0 {
			return v, false
		}
		var elems []json.RawMessage
		if json.Unmarshal(v, &elems) != nil {
			return v, false
		}
		changed := false
		for i, e := range elems {
			ne, ch := r.apply(p.items, e, nil, depth+1, omit, work)
			elems[i] = ne
			changed = changed || ch
		}
		if !changed || *work < 0 {
			return v, false
		}
		return jsonobj.Array(elems), true
	}
	return v, false
}

// matchesObject reports whether p describes an object whose properties
// include every key of o: how Normalize picks the anyOf branch an object
// belongs to.
func (p *plan) matchesObject(r *strictResult, o jsonobj.Object) bool {
	for range 8 {
		if p == nil || p.ref == "" {
			break
		}
		p = r.defs[p.ref]
	}
	if p == nil || p.props == nil {
		return false
	}
	for _, m := range o {
		if p.props[m.Key] == nil {
			return false
		}
	}
	return true
}

// ChatTools returns the Chat Completions "tools" array for tools; it is
// NewTools(tools, opts...).Chat().
func ChatTools(tools []tool.Tool, opts ...Option) (json.RawMessage, error) {
	ts, err := NewTools(tools, opts...)
	if err != nil {
		return nil, err
	}
	return ts.chat, nil
}

// ResponsesTools returns the Responses API "tools" array for tools; it is
// NewTools(tools, opts...).Responses().
func ResponsesTools(tools []tool.Tool, opts ...Option) (json.RawMessage, error) {
	ts, err := NewTools(tools, opts...)
	if err != nil {
		return nil, err
	}
	return ts.resp, nil
}
