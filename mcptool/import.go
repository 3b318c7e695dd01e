package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/jsonschema"
	"github.com/miniopenclaw/tool/internal/jsontext"
	"github.com/miniopenclaw/tool/internal/showtext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tools lists the server's tools (every page) and returns those the
// client's filter keeps as [tool.Tool] values named as described on
// [Client]. A tool that cannot be used (its schema is too large, too
// deep, not valid JSON Schema, or its root is not an object schema) is left
// out, and the returned error joins one error per such tool, naming it;
// the other tools are returned all the same. A failure to list gives no
// tools and that error.
//
// Listing is bounded (see [WithImportLimits]): at most [DefaultMaxTools]
// tools are returned, and those past the cap are counted, not built,
// and reported with a [*ToolCapError]; the listing stops after
// [DefaultMaxPages] pages, or when the server repeats a cursor, and
// returns what it has with an error that says so; and it builds no more
// tools once those it built hold [DefaultMaxListingBytes] of schemas and
// descriptions, counting those it leaves out. These errors wrap
// [ErrImportLimit]. A description longer than
// [DefaultMaxDescriptionBytes] is cut, with a notice, and so reported.
// A tool whose name is longer than [DefaultMaxNameBytes] is left out,
// and the errors of the tools left out count toward the listing's bytes.
// A cursor longer than [DefaultMaxCursorBytes] ends the listing, with an
// error wrapping [ErrImportLimit].
func (c *Client) Tools(ctx context.Context) ([]tool.Tool, error) {
	var tools []tool.Tool
	var errs []error
	seen := make(map[string]string) // local name → remote name
	cursors := make(map[string]bool)
	count := 0 // tools the filter keeps, the cap's count
	params := &mcp.ListToolsParams{}
	var capped *ToolCapError // set once the cap is reached
	held, over := 0, 0       // bytes the tools hold; tools left out past maxListing
	done := func() ([]tool.Tool, error) {
		if over > 0 {
			errs = append(errs, fmt.Errorf("mcptool: tools/list: %d tools left out: the schemas and descriptions of the tools imported (and the errors of those left out) reach the bound of %d bytes for one listing: %w", over, c.cfg.maxListing, ErrImportLimit))
		}
		if capped != nil {
			errs = append(errs, capped)
		}
		return tools, errors.Join(errs...)
	}
	for page := 1; ; page++ {
		res, err := c.session.ListTools(ctx, params)
		if err != nil {
			if capped != nil {
				// Counting past the cap failed: what was imported stands.
				capped.AtLeast = true
				return done()
			}
			return nil, fmt.Errorf("mcptool: tools/list: %w", err)
		}
		for _, st := range res.Tools {
			if st == nil || c.cfg.filter != nil && !c.cfg.filter(st.Name) {
				continue
			}
			if count++; count > c.cfg.maxTools {
				if capped == nil {
					capped = &ToolCapError{Max: c.cfg.maxTools}
				}
				capped.LeftOut++
				continue
			}
			if held >= c.cfg.maxListing {
				over++
				continue
			}
			if len(st.Name) > c.cfg.maxName {
				err := &ToolError{Tool: shortText(st.Name, 100), Err: fmt.Errorf("its name of %d bytes is longer than the limit of %d: %w", len(st.Name), c.cfg.maxName, ErrImportLimit)}
				held += len(err.Error())
				errs = append(errs, err)
				continue
			}
			t, err := c.newRemoteTool(st)
			if err != nil {
				// What is kept of a tool left out counts, as a tool
				// built does.
				held += len(err.Error())
				errs = append(errs, err)
				continue
			}
			held += t.size()
			if t.cut {
				errs = append(errs, &ToolError{Tool: st.Name, Err: fmt.Errorf("its description of %d bytes is cut to %d: %w", len(st.Description), c.cfg.maxDescription, ErrImportLimit)})
			}
			if other, dup := seen[t.name]; dup {
				errs = append(errs, &ToolError{Tool: st.Name, Err: fmt.Errorf("its local name %q is taken by tool %q: %w", t.name, other, tool.ErrDuplicate)})
				continue
			}
			seen[t.name] = st.Name
			tools = append(tools, t)
		}
		next := res.NextCursor
		switch {
		case next == "":
			return done()
		case len(next) > c.cfg.maxCursor:
			errs = append(errs, fmt.Errorf("mcptool: tools/list: the server gave a cursor of %d bytes, longer than the limit of %d; the listing stops there: %w", len(next), c.cfg.maxCursor, ErrImportLimit))
			if capped != nil {
				capped.AtLeast = true
			}
			return done()
		case cursors[next]:
			errs = append(errs, fmt.Errorf("mcptool: tools/list: the server repeated the cursor %q; the listing stops there: %w", shortText(next, 60), ErrImportLimit))
			if capped != nil {
				capped.AtLeast = true
			}
			return done()
		case page == c.cfg.maxPages:
			errs = append(errs, fmt.Errorf("mcptool: tools/list: the server lists more than %d pages; the rest are left out (WithImportLimits raises the limit): %w", c.cfg.maxPages, ErrImportLimit))
			if capped != nil {
				capped.AtLeast = true
			}
			return done()
		}
		cursors[next] = true
		params = &mcp.ListToolsParams{Cursor: next}
	}
}

