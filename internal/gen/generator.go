package gen

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"
)

// The directives clawtool gen reads.
const (
	toolDirective     = "//clawtool:tool"
	describeDirective = "//clawtool:describe"
)

// generator produces the file of one package.
type generator struct {
	pkg  *packages.Package
	dir  string // base of error positions
	errs Errors

	// typeErr is the package's first type error, quoted when a tool
	// signature turns out not to type-check.
	typeErr string

	specs  map[*types.TypeName]*typeDecl
	tools  []*toolSpec
	marked map[*types.TypeName]token.Pos // //clawtool:describe
	roots  []types.Type                  // types whose local structs get descriptions

	// decided maps each generated top-level name to the position that
	// asked for it, to report clashes.
	decided map[string]token.Pos
}

// A typeDecl is the syntax of a type declared in the package.
type typeDecl struct {
	spec *ast.TypeSpec
	doc  *ast.CommentGroup
}

// A toolSpec is a //clawtool:tool function and what is generated for it.
type toolSpec struct {
	decl     *ast.FuncDecl
	name     string // the tool's name
	desc     string // the tool's description
	argsType string // the generated argument struct
	ctor     string // the generated constructor
	hasCtx   bool
	variadic bool
	fields   []argField
	out      types.Type // nil when fn has no result other than error
	hasErr   bool
}

// An argField is a field of a generated argument struct: one parameter.
type argField struct {
	goName string
	prop   string // the JSON property name
	typ    types.Type
	tag    string // the whole tag, unquoted
}

func (g *generator) errorAt(pos token.Pos, format string, args ...any) {
	p := g.pkg.Fset.Position(pos)
	g.errs = append(g.errs, &Error{File: rel(g.dir, p.Filename), Line: p.Line, Msg: fmt.Sprintf(format, args...)})
}

func (g *generator) errorLine(pos token.Pos, line int, msg string) {
	p := g.pkg.Fset.Position(pos)
	g.errs = append(g.errs, &Error{File: rel(g.dir, p.Filename), Line: line, Msg: msg})
}

// where returns "file:line" of pos, for messages that point elsewhere.
func (g *generator) where(pos token.Pos) string {
	p := g.pkg.Fset.Position(pos)
	return fmt.Sprintf("%s:%d", rel(g.dir, p.Filename), p.Line)
}

// run checks the package and returns its generated file, or nil when there
// is nothing to generate.
func (g *generator) run() ([]byte, Errors) {
	parseErrs := make(map[string]bool) // files with a parse error reported
	for _, e := range g.pkg.Errors {
		if strings.HasPrefix(e.Msg, "# ") {
			// The compiler's output, from the go command building export
			// data: the parser and type checker report the same problems
			// below, and type errors are tolerated (see next).
			continue
		}
		if e.Kind == packages.ParseError {
			// One per file: the parser's later errors follow from the first.
			file, _, _ := strings.Cut(e.Pos, ":")
			if parseErrs[file] {
				continue
			}
			parseErrs[file] = true
		}
		if e.Kind == packages.TypeError && !strings.Contains(e.Msg, "could not import") {
			// Tolerated: code that calls what this run generates does not
			// type-check until the file exists. Signatures that matter are
			// checked for invalid types below.
			if g.typeErr == "" {
				g.typeErr = e.Msg
			}
			continue
		}
		g.errs = append(g.errs, g.loadError(e))
	}
	if len(g.errs) > 0 || g.pkg.Types == nil {
		return nil, g.errs
	}
	g.specs = make(map[*types.TypeName]*typeDecl)
	g.marked = make(map[*types.TypeName]token.Pos)
	g.decided = make(map[string]token.Pos)

	files := slices.Clone(g.pkg.Syntax)
	slices.SortFunc(files, func(a, b *ast.File) int {
		return strings.Compare(g.pkg.Fset.File(a.Pos()).Name(), g.pkg.Fset.File(b.Pos()).Name())
	})
	for _, f := range files {
		g.readFile(f)
	}
	for _, f := range files {
		g.findNewCalls(f)
	}
	if len(g.errs) > 0 {
		return nil, g.errs
	}
	described := g.describedStructs()
	if len(g.errs) > 0 {
		return nil, g.errs
	}
	if len(described) == 0 && len(g.tools) == 0 {
		return nil, nil
	}
	src, err := g.emit(described)
	if err != nil {
		g.errs = append(g.errs, &Error{File: rel(g.dir, filepath.Dir(g.pkg.GoFiles[0])), Msg: err.Error()})
		return nil, g.errs
	}
	return src, nil
}

