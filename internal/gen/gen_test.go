package gen

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the want/ sections of testdata/*.txtar with what the generator produces")

// toolStub stands in for package tool in the golden tests, so that they
// depend only on the API the generated code uses, not on the core building.
// examples/weather compiles generated code against the real package.
const toolStub = `package tool

import (
	"context"
	"encoding/json"
)

type Tool interface {
	Name() string
	Description() string
	Parameters() json.RawMessage
	Execute(ctx context.Context, args json.RawMessage) (Result, error)
}

type Result struct{ Output string }

type Options struct{}

type Option func(*Options)

func New[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...Option) (Tool, error) {
	return nil, nil
}

func Must(t Tool, err error) Tool { return t }

type Registry struct{}

func (r *Registry) RegisterUnique(t Tool) error { return nil }

var ErrDuplicate error

type FieldDescriber interface {
	FieldDescriptions() map[string]string
}
`

// TestGolden runs the generator on each testdata/*.txtar archive. The
// archive's files (other than want/...) form a module; want/errors holds
// the expected error output, and want/DIR/clawtool_tools.gen.go the file
// expected in package directory DIR. With -update the want/ sections are
// rewritten. Generated files must also type-check.
func TestGolden(t *testing.T) {
	archives, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(archives) == 0 {
		t.Fatal("no testdata/*.txtar")
	}
	for _, file := range archives {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			dir := writeModule(t, ar)
			cfg := &Config{Dir: dir, Env: testEnv()}
			files, err := Generate(context.Background(), cfg, "./...")

			var got []txtar.File
			var list Errors
			switch {
			case errors.As(err, &list):
				got = append(got, txtar.File{Name: "want/errors", Data: []byte(list.Error() + "\n")})
			case err != nil:
				t.Fatalf("Generate: %v", err)
			default:
				for _, f := range files {
					if f.Content == nil {
						continue
					}
					r, err := filepath.Rel(dir, f.Path)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, txtar.File{Name: "want/" + filepath.ToSlash(r), Data: f.Content})
				}
				typeCheck(t, dir, files)
			}

			var want []txtar.File
			var kept []txtar.File
			for _, f := range ar.Files {
				if strings.HasPrefix(f.Name, "want/") {
					want = append(want, f)
				} else {
					kept = append(kept, f)
				}
			}
			if *update {
				ar.Files = append(kept, got...)
				if err := os.WriteFile(file, txtar.Format(ar), 0o666); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(archiveText(want), archiveText(got)); diff != "" {
				t.Errorf("generated output differs from %s (-want +got):\n%s", file, diff)
			}
		})
	}
}

// testEnv is the environment of the go command in tests: hermetic, with
// no workspace, proxy or toolchain switch.
func testEnv() []string {
	return append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
}

// writeModule writes the archive's input files into a new module that
// requires the tool stub, and returns its directory.
func writeModule(t *testing.T, ar *txtar.Archive) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", []byte("module example.com/test\n\ngo 1.26\n\nrequire "+toolPath+" v0.0.0\n\nreplace "+toolPath+" => ./_tool\n"))
	write("_tool/go.mod", []byte("module "+toolPath+"\n\ngo 1.26\n"))
	write("_tool/tool.go", []byte(toolStub))
	for _, f := range ar.Files {
		if !strings.HasPrefix(f.Name, "want/") {
			write(f.Name, f.Data)
		}
	}
	return dir
}

// typeCheck writes the generated files and checks that every package then
// type-checks.
func typeCheck(t *testing.T, dir string, files []File) {
	t.Helper()
	for _, f := range files {
		if f.Content != nil {
			if err := os.WriteFile(f.Path, f.Content, 0o666); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedSyntax,
		Dir:  dir,
		Env:  testEnv(),
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("generated code does not type-check: %v", e)
		}
	}
}

func archiveText(files []txtar.File) string {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b txtar.File) int { return strings.Compare(a.Name, b.Name) })
	var b bytes.Buffer
	for _, f := range files {
		b.WriteString("-- " + f.Name + " --\n")
		b.Write(f.Data)
	}
	return b.String()
}
