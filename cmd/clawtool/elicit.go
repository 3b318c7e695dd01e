package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of a question put to the person at the terminal.
const (
	maxElicitFields = 32       // fields of one form
	maxElicitTries  = 3        // tries at one field before giving up
	maxElicitInput  = 64 << 10 // bytes read from the terminal for one question
)

// errNoTerminal is the error of an elicitation with no one to ask.
var errNoTerminal = errors.New("there is no terminal to ask on")

// terminalElicitation answers an MCP server's request for input (an
// elicitation, including one that holds a task in input_required) by asking
// the person at the terminal: the server's message, then whether to answer,
// then each field of the requested form. Standard input and output may
// carry the program's data, so it uses the terminal itself. Without a
// terminal it returns an error saying so, which fails the call. The
// server's text is shown with its control characters escaped.
func terminalElicitation(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	tty, err := openTerminal()
	if err != nil {
		return nil, fmt.Errorf("the MCP server asks for input (%q) and %w (%v)", visibleText(p.Message, 200), errNoTerminal, err)
	}
	defer tty.Close()
	stop := context.AfterFunc(ctx, func() { tty.Close() }) // a call that ends stops the question
	defer stop()
	in := bufio.NewReader(io.LimitReader(tty, maxElicitInput))
	return askOnTerminal(tty, in, p)
}

// formField is one field of an elicitation's form.
type formField struct {
	name, title, kind, description string
	enum                           []string
	required                       bool
	def                            any
}

// askOnTerminal puts p to the person at w, reading the answers from in.
func askOnTerminal(w io.Writer, in *bufio.Reader, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	fmt.Fprintf(w, "clawtool: the MCP server asks: %s\n", visibleText(p.Message, 2000))
	if p.Mode == "url" || p.URL != "" {
		fmt.Fprintf(w, "clawtool: it asks you to open %s\n", visibleText(p.URL, 2000))
	}
	fields, err := formFields(p.RequestedSchema)
	if err != nil {
		return nil, err
	}
	fmt.Fprint(w, "clawtool: answer? [y/N] ")
	line, err := readLine(in)
	if err != nil {
		return &mcp.ElicitResult{Action: "cancel"}, nil // no answer: dismissed
	}
	if a := strings.ToLower(line); a != "y" && a != "yes" {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	content := map[string]any{}
	for _, f := range fields {
		v, ok, err := askField(w, in, f)
		if err != nil {
			return nil, err
		}
		if ok {
			content[f.name] = v
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// readLine reads one line, without its end and surrounding spaces.
func readLine(in *bufio.Reader) (string, error) {
	line, err := in.ReadString('\n')
	if err != nil && line == "" {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// askField asks for one field until the answer fits its type, at most
// maxElicitTries times. ok is false for an optional field left empty.
func askField(w io.Writer, in *bufio.Reader, f formField) (v any, ok bool, err error) {
	for range maxElicitTries {
		fmt.Fprintf(w, "clawtool: %s", visibleText(cmp.Or(f.title, f.name), 200))
		if f.description != "" {
			fmt.Fprintf(w, " (%s)", visibleText(f.description, 500))
		}
		switch {
		case len(f.enum) > 0:
			fmt.Fprintf(w, " [one of: %s]", visibleText(strings.Join(f.enum, ", "), 1000))
		case f.kind == "boolean":
			fmt.Fprint(w, " [y/n]")
		default:
			fmt.Fprintf(w, " [%s]", f.kind)
		}
		if f.def != nil {
			fmt.Fprintf(w, " (default %s)", visibleText(fmt.Sprint(f.def), 200))
		} else if !f.required {
			fmt.Fprint(w, " (optional)")
		}
		fmt.Fprint(w, ": ")
		line, err := readLine(in)
		if err != nil {
			return nil, false, fmt.Errorf("reading the answer to %q: %w", f.name, err)
		}
		if line == "" {
			switch {
			case f.def != nil:
				return f.def, true, nil
			case !f.required:
				return nil, false, nil
			}
			fmt.Fprintln(w, "clawtool: an answer is required")
			continue
		}
		if v, err := parseField(f, line); err == nil {
			return v, true, nil
		} else {
			fmt.Fprintf(w, "clawtool: %v\n", err)
		}
	}
	return nil, false, fmt.Errorf("no valid answer to %q after %d tries", f.name, maxElicitTries)
}

// parseField reads line as a value of f's type, one of its enum if
// it has one.
func parseField(f formField, line string) (any, error) {
	v, err := parseKind(f.kind, line)
	if err == nil && len(f.enum) > 0 && !slices.Contains(f.enum, fmt.Sprint(v)) {
		return nil, fmt.Errorf("%q is not one of the choices", visibleText(line, 100))
	}
	return v, err
}

// parseKind reads line as a value of the JSON Schema type kind.
func parseKind(kind, line string) (any, error) {
	switch kind {
	case "boolean":
		switch strings.ToLower(line) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, errors.New("answer y or n")
	case "integer":
		n, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return nil, errors.New("not an integer")
		}
		return n, nil
	case "number":
		x, err := strconv.ParseFloat(line, 64)
		if err != nil {
			return nil, errors.New("not a number")
		}
		return x, nil
	}
	return line, nil
}

// formFields reads the fields of an elicitation's requested schema: an
// object of flat properties of type string, number, integer or boolean
// (a string may have an enum). Required fields come first, in the order
// the schema lists them, then the others by name. A schema it cannot ask
// for is an error.
func formFields(schema any) ([]formField, error) {
	if schema == nil {
		return nil, nil
	}
	data, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("the requested form: %v", err)
	}
	var s struct {
		Properties map[string]struct {
			Type        string `json:"type"`
			Title       string `json:"title"`
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
			Default     any    `json:"default"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("the requested form is not an object schema: %v", err)
	}
	if len(s.Properties) > maxElicitFields {
		return nil, fmt.Errorf("the requested form has %d fields, more than the %d asked on a terminal", len(s.Properties), maxElicitFields)
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	rank := func(n string) int {
		if i := slices.Index(s.Required, n); i >= 0 {
			return i
		}
		return len(s.Required)
	}
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	fields := make([]formField, 0, len(names))
	for _, name := range names {
		p := s.Properties[name]
		switch p.Type {
		case "string", "number", "integer", "boolean":
		default:
			return nil, fmt.Errorf("the requested form's field %q is of type %q, which a terminal does not ask for", visibleText(name, 100), visibleText(p.Type, 40))
		}
		f := formField{name: name, title: p.Title, kind: p.Type, description: p.Description,
			required: slices.Contains(s.Required, name), def: p.Default}
		for _, e := range p.Enum {
			f.enum = append(f.enum, fmt.Sprint(e))
		}
		fields = append(fields, f)
	}
	return fields, nil
}