// size is roughly what t holds in bytes: its schemas, description and
// fingerprint.
func (t *remoteTool) size() int {
	return len(t.params) + len(t.opts.OutputSchema) + len(t.description) + len(t.fingerprint)
}

// Import registers the server's tools (see [Client.Tools]) in reg and
// keeps reg in sync for as long as the client is open: on
// notifications/tools/list_changed the client lists the tools again,
// registers new and changed ones and removes those the server no longer
// has. Import may be called for several registries.
//
// A tool that cannot be imported, or whose name is already taken in reg
// by a tool this client did not import, is left out, never displacing
// the tool there, and the returned error joins one [*ToolError] per such
// tool (errors.Is finds [tool.ErrInvalidSchema], [tool.ErrInvalidName],
// [tool.ErrDuplicate] or [ErrImportLimit]); the other tools are
// registered all the same. The same applies on every
// later re-import, where such errors are logged.
func (c *Client) Import(ctx context.Context, reg *tool.Registry) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errors.New("mcptool: import: client is closed")
	}
	st := &importState{reg: reg, owned: make(map[string]string)}
	c.imports = append(c.imports, st)
	c.mu.Unlock()
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	_, err := c.sync(ctx, st)
	return err
}

// A ToolError reports one tool of a server that [Client.Tools] or
// [Client.Import] left out, or imported in part (a cut description).
type ToolError struct {
	Tool string // the server's name for the tool, cut to 100 bytes when over DefaultMaxNameBytes
	Err  error  // why; errors.Is finds the causes listed on Import
}

func (e *ToolError) Error() string { return fmt.Sprintf("mcptool: tool %q: %v", e.Tool, e.Err) }
func (e *ToolError) Unwrap() error { return e.Err }

// importState is one registry a client keeps in sync.
type importState struct {
	reg   *tool.Registry
	owned map[string]string // local name → fingerprint of what was registered
}

// syncCounts are what one sync changed in a registry.
type syncCounts struct{ added, changed, removed int }

// sync makes st.reg hold the server's current tools. The tools it
// imported before and that changed are replaced in place without the
// registry's warning per replaced tool: they are the client's own, and
// what changed is counted instead.
func (c *Client) sync(ctx context.Context, st *importState) (syncCounts, error) {
	var n syncCounts
	tools, err := c.Tools(ctx)
	if tools == nil && err != nil {
		return n, err
	}
	errs := []error{err}
	want := make(map[string]bool, len(tools))
	for _, t := range tools {
		rt := t.(*remoteTool)
		want[rt.name] = true
		fp, had := st.owned[rt.name]
		if had && fp == rt.fingerprint {
			continue
		}
		var rerr error
		if had {
			_, rerr = st.reg.Replace(rt)
		} else {
			rerr = st.reg.RegisterUnique(rt)
		}
		if rerr != nil {
			errs = append(errs, &ToolError{Tool: rt.remote, Err: rerr})
			if !had {
				continue
			}
			delete(st.owned, rt.name)
			st.reg.Remove(rt.name)
			n.removed++
			continue
		}
		if had {
			n.changed++
		} else {
			n.added++
		}
		st.owned[rt.name] = rt.fingerprint
	}
	for name := range st.owned {
		if !want[name] {
			delete(st.owned, name)
			st.reg.Remove(name)
			n.removed++
		}
	}
	return n, errors.Join(errs...)
}