// loadError converts a list or parse error of go/packages.
func (g *generator) loadError(e packages.Error) *Error {
	// e.Pos is "file:line:col", "file:line", "file" or "".
	pos := e.Pos
	if pos == "" {
		return &Error{File: ".", Msg: e.Msg}
	}
	parts := strings.Split(pos, ":")
	line := 0
	for len(parts) > 1 {
		n, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil {
			break
		}
		line = n
		parts = parts[:len(parts)-1]
	}
	return &Error{File: rel(g.dir, strings.Join(parts, ":")), Line: line, Msg: e.Msg}
}

// readFile finds the file's directives and type declarations.
func (g *generator) readFile(f *ast.File) {
	// owners maps each doc comment to what it documents.
	owners := make(map[*ast.CommentGroup]ast.Node)
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Doc != nil {
				owners[d.Doc] = d
			}
		case *ast.GenDecl:
			if d.Doc != nil {
				owners[d.Doc] = d
				if d.Tok == token.TYPE && !d.Lparen.IsValid() && len(d.Specs) == 1 {
					owners[d.Doc] = d.Specs[0]
				}
			}
			if d.Tok != token.TYPE {
				continue
			}
			for _, s := range d.Specs {
				ts := s.(*ast.TypeSpec)
				if ts.Doc != nil {
					owners[ts.Doc] = ts
				}
				tn, _ := g.pkg.TypesInfo.Defs[ts.Name].(*types.TypeName)
				if tn == nil {
					continue
				}
				doc := ts.Doc
				if doc == nil && !d.Lparen.IsValid() {
					doc = d.Doc
				}
				g.specs[tn] = &typeDecl{spec: ts, doc: doc}
			}
		}
	}

	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if !strings.HasPrefix(c.Text, "//clawtool:") {
				continue
			}
			word, args, _ := strings.Cut(c.Text, " ")
			switch word {
			case toolDirective:
				fd, ok := owners[cg].(*ast.FuncDecl)
				if !ok {
					g.errorAt(c.Pos(), "%s must be in the doc comment of a function", toolDirective)
					continue
				}
				g.tool(fd, c, args)
			case describeDirective:
				ts, ok := owners[cg].(*ast.TypeSpec)
				if !ok {
					g.errorAt(c.Pos(), "%s must be in the doc comment of a struct type", describeDirective)
					continue
				}
				if strings.TrimSpace(args) != "" {
					g.errorAt(c.Pos(), "%s takes no arguments", describeDirective)
					continue
				}
				tn, _ := g.pkg.TypesInfo.Defs[ts.Name].(*types.TypeName)
				if _, isStruct := ts.Type.(*ast.StructType); !isStruct || tn == nil || ts.Assign.IsValid() {
					g.errorAt(c.Pos(), "%s must be in the doc comment of a struct type; %s is not one", describeDirective, ts.Name.Name)
					continue
				}
				if ts.TypeParams != nil {
					g.errorAt(c.Pos(), "%s: generic type %s is not supported", describeDirective, ts.Name.Name)
					continue
				}
				g.marked[tn] = c.Pos()
				g.roots = append(g.roots, tn.Type())
			default:
				g.errorAt(c.Pos(), "unknown directive %s (want %s or %s)", word, toolDirective, describeDirective)
			}
		}
	}
}

