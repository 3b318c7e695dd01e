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
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/miniopenclaw/tool"
)

// ReadArgs are read_file's arguments.
type ReadArgs struct {
	Path string `json:"path" minLength:"1" maxLength:"4096" description:"File path relative to the workspace."`
}

func (ts *Toolset) readFile() tool.Tool {
	return tool.Must(tool.New("read_file",
		fmt.Sprintf("Reads a text file in the workspace. Returns at most %d bytes.", MaxReadBytes),
		func(ctx context.Context, in ReadArgs) (string, error) { return ts.readText(in.Path) },
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
		}, tool.WithAnnotations(tool.Annotations{Title: "Write file", Destructive: true, Idempotent: true})))
}

// writable checks a path a tool is about to write.
func (ts *Toolset) writable(p string) (string, error) {
	rel, err := local(p)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return "", errors.New("the path names the workspace itself, not a file")
	}
	if prot, ok := ts.protectedBy(rel); ok {
		return "", fmt.Errorf("%s is protected (%s stays read-only)", p, prot)
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
		}, tool.WithAnnotations(tool.Annotations{Title: "Edit file", Destructive: true})))
}

// ListArgs are list_dir's arguments.
type ListArgs struct {
	Path string `json:"path,omitempty" maxLength:"4096" description:"Directory relative to the workspace; empty for the workspace itself."`
}

func (ts *Toolset) listDir() tool.Tool {
	return tool.Must(tool.New("list_dir",
		fmt.Sprintf("Lists a workspace directory: one entry per line, directories ending in /, symbolic links as name -> target. At most %d entries.", MaxEntries),
		func(ctx context.Context, in ListArgs) (string, error) {
			rel, err := local(in.Path)
			if err != nil {
				return "", err
			}
			f, err := ts.root.Open(rel)
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
		}, tool.WithAnnotations(tool.Annotations{Title: "List directory", ReadOnly: true, Idempotent: true})))
}

// GlobArgs are glob's arguments.
type GlobArgs struct {
	Pattern string `json:"pattern" minLength:"1" maxLength:"1024" description:"A path.Match pattern relative to the workspace, such as src/*.go or */*_test.go."`
}

func (ts *Toolset) glob() tool.Tool {
	return tool.Must(tool.New("glob",
		fmt.Sprintf("Lists workspace paths matching a pattern (path.Match syntax: *, ?, [a-z], each within one path element). At most %d paths.", MaxEntries),
		func(ctx context.Context, in GlobArgs) (string, error) {
			if _, err := path.Match(in.Pattern, ""); err != nil {
				return "", fmt.Errorf("bad pattern %q: %v", in.Pattern, err)
			}
			if _, err := local(in.Pattern); err != nil {
				return "", err
			}
			matches, err := fs.Glob(ts.root.FS(), in.Pattern)
			if err != nil {
				return "", err
			}
			cut := len(matches) > MaxEntries
			if cut {
				matches = matches[:MaxEntries]
			}
			out := strings.Join(matches, "\n")
			if cut {
				out += fmt.Sprintf("\n[cut at %d paths]", MaxEntries)
			}
			return out, nil
		}, tool.WithAnnotations(tool.Annotations{Title: "Find files", ReadOnly: true, Idempotent: true})))
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
			re, err := regexp.Compile(in.Pattern)
			if err != nil {
				return "", fmt.Errorf("bad pattern: %v", err)
			}
			if in.Include != "" {
				if _, err := path.Match(in.Include, ""); err != nil {
					return "", fmt.Errorf("bad include pattern %q: %v", in.Include, err)
				}
			}
			start, err := local(in.Path)
			if err != nil {
				return "", err
			}
			var (
				b           strings.Builder
				matches     int
				files, read int
				stop        = errors.New("stop")
				note        string
			)
			err = fs.WalkDir(ts.root.FS(), start, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return nil // unreadable entries are skipped
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if d.IsDir() {
					if d.Name() == ".git" && p != start {
						return fs.SkipDir
					}
					return nil
				}
				if !d.Type().IsRegular() {
					return nil
				}
				if in.Include != "" {
					if ok, _ := path.Match(in.Include, d.Name()); !ok {
						return nil
					}
				}
				files++
				if files > MaxGrepFiles || read > MaxGrepBytes {
					note = fmt.Sprintf("[search stopped after %d files / %d bytes]", MaxGrepFiles, MaxGrepBytes)
					return stop
				}
				f, err := ts.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
				if err != nil {
					return nil
				}
				defer f.Close()
				sc := bufio.NewScanner(io.LimitReader(f, int64(MaxGrepBytes-read)))
				sc.Buffer(make([]byte, 64<<10), 1<<20)
				for n := 1; sc.Scan(); n++ {
					line := sc.Bytes()
					read += len(line) + 1
					if bytes.IndexByte(line, 0) >= 0 {
						return nil // binary file
					}
					if !re.Match(line) {
						continue
					}
					if matches == MaxMatches {
						note = fmt.Sprintf("[cut at %d matches]", MaxMatches)
						return stop
					}
					matches++
					text := string(line)
					if len(text) > 300 {
						text = text[:300] + "…"
					}
					fmt.Fprintf(&b, "%s:%d:%s\n", p, n, strings.ToValidUTF8(text, "\uFFFD"))
				}
				return nil
			})
			if err != nil && err != stop {
				return "", err
			}
			if matches == 0 && note == "" {
				return "no matches", nil
			}
			return b.String() + note, nil
		}, tool.WithAnnotations(tool.Annotations{Title: "Search files", ReadOnly: true, Idempotent: true})))
}

// readText reads the text file p of the workspace, through the os.Root.
func (ts *Toolset) readText(p string) (string, error) {
	rel, err := local(p)
	if err != nil {
		return "", err
	}
	// O_NONBLOCK: a FIFO must not block the call.
	f, err := ts.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
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