// resyncLoop re-imports after each notifications/tools/list_changed until
// ctx ends. Notifications that arrive during a re-import, or within
// DefaultReimportGap after it ends (or as long as the re-import took, if
// longer), are folded into one more, made when the gap has passed. Each re-import of a registry logs one line: what it added,
// changed and removed, at level info, or at warn with the error when
// something was left out; or, with WithReimportFunc, is given to its
// function instead.
func (c *Client) resyncLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.done:
			return
		case <-c.dirty:
		}
		c.mu.Lock()
		imports := slices.Clone(c.imports)
		c.mu.Unlock()
		began := time.Now()
		for _, st := range imports {
			sctx, cancel := context.WithTimeout(ctx, resyncTimeout)
			c.syncMu.Lock()
			n, err := c.sync(sctx, st)
			c.syncMu.Unlock()
			cancel()
			if fn := c.cfg.onReimport; fn != nil {
				fn(Reimport{Added: n.added, Changed: n.changed, Removed: n.removed, Err: err})
				continue
			}
			if c.cfg.logger == nil {
				continue
			}
			attrs := []any{"added", n.added, "changed", n.changed, "removed", n.removed}
			if err != nil {
				c.cfg.logger.Warn("mcptool: re-import after tools/list_changed", append(attrs, "error", err)...)
			} else {
				c.cfg.logger.Info("mcptool: re-import after tools/list_changed", attrs...)
			}
		}
		// A server whose listings are slow to read (many large pages)
		// would otherwise hold the client reading them nearly all the
		// time: the gap is at least as long as the re-import took.
		wait := c.cfg.reimportGap
		if took := time.Since(began); !c.cfg.fixedGap && c.cfg.reimportGap > 0 && took > wait {
			wait = took
		}
		if wait > 0 {
			gap := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				gap.Stop()
				return
			case <-c.done:
				gap.Stop()
				return
			case <-gap.C:
			}
		}
	}
}

// A remoteTool is a tool of an MCP server, imported as a tool.Tool.
type remoteTool struct {
	c           *Client
	name        string // in our registry
	remote      string // the server's name for it
	description string
	params      json.RawMessage
	opts        tool.Options
	hints       *Annotations       // as the server sent them
	cut         bool               // the description was cut to the limit
	taskSupport TaskSupport        // execution.taskSupport, as the client's filter found it
	in, out     *jsonschema.Schema // out is nil when the tool has no output schema
	fingerprint string
}

// newRemoteTool checks an MCP tool description and builds the Tool.
func (c *Client) newRemoteTool(st *mcp.Tool) (*remoteTool, error) {
	name := localName(c.cfg.prefix, st.Name)
	fail := func(format string, args ...any) error {
		return &ToolError{Tool: st.Name, Err: fmt.Errorf(format, args...)}
	}
	params, err := c.checkSchema(st.InputSchema)
	if err != nil {
		return nil, fail("input schema: %w", err)
	}
	if params, err = c.bundle(params); err != nil {
		return nil, fail("input schema: %w: %v", tool.ErrInvalidSchema, err)
	}
	if params == nil {
		return nil, fail("no input schema: %w", tool.ErrInvalidSchema)
	}
	var root struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(params, &root) != nil || root.Type != "object" {
		return nil, fail(`input schema: the root must be an object schema ({"type":"object",...}): %w`, tool.ErrInvalidSchema)
	}
	schemaOpts := jsonschema.Options{AssertFormat: c.cfg.assertFormat}
	in, err := jsonschema.CompileWith(params, schemaOpts)
	if err != nil {
		return nil, fail("input schema: %w: %v", tool.ErrInvalidSchema, err)
	}
	c.warnIgnored(st.Name, "input schema", in)
	t := &remoteTool{
		c: c, name: name, remote: st.Name, description: st.Description, params: params, in: in,
		hints: statedHints(st.Annotations),
		opts: tool.Options{
			Annotations:   toolAnnotations(st),
			Timeout:       c.cfg.timeout,
			MaxInFlight:   maxInFlight(st.Annotations, c.cfg.maxInFlight),
			ForeignSchema: true,
		},
	}
	if ts, ok := st.Meta[taskSupportMeta].(string); ok {
		t.taskSupport = TaskSupport(ts)
		if t.taskSupport == TaskOptional || t.taskSupport == TaskRequired {
			// Served again (clawtool serve --mcp), the tool stays one
			// that may run as a task. Optional, not required: this
			// client awaits the server's task itself, so a caller that
			// cannot take a task still gets an ordinary call.
			t.opts.Task = tool.TaskOptional
		}
	}
	if t.description == "" {
		t.description = t.opts.Annotations.Title
	}
	if len(t.description) > c.cfg.maxDescription {
		t.description = shortText(t.description, c.cfg.maxDescription) + " [description cut: it was longer than the client's limit]"
		t.cut = true
	}
	out, err := c.checkSchema(st.OutputSchema)
	if err != nil {
		return nil, fail("output schema: %w", err)
	}
	if out != nil {
		if bundled, err := c.bundle(out); err == nil {
			out = bundled
		}
		// The tool works without its output checked: import it anyway.
		if t.out, err = jsonschema.CompileWith(out, schemaOpts); err != nil {
			t.out = nil
			c.warn("mcptool: output schema cannot be compiled; the tool's output is not checked", "tool", st.Name, "error", err)
		} else {
			c.warnIgnored(st.Name, "output schema", t.out)
		}
		t.opts.OutputSchema = out
	}
	fp, _ := json.Marshal(st)
	t.fingerprint = string(fp)
	return t, nil
}