// findNewCalls records the In and Out types of every tool.New call in f.
func (g *generator) findNewCalls(f *ast.File) {
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		fun := ast.Unparen(call.Fun)
		switch x := fun.(type) {
		case *ast.IndexExpr:
			fun = x.X
		case *ast.IndexListExpr:
			fun = x.X
		}
		var id *ast.Ident
		switch x := fun.(type) {
		case *ast.Ident:
			id = x
		case *ast.SelectorExpr:
			id = x.Sel
		}
		if id == nil {
			return true
		}
		obj, _ := g.pkg.TypesInfo.Uses[id].(*types.Func)
		if obj == nil || obj.Pkg() == nil || obj.Pkg().Path() != toolPath || obj.Name() != "New" {
			return true
		}
		inst, ok := g.pkg.TypesInfo.Instances[id]
		if !ok {
			return true
		}
		sig, _ := inst.Type.(*types.Signature)
		if sig == nil || sig.Params().Len() < 3 {
			return true
		}
		fn, _ := sig.Params().At(2).Type().Underlying().(*types.Signature)
		if fn == nil || fn.Params().Len() != 2 || fn.Results().Len() != 2 {
			return true
		}
		g.roots = append(g.roots, fn.Params().At(1).Type(), fn.Results().At(0).Type())
		return true
	})
}

// tool reads a //clawtool:tool function.
func (g *generator) tool(fd *ast.FuncDecl, directive *ast.Comment, args string) {
	fn, _ := g.pkg.TypesInfo.Defs[fd.Name].(*types.Func)
	if fn == nil {
		return
	}
	t := &toolSpec{decl: fd, name: snake(fd.Name.Name)}
	for _, a := range strings.Fields(args) {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k != "name" {
			g.errorAt(directive.Pos(), "%s: unknown option %q (want name=NAME)", toolDirective, a)
			return
		}
		t.name = v
	}
	if !validToolName.MatchString(t.name) {
		g.errorAt(directive.Pos(), "tool name %q must match %s", t.name, validToolName)
		return
	}
	if fd.Recv != nil {
		g.errorAt(fd.Pos(), "%s on method %s: only package-level functions can be tools", toolDirective, fd.Name.Name)
		return
	}
	if fd.Type.TypeParams != nil {
		g.errorAt(fd.Pos(), "%s on generic function %s: tool functions cannot have type parameters", toolDirective, fd.Name.Name)
		return
	}
	for _, other := range g.tools {
		if other.name == t.name {
			g.errorAt(fd.Pos(), "duplicate tool name %q (also the name of %s at %s)", t.name, other.decl.Name.Name, g.where(other.decl.Pos()))
			return
		}
	}

	lines := docLines(g.pkg.Fset, fd.Doc)
	doc, lerrs := parseFuncDoc(lines)
	for _, e := range lerrs {
		g.errorLine(fd.Doc.Pos(), e.line, e.msg)
	}
	t.desc = description(fd.Name.Name, doc.summary)
	if t.desc == "" {
		g.errorAt(fd.Pos(), "tool function %s has no doc comment: its first paragraph is the tool's description", fd.Name.Name)
	}

	sig := fn.Type().(*types.Signature)
	params := sig.Params()
	first := 0
	if params.Len() > 0 && isContext(params.At(0).Type()) {
		t.hasCtx = true
		first = 1
	}
	t.variadic = sig.Variadic()

	// Parameters and their documentation.
	byName := make(map[string]int)    // parameter or property name → index into t.fields
	byField := make(map[string]int)   // Go field name → parameter index
	props := make(map[string]int)     // property name → parameter index
	allNames := make(map[string]bool) // every parameter, also those in error
	for i := range params.Len() {
		allNames[params.At(i).Name()] = true
		allNames[snake(params.At(i).Name())] = true
	}
	for i := first; i < params.Len(); i++ {
		p := params.At(i)
		if isContext(p.Type()) {
			g.errorAt(p.Pos(), "parameter %s: context.Context must be the first parameter", p.Name())
			continue
		}
		if p.Name() == "" || p.Name() == "_" {
			g.errorAt(fd.Pos(), "parameter %d of %s has no name: tool arguments are named after the parameters", i+1, fd.Name.Name)
			continue
		}
		typ := p.Type()
		if err := g.expressible(typ, "parameter "+p.Name(), make(map[types.Type]bool)); err != "" {
			g.errorAt(p.Pos(), "%s", err)
			continue
		}
		prop := snake(p.Name())
		f := argField{goName: exported(p.Name()), prop: prop, typ: typ}
		if j, dup := byField[f.goName]; dup {
			g.errorAt(p.Pos(), "parameters %s and %s both become field %s", params.At(j).Name(), p.Name(), f.goName)
			continue
		}
		if j, dup := props[prop]; dup {
			g.errorAt(p.Pos(), "parameters %s and %s both become property %q", params.At(j).Name(), p.Name(), prop)
			continue
		}
		byField[f.goName], props[prop] = i, i
		byName[p.Name()] = len(t.fields)
		byName[prop] = len(t.fields)
		t.fields = append(t.fields, f)
	}

	documented := make(map[int]int)          // field index → doc line
	docs := make([]*paramDoc, len(t.fields)) // field index → its entry
	for k := range doc.params {
		pd := &doc.params[k]
		idx, ok := byName[pd.name]
		if !ok {
			if allNames[pd.name] {
				// The context parameter, which may be documented but is no
				// argument, or a parameter already reported as an error.
				continue
			}
			g.errorLine(fd.Doc.Pos(), pd.line, fmt.Sprintf("doc comment describes parameter %q, but %s has no such parameter", pd.name, fd.Name.Name))
			continue
		}
		if line, dup := documented[idx]; dup {
			g.errorLine(fd.Doc.Pos(), pd.line, fmt.Sprintf("parameter %q is described twice (also on line %d)", pd.name, line))
			continue
		}
		documented[idx] = pd.line
		docs[idx] = pd
	}

	for idx := range t.fields {
		f := &t.fields[idx]
		jsonTag := f.prop
		var parts []string
		if pd := docs[idx]; pd != nil {
			if pd.optional && !pd.hasDef {
				jsonTag += ",omitempty"
			}
			parts = append(parts, tagPart("json", jsonTag))
			if pd.text != "" {
				parts = append(parts, tagPart("description", pd.text))
			}
			if pd.hasDef {
				v, err := defaultValue(f.typ, pd.def)
				if err != "" {
					g.errorLine(fd.Doc.Pos(), pd.line, fmt.Sprintf("parameter %s: %s", pd.name, err))
					continue
				}
				parts = append(parts, tagPart("default", v))
			}
		} else {
			parts = append(parts, tagPart("json", jsonTag))
		}
		f.tag = strings.Join(parts, " ")
	}

	// Results: (), (Out), (error) or (Out, error).
	res := sig.Results()
	switch {
	case res.Len() == 0:
	case res.Len() == 1 && isError(res.At(0).Type()):
		t.hasErr = true
	case res.Len() == 1:
		t.out = res.At(0).Type()
	case res.Len() == 2 && isError(res.At(1).Type()) && !isError(res.At(0).Type()):
		t.out, t.hasErr = res.At(0).Type(), true
	default:
		g.errorAt(fd.Pos(), "%s returns %s: a tool function returns (), (Out), (error) or (Out, error)", fd.Name.Name, types.TypeString(res, g.relativeTo))
		return
	}
	if t.out != nil {
		if err := g.expressible(t.out, "the result of "+fd.Name.Name, make(map[types.Type]bool)); err != "" {
			g.errorAt(fd.Pos(), "%s", err)
			return
		}
		g.roots = append(g.roots, t.out)
	}
	for _, f := range t.fields {
		g.roots = append(g.roots, f.typ)
	}

	base := fd.Name.Name
	t.argsType = unexported(base) + "Args"
	if ast.IsExported(base) {
		t.ctor = "New" + base + "Tool"
	} else {
		t.ctor = "new" + exported(base) + "Tool"
	}
	g.claim(t.argsType, fd.Pos())
	g.claim(t.ctor, fd.Pos())
	if len(g.tools) == 0 {
		g.claim("RegisterTools", fd.Pos())
	}
	g.tools = append(g.tools, t)
}

