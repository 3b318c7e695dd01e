package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"regexp/syntax"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/recost"
)

// ReadArgs are read_file's arguments.
type ReadArgs struct {
	Path string `json:"path" minLength:"1" maxLength:"4096" description:"File path relative to the workspace."`
}

func (ts *Toolset) readFile() tool.Tool {
	return tool.Must(tool.New("read_file",
		fmt.Sprintf("Reads a text file in the workspace. Returns at most %d bytes.", MaxReadBytes),
		func(ctx context.Context, in ReadArgs) (string, error) { return ts.readText(in.Path) },
		tool.WithResolve(func(in *ReadArgs) error { return ts.resolveArg(&in.Path, "/path", followLinks) }),
		tool.WithAnnotations(tool.Annotations{Title: "Read file", ReadOnly: true, Idempotent: true})))
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// WriteArgs are write_file's arguments.
type WriteArgs struct {
	Path    string `json:"path" minLength:"1" maxLength:"4096" description:"File path relative to the workspace; missing parent directories are created."`
	Content string `json:"content" maxLength:"1048576" description:"The whole new content of the file."`
}

func (ts *Toolset) writeFile() tool.Tool {
	return tool.Must(tool.New("write_file",
		"Creates or replaces a file in the workspace with the given content.",
		func(ctx context.Context, in WriteArgs) (string, error) {
			if len(in.Content) > MaxWriteBytes {
				return "", fmt.Errorf("content is %d bytes; the limit is %d", len(in.Content), MaxWriteBytes)
			}
			rel, err := ts.writable(in.Path)
			if err != nil {
				return "", err
			}
			if err := ts.replace(rel, []byte(in.Content)); err != nil {
				return "", err
			}
			return fmt.Sprintf("wrote %d bytes to %s", len(in.Content), rel), nil
		},
		tool.WithResolve(func(in *WriteArgs) error { return ts.resolveArg(&in.Path, "/path", keepFinalLink) }),
		tool.WithAnnotations(tool.Annotations{Title: "Write file", Destructive: true, Idempotent: true})))
}

// writable checks rel, a resolved path, that a tool is about to write.
func (ts *Toolset) writable(rel string) (string, error) {
	if rel == "." {
		return "", errors.New("the path names the workspace itself, not a file")
	}
	prot, ok, err := ts.protectedBy(rel)
	if err != nil {
		return "", err
	}
	if ok {
		return "", fmt.Errorf("%s is protected (%s stays read-only)", rel, prot)
	}
	return rel, nil
}

// EditArgs are edit_file's arguments.
type EditArgs struct {
	Path string `json:"path" minLength:"1" maxLength:"4096" description:"File path relative to the workspace."`
	Old  string `json:"old" minLength:"1" maxLength:"1048576" description:"The exact text to replace. It must occur exactly once in the file; include surrounding lines to make it unique."`
	New  string `json:"new" maxLength:"1048576" description:"The replacement text."`
}

func (ts *Toolset) editFile() tool.Tool {
	return tool.Must(tool.New("edit_file",
		"Replaces one exact occurrence of a text in a workspace file. Fails when the text is missing or occurs more than once.",
		func(ctx context.Context, in EditArgs) (string, error) {
			rel, err := ts.writable(in.Path)
			if err != nil {
				return "", err
			}
			old, err := ts.readForEdit(rel)
			if err != nil {
				return "", err
			}
			switch n := bytes.Count(old, []byte(in.Old)); n {
			case 0:
				return "", fmt.Errorf("the text to replace does not occur in %s", rel)
			case 1:
			default:
				return "", fmt.Errorf("the text to replace occurs %d times in %s; include more surrounding text so it occurs once", n, rel)
			}
			updated := bytes.Replace(old, []byte(in.Old), []byte(in.New), 1)
			if len(updated) > MaxWriteBytes {
				return "", fmt.Errorf("the edited file would be %d bytes; the limit is %d", len(updated), MaxWriteBytes)
			}
			if err := ts.replace(rel, updated); err != nil {
				return "", err
			}
			return fmt.Sprintf("replaced 1 occurrence in %s", rel), nil
		},
		tool.WithResolve(func(in *EditArgs) error { return ts.resolveArg(&in.Path, "/path", keepFinalLink) }),
		tool.WithAnnotations(tool.Annotations{Title: "Edit file", Destructive: true})))
}

// ListArgs are list_dir's arguments.
type ListArgs struct {
	Path string `json:"path,omitempty" maxLength:"4096" description:"Directory relative to the workspace; empty for the workspace itself."`
}

func (ts *Toolset) listDir() tool.Tool {
	return tool.Must(tool.New("list_dir",
		fmt.Sprintf("Lists a workspace directory: one entry per line, directories ending in /, symbolic links as name -> target. At most %d entries.", MaxEntries),
		func(ctx context.Context, in ListArgs) (string, error) {
			rel := in.Path
			f, err := ts.openResolved(rel, os.O_RDONLY|syscall.O_DIRECTORY)
			if err != nil {
				return "", err
			}
			defer f.Close()
			ents, err := f.ReadDir(MaxEntries + 1)
			if err != nil && !errors.Is(err, io.EOF) {
				return "", err
			}
			var b strings.Builder
			for i, e := range ents {
				if i == MaxEntries {
					fmt.Fprintf(&b, "[listing cut at %d entries]\n", MaxEntries)
					break
				}
				name := path.Join(rel, e.Name())
				switch {
				case e.IsDir():
					b.WriteString(e.Name() + "/\n")
				case e.Type()&fs.ModeSymlink != 0:
					target, _ := ts.root.Readlink(name)
					fmt.Fprintf(&b, "%s -> %s\n", e.Name(), target)
				default:
					b.WriteString(e.Name() + "\n")
				}
			}
			return b.String(), nil
		},
		tool.WithResolve(func(in *ListArgs) error { return ts.resolveArg(&in.Path, "/path", followLinks) }),
		tool.WithAnnotations(tool.Annotations{Title: "List directory", ReadOnly: true, Idempotent: true})))
}

// GlobArgs are glob's arguments.
type GlobArgs struct {
	Pattern string `json:"pattern" minLength:"1" maxLength:"1024" description:"A path.Match pattern relative to the workspace, such as src/*.go or */*_test.go."`
}

func (ts *Toolset) glob() tool.Tool {
	return tool.Must(tool.New("glob",
		fmt.Sprintf("Lists workspace paths matching a pattern (path.Match syntax: *, ?, [a-z], each within one path element). Symbolic links before the first wildcard are followed; links the wildcards meet are listed, not entered. At most %d paths.", MaxEntries),
		func(ctx context.Context, in GlobArgs) (string, error) {
			matches, w, err := ts.globMatches(ctx, in.Pattern, MaxEntries+1)
			if err != nil {
				return "", err
			}
			cut := len(matches) > MaxEntries
			if cut {
				matches = matches[:MaxEntries]
			}
			out := strings.Join(matches, "\n")
			switch {
			case cut:
				out += fmt.Sprintf("\n[cut at %d paths]", MaxEntries)
			case w != nil && w.note != "":
				out += "\n" + w.note
			case len(matches) == 0:
				out = "no paths match"
			}
			return out, nil
		},
		tool.WithResolve(func(in *GlobArgs) error { return ts.resolvePattern(&in.Pattern) }),
		tool.WithAnnotations(tool.Annotations{Title: "Find files", ReadOnly: true, Idempotent: true})))
}

// resolvePattern resolves the literal directory a glob pattern starts in
// as a path argument (links followed) and puts the resolved directory,
// its wildcard characters escaped, in front of the rest of the pattern.
func (ts *Toolset) resolvePattern(p *string) error {
	if _, err := path.Match(*p, ""); err != nil {
		return &tool.ArgumentError{Violations: []tool.Violation{{Pointer: "/pattern", Expected: "a path.Match pattern", Got: fmt.Sprintf("%q: %v", *p, err)}}}
	}
	dir, segs, err := globSegments(*p)
	if err != nil {
		return &tool.ArgumentError{Violations: []tool.Violation{{Pointer: "/pattern", Expected: "a pattern relative to the workspace", Got: err.Error()}}}
	}
	if err := ts.resolveArg(&dir, "/pattern", followLinks); err != nil {
		return err
	}
	if dir == "." && len(segs) > 0 {
		*p = strings.Join(segs, "/")
		return nil
	}
	*p = path.Join(append([]string{escapeMeta(dir)}, segs...)...)
	return nil
}

// escapeMeta quotes the path.Match syntax in a resolved path, which has
// no backslash.
func escapeMeta(s string) string {
	if !strings.ContainsAny(s, "*?[") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r == '*' || r == '?' || r == '[' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// globMatches returns the paths of the workspace that match pattern, a
// pattern resolvePattern resolved, in lexical order, at most limit of
// them, and the walk that found them (nil for a pattern without
// wildcards).
func (ts *Toolset) globMatches(ctx context.Context, pattern string, limit int) ([]string, *walk, error) {
	dir, segs, err := globSegments(pattern)
	if err != nil {
		return nil, nil, err
	}
	if segs == nil {
		if _, err := ts.root.Lstat(dir); err != nil {
			return nil, nil, nil
		}
		return []string{dir}, nil, nil
	}
	// The directory part may hold escaped wildcard characters: it is a
	// pattern too, matched literally by the walk.
	for hasMeta(dir) {
		segs = append([]string{path.Base(dir)}, segs...)
		dir = path.Dir(dir)
	}
	if dir == "" {
		dir = "."
	}
	f, err := ts.openResolved(dir, os.O_RDONLY|syscall.O_DIRECTORY)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	defer f.Close()
	w := ts.newWalk(ctx)
	var out []string
	if w.enter(f) {
		w.glob(f, dir, segs, &out, limit)
	}
	if w.err != nil {
		return nil, w, fmt.Errorf("glob stopped: %w", w.err)
	}
	return out, w, nil
}

// compileGrep compiles a grep pattern, refusing one whose program would
// hold more than MaxGrepInsts instructions before building it, and
// returns the matcher steps each byte it reads is charged: one, and one
// more for each 8 instructions or 32 bytes of the pattern, as a schema's
// pattern is charged.
func compileGrep(pattern string) (*regexp.Regexp, int, error) {
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, 0, fmt.Errorf("bad pattern: %v", err)
	}
	insts := recost.Insts(parsed, MaxGrepInsts)
	if insts > MaxGrepInsts {
		return nil, 0, fmt.Errorf("bad pattern: its program would hold more than %d instructions (a counted repetition such as {999} repeats what it applies to); repeat less", MaxGrepInsts)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, 0, fmt.Errorf("bad pattern: %v", err)
	}
	return re, 1 + max(len(pattern)/32, insts/8), nil
}

// GrepArgs are grep's arguments.
type GrepArgs struct {
	Pattern string `json:"pattern" minLength:"1" maxLength:"1024" description:"A regular expression (RE2 syntax)."`
	Path    string `json:"path,omitempty" maxLength:"4096" description:"File or directory to search, relative to the workspace; empty for all of it."`
	Include string `json:"include,omitempty" maxLength:"256" description:"Only search files whose name matches this path.Match pattern, such as *.go."`
}

func (ts *Toolset) grep() tool.Tool {
	return tool.Must(tool.New("grep",
		fmt.Sprintf("Searches workspace text files for a regular expression and lists matching lines as path:line:text. At most %d matches.", MaxMatches),
		func(ctx context.Context, in GrepArgs) (string, error) {
			re, perByte, err := compileGrep(in.Pattern)
			if err != nil {
				return "", err
			}
			work := 0 // matcher steps charged, up to MaxGrepWork
			if in.Include != "" {
				if _, err := path.Match(in.Include, ""); err != nil {
					return "", fmt.Errorf("bad include pattern %q: %v", in.Include, err)
				}
			}
			var (
				b           strings.Builder
				matches     int
				files, read int
				note        string
			)
			// search greps one file, and reports whether to go on.
			search := func(f *os.File, rel string) bool {
				files++
				if files > MaxGrepFiles || read > MaxGrepBytes {
					note = fmt.Sprintf("[search stopped after %d files / %d bytes]", MaxGrepFiles, MaxGrepBytes)
					return false
				}
				sc := bufio.NewScanner(io.LimitReader(f, int64(MaxGrepBytes-read)))
				sc.Buffer(make([]byte, 64<<10), 1<<20)
				for n := 1; sc.Scan(); n++ {
					line := sc.Bytes()
					read += len(line) + 1
					if bytes.IndexByte(line, 0) >= 0 {
						return true // binary file
					}
					if work += (len(line) + 1) * perByte; work > MaxGrepWork {
						note = fmt.Sprintf("[search stopped at the pattern's work limit (%d matcher steps: each byte costs more the larger its program); use a simpler pattern or a narrower path]", MaxGrepWork)
						return false
					}
					if !re.Match(line) {
						continue
					}
					if matches == MaxMatches {
						note = fmt.Sprintf("[cut at %d matches]", MaxMatches)
						return false
					}
					matches++
					text := string(line)
					if len(text) > 300 {
						text = text[:300] + "…"
					}
					fmt.Fprintf(&b, "%s:%d:%s\n", rel, n, strings.ToValidUTF8(text, "\uFFFD"))
				}
				return ctx.Err() == nil
			}
			start, err := ts.openResolved(in.Path, os.O_RDONLY|syscall.O_NONBLOCK)
			if err != nil {
				return "", err
			}
			defer start.Close()
			st, err := start.Stat()
			if err != nil {
				return "", err
			}
			w := ts.newWalk(ctx)
			switch {
			case st.Mode().IsRegular():
				search(start, in.Path)
			case st.IsDir():
				if w.enter(start) {
					w.files(start, in.Path, 0, func(dir *os.File, rel string, e fs.DirEntry) bool {
						if in.Include != "" {
							if ok, _ := path.Match(in.Include, e.Name()); !ok {
								return true
							}
						}
						name := path.Join(rel, e.Name())
						f, err := ts.openChild(dir, rel, e.Name(), os.O_RDONLY|syscall.O_NONBLOCK)
						if err != nil {
							return true // unreadable, or no longer a file
						}
						defer f.Close()
						if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
							return true
						}
						return search(f, name)
					})
				}
			default:
				return "", fmt.Errorf("%s is not a file or a directory (%s)", in.Path, kind(st.Mode()))
			}
			if err := ctx.Err(); err != nil {
				return "", fmt.Errorf("grep stopped: %w", err)
			}
			if w.err != nil {
				return "", fmt.Errorf("grep stopped: %w", w.err)
			}
			if note == "" {
				note = w.note
			}
			if matches == 0 && note == "" {
				return "no matches", nil
			}
			return b.String() + note, nil
		},
		tool.WithResolve(func(in *GrepArgs) error { return ts.resolveArg(&in.Path, "/path", followLinks) }),
		tool.WithAnnotations(tool.Annotations{Title: "Search files", ReadOnly: true, Idempotent: true})))
}

// readText reads the text file p, a resolved path, of the workspace.
func (ts *Toolset) readText(p string) (string, error) {
	// O_NONBLOCK: a FIFO must not block the call.
	f, err := ts.openResolved(p, os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file (%s)", p, kind(st.Mode()))
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxReadBytes+1))
	if err != nil {
		return "", err
	}
	cut := len(b) > MaxReadBytes
	if cut {
		b = b[:MaxReadBytes]
		for len(b) > 0 && !utf8.Valid(b) && len(b) > MaxReadBytes-utf8.UTFMax {
			b = b[:len(b)-1]
		}
	}
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return "", fmt.Errorf("%s is not a text file", p)
	}
	out := string(b)
	if cut {
		out += fmt.Sprintf("\n[file cut at %d of %d bytes]", MaxReadBytes, st.Size())
	}
	return out, nil
}
