package mcptool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/jsonobj"
)

// Definition is a tool as MCP's tools/list describes it, in plain structs
// with no SDK types, for code that needs the shape without a session (the
// `clawtool schema --format mcp` output, other adapters, tests):
//
//	{"name":…,"title":…,"description":…,"inputSchema":{…},"outputSchema":{…},"annotations":{…}}
//
// It is the same description the [Server] serves.
type Definition struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is the tool's Parameters, an object schema.
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema is the tool's output schema. MCP requires an object
	// root, so a schema with another root is wrapped as
	// {"type":"object","properties":{"result":SCHEMA},"required":["result"],"additionalProperties":false},
	// as the Server does for structured results.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations is nil for a tool whose annotations claim nothing.
	Annotations *Annotations `json:"annotations,omitempty"`
}

// Annotations are MCP's tool annotations. DestructiveHint and
// OpenWorldHint are pointers because MCP reads their absence as true.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// DefinitionOf returns the MCP description of t, reading its title,
// annotations and output schema from [tool.OptionsOf]. A hint is sent only
// when the tool's author stated it (set it to true): a tool annotated with
// only a Title, or only ReadOnly, claims nothing else, and clients apply
// MCP's defaults to the hints left out (destructive and open-world unless
// read-only). Annotations that claim nothing (the zero [tool.Annotations])
// give no annotations. A tool imported with [Client.Import] is described
// with the annotations its server sent, unchanged, and so is a tool that
// wraps one and forwards [Annotated] (as the tools of a plugins.Host do).
// DefinitionOf returns an
// error naming the tool when its parameters or output schema are not
// valid JSON.
func DefinitionOf(t tool.Tool) (Definition, error) {
	if t == nil {
		return Definition{}, errors.New("mcptool: nil tool")
	}
	opts := tool.OptionsOf(t)
	var in bytes.Buffer
	if err := json.Compact(&in, t.Parameters()); err != nil {
		return Definition{}, fmt.Errorf("mcptool: tool %q: parameters are not valid JSON", t.Name())
	}
	d := Definition{
		Name:        t.Name(),
		Title:       opts.Annotations.Title,
		Description: t.Description(),
		InputSchema: in.Bytes(),
	}
	if out := opts.OutputSchema; len(bytes.TrimSpace(out)) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, out); err != nil {
			return Definition{}, fmt.Errorf("mcptool: tool %q: output schema is not valid JSON", t.Name())
		}
		if outputWrapped(out) {
			d.OutputSchema = json.RawMessage(`{"type":"object","properties":{"` + wrapKey + `":` + b.String() + `},"required":["` + wrapKey + `"],"additionalProperties":false}`)
		} else {
			d.OutputSchema = b.Bytes()
		}
	}
	if a, ok := statedAnnotations(t, opts.Annotations); ok {
		// An imported tool is described with the hints its server sent.
		d.Annotations = a
	} else if a := opts.Annotations; a != (tool.Annotations{}) {
		d.Annotations = &Annotations{Title: a.Title, ReadOnlyHint: a.ReadOnly, IdempotentHint: a.Idempotent}
		if a.Destructive {
			d.Annotations.DestructiveHint = &a.Destructive
		}
		if a.OpenWorld {
			d.Annotations.OpenWorldHint = &a.OpenWorld
		}
	}
	return d, nil
}

// Definitions returns the MCP descriptions of tools as a JSON array, in
// the order given (use [tool.Registry.List] for a registry); it is the
// "tools" member of a tools/list result. It returns the first error of
// [DefinitionOf].
func Definitions(tools []tool.Tool) (json.RawMessage, error) {
	defs := make([]Definition, 0, len(tools))
	for _, t := range tools {
		d, err := DefinitionOf(t)
		if err != nil {
			return nil, err
		}
		defs = append(defs, d)
	}
	return jsonobj.Marshal(defs)
}

// Annotated is implemented by a tool described to MCP clients with
// annotations stated elsewhere rather than derived from its
// [tool.Options]: a tool imported with [Client.Import] (the annotations
// its server sent, as sent) and a wrapper that forwards the method of the
// tool it wraps. MCPAnnotations returns those annotations (nil: the
// server stated none) and true, or false when there are none to forward.
//
// [DefinitionOf] uses them only when they claim what the tool's Options
// claim (read-only, destructive, idempotent, open-world, with MCP's
// defaults for the hints left out); a wrapper that changes the
// annotations is described from its Options instead.
type Annotated interface {
	MCPAnnotations() (a *Annotations, ok bool)
}

// MCPAnnotations returns the annotations the server sent; see [Annotated].
func (t *remoteTool) MCPAnnotations() (*Annotations, bool) { return t.hints, true }

// statedAnnotations returns the annotations t forwards (see [Annotated])
// when they agree with opts.
func statedAnnotations(t tool.Tool, opts tool.Annotations) (*Annotations, bool) {
	at, ok := t.(Annotated)
	if !ok {
		return nil, false
	}
	a, ok := at.MCPAnnotations()
	if !ok {
		return nil, false
	}
	claims := hintClaims(a)
	claims.Title = opts.Title
	if claims != opts {
		return nil, false
	}
	return a, true
}
