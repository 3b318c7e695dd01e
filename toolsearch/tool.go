package toolsearch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/jsonobj"
)

// ToolName is the name of the tool [NewTool] returns.
const ToolName = "tool_search"

// DefaultThreshold is the number of tools above which [Loading] defers
// tools by default.
const DefaultThreshold = 30

const toolDescription = "Searches the tools available to you that are not loaded yet, and loads the ones it finds: " +
	"their definitions come back, and you can call them from your next step on. " +
	"Describe what you need in a few words (\"send a chat message\", \"list calendar events\"); " +
	"search again with other words if nothing fits."

const toolParameters = `{"type":"object","properties":{` +
	`"query":{"type":"string","minLength":1,"maxLength":1024,"description":"What the tool should do, in a few words; a regular expression (RE2 syntax) when regexp is true."},` +
	`"limit":{"type":"integer","minimum":1,"maximum":50,"default":5,"description":"At most this many tools come back."},` +
	`"regexp":{"type":"boolean","default":false,"description":"Match query as a regular expression against names, descriptions and parameters."}` +
	`},"required":["query"],"additionalProperties":false}`

// A Definition is a found tool as the meta-tool returns it.
type Definition struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// NewTool returns the meta-tool, named [ToolName], that a model calls with
// a query to find tools of ix. Its Output is a JSON object
// {"tools":[{"name","description","parameters"}...]} with the
// definitions of the matching tools, best first; when no tool fits the
// query (none passes the index's [Options.MinConfidence]) the list is
// empty, "nothing_fits" is true and a "note" tells the model not to call
// a tool for the request. Its
// Metadata["tools"] is their names as a []string, for the program that
// makes them callable (see [Loaded]).
//
// visible, when not nil, limits what the tool may find (see
// [Query.Visible]); the meta-tool never finds itself.
func NewTool(ix *Index, visible func(name string) bool) tool.Tool {
	return tool.With(&searchTool{ix: ix, visible: visible},
		tool.WithInline(),
		tool.WithAnnotations(tool.Annotations{Title: "Search tools", ReadOnly: true, Idempotent: true}))
}

type searchTool struct {
	ix      *Index
	visible func(string) bool
}

func (*searchTool) Name() string                { return ToolName }
func (*searchTool) Description() string         { return toolDescription }
func (*searchTool) Parameters() json.RawMessage { return json.RawMessage(toolParameters) }

func (s *searchTool) Execute(_ context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Query  string `json:"query"`
		Limit  int    `json:"limit"`
		Regexp bool   `json:"regexp"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return tool.Result{}, fmt.Errorf("arguments: %v", err)
	}
	matches, err := s.ix.Find(Query{Text: in.Query, Regexp: in.Regexp, Limit: in.Limit, Visible: func(name string) bool {
		return name != ToolName && (s.visible == nil || s.visible(name))
	}})
	if err != nil {
		return tool.Result{}, fmt.Errorf("%v; fix the pattern or search with words (regexp false)", err)
	}
	return answer(matches), nil
}

// answer returns what the meta-tool answers for matches: see [NewTool].
func answer(matches []Match) tool.Result {
	out := struct {
		Tools []Definition `json:"tools"`
		// NothingFits is true when no tool answers the query well
		// enough (see Options.MinConfidence), so that a program, not
		// only a model, can tell.
		NothingFits bool   `json:"nothing_fits,omitempty"`
		Note        string `json:"note,omitempty"`
	}{Tools: make([]Definition, 0, len(matches))}
	found := make([]string, 0, len(matches))
	for _, m := range matches {
		out.Tools = append(out.Tools, Definition{Name: m.Name, Description: m.Tool.Description(), Parameters: m.Tool.Parameters()})
		found = append(found, m.Name)
	}
	if len(matches) == 0 {
		out.NothingFits = true
		out.Note = "Nothing fits: no available tool does this. Do not call a tool for it; say that it cannot be done with the tools at hand, or search once more with other words if the request was described poorly."
	}
	b, err := jsonobj.Marshal(out)
	if err != nil {
		// A registered tool's parameters are valid JSON; this is a
		// tool that changed its schema after registration.
		return tool.Result{IsError: true, Kind: tool.KindToolError, Error: "tool_search: " + err.Error()}
	}
	return tool.Result{Output: string(b), Metadata: map[string]any{"tools": found}}
}

// Loaded returns the names of the tools a result of the meta-tool found,
// from its Metadata, or nil for any other result.
func Loaded(r tool.Result) []string {
	if r.IsError {
		return nil
	}
	names, _ := r.Metadata["tools"].([]string)
	return names
}

// Loading says which tools of a registry a model is sent on every turn and
// which it finds through the meta-tool. The zero Loading defers every tool
// when there are more than [DefaultThreshold] tools.
type Loading struct {
	// Threshold is the number of tools up to which every tool is sent
	// and nothing is deferred. Zero means [DefaultThreshold]; a negative
	// value means tools are deferred only when named in Deferred.
	Threshold int
	// Always names tools sent on every turn, however many there are.
	Always []string
	// Deferred names tools found only through search, however few
	// tools there are.
	Deferred []string
	// Search configures the index the deferred tools are found with:
	// the "nothing fits" bound and an optional Embedder (see [Options]).
	Search Options
}

// Split divides tools, keeping their order, into those sent from the
// start and those deferred.
func (l Loading) Split(tools []tool.Tool) (loaded, deferred []tool.Tool) {
	threshold := l.Threshold
	if threshold == 0 {
		threshold = DefaultThreshold
	}
	byCount := threshold > 0 && len(tools) > threshold
	always := setOfNames(l.Always)
	named := setOfNames(l.Deferred)
	for _, t := range tools {
		name := t.Name()
		if !always[name] && (byCount || named[name]) {
			deferred = append(deferred, t)
		} else {
			loaded = append(loaded, t)
		}
	}
	return loaded, deferred
}

func setOfNames(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
