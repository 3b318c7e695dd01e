// Package protected finds the protected paths of a workspace that git
// would use and compares them before and after a run, for every sandbox
// backend: the native one and the containers.
package protected

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Bounds of the supervisor's look at the protected paths before and after
// a run, which costs every run: repositories found under a repository's
// modules directory, and entries compared.
const (
	maxGitRepositories = 256
	maxGitWalk         = 4096
	maxGitModulesDepth = 16
	// A protected path's tree is read this many levels down; a deeper one
	// is not judged (refused before a run, listed after it).
	maxProtectedDepth = 16
	// In total, over all the protected paths (see Limits).
	maxSnapshotEntries = 1 << 17
	maxSnapshotBytes   = 32 << 20
)

// Git adds to protected the hooks and config (and what git reads in
// their place: commondir, config.worktree, worktrees) of the other
// repositories git would use in ws, when protected names git's own
// (.git/hooks or .git/config): the repository a .git file names
// ("gitdir: ...", worktrees and submodules), when it lies inside ws, and
// the submodules' repositories under a repository's modules directory;
// and what git's configuration makes hooks or configuration inside ws
// (see configured). A path reached through a symbolic link is left for
// the helper, which refuses it. It returns an error, and the run must
// not start, when it could not look at everything: more submodule
// repositories or entries under a modules directory than it reads, a
// configuration it cannot read or past its bounds.
func Git(ws string, protected []string) ([]string, error) {
	if ws == "" || !slices.Contains(protected, ".git/hooks") && !slices.Contains(protected, ".git/config") {
		return protected, nil
	}
	out := slices.Clone(protected)
	b := &budget{}
	if err := gitRepo(ws, "", &out, b); err != nil {
		return nil, err
	}
	if err := enclosing(ws, &out, b); err != nil {
		return nil, err
	}
	return out, nil
}

// enclosing adds to out what the configuration of every repository whose
// working tree holds ws (a workspace that is a directory of a larger
// repository: a package of a monorepo) makes hooks, configuration or
// commands inside ws: git run in the workspace uses that repository, and
// its configuration, out of the run's reach, may name files the run can
// write (core.hooksPath = frontend/.husky/_). It looks at every
// directory above ws, as written and through links, not only the
// nearest repository git would find, and past filesystem boundaries.
func enclosing(ws string, out *[]string, b *budget) error {
	starts := []string{filepath.Clean(ws)}
	if real, err := filepath.EvalSymlinks(ws); err == nil && real != starts[0] {
		starts = append(starts, real)
	}
	seen := map[string]bool{}
	for _, start := range starts {
		for dir := filepath.Dir(start); ; dir = filepath.Dir(dir) {
			if !seen[dir] {
				seen[dir] = true
				dotgit := filepath.Join(dir, ".git")
				gitDir := ""
				if st, err := os.Stat(dotgit); err == nil && st.IsDir() {
					gitDir = dotgit
				} else if err == nil && st.Mode().IsRegular() {
					if d, ok := readGitdir(dotgit); ok {
						if !filepath.IsAbs(d) {
							d = filepath.Join(dir, d)
						}
						gitDir = filepath.Clean(d)
					}
				}
				if gitDir != "" {
					// A .git file above the workspace may name a
					// repository inside it: its own hooks and config.
					c := &configLook{ws: ws, out: out, budget: b}
					for _, leaf := range leaves {
						if err := c.protect(filepath.Join(gitDir, leaf), "the repository of "+dotgit); err != nil {
							return err
						}
					}
					if err := configured(ws, dir, gitDir, out, b); err != nil {
						return err
					}
				}
			}
			if parent := filepath.Dir(dir); parent == dir {
				break
			}
		}
	}
	return nil
}

// leaves are what git reads of a repository to run code: its hooks and
// config, and what it reads in their place.
var leaves = []string{"hooks", "config", "commondir", "config.worktree", "worktrees"}

// A BoundError says the look at a repository's submodules or
// configuration stopped at one of its bounds or could not read what it
// needed: something it did not see could be left writable.
type BoundError struct {
	What string
}

func (e *BoundError) Error() string { return e.What }