// claim reserves a generated top-level name, reporting a clash with the
// package's own declarations or another generated name.
func (g *generator) claim(name string, pos token.Pos) {
	if obj := g.pkg.Types.Scope().Lookup(name); obj != nil {
		g.errorAt(pos, "generated name %s is already declared at %s", name, g.where(obj.Pos()))
		return
	}
	if prev, ok := g.decided[name]; ok {
		g.errorAt(pos, "generated name %s is also generated for %s", name, g.where(prev))
		return
	}
	g.decided[name] = pos
}

// relativeTo qualifies types for messages: the package's own types bare,
// others by package name.
func (g *generator) relativeTo(p *types.Package) string {
	if p == g.pkg.Types {
		return ""
	}
	return p.Name()
}

// tagPart returns key:"value" with value quoted as reflect.StructTag reads it.
func tagPart(key, value string) string {
	return key + ":" + strconv.Quote(value)
}

func isContext(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "context" && n.Obj().Name() == "Context"
}

var errorType = types.Universe.Lookup("error").Type()

func isError(t types.Type) bool { return types.Identical(t, errorType) }

// hasHook reports whether t decodes itself or describes its own schema, in
// which case the core does not look inside it.
func hasHook(t types.Type) bool {
	for _, m := range []string{"UnmarshalJSON", "UnmarshalText", "JSONSchema"} {
		obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(t), true, nil, m)
		if _, ok := obj.(*types.Func); ok {
			return true
		}
	}
	return false
}

