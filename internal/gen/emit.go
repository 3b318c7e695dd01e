package gen

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"go/format"
	"go/types"
	"slices"
	"strconv"
	"strings"
)

// defaultValue checks the text X of "(default: X)" against the parameter's
// type and returns the value of its default tag: for string kinds the raw
// text (a JSON string literal such as "a b" is unquoted first), for other
// types a JSON value of the matching kind.
func defaultValue(t types.Type, x string) (string, string) {
	for {
		p, ok := types.Unalias(t).Underlying().(*types.Pointer)
		if !ok {
			break
		}
		t = p.Elem()
	}
	if b, ok := t.Underlying().(*types.Basic); ok && b.Info()&types.IsString != 0 {
		if strings.HasPrefix(x, `"`) {
			var s string
			if err := json.Unmarshal([]byte(x), &s); err != nil {
				return "", fmt.Sprintf("default %s is not a valid quoted string", x)
			}
			return s, ""
		}
		if len(x) >= 2 && x[0] == '`' && x[len(x)-1] == '`' {
			return x[1 : len(x)-1], ""
		}
		return x, ""
	}
	if !json.Valid([]byte(x)) {
		return "", fmt.Sprintf("default %s is not a JSON value, as a parameter of type %s needs", x, t)
	}
	if hasHook(t) {
		return x, ""
	}
	var want string
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch {
		case u.Info()&types.IsBoolean != 0:
			if x != "true" && x != "false" {
				want = "true or false"
			}
		case u.Info()&types.IsInteger != 0:
			if _, err := strconv.ParseInt(x, 10, 64); err != nil {
				if _, err := strconv.ParseUint(x, 10, 64); err != nil {
					want = "an integer"
				}
			}
		case u.Info()&types.IsFloat != 0:
			if _, err := strconv.ParseFloat(x, 64); err != nil {
				want = "a number"
			}
		}
	case *types.Slice:
		if b, ok := u.Elem().Underlying().(*types.Basic); ok && b.Kind() == types.Byte {
			if x[0] != '"' {
				want = "a base64 string in quotes"
			}
		} else if x[0] != '[' {
			want = "a JSON array"
		}
	case *types.Array:
		if x[0] != '[' {
			want = "a JSON array"
		}
	case *types.Map, *types.Struct:
		if x[0] != '{' {
			want = "a JSON object"
		}
	}
	if want != "" {
		return "", fmt.Sprintf("default %s does not fit type %s: want %s", x, t, want)
	}
	return x, ""
}

// imports assigns the local names of the packages the generated file uses.
type imports struct {
	g      *generator
	byPath map[string]string
	names  map[string]bool
}

func (im *imports) name(path, name string) string {
	if n, ok := im.byPath[path]; ok {
		return n
	}
	n := name
	for i := 2; im.names[n] || im.g.pkg.Types.Scope().Lookup(n) != nil; i++ {
		n = name + strconv.Itoa(i)
	}
	im.byPath[path] = n
	im.names[n] = true
	return n
}

func (im *imports) qualifier(p *types.Package) string {
	if p == im.g.pkg.Types {
		return ""
	}
	return im.name(p.Path(), p.Name())
}

