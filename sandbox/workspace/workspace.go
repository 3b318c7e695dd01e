// Package workspace provides ready tools confined to one directory: exec
// runs a command in the [sandbox], and read_file, write_file, edit_file,
// list_dir, glob and grep work on files.
//
// The file tools resolve every path the model gives once, before the
// call is decided ([tool.WithResolve]): to the canonical path inside the
// workspace, relative to it, with symbolic links followed while they stay
// inside it. That resolved path is what a [tool.Authorizer] (such as a
// Cedar policy) decides on and what the tool opens, without following
// any link, so a link planted or swapped after the decision makes the
// open fail rather than lead elsewhere. "..", absolute paths, links that
// lead out of the workspace, dangling links, backslashes, NUL bytes and
// bytes that are not UTF-8 are refused with a message the model can act
// on. The tools that write follow no link at all, and refuse the policy's
// protected paths (such as .git/hooks or .bashrc), which stay read-only
// inside the sandbox too, with the hooks and config of the other
// repositories git would use in the workspace and the .git entry itself.
//
// Every tool bounds its work: reads, listings, matches and output are
// capped, and a capped result says so.
package workspace

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/sandbox"
	"github.com/miniopenclaw/tool/sandbox/internal/protected"
)

// Bounds on the work one call may do.
const (
	// MaxReadBytes is the most read_file returns of one file.
	MaxReadBytes = 256 << 10
	// MaxWriteBytes is the largest content write_file and edit_file write.
	MaxWriteBytes = 1 << 20
	// MaxEntries bounds list_dir and glob results.
	MaxEntries = 1000
	// MaxMatches bounds grep's matching lines.
	MaxMatches = 200
	// MaxGrepBytes and MaxGrepFiles bound what one grep reads.
	MaxGrepBytes = 64 << 20
	MaxGrepFiles = 20000
	// MaxGrepInsts bounds the program of a grep pattern, estimated before
	// it is built (16,384, as a schema's pattern), and MaxGrepWork the
	// matcher steps one grep is charged (each byte read costs one, and
	// one more for each 8 instructions or 32 bytes of the pattern): a
	// 1,024-byte pattern could be a program of hundreds of thousands of
	// instructions, and [a-z]{300}[0-9] over 8 MB took minutes.
	MaxGrepInsts = 1 << 14
	MaxGrepWork  = 1 << 25
)

// A Toolset is the tools of one workspace. It holds the workspace open;
// Close releases it. Its tools are safe for concurrent use.
type Toolset struct {
	policy  sandbox.Policy
	backend sandbox.Backend
	root    *os.Root
	// dir is the workspace directory, open for the lifetime of the
	// Toolset; dirConn reaches its descriptor (write_linux.go).
	dir     *os.File
	dirConn syscall.RawConn
	tools   []tool.Tool
}

// An Option configures a [Toolset].
type Option func(*Toolset)

// WithBackend makes the exec tool run commands with b, such as a
// [*github.com/miniopenclaw/tool/sandbox/container.Backend], instead of [sandbox.DefaultNative]. The
// file tools work on the workspace directory itself, which is the
// directory b's commands see (at [github.com/miniopenclaw/tool/sandbox/container.Workspace] in a
// container).
func WithBackend(b sandbox.Backend) Option {
	return func(ts *Toolset) { ts.backend = b }
}