// expressible returns "" when the core can describe t in JSON Schema, and
// otherwise why not, naming the path to the offending part.
func (g *generator) expressible(t types.Type, path string, seen map[types.Type]bool) string {
	switch t := t.(type) {
	case *types.Alias:
		return g.expressible(types.Unalias(t), path, seen)
	case *types.Named:
		if seen[t] {
			return ""
		}
		seen[t] = true
		if hasHook(t) {
			return ""
		}
		return g.expressible(t.Underlying(), path, seen)
	case *types.Basic:
		switch {
		case t.Kind() == types.Invalid:
			if g.typeErr != "" {
				return "the type of " + path + " does not type-check: " + g.typeErr
			}
			return "the type of " + path + " does not type-check"
		case t.Info()&types.IsComplex != 0:
			return fmt.Sprintf("%s has type %s: JSON has no complex numbers", path, types.TypeString(t, g.relativeTo))
		case t.Kind() == types.UnsafePointer:
			return fmt.Sprintf("%s has type unsafe.Pointer, which JSON cannot express", path)
		}
		return ""
	case *types.Pointer:
		return g.expressible(t.Elem(), path, seen)
	case *types.Slice:
		return g.expressible(t.Elem(), path+"[i]", seen)
	case *types.Array:
		return g.expressible(t.Elem(), path+"[i]", seen)
	case *types.Map:
		if b, ok := t.Key().Underlying().(*types.Basic); !ok || b.Info()&types.IsString == 0 {
			return fmt.Sprintf("%s has type %s: map keys must be strings", path, types.TypeString(t, g.relativeTo))
		}
		return g.expressible(t.Elem(), path+"[key]", seen)
	case *types.Struct:
		for i := range t.NumFields() {
			f := t.Field(i)
			name, skip := jsonField(f, t.Tag(i))
			if skip {
				continue
			}
			if msg := g.expressible(f.Type(), path+"."+name, seen); msg != "" {
				return msg
			}
		}
		return ""
	case *types.Interface:
		if t.NumMethods() > 0 {
			return fmt.Sprintf("%s has type %s: an interface with methods cannot be decoded from JSON", path, types.TypeString(t, g.relativeTo))
		}
		return ""
	case *types.Chan:
		return fmt.Sprintf("%s has type %s: JSON cannot express a channel", path, types.TypeString(t, g.relativeTo))
	case *types.Signature:
		return fmt.Sprintf("%s has type %s: JSON cannot express a function", path, types.TypeString(t, g.relativeTo))
	case *types.TypeParam:
		return fmt.Sprintf("%s has a type parameter type %s", path, t)
	}
	return fmt.Sprintf("%s has type %s, which JSON cannot express", path, types.TypeString(t, g.relativeTo))
}

// jsonField returns the Go name of a struct field for paths, and whether
// encoding/json skips it (unexported and not embedded, or tagged "-").
func jsonField(f *types.Var, tag string) (name string, skip bool) {
	if !f.Exported() && !f.Embedded() {
		return "", true
	}
	if reflect.StructTag(tag).Get("json") == "-" {
		return "", true
	}
	return f.Name(), false
}

// A described is a struct type that gets a FieldDescriptions method.
type described struct {
	named *types.Named
	decl  *typeDecl
	descs [][2]string // key, description; "" first, then fields in order
}

