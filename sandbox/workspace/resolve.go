package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/miniopenclaw/tool"
)

// Bounds on resolving one path argument.
const (
	// maxLinks is the most symbolic links one resolution follows, as on
	// Linux.
	maxLinks = 40
	// maxResolveSteps bounds the components one resolution looks at,
	// link targets included.
	maxResolveSteps = 4096
	// maxPathBytes bounds a resolved path, as PATH_MAX does.
	maxPathBytes = 4096
	// maxCaseProbeEntries bounds the directory read that checks a name
	// in a directory that ignores case.
	maxCaseProbeEntries = 10000
)

// linkMode says how a resolution treats symbolic links.
type linkMode int

const (
	// followLinks follows every link that stays in the workspace: the
	// resolved path names the file the link leads to (the read tools).
	followLinks linkMode = iota
	// keepFinalLink follows no link: a link before the last component
	// refuses the path, a link as the last one is the name itself, which
	// a write replaces (the write tools).
	keepFinalLink
	// whereLeads follows every link, dangling ones too (a component
	// missing after a link is kept as written, as the kernel would create
	// it), to find where a protected path leads: the write tools refuse
	// that too. A path that leaves the workspace, or goes below a file,
	// is errUnwritable; a name in another case than on disk is no
	// refusal (protection ignores case).
	whereLeads
)

// errUnwritable is resolve's error, in mode whereLeads, for a path the
// tools cannot write: one that leads out of the workspace, or below a
// file.
var errUnwritable = errors.New("leads where the tools cannot write")

// A component of a path being resolved, with the link whose target it
// came from ("" for one the model wrote).
type component struct {
	name, link string
}

// resolve is the one resolution of a path argument p, shared by the
// Authorizer, which decides on its result, and the tool, which opens
// exactly that: the canonical path inside the workspace, relative to it,
// with no ".", "..", empty or link components ("." for the workspace
// itself). It follows the rules the kernel follows for openat2 with
// RESOLVE_BENEATH: ".." is resolved against the directory reached so
// far (physically, after the links before it), a link's relative target
// continues from the link's directory, and nothing may climb above the
// workspace. It refuses, with a message for the model, what it cannot
// judge: a NUL byte, bytes that are not UTF-8, a backslash (a separator
// on some systems, a name byte on others), an absolute path or link
// target, a climb out of the workspace, a dangling link, more than
// maxLinks links, a file used as a directory, and, in a directory that
// ignores case, a name that differs from the one on disk.
//
// Components that do not exist are kept as written (a file about to be
// created). The result is what the file system held when resolve looked:
// the tools open it without following any link, so a link swapped in
// afterwards makes the open fail rather than lead elsewhere.
func (ts *Toolset) resolve(p string, mode linkMode) (string, error) {
	if p == "" {
		return ".", nil
	}
	refuse := func(format string, a ...any) error {
		return &pathRefusal{given: p, why: fmt.Sprintf(format, a...)}
	}
	if err := checkName(p); err != "" {
		return "", refuse("%s", err)
	}
	if path.IsAbs(p) {
		return "", refuse("is absolute; give a path relative to the workspace")
	}
	var parts []component
	for _, c := range strings.Split(p, "/") {
		parts = append(parts, component{name: c})
	}
	var done []string
	links, steps := 0, 0
	for len(parts) > 0 {
		c := parts[0]
		parts = parts[1:]
		if steps++; steps > maxResolveSteps {
			return "", refuse("has more than %d components, links included", maxResolveSteps)
		}
		switch c.name {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				if mode == whereLeads {
					return "", errUnwritable
				}
				if c.link != "" {
					return "", refuse("escapes the workspace through the symbolic link %s", c.link)
				}
				return "", refuse("escapes the workspace")
			}
			done = done[:len(done)-1]
			continue
		}
		cand := path.Join(append(done, c.name)...)
		fi, err := ts.root.Lstat(cand)
		if errors.Is(err, fs.ErrNotExist) {
			if mode == whereLeads {
				// Nothing below a missing directory exists: the rest
				// is read as the kernel would create it.
				names := []string{cand}
				for _, r := range parts {
					names = append(names, r.name)
				}
				rest := path.Join(names...)
				if rest == ".." || strings.HasPrefix(rest, "../") {
					return "", errUnwritable
				}
				return bounded(p, rest)
			}
			if c.link != "" {
				return "", refuse("leads through the symbolic link %s to %s, which does not exist", c.link, cand)
			}
			rest := []string{cand}
			for _, r := range parts {
				switch {
				case r.name == "..":
					return "", refuse("climbs out of %s, which does not exist", cand)
				case r.link != "":
					// Unreachable: link components only follow a link.
					return "", refuse("cannot be resolved")
				case r.name != "" && r.name != ".":
					rest = append(rest, r.name)
				}
			}
			return bounded(p, path.Join(rest...))
		}
		if err != nil {
			var errno syscall.Errno
			if errors.As(err, &errno) {
				return "", refuse("cannot be resolved at %s: %v", cand, errno)
			}
			return "", refuse("cannot be resolved at %s", cand)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.IsDir() && len(parts) > 0 {
				if mode == whereLeads {
					return "", errUnwritable
				}
				return "", refuse("uses %s, a file, as a directory", cand)
			}
			if err := ts.exactName(done, c.name, fi); err != nil && mode != whereLeads {
				return "", refuse("%v", err)
			}
			done = append(done, c.name)
			continue
		}
		// A link. The last component of a path that does not end in a
		// slash is the link itself for the write tools.
		if mode == keepFinalLink {
			if len(parts) == 0 {
				if err := ts.exactName(done, c.name, fi); err != nil {
					return "", refuse("%v", err)
				}
				done = append(done, c.name)
				continue
			}
			target, _ := ts.root.Readlink(cand)
			return "", refuse("goes through %s, a symbolic link to %s; the tools that write follow no links, so give the path it leads to", cand, target)
		}
		if links++; links > maxLinks {
			return "", refuse("goes through more than %d symbolic links", maxLinks)
		}
		target, err := ts.root.Readlink(cand)
		if err != nil {
			return "", refuse("cannot be resolved at the symbolic link %s", cand)
		}
		if bad := checkName(target); bad != "" {
			return "", refuse("goes through the symbolic link %s, whose target %s", cand, bad)
		}
		if path.IsAbs(target) {
			if mode == whereLeads {
				return "", errUnwritable
			}
			return "", refuse("escapes the workspace through the symbolic link %s (to %s)", cand, target)
		}
		expanded := make([]component, 0, strings.Count(target, "/")+1+len(parts))
		for _, t := range strings.Split(target, "/") {
			expanded = append(expanded, component{name: t, link: cand})
		}
		parts = append(expanded, parts...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return bounded(p, path.Join(done...))
}

// bounded returns r, the resolution of p, unless it is too long.
func bounded(p, r string) (string, error) {
	if len(r) > maxPathBytes {
		return "", &pathRefusal{given: p, why: fmt.Sprintf("resolves to a path longer than %d bytes", maxPathBytes)}
	}
	return r, nil
}

// checkName returns why the path or link target s cannot be judged, or "".
func checkName(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL byte"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.IndexByte(s, '\\') >= 0:
		return `contains a backslash, which some systems read as a separator and others as part of a name; use "/" between directories`
	}
	return ""
}

