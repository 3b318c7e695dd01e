package tool_test

import (
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDocLinks checks the documentation of every package in the module:
// each doc link ([Name], [Type.Method], [pkg.Name]) must name something
// that exists, so that go doc and pkg.go.dev render it as a link rather
// than as bracketed text.
func TestDocLinks(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != "." && (name == "testdata" || name == "interop" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		checkDocLinks(t, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// unresolved finds the text of a doc link that the parser left as plain
// text: brackets around a Go identifier, optionally qualified, not
// preceded by a letter or digit (as in m[key]). Such a name either does
// not exist or is glued to a letter that stops it being a link ("[Part]s").
var unresolved = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])\[\*?([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2})\]`)

func checkDocLinks(t *testing.T, dir string) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Errorf("%s: %v", dir, err)
		return
	}
	for _, p := range pkgs {
		var files []*ast.File
		imports := map[string]string{} // name in the package -> import path
		for _, f := range p.Files {
			files = append(files, f)
			for _, im := range f.Imports {
				path, _ := strconv.Unquote(im.Path.Value)
				name := filepath.Base(path)
				if im.Name != nil {
					name = im.Name.Name
				} else if strings.HasPrefix(name, "v") && strings.Count(path, "/") > 1 {
					if _, err := strconv.Atoi(name[1:]); err == nil { // .../v2
						name = filepath.Base(filepath.Dir(path))
					}
				}
				imports[name] = path
			}
		}
		dp, err := doc.NewFromFiles(fset, files, "example.com/"+dir, doc.PreserveAST)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		pr := dp.Parser()
		known := pr.LookupPackage
		pr.LookupPackage = func(name string) (string, bool) {
			if path, ok := imports[name]; ok {
				return path, true
			}
			return known(name)
		}
		check := func(what, text string) {
			if text == "" {
				return
			}
			for _, link := range unresolvedLinks(pr.Parse(text)) {
				t.Errorf("%s: %s: doc link [%s] does not resolve", dir, what, link)
			}
		}
		check("package "+p.Name, dp.Doc)
		for _, c := range dp.Consts {
			check(strings.Join(c.Names, ", "), c.Doc)
		}
		for _, v := range dp.Vars {
			check(strings.Join(v.Names, ", "), v.Doc)
		}
		for _, f := range dp.Funcs {
			check(f.Name, f.Doc)
		}
		for _, typ := range dp.Types {
			check(typ.Name, typ.Doc)
			for _, c := range typ.Consts {
				check(strings.Join(c.Names, ", "), c.Doc)
			}
			for _, v := range typ.Vars {
				check(strings.Join(v.Names, ", "), v.Doc)
			}
			for _, f := range typ.Funcs {
				check(f.Name, f.Doc)
			}
			for _, m := range typ.Methods {
				check(typ.Name+"."+m.Name, m.Doc)
			}
			// Field and interface method comments are shown by go doc too.
			ast.Inspect(typ.Decl, func(n ast.Node) bool {
				if f, ok := n.(*ast.Field); ok && f.Doc != nil {
					check(typ.Name+" field", f.Doc.Text())
				}
				return true
			})
		}
	}
}

// unresolvedLinks returns the bracketed names left as plain text in a
// parsed comment; the parser turns every resolved one into a DocLink.
func unresolvedLinks(d *comment.Doc) []string {
	var out []string
	var walk func(texts []comment.Text)
	walk = func(texts []comment.Text) {
		for _, x := range texts {
			switch x := x.(type) {
			case comment.Plain:
				for _, m := range unresolved.FindAllStringSubmatch(string(x), -1) {
					out = append(out, m[1])
				}
			case comment.Italic:
				for _, m := range unresolved.FindAllStringSubmatch(string(x), -1) {
					out = append(out, m[1])
				}
			case *comment.Link:
				walk(x.Text)
			}
		}
	}
	for _, b := range d.Content {
		switch b := b.(type) {
		case *comment.Paragraph:
			walk(b.Text)
		case *comment.Heading:
			walk(b.Text)
		case *comment.List:
			for _, it := range b.Items {
				for _, c := range it.Content {
					if p, ok := c.(*comment.Paragraph); ok {
						walk(p.Text)
					}
				}
			}
		}
	}
	return out
}

// TestMarkdownLinks checks that the relative links of the module's
// Markdown files lead to files that exist.
func TestMarkdownLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), target)); err != nil {
				t.Errorf("%s: link to %s: no such file", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