// bundle embeds the schemas of WithSchemaResources that schema uses.
func (c *Client) bundle(schema json.RawMessage) (json.RawMessage, error) {
	if c.resources == nil || schema == nil {
		return schema, nil
	}
	return jsonschema.Bundle(schema, c.resources)
}

// warnIgnored logs the keywords of schema s of tool name that are ignored.
func (c *Client) warnIgnored(name, which string, s *jsonschema.Schema) {
	for _, e := range s.Ignored() {
		c.warn("mcptool: "+which+": keyword ignored", "tool", name, "error", e)
	}
}

func (c *Client) warn(msg string, args ...any) {
	if c.cfg.logger != nil {
		c.cfg.logger.Warn(msg, args...)
	}
}

// checkSchema returns an imported schema as JSON after checking its size
// and depth; nil when there is none.
func (c *Client) checkSchema(schema any) (json.RawMessage, error) {
	if schema == nil {
		return nil, nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", tool.ErrInvalidSchema, err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	if len(b) > c.cfg.maxSchemaBytes {
		return nil, fmt.Errorf("%w: %d bytes, over the limit of %d", tool.ErrInvalidSchema, len(b), c.cfg.maxSchemaBytes)
	}
	if _, err := jsontext.SkipValue(b, 0, 0, c.cfg.maxSchemaDepth); err != nil {
		return nil, fmt.Errorf("%w: nested deeper than %d levels", tool.ErrInvalidSchema, c.cfg.maxSchemaDepth)
	}
	return b, nil
}

func (t *remoteTool) Name() string                { return t.name }
func (t *remoteTool) Description() string         { return t.description }
func (t *remoteTool) Parameters() json.RawMessage { return t.params }
func (t *remoteTool) Options() tool.Options       { return t.opts }