// emit writes the file: FieldDescriptions methods, then one argument
// struct and constructor per tool, then RegisterTools, each in source order.
func (g *generator) emit(described []*described) ([]byte, error) {
	im := &imports{g: g, byPath: make(map[string]string), names: make(map[string]bool)}
	var ctxName, toolName string
	if len(g.tools) > 0 {
		ctxName = im.name("context", "context")
		toolName = im.name(toolPath, "tool")
	}
	typ := func(t types.Type) string { return types.TypeString(t, im.qualifier) }

	var body bytes.Buffer
	for _, d := range described {
		name := d.named.Obj().Name()
		body.WriteString("\n")
		writeComment(&body, fmt.Sprintf("FieldDescriptions returns the descriptions written in the doc comments of %s and its fields, "+
			"keyed by field name (\"\" is %s itself). It implements the FieldDescriber hook of package tool.", name, name))
		fmt.Fprintf(&body, "func (%s) FieldDescriptions() map[string]string {\n\treturn map[string]string{\n", name)
		for _, kv := range d.descs {
			fmt.Fprintf(&body, "\t\t%s: %s,\n", strconv.Quote(kv[0]), strconv.Quote(kv[1]))
		}
		fmt.Fprintf(&body, "\t}\n}\n")
	}

	for _, t := range g.tools {
		fname := t.decl.Name.Name
		body.WriteString("\n")
		writeComment(&body, fmt.Sprintf("%s holds the arguments of %s, one field per parameter.", t.argsType, fname))
		if len(t.fields) == 0 {
			fmt.Fprintf(&body, "type %s struct{}\n", t.argsType)
		} else {
			fmt.Fprintf(&body, "type %s struct {\n", t.argsType)
			for _, f := range t.fields {
				fmt.Fprintf(&body, "\t%s %s %s\n", f.goName, typ(f.typ), tagLiteral(f.tag))
			}
			fmt.Fprintf(&body, "}\n")
		}

		out := "string"
		if t.out != nil {
			out = typ(t.out)
		}
		var call strings.Builder
		call.WriteString(fname + "(")
		var callArgs []string
		if t.hasCtx {
			callArgs = append(callArgs, "ctx")
		}
		for i, f := range t.fields {
			a := "args." + f.goName
			if t.variadic && i == len(t.fields)-1 {
				a += "..."
			}
			callArgs = append(callArgs, a)
		}
		call.WriteString(strings.Join(callArgs, ", ") + ")")
		ctxParam := "_"
		if t.hasCtx {
			ctxParam = "ctx"
		}
		argsParam := "args"
		if len(t.fields) == 0 {
			argsParam = "_"
		}

		body.WriteString("\n")
		writeComment(&body, fmt.Sprintf("%s returns the tool %q, which calls %s with the arguments the model sends, "+
			"one property per parameter. opts are passed on to %s.New. It panics if %s.New refuses the tool, "+
			"as it may for a default that the parameter's type does not accept.", t.ctor, t.name, fname, toolName, toolName))
		fmt.Fprintf(&body, "func %s(opts ...%s.Option) %s.Tool {\n", t.ctor, toolName, toolName)
		fmt.Fprintf(&body, "\treturn %s.Must(%s.New(%q, %s,\n", toolName, toolName, t.name, strconv.Quote(t.desc))
		fmt.Fprintf(&body, "\t\tfunc(%s %s.Context, %s %s) (%s, error) {\n", ctxParam, ctxName, argsParam, t.argsType, out)
		switch {
		case t.out != nil && t.hasErr:
			fmt.Fprintf(&body, "\t\t\treturn %s\n", call.String())
		case t.out != nil:
			fmt.Fprintf(&body, "\t\t\treturn %s, nil\n", call.String())
		case t.hasErr:
			fmt.Fprintf(&body, "\t\t\treturn \"\", %s\n", call.String())
		default:
			fmt.Fprintf(&body, "\t\t\t%s\n\t\t\treturn \"\", nil\n", call.String())
		}
		fmt.Fprintf(&body, "\t\t}, opts...))\n}\n")
	}

	if len(g.tools) > 0 {
		names := make([]string, len(g.tools))
		for i, t := range g.tools {
			names[i] = t.name
		}
		body.WriteString("\n")
		writeComment(&body, fmt.Sprintf("RegisterTools registers the tools made from the package's clawtool:tool functions in r: %s. "+
			"It never replaces a tool r already has: it registers with [%s.Registry.RegisterUnique], so a name already taken is an error wrapping [%s.ErrDuplicate] that names the tool. "+
			"RegisterTools stops at the first error and returns it; the tools registered before it stay.", strings.Join(names, ", "), toolName, toolName))
		fmt.Fprintf(&body, "func RegisterTools(r *%s.Registry) error {\n", toolName)
		fmt.Fprintf(&body, "\tfor _, t := range []%s.Tool{\n", toolName)
		for _, t := range g.tools {
			fmt.Fprintf(&body, "\t\t%s(),\n", t.ctor)
		}
		fmt.Fprintf(&body, "\t} {\n\t\tif err := r.RegisterUnique(t); err != nil {\n\t\t\treturn err\n\t\t}\n\t}\n\treturn nil\n}\n")
	}

	var src bytes.Buffer
	src.WriteString(Header + "\n\n")
	fmt.Fprintf(&src, "package %s\n", g.pkg.Types.Name())
	if len(im.byPath) > 0 {
		paths := make([]string, 0, len(im.byPath))
		for p := range im.byPath {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		// Standard library first, then the rest, as goimports groups them.
		slices.SortStableFunc(paths, func(a, b string) int { return cmp.Compare(nonStd(a), nonStd(b)) })
		src.WriteString("\nimport (\n")
		for i, p := range paths {
			if i > 0 && nonStd(p) != nonStd(paths[i-1]) {
				src.WriteString("\n")
			}
			n := im.byPath[p]
			if n == lastElem(p) {
				fmt.Fprintf(&src, "\t%q\n", p)
			} else {
				fmt.Fprintf(&src, "\t%s %q\n", n, p)
			}
		}
		src.WriteString(")\n")
	}
	src.Write(body.Bytes())
	out, err := format.Source(src.Bytes())
	if err != nil {
		return nil, fmt.Errorf("internal error: generated code does not parse: %v\n%s", err, src.Bytes())
	}
	return out, nil
}

// nonStd reports whether path is outside the standard library (its first
// element has a dot): 0 for standard packages, 1 for the rest.
func nonStd(path string) int {
	first, _, _ := strings.Cut(path, "/")
	if strings.Contains(first, ".") {
		return 1
	}
	return 0
}

// lastElem returns the last element of an import path.
func lastElem(path string) string {
	return path[strings.LastIndex(path, "/")+1:]
}

// tagLiteral returns tag as a Go string literal: a raw string unless tag
// holds a back quote.
func tagLiteral(tag string) string {
	if strings.Contains(tag, "`") {
		return strconv.Quote(tag)
	}
	return "`" + tag + "`"
}

// writeComment writes text as a // comment wrapped at 76 columns.
func writeComment(b *bytes.Buffer, text string) {
	line := "//"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 76 && line != "//" {
			b.WriteString(line + "\n")
			line = "//"
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
}