// exactName checks that name, which exists in the directory dir (a
// resolved path, as components), is the name the directory has for it.
// In a directory that ignores case, "Secrets" opens "secrets" but a
// policy on "secrets/*" would not see it: such a name is refused. The
// directory is read only when the same name in another case opens the
// same file.
func (ts *Toolset) exactName(dir []string, name string, fi fs.FileInfo) error {
	other := swapCase(name)
	if other == name {
		return nil
	}
	ofi, err := ts.root.Lstat(path.Join(append(dir, other)...))
	if err != nil || !os.SameFile(fi, ofi) {
		return nil // the directory tells the two names apart
	}
	d := path.Join(dir...)
	if d == "" {
		d = "."
	}
	f, err := ts.root.Open(d)
	if err != nil {
		return fmt.Errorf("cannot be checked in %s, a directory that ignores case", d)
	}
	defer f.Close()
	for read := 0; read < maxCaseProbeEntries; {
		names, err := f.Readdirnames(256)
		for _, n := range names {
			if n == name {
				return nil
			}
		}
		read += len(names)
		if err == io.EOF || len(names) == 0 {
			return fmt.Errorf("names %s in a directory that ignores case, where the file has another name; give the name list_dir shows", path.Join(append(dir, name)...))
		}
		if err != nil {
			break
		}
	}
	return fmt.Errorf("cannot be checked in %s, a directory that ignores case and holds more than %d entries", d, maxCaseProbeEntries)
}

// swapCase returns s with the case of its ASCII letters swapped.
func swapCase(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

// A pathRefusal is a path argument resolve refuses; its message is for
// the model.
type pathRefusal struct {
	given, why string
}

func (e *pathRefusal) Error() string { return fmt.Sprintf("path %q %s", e.given, e.why) }

// resolveArg resolves the path argument at pointer (such as "/path") in
// place, as a WithResolve function does: the call goes on with the
// resolved path, which is what an Authorizer decides on and what the tool
// opens.
func (ts *Toolset) resolveArg(p *string, pointer string, mode linkMode) error {
	r, err := ts.resolve(*p, mode)
	if err != nil {
		var pr *pathRefusal
		got := err.Error()
		if errors.As(err, &pr) {
			got = fmt.Sprintf("%q, which %s", pr.given, pr.why)
		}
		return &tool.ArgumentError{Violations: []tool.Violation{{Pointer: pointer, Expected: "a path inside the workspace", Got: got}}}
	}
	*p = r
	return nil
}
