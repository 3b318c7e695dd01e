package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/miniopenclaw/tool/internal/gen"
)

const genAbout = `Gen writes clawtool_tools.gen.go in each package (default "."): a
FieldDescriptions method for the argument structs of tool.New calls and for
structs marked //clawtool:describe, made from their doc comments; and a tool
with a constructor New<Func>Tool for every function marked //clawtool:tool,
plus RegisterTools. Run it from a go:generate line:

	//go:generate go run github.com/miniopenclaw/tool/cmd/clawtool gen

Problems are reported as file:line: message and make the exit status 1.
The grammar of directives and doc comments is in docs/tools.md, section
"Describing tools with doc comments".`

// genCommand adapts runGen to the command table.
func genCommand(ctx context.Context, e *env, args []string) int {
	return runGen(ctx, args, e.stdout, e.stderr)
}

// runGen is "clawtool gen [flags] [packages]". It returns exitOK when every
// file is up to date or written, exitToolError when the packages have
// problems (or, with -check, a file is stale), and exitUsage for a bad
// command line.
func runGen(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("gen", flag.ContinueOnError)
	flags.SetOutput(stderr)
	check := flags.Bool("check", false, "write nothing; report each file that is missing or out of date and exit 1 if any is")
	tags := flags.String("tags", "", "comma-separated build tags to load the packages with")
	verbose := flags.Bool("v", false, "print the path of each file written or removed")
	flags.Usage = func() {
		fmt.Fprintf(flags.Output(), "Usage: clawtool gen [flags] [packages]\n\n%s\n\nFlags:\n", genAbout)
		flags.PrintDefaults()
	}
	if code := parseFlags(flags, args, stdout); code >= 0 {
		return code
	}

	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "clawtool gen: %v\n", err)
		return exitToolError
	}
	cfg := &gen.Config{Dir: wd}
	if *tags != "" {
		cfg.BuildFlags = []string{"-tags=" + *tags}
	}
	files, err := gen.Generate(ctx, cfg, flags.Args()...)
	if err != nil {
		var list gen.Errors
		if errors.As(err, &list) {
			for _, e := range list {
				fmt.Fprintln(stderr, e)
			}
		} else {
			fmt.Fprintf(stderr, "clawtool gen: %v\n", err)
		}
		return exitToolError
	}

	code := exitOK
	for _, f := range files {
		name := relPath(wd, f.Path)
		old, err := os.ReadFile(f.Path)
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "clawtool gen: %v\n", err)
			code = exitToolError
			continue
		}
		if exists && !bytes.HasPrefix(old, []byte(gen.Header)) {
			fmt.Fprintf(stderr, "clawtool gen: %s was not written by clawtool gen; not touching it\n", name)
			code = exitToolError
			continue
		}
		switch {
		case f.Content == nil && !exists, bytes.Equal(old, f.Content) && exists:
			// Up to date.
		case *check && f.Content == nil:
			fmt.Fprintf(stderr, "%s: stale: the package has nothing to generate\n", name)
			code = exitToolError
		case *check:
			fmt.Fprintf(stderr, "%s: out of date: run clawtool gen\n", name)
			code = exitToolError
		case f.Content == nil:
			if err := os.Remove(f.Path); err != nil {
				fmt.Fprintf(stderr, "clawtool gen: %v\n", err)
				code = exitToolError
			} else if *verbose {
				fmt.Fprintf(stdout, "removed %s\n", name)
			}
		default:
			if err := os.WriteFile(f.Path, f.Content, 0o666); err != nil {
				fmt.Fprintf(stderr, "clawtool gen: %v\n", err)
				code = exitToolError
			} else if *verbose {
				fmt.Fprintf(stdout, "wrote %s\n", name)
			}
		}
	}
	return code
}

// relPath returns path relative to dir when it has such a form.
func relPath(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil {
		return r
	}
	return path
}