// Execute calls the tool on the server; see [Client].
func (t *remoteTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	checked, vs, err := t.in.Validate(args, jsonschema.Limits{MaxBytes: tool.DefaultMaxArgsBytes})
	if err != nil || len(vs) > 0 {
		ae := &tool.ArgumentError{Tool: t.name, Args: shortText(string(args), 300)}
		if err != nil {
			ae.Violations = []tool.Violation{{Expected: "valid JSON", Got: err.Error()}}
		}
		for _, v := range vs {
			ae.Violations = append(ae.Violations, tool.Violation(v))
		}
		return tool.Result{IsError: true, Kind: tool.KindInvalidArguments, Error: ae.Error()}, ae
	}
	tok, ctx, release := t.c.progressToken(ctx)
	defer release()
	params := &mcp.CallToolParams{Name: t.remote, Arguments: json.RawMessage(checked)}
	params.SetProgressToken(tok)
	form := t.taskForm()
	switch form {
	case taskExt:
		params.Meta[mcp.MetaKeyClientCapabilities] = t.c.taskCapabilities(ctx)
	case taskLegacy:
		params.Meta[taskAugmentMeta] = map[string]any{}
	}
	res, err := t.c.session.CallTool(context.WithValue(ctx, callOfKey{}, t.c), params)
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, context.Cause(ctx)
		}
		return tool.Result{}, fmt.Errorf("MCP server: calling tool %q: %w", t.remote, err)
	}
	if handle, ok := res.Meta[taskHandleMeta]; ok {
		if form == noTask {
			err := t.refuseTask(ctx, handle)
			return tool.Result{IsError: true, Kind: tool.KindToolError, Error: err.Error()}, err
		}
		var failed *tool.Result
		res, failed, err = t.awaitTask(ctx, form, handle)
		if err != nil {
			return tool.Result{}, err
		}
		if failed != nil {
			return *failed, nil
		}
	}
	text, parts := contentParts(res.Content)
	if res.IsError {
		if len(parts) > 0 {
			// A failure is read as text: describe whatever came with it.
			text = tool.Result{Output: text, Parts: parts}.Text()
		}
		if text == "" {
			text = fmt.Sprintf("tool %q failed without a message", t.remote)
		}
		return tool.Result{IsError: true, Kind: tool.KindToolError, Error: text}, nil
	}
	out := tool.Result{Output: text, Parts: parts}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return tool.Result{}, fmt.Errorf("MCP server: tool %q: structured content: %w", t.remote, err)
		}
		out.Structured = b
	}
	if t.out != nil {
		if err := t.checkOutput(out.Structured); err != nil {
			return tool.Result{IsError: true, Kind: tool.KindToolError, Error: err.Error()}, err
		}
	}
	if out.Output == "" && len(out.Structured) > 0 {
		out.Output = string(out.Structured)
	}
	return out, nil
}

// checkOutput checks structured content against the output schema.
func (t *remoteTool) checkOutput(structured json.RawMessage) error {
	if len(structured) == 0 {
		return fmt.Errorf("MCP server: tool %q declares an output schema but returned no structured content", t.remote)
	}
	_, vs, err := t.out.Validate(structured, jsonschema.Limits{})
	if err != nil {
		return fmt.Errorf("MCP server: tool %q returned structured content that is not valid JSON: %v", t.remote, err)
	}
	if len(vs) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "MCP server: tool %q returned structured content that does not match its output schema:", t.remote)
		for _, v := range vs {
			b.WriteString("\n- ")
			b.WriteString(tool.Violation(v).String())
		}
		return errors.New(b.String())
	}
	return nil
}

// contentParts splits content blocks into the text for Output (text
// blocks joined by newlines) and Parts for the rest. A block this package
// does not know, or one too malformed to be a Part, is described in the
// text rather than lost.
func contentParts(blocks []mcp.Content) (string, []tool.Part) {
	var text []string
	var parts []tool.Part
	for _, b := range blocks {
		var p tool.Part
		switch b := b.(type) {
		case *mcp.TextContent:
			text = append(text, b.Text)
			continue
		case *mcp.ImageContent:
			p = tool.Image(b.MIMEType, b.Data)
		case *mcp.AudioContent:
			p = tool.Audio(b.MIMEType, b.Data)
		case *mcp.ResourceLink:
			p = tool.Part{Type: tool.PartResourceLink, URI: b.URI, Name: b.Name, Description: b.Description, MIMEType: b.MIMEType}
		case *mcp.EmbeddedResource:
			if r := b.Resource; r != nil {
				p = tool.Part{Type: tool.PartResource, URI: r.URI, MIMEType: r.MIMEType, Text: r.Text, Data: r.Blob}
			}
		default:
			if data, err := json.Marshal(b); err == nil {
				text = append(text, string(data))
			}
			continue
		}
		if p.Validate() != nil {
			text = append(text, p.String())
			continue
		}
		parts = append(parts, p)
	}
	return strings.Join(text, "\n"), parts
}

// localName maps a server's tool name, with prefix, into the registry's
// name set; see [Client].
func localName(prefix, remote string) string {
	name := prefix + remote
	if tool.ValidName(name) {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(remote))
	suffix := fmt.Sprintf("_%08x", h.Sum32())
	var b strings.Builder
	for i := 0; i < len(name) && b.Len() < 64-len(suffix); i++ {
		ch := name[i]
		if isNameByte(ch) {
			b.WriteByte(ch)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String() + suffix
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// shortText cuts s to at most n bytes at a rune boundary.
func shortText(s string, n int) string { return showtext.Cut(s, n) }