// gitRepo adds to out the git paths of the working tree at root (relative
// to ws, "" for ws itself): its .git, the repository a .git file names
// when that lies inside ws, the submodules' repositories under that
// repository's modules directory, and what its configuration makes hooks
// or configuration inside ws.
func gitRepo(ws, root string, out *[]string, b *budget) error {
	if len(*out) >= maxProtectedPaths {
		return &BoundError{fmt.Sprintf("more than %d protected paths (at the repository in %s)", maxProtectedPaths, orDot(root))}
	}
	var addErr error
	add := func(repo string) {
		for _, leaf := range leaves {
			if err := b.add(out, repo+"/"+leaf, "the repository "+repo); err != nil && addErr == nil {
				addErr = err
			}
		}
	}
	repo := ".git"
	if root != "" {
		repo = root + "/.git"
	}
	gitDir := filepath.Join(ws, repo) // the repository, wherever it is
	st, err := os.Lstat(gitDir)
	if err != nil || st.IsDir() || root != "" {
		// The workspace's own repository, or the one a run may make:
		// what git reads in place of its hooks and config too, whatever
		// list named them. A nested repository's .git, whatever it is:
		// a file is then protected read-only, a symbolic link makes the
		// helper refuse the run.
		add(repo)
	}
	if err == nil && st.Mode().IsRegular() {
		repo, gitDir = "", ""
		if dir, ok := readGitdir(filepath.Join(ws, root, ".git")); ok {
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(ws, root, dir)
			}
			gitDir = filepath.Clean(dir)
			if rel, err := filepath.Rel(ws, dir); err == nil && filepath.IsLocal(rel) {
				repo = filepath.ToSlash(rel)
				add(repo)
			}
		}
	}
	if addErr != nil {
		return addErr
	}
	if gitDir != "" {
		if err := configured(ws, filepath.Join(ws, root), gitDir, out, b); err != nil {
			return err
		}
	}
	if repo == "" {
		return nil
	}
	// Submodules' repositories: any directory under modules holding a
	// HEAD, at any depth (a submodule's name may contain slashes). Past
	// its bounds the walk is an error: a submodule's repository it did
	// not reach would keep writable hooks and config.
	found, seen := 0, 0
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		ents, err := os.ReadDir(filepath.Join(ws, rel))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		if err != nil {
			return &BoundError{fmt.Sprintf("reading %s for submodules' repositories: %v", rel, err)}
		}
		if depth > maxGitModulesDepth {
			return &BoundError{fmt.Sprintf("%s is more than %d directories below the modules directory that holds submodules' repositories", rel, maxGitModulesDepth)}
		}
		for _, e := range ents {
			if seen++; seen > maxGitWalk {
				return &BoundError{fmt.Sprintf("more than %d entries under %s/modules, which holds submodules' repositories", maxGitWalk, repo)}
			}
			if !e.IsDir() {
				continue
			}
			sub := rel + "/" + e.Name()
			if st, err := os.Lstat(filepath.Join(ws, sub, "HEAD")); err == nil && st.Mode().IsRegular() {
				if found++; found > maxGitRepositories {
					return &BoundError{fmt.Sprintf("more than %d submodules' repositories under %s/modules", maxGitRepositories, repo)}
				}
				if add(sub); addErr != nil {
					return addErr
				}
				if err := configured(ws, "", filepath.Join(ws, sub), out, b); err != nil {
					return err
				}
				if err := walk(sub+"/modules", depth+1); err != nil {
					return err
				}
				continue
			}
			if err := walk(sub, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(repo+"/modules", 0)
}

// Bounds of the search for nested repositories (Nested).
type Bounds struct {
	// Entries is the number of directory entries the search may read.
	Entries int
	// Depth is how many directories deep below the workspace it may go.
	Depth int
}

// A LimitError says the search for nested repositories stopped at one of
// its bounds: the workspace could hold a repository it did not see, so
// the run must not start.
type LimitError struct {
	// Limit names the bound: "entries" or "depth".
	Limit string
	// Value is the bound's value.
	Value int
	// Path is the directory (relative to the workspace) the search was
	// reading or about to enter.
	Path string
}

func (e *LimitError) Error() string {
	if e.Limit == "depth" {
		return "the workspace has directories more than " + strconv.Itoa(e.Value) + " deep (" + e.Path + ")"
	}
	return "the workspace has more than " + strconv.Itoa(e.Value) + " entries (reached in " + e.Path + ")"
}

// Refusal is the error a backend returns for a run whose workspace the
// search for nested repositories ([Nested]) could not finish: err wrapped,
// with what the caller can change — the sandbox's Limits.GitSearch for the
// entries bound, nothing but the protected list for the depth bound
// (GitSearchDepth) or an unreadable directory.
func Refusal(err error) error {
	const prefix = "sandbox: refusing to run: looking for nested git repositories to protect: %w"
	var le *LimitError
	switch {
	case errors.As(err, &le) && le.Limit == "entries":
		return fmt.Errorf(prefix+"; raise Limits.GitSearch (now %d), or run with Protected naming neither .git/hooks nor .git/config", err, le.Value)
	case errors.As(err, &le):
		return fmt.Errorf(prefix+" (GitSearchDepth); run with Protected naming neither .git/hooks nor .git/config", err)
	}
	return fmt.Errorf(prefix, err)
}

// Nested adds to protected, when it names .git/hooks or .git/config, the
// git paths of every repository nested in ws (a directory below ws holding
// a .git entry: a clone, a worktree, a submodule's checkout), as [Git]
// does for ws's own: its .git (read-only when a file), its hooks, config,
// commondir, config.worktree and worktrees, those of the repository a .git
// file names inside ws, and its submodules' repositories. The search reads
// at most b.Entries directory entries and enters directories at most
// b.Depth deep; it follows no symbolic link and does not look inside a
// .git. Past either bound it returns a *LimitError, and on an error
// reading a directory that error: a repository it did not see would be
// left writable. ws's own repository is [Git]'s.
func Nested(ws string, protected []string, b Bounds) ([]string, error) {
	if ws == "" || !slices.Contains(protected, ".git/hooks") && !slices.Contains(protected, ".git/config") {
		return protected, nil
	}
	repos, err := findRepos(ws, b)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(protected)
	spent := &budget{}
	for _, root := range repos {
		if err := gitRepo(ws, root, &out, spent); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func path(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func orDot(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// readGitdir reads the repository a .git file names.
func readGitdir(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 4096))
	line, _, _ := strings.Cut(string(b), "\n")
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	dir = strings.TrimSpace(dir)
	return dir, ok && dir != ""
}

// A State is what the protected paths of a workspace were: for each path,
// the identity of each directory above it inside the workspace, and every
// entry of the path's own tree (type, identity, size, times).
type State struct {
	paths map[string][]entryState
	lim   Limits
}

type entryState struct {
	rel          string
	mode         fs.FileMode
	dev, ino     uint64
	size         int64
	mtime, ctime int64
	parent       bool // a directory above the protected path: identity only
}

// entryCost is what one entry counts against Limits.Bytes besides its
// name: about its size in memory.
const entryCost = 96

// Limits bound one look at the protected paths of a workspace (a
// [Snapshot], the comparison after the run, [HardLinked]) in total, over
// all the paths: it runs on the host, outside the run's limits, over files
// a run may have written. A path's tree is read whole within them, to 16
// levels (deeper is past the bounds too). Zero fields take the defaults (131,072 entries, 32 MiB).
type Limits struct {
	// Entries is the number of entries (the directories above each path
	// and the entries of its tree) the look may read.
	Entries int
	// Bytes is the memory the look may keep: each entry's name and about
	// 96 bytes more.
	Bytes int
}

func (l Limits) withDefaults() Limits {
	if l.Entries <= 0 {
		l.Entries = maxSnapshotEntries
	}
	if l.Bytes <= 0 {
		l.Bytes = maxSnapshotBytes
	}
	return l
}

// snapBudget counts one look's entries and bytes against its Limits.
type snapBudget struct {
	lim            Limits
	entries, bytes int
	deep           string // a directory at maxProtectedDepth, not read
}

// take counts the entry rel; false when it is past the bounds.
func (b *snapBudget) take(rel string) bool {
	b.entries++
	b.bytes += entryCost + len(rel)
	return b.entries <= b.lim.Entries && b.bytes <= b.lim.Bytes
}

func (b *snapBudget) err(p string) error {
	if b.deep != "" {
		return &BoundError{fmt.Sprintf("the protected path %s holds directories more than %d levels deep (%s), below which the sandbox does not compare what a run changed; remove them, or protect less", p, maxProtectedDepth, b.deep)}
	}
	return &BoundError{fmt.Sprintf("the protected paths hold more than %d entries or %d bytes of names to compare before and after the run (reached at %s); run with fewer protected paths, or with less under them", b.lim.Entries, b.lim.Bytes, p)}
}

// Snapshot records the protected paths of ws as they are; the zero State
// when ws is empty. Past l (in total over all the paths, counted as it
// reads) it stops and returns a *BoundError: the run must not start, as
// the comparison after it could not judge what it did not record.
func Snapshot(ws string, paths []string, l Limits) (State, error) {
	l = l.withDefaults()
	if ws == "" {
		return State{lim: l}, nil
	}
	s := State{paths: make(map[string][]entryState, len(paths)), lim: l}
	b := &snapBudget{lim: l}
	for _, p := range paths {
		es, ok := entriesOf(ws, p, b)
		if !ok {
			return State{}, b.err(p)
		}
		s.paths[p] = es
	}
	return s, nil
}

// HardLinked returns an error naming the first regular file among the
// protected paths of ws (each path's tree, as Snapshot reads it) that has
// more than one name: another name of it in the workspace is the same
// file, writable where the read-only bind covers only the protected
// name. A backend that binds the workspace directly (no write budget's
// overlay, which copies a name up and renames a new file onto it) must
// not run then. Past l it returns a *BoundError, as [Snapshot] does.
func HardLinked(ws string, paths []string, l Limits) error {
	b := &snapBudget{lim: l.withDefaults()}
	for _, p := range paths {
		es, ok := entriesOf(ws, p, b)
		if !ok {
			return b.err(p)
		}
		for _, e := range es {
			if e.parent || !e.mode.IsRegular() {
				continue
			}
			st, err := os.Lstat(filepath.Join(ws, e.rel))
			if err != nil {
				continue // gone since: the comparison after the run reports it
			}
			if n := links(st); n > 1 {
				return &BoundError{fmt.Sprintf("the protected file %s has %d names (hard links): a run writing the workspace directly could change it through another; give it one name, or run with the write budget", e.rel, n)}
			}
		}
	}
	return nil
}

// Changed lists the protected paths whose state differs from s now: made,
// removed, replaced (their own inode or that of a directory above them
// inside the workspace) or changed in any entry of their tree. The look
// now is bounded by the Limits of s, in total: past them, the path it was
// reading and every one after it are listed, not judged (changed, as far
// as anyone can tell).
func (s State) Changed(ws string, paths []string) []string {
	if ws == "" {
		return nil
	}
	var out []string
	b := &snapBudget{lim: s.lim.withDefaults()}
	for i, p := range paths {
		now, ok := entriesOf(ws, p, b)
		if !ok {
			return append(out, paths[i:]...)
		}
		was := s.paths[p]
		wasUp, wasTree := splitParents(was)
		nowUp, nowTree := splitParents(now)
		// A directory above the path made by the run, with the path still
		// missing, changed nothing protected; one that was there must be
		// there still, the same.
		if len(nowUp) < len(wasUp) || !slices.Equal(wasUp, nowUp[:len(wasUp)]) || !slices.Equal(wasTree, nowTree) {
			out = append(out, p)
		}
	}
	return out
}

func splitParents(es []entryState) (parents, tree []entryState) {
	n := 0
	for n < len(es) && es[n].parent {
		n++
	}
	return es[:n], es[n:]
}

// entriesOf reads the entries of p in ws, each counted in b; false as soon
// as b is past its bounds.
func entriesOf(ws, p string, b *snapBudget) ([]entryState, bool) {
	var out []entryState
	elems := strings.Split(p, "/")
	for i := 1; i < len(elems); i++ {
		rel := strings.Join(elems[:i], "/")
		st, err := os.Lstat(filepath.Join(ws, rel))
		if err != nil {
			return out, true
		}
		if !b.take(rel) {
			return nil, false
		}
		e := stateOf(rel, st)
		e.parent = true
		if !st.IsDir() {
			// A file where a directory is expected (a .git file): the
			// helper protects it read-only, its contents count.
			return append(out, e), true
		}
		e.size, e.mtime, e.ctime = 0, 0, 0
		out = append(out, e)
	}
	over := false
	var walk func(rel string, depth int)
	walk = func(rel string, depth int) {
		if over {
			return
		}
		st, err := os.Lstat(filepath.Join(ws, rel))
		if err != nil {
			return
		}
		if !b.take(rel) {
			over = true
			return
		}
		out = append(out, stateOf(rel, st))
		if !st.IsDir() {
			return
		}
		if depth >= maxProtectedDepth {
			// What lies below is not read, so it cannot be judged.
			b.deep, over = rel, true
			return
		}
		// At most one name past what the bounds leave: a directory of
		// millions of names is not read whole.
		names, ok := readNames(filepath.Join(ws, rel), b.lim.Entries-b.entries+1)
		if !ok {
			over = true
			return
		}
		for _, name := range names {
			walk(rel+"/"+name, depth+1)
		}
	}
	walk(p, 0)
	if over {
		return nil, false
	}
	return out, true
}

// readNames returns the names in dir, sorted, reading at most n; false
// when dir holds n or more.
func readNames(dir string, n int) ([]string, bool) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, true
	}
	defer f.Close()
	names, _ := f.Readdirnames(n)
	if len(names) >= n {
		return nil, false
	}
	slices.Sort(names)
	return names, true
}

func stateOf(rel string, st fs.FileInfo) entryState {
	e := entryState{rel: rel, mode: st.Mode(), size: st.Size(), mtime: st.ModTime().UnixNano()}
	e.dev, e.ino, e.ctime = identity(st)
	return e
}

// ID names the file st describes by device and inode, "" where the system
// does not say.
func ID(st fs.FileInfo) string {
	dev, ino, _ := identity(st)
	if dev == 0 && ino == 0 {
		return ""
	}
	return strconv.FormatUint(dev, 10) + ":" + strconv.FormatUint(ino, 10)
}