// describedStructs returns the package's struct types that get a
// FieldDescriptions method, in source order.
func (g *generator) describedStructs() []*described {
	found := make(map[*types.TypeName]bool)
	seen := make(map[types.Type]bool)
	for _, r := range g.roots {
		g.reach(r, seen, found)
	}
	var out []*described
	for tn := range found {
		decl := g.specs[tn]
		if decl == nil {
			continue
		}
		named := tn.Type().(*types.Named)
		markPos, marked := g.marked[tn]
		if has := ownMember(named, "FieldDescriptions"); has != nil {
			if marked {
				g.errorAt(markPos, "%s already has a FieldDescriptions member (at %s)", tn.Name(), g.where(has.Pos()))
			}
			continue
		}
		d := &described{named: named, decl: decl}
		if text := docText(decl.doc, g.pkg.Types.Scope()); text != "" {
			d.descs = append(d.descs, [2]string{"", text})
		}
		st := decl.spec.Type.(*ast.StructType)
		for _, f := range st.Fields.List {
			text := docText(f.Doc, g.pkg.Types.Scope())
			if c := docText(f.Comment, g.pkg.Types.Scope()); c != "" {
				text = strings.TrimSpace(text + " " + c)
			}
			if text == "" || reflect.StructTag(unquoteTag(f.Tag)).Get("json") == "-" {
				continue
			}
			for _, name := range fieldNames(f) {
				if ast.IsExported(name) {
					d.descs = append(d.descs, [2]string{name, text})
				}
			}
		}
		if len(d.descs) > 0 {
			out = append(out, d)
		}
	}
	// Source order by file name and offset: token.Pos alone orders files
	// as they were parsed, which go/packages does concurrently.
	slices.SortFunc(out, func(a, b *described) int {
		pa, pb := g.pkg.Fset.Position(a.decl.spec.Pos()), g.pkg.Fset.Position(b.decl.spec.Pos())
		return cmp.Or(strings.Compare(pa.Filename, pb.Filename), cmp.Compare(pa.Offset, pb.Offset))
	})
	return out
}

// reach adds to found the package's own non-generic struct types reachable
// from t through the parts of a type the schema describes.
func (g *generator) reach(t types.Type, seen map[types.Type]bool, found map[*types.TypeName]bool) {
	switch t := t.(type) {
	case *types.Alias:
		g.reach(types.Unalias(t), seen, found)
	case *types.Named:
		if seen[t] {
			return
		}
		seen[t] = true
		if hasHook(t) {
			return
		}
		if _, isStruct := t.Underlying().(*types.Struct); isStruct && t.Obj().Pkg() == g.pkg.Types && t.TypeParams().Len() == 0 && t.Origin() == t {
			found[t.Obj()] = true
		}
		g.reach(t.Underlying(), seen, found)
	case *types.Pointer:
		g.reach(t.Elem(), seen, found)
	case *types.Slice:
		g.reach(t.Elem(), seen, found)
	case *types.Array:
		g.reach(t.Elem(), seen, found)
	case *types.Map:
		g.reach(t.Elem(), seen, found)
	case *types.Struct:
		for i := range t.NumFields() {
			if _, skip := jsonField(t.Field(i), t.Tag(i)); !skip {
				g.reach(t.Field(i).Type(), seen, found)
			}
		}
	}
}

// ownMember returns the method or field named name that t declares
// itself (not one promoted from an embedded field), or nil.
func ownMember(t *types.Named, name string) types.Object {
	for i := range t.NumMethods() {
		if m := t.Method(i); m.Name() == name {
			return m
		}
	}
	if st, ok := t.Underlying().(*types.Struct); ok {
		for i := range st.NumFields() {
			if f := st.Field(i); f.Name() == name {
				return f
			}
		}
	}
	return nil
}

// fieldNames returns the Go names a field declaration declares: its names,
// or for an embedded field the name of its type.
func fieldNames(f *ast.Field) []string {
	if len(f.Names) > 0 {
		names := make([]string, len(f.Names))
		for i, n := range f.Names {
			names[i] = n.Name
		}
		return names
	}
	t := f.Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	switch x := t.(type) {
	case *ast.Ident:
		return []string{x.Name}
	case *ast.SelectorExpr:
		return []string{x.Sel.Name}
	}
	return nil
}

func unquoteTag(lit *ast.BasicLit) string {
	if lit == nil {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return s
}