// New opens the workspace of p (which must name one) and builds its tools.
// The exec tool runs commands under p; the file tools honour its protected
// paths.
func New(p sandbox.Policy, opts ...Option) (*Toolset, error) {
	if p.Workspace == "" {
		return nil, errors.New("workspace: the policy names no workspace")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(p.Workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	var conn syscall.RawConn
	dir, err := root.Open(".")
	if err == nil {
		conn, err = dir.SyscallConn()
	}
	if err != nil {
		root.Close()
		if dir != nil {
			dir.Close()
		}
		return nil, fmt.Errorf("workspace: %w", err)
	}
	ts := &Toolset{policy: p, backend: sandbox.DefaultNative(), root: root, dir: dir, dirConn: conn}
	for _, o := range opts {
		o(ts)
	}
	ts.tools = []tool.Tool{
		ts.execTool(), ts.readFile(), ts.writeFile(), ts.editFile(),
		ts.listDir(), ts.glob(), ts.grep(),
	}
	return ts, nil
}

// Tools returns the tools in this order: exec, read_file, write_file,
// edit_file, list_dir, glob, grep.
func (ts *Toolset) Tools() []tool.Tool { return ts.tools }

// Register registers every tool in r with [tool.Registry.RegisterUnique].
func (ts *Toolset) Register(r *tool.Registry) error {
	for _, t := range ts.tools {
		if err := r.RegisterUnique(t); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	return nil
}

// Close releases the workspace. Calls after Close fail.
func (ts *Toolset) Close() error {
	err := ts.dir.Close()
	if rerr := ts.root.Close(); err == nil {
		err = rerr
	}
	return err
}

// protectedBy returns the protected path that covers rel, a resolved
// path, if any, or an error when the protected paths cannot be judged. Case is ignored, so that a file system that ignores it
// cannot turn .GIT/hooks into a way around .git/hooks; on one that does
// not, refusing .GIT/hooks too costs nothing. When git's hooks or config
// are protected, so are those of every repository git would use in the
// workspace, as the sandbox protects them (the one a .git file names,
// the submodules' under .git/modules, every nested repository's and what
// their configuration makes hooks or configuration), and every .git entry and what it
// holds, at any depth: a .git file written, or rewritten, would lead git
// to a repository of the model's making, and a nested repository's
// hooks and config run when git is used in it. A protected path that is, or passes through, a
// symbolic link inside the workspace protects where it leads as well
// (git follows the link); one whose links cannot be followed (a loop,
// too many) refuses every write, as the sandbox refuses to run.
func (ts *Toolset) protectedBy(rel string) (string, bool, error) {
	prot := ts.policy.Protected
	if prot == nil {
		prot = sandbox.DefaultProtected()
	}
	clean := make([]string, 0, len(prot))
	for _, p := range prot {
		clean = append(clean, path.Clean(filepath.ToSlash(p)))
	}
	if slices.Contains(clean, ".git/hooks") || slices.Contains(clean, ".git/config") {
		// No tool writes a .git entry or anything in one, at any depth:
		// a nested repository's hooks and config run as the
		// workspace's do, when git is used there.
		for _, c := range strings.Split(rel, "/") {
			if strings.EqualFold(c, ".git") {
				return ".git", true, nil
			}
		}
		var err error
		if clean, err = protected.Git(ts.policy.Workspace, clean); err != nil {
			return "", false, fmt.Errorf("git's paths cannot be judged, so nothing is written: %w", err)
		}
		// Nested repositories, as a sandboxed run finds them: what their
		// .git files name inside the workspace and what their
		// configuration makes hooks (core.hooksPath) or configuration
		// (include.path) lie outside any .git.
		bounds := protected.Bounds{Entries: ts.policy.Limits.WithDefaults().GitSearch, Depth: sandbox.GitSearchDepth}
		if clean, err = protected.Nested(ts.policy.Workspace, clean, bounds); err != nil {
			return "", false, fmt.Errorf("nested git repositories cannot be judged, so nothing is written: %w", err)
		}
	}
	for _, p := range clean[:len(clean):len(clean)] {
		r, err := ts.resolve(p, whereLeads)
		switch {
		case errors.Is(err, errUnwritable):
		case err != nil:
			return "", false, fmt.Errorf("the protected path %s cannot be judged, so nothing is written: %w", p, err)
		case r != p:
			clean = append(clean, r)
		}
	}
	for _, p := range clean {
		if strings.EqualFold(rel, p) || len(rel) > len(p) && rel[len(p)] == '/' && strings.EqualFold(rel[:len(p)], p) {
			return p, true, nil
		}
	}
	return "", false, nil
}
