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

	"github.com/miniopenclaw/tool/internal/boundedfile"
)

// Bounds of the look at git's configuration: bytes of one file, files
// read for one repository (the system and global files, the repository's
// own, and what they include), and include depth (git's own limit is 10).
const (
	maxConfigBytes = 1 << 20
	maxConfigFiles = 64
	maxIncludeDeep = 10
)

// configured adds to out what git's configuration makes code or
// configuration of the repository gitDir (absolute) whose working tree is
// worktree ("" when not known): the directory core.hooksPath names (git
// runs the hooks there instead of gitDir/hooks: husky and similar tools
// set it to a directory of the working tree, which a run could otherwise
// fill with hooks), and every file an include.path or includeIf.*.path
// names (its settings, core.fsmonitor and core.pager included, are the
// repository's), each when it lies inside ws. It reads the system and
// global files ($GIT_CONFIG_SYSTEM or /etc/gitconfig, $GIT_CONFIG_GLOBAL
// or ~/.gitconfig and $XDG_CONFIG_HOME/git/config, as this process's
// environment names them), gitDir's config and config.worktree, the
// common directory's config when gitDir has a commondir file, and what
// they include, with every include followed whatever its condition. A
// relative hooks path is relative to the working tree; with none known
// it is an error, as is a hooks path naming ws itself, a file it cannot
// read (other than a missing one) and any bound passed.
func configured(ws, worktree, gitDir string, out *[]string, b *budget) error {
	c := &configLook{ws: ws, worktree: worktree, out: out, read: map[string]bool{}, budget: b}
	if cw, err := c.coreWorktree(gitDir); err != nil {
		return err
	} else if cw != "" && c.worktree == "" {
		c.worktree = cw
	}
	home, _ := os.UserHomeDir()
	var files []string
	if sys := os.Getenv("GIT_CONFIG_SYSTEM"); sys != "" {
		files = append(files, sys)
	} else {
		files = append(files, "/etc/gitconfig")
	}
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		files = append(files, g)
	} else {
		if home != "" {
			files = append(files, filepath.Join(home, ".gitconfig"))
		}
		if xdg := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(xdg) {
			files = append(files, filepath.Join(xdg, "git", "config"))
		} else if home != "" {
			files = append(files, filepath.Join(home, ".config", "git", "config"))
		}
	}
	files = append(files, filepath.Join(gitDir, "config"), filepath.Join(gitDir, "config.worktree"))
	if b, err := readBounded(filepath.Join(gitDir, "commondir")); err == nil {
		common := strings.TrimSpace(string(b))
		if common != "" {
			if !filepath.IsAbs(common) {
				common = filepath.Join(gitDir, common)
			}
			files = append(files, filepath.Join(common, "config"))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	c.home = home
	for _, f := range files {
		if err := c.file(f, 0); err != nil {
			return err
		}
	}
	if vars, err := envConfigVars(); err != nil {
		return err
	} else if len(vars) > 0 {
		err := c.entries(envConfig, 0, func(fn func(section, key, value string)) {
			for _, v := range vars {
				fn(v[0], v[1], v[2])
			}
		})
		if err != nil {
			return err
		}
	}
	for _, dir := range append([]string{filepath.Join(gitDir, "hooks")}, c.hookDirs...) {
		if err := c.hookManagers(dir); err != nil {
			return err
		}
	}
	return nil
}

// Bounds of the look at a hooks directory's shims: entries, and bytes
// read of each.
const (
	maxHookEntries = 256
	maxHookBytes   = 16 << 10
)

// lefthookFiles are what lefthook reads at the top of the working tree:
// its configuration in every format it takes, the local override, and
// the directories of scripts it runs (source_dir and source_dir_local).
var lefthookFiles = []string{
	"lefthook.yml", ".lefthook.yml", "lefthook.yaml", ".lefthook.yaml", "lefthook.json", ".lefthook.json",
	"lefthook.jsonc", ".lefthook.jsonc", "lefthook.toml", ".lefthook.toml",
	"lefthook-local.yml", ".lefthook-local.yml", "lefthook-local.yaml", ".lefthook-local.yaml",
	"lefthook-local.json", ".lefthook-local.json", "lefthook-local.jsonc", ".lefthook-local.jsonc",
	"lefthook-local.toml", ".lefthook-local.toml", ".lefthook", ".lefthook-local",
}

// hookManagers protects what a hook manager's shims in the hooks
// directory dir run from the working tree: a shim of the pre-commit
// framework (its ARGS hold "hook-impl") reads the file its --config
// names (.pre-commit-config.yaml unless it names another), whose hooks
// are any commands; a shim of lefthook reads lefthook.yml (lefthookFiles)
// and runs the scripts under .lefthook. A hook that is neither is a
// program of its own, protected as the hooks directory is; what it runs
// of the project (npm test, make) is the project's code.
func (c *configLook) hookManagers(dir string) error {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrPermission) && !c.inside(dir) {
		return nil
	}
	if err != nil {
		return &BoundError{fmt.Sprintf("reading the hooks in %s: %v", dir, err)}
	}
	names, err := f.Readdirnames(maxHookEntries + 1)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return &BoundError{fmt.Sprintf("reading the hooks in %s: %v", dir, err)}
	}
	if len(names) > maxHookEntries {
		return &BoundError{fmt.Sprintf("more than %d entries in the hooks directory %s", maxHookEntries, dir)}
	}
	slices.Sort(names)
	for _, name := range names {
		b, err := readPrefix(filepath.Join(dir, name), maxHookBytes)
		if err != nil {
			continue // a directory, a dangling link: git runs neither
		}
		if err := c.budget.spend(len(b), filepath.Join(dir, name)); err != nil {
			return err
		}
		why := "the hook " + filepath.Join(dir, name)
		text := string(b)
		if strings.Contains(text, "hook-impl") {
			config := ".pre-commit-config.yaml"
			if _, rest, ok := strings.Cut(text, "--config="); ok {
				config = rest[:strings.IndexFunc(rest+" ", func(r rune) bool { return strings.ContainsRune(" \t\n)'\"", r) })]
				config = strings.Trim(config, "'\"")
			}
			if config != "" {
				if err := c.commandWord(config, why+" (the pre-commit framework's configuration)"); err != nil {
					return err
				}
			}
		}
		if strings.Contains(text, "lefthook") {
			for _, lf := range lefthookFiles {
				if err := c.commandWord(lf, why+" (lefthook's configuration)"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// readPrefix reads at most n bytes of the regular file name (following
// links); anything else is an error.
func readPrefix(name string, n int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	return io.ReadAll(io.LimitReader(f, n))
}

type configLook struct {
	ws, worktree, home string
	out                *[]string
	read               map[string]bool
	hookDirs           []string // the directories core.hooksPath names
	budget             *budget
}

// Bounds of one look (Git, or Nested) over every repository it reads:
// bytes of configuration and of hooks read, and paths in the protected
// list. Before, a repository a run made (git init vendor/x, whose
// config is the run's) holding 1 MiB of aliases naming files gave 59,000
// protected paths and took the supervisor 5 s per configuration file,
// outside the run's limits, before every later run.
const (
	maxLookBytes      = 16 << 20
	maxProtectedPaths = 16384
)

// A budget is what one look has spent, and the paths its list holds
// (so that adding one costs no scan of the list).
type budget struct {
	bytes int64
	seen  map[string]bool
}

// add appends p to out unless it is there, failing past
// maxProtectedPaths; b may be nil (a look of its own).
func (b *budget) add(out *[]string, p, why string) error {
	if b == nil {
		b = &budget{}
	}
	if b.seen == nil {
		b.seen = make(map[string]bool, len(*out))
		for _, q := range *out {
			b.seen[q] = true
		}
	}
	if b.seen[p] {
		return nil
	}
	if len(*out) >= maxProtectedPaths {
		return &BoundError{fmt.Sprintf("more than %d protected paths (at %s, from %s)", maxProtectedPaths, p, why)}
	}
	b.seen[p] = true
	*out = append(*out, p)
	return nil
}

// spend charges n bytes read to b, or fails past maxLookBytes.
func (b *budget) spend(n int, what string) error {
	if b == nil {
		return nil
	}
	if b.bytes += int64(n); b.bytes > maxLookBytes {
		return &BoundError{fmt.Sprintf("more than %d bytes of git configuration and hooks to read (at %s)", maxLookBytes, what)}
	}
	return nil
}

// coreWorktree returns the working tree gitDir's config names with
// core.worktree (a submodule's repository names its checkout so), made
// absolute, or "".
func (c *configLook) coreWorktree(gitDir string) (string, error) {
	b, err := readBounded(filepath.Join(gitDir, "config"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	wt := ""
	parseConfig(b, func(section, key, value string) {
		if section == "core" && key == "worktree" && value != "" {
			wt = value
		}
	})
	if wt != "" && !filepath.IsAbs(wt) {
		wt = filepath.Join(gitDir, wt)
	}
	return wt, nil
}

func (c *configLook) file(name string, depth int) error {
	name = filepath.Clean(name)
	if c.read[name] {
		return nil
	}
	if len(c.read) >= maxConfigFiles {
		return &BoundError{fmt.Sprintf("more than %d git configuration files to read (through include.path)", maxConfigFiles)}
	}
	c.read[name] = true
	if depth == 0 {
		// The system and global files, and the repository's own: one in
		// the workspace (a home directory as the workspace holds
		// .config/git/config; $GIT_CONFIG_GLOBAL may name any file) is
		// git's configuration, there or not yet.
		if err := c.protect(name, "git's configuration"); err != nil {
			return err
		}
	}
	b, err := readBounded(name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) && !c.inside(name) {
		// A file git would not find either; one outside the workspace
		// this process may not read, no run can write.
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.budget.spend(len(b), name); err != nil {
		return err
	}
	return c.entries(name, depth, func(fn func(section, key, value string)) { parseConfig(b, fn) })
}

// entries judges the variables each gives, read from name (a file, or
// the environment) at include depth depth: hooks paths, includes and
// commands.
func (c *configLook) entries(name string, depth int, each func(fn func(section, key, value string))) error {
	var hooks, includes []string
	type command struct {
		key, value string
		kind       commandKind
	}
	var commands []command
	each(func(section, key, value string) {
		switch {
		case section == "core" && key == "hookspath":
			hooks = append(hooks, value)
		case (section == "include" || section == "includeif") && key == "path":
			includes = append(includes, value)
		case runsCommand(section, key, value) != notCommand:
			commands = append(commands, command{section + "." + key, value, runsCommand(section, key, value)})
		}
	})
	for _, cmd := range commands {
		if err := c.command(cmd.kind, cmd.key, cmd.value, name); err != nil {
			return err
		}
	}
	for _, h := range hooks {
		if h == "" {
			continue
		}
		h = c.expand(h)
		if !filepath.IsAbs(h) {
			if c.worktree == "" {
				return &BoundError{fmt.Sprintf("%s sets core.hooksPath %q, relative to a working tree the sandbox does not know", name, h)}
			}
			h = filepath.Join(c.worktree, h)
		}
		if err := c.protect(h, "core.hooksPath in "+name); err != nil {
			return err
		}
		c.hookDirs = append(c.hookDirs, h)
		if filepath.Base(filepath.Clean(h)) == "_" {
			// husky 9's layout: the hooks in .husky/_ are shims that run
			// the script of the same name in the parent directory, the
			// project's real hooks.
			if err := c.protect(filepath.Dir(filepath.Clean(h)), "core.hooksPath in "+name+" (a hooks directory named _ runs its parent's scripts, as husky's does)"); err != nil {
				return err
			}
		}
	}
	for _, inc := range includes {
		if inc == "" {
			continue
		}
		inc = c.expand(inc)
		if !filepath.IsAbs(inc) {
			if name == envConfig {
				return &BoundError{fmt.Sprintf("%s includes %q, a relative path with no file to be relative to", name, inc)}
			}
			inc = filepath.Join(filepath.Dir(name), inc)
		}
		if err := c.protect(inc, "include.path in "+name); err != nil {
			return err
		}
		if depth+1 > maxIncludeDeep {
			return &BoundError{fmt.Sprintf("git configuration includes nested more than %d deep (%s)", maxIncludeDeep, inc)}
		}
		if err := c.file(inc, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// expand replaces a leading ~/ with the home directory, as git does.
func (c *configLook) expand(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok && c.home != "" {
		return filepath.Join(c.home, rest)
	}
	return p
}

// inside reports whether p lies in ws, as written or through links.
func (c *configLook) inside(p string) bool {
	_, ok := c.rel(p)
	return ok
}

// rel returns p relative to ws when p lies in ws, as written or, for the
// part of it that exists, through symbolic links.
func (c *configLook) rel(p string) (string, bool) {
	p = filepath.Clean(p)
	if rel, err := filepath.Rel(c.ws, p); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel), true
	}
	if rel, err := filepath.Rel(c.ws, p); err == nil && rel == "." {
		return ".", true
	}
	// Through links: the deepest existing directory above p, resolved.
	dir, tail := p, ""
	for {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			realWS, err := filepath.EvalSymlinks(c.ws)
			if err != nil {
				return "", false
			}
			full := filepath.Join(real, tail)
			if rel, err := filepath.Rel(realWS, full); err == nil && (filepath.IsLocal(rel) || rel == ".") {
				return filepath.ToSlash(rel), true
			}
			return "", false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		tail = filepath.Join(filepath.Base(dir), tail)
		dir = parent
	}
}

// protect adds p to the protected paths when it lies in ws.
func (c *configLook) protect(p, why string) error {
	rel, ok := c.rel(p)
	if !ok {
		return nil
	}
	if rel == "." {
		return &BoundError{fmt.Sprintf("%s names the workspace itself, which cannot be protected read-only", why)}
	}
	if c.budget == nil {
		c.budget = &budget{}
	}
	return c.budget.add(c.out, rel, why)
}

// readBounded reads a file of at most maxConfigBytes; a larger one is an
// error.
func readBounded(name string) ([]byte, error) {
	b, err := boundedfile.Read(name, maxConfigBytes)
	if _, ok := errors.AsType[*boundedfile.TooLargeError](err); ok {
		return nil, &BoundError{fmt.Sprintf("git configuration %s is over %d bytes", name, maxConfigBytes)}
	}
	return b, err
}

// parseConfig calls fn with each variable of the git configuration text
// b: its section (lower case, without subsection), its key (lower case)
// and its value (quotes and escapes undone, comments and surrounding
// blanks removed; "" for a key without "="). Text it cannot read is
// skipped, as a superset: git refuses such a file outright.
func parseConfig(b []byte, fn func(section, key, value string)) {
	s := string(b)
	section := ""
	i := 0
	for i < len(s) {
		// Start of a line.
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
			i++
		}
		if i >= len(s) {
			return
		}
		switch c := s[i]; {
		case c == '#' || c == ';':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return
			}
			head := s[i+1 : i+end]
			i += end + 1
			name, _, _ := strings.Cut(strings.TrimSpace(head), " ")
			name, _, _ = strings.Cut(name, "\t")
			name, _, _ = strings.Cut(name, ".") // [section.subsection]
			section = strings.ToLower(name)
			// The rest of the line may hold a variable (git allows
			// "[core] hooksPath = x").
		default:
			start := i
			for i < len(s) && (isAlnum(s[i]) || s[i] == '-') {
				i++
			}
			key := strings.ToLower(s[start:i])
			if key == "" {
				// Not a variable: skip the line.
				for i < len(s) && s[i] != '\n' {
					i++
				}
				continue
			}
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			if i >= len(s) || s[i] != '=' {
				fn(section, key, "")
				continue
			}
			i++
			var v strings.Builder
			quoted := false
			keep := 0 // length of v up to its last character that is not trailing blank
		value:
			for i < len(s) {
				c := s[i]
				switch {
				case c == '\n' && !quoted:
					break value
				case c == '\\' && i+1 < len(s):
					i++
					switch e := s[i]; e {
					case '\n':
					case '\r':
						if i+1 < len(s) && s[i+1] == '\n' {
							i++
						}
					case 'n':
						v.WriteByte('\n')
					case 't':
						v.WriteByte('\t')
					case 'b':
						v.WriteByte('\b')
					default:
						v.WriteByte(e)
					}
					keep = v.Len()
				case c == '"':
					quoted = !quoted
					keep = v.Len()
				case (c == '#' || c == ';') && !quoted:
					for i < len(s) && s[i] != '\n' {
						i++
					}
					break value
				case (c == ' ' || c == '\t' || c == '\r') && !quoted:
					if v.Len() > 0 {
						v.WriteByte(c)
					}
				default:
					v.WriteByte(c)
					keep = v.Len()
				}
				i++
			}
			fn(section, key, v.String()[:keep])
		}
	}
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// How git runs a configuration value (runsCommand).
type commandKind int

const (
	notCommand   commandKind = iota
	shellCommand             // a command line, run through the shell
	programPath              // the path of a program, run as it is
)

// runsCommand says whether git runs the value of section.key (section
// without its subsection, both lower case) as a program. The list, from
// git's documentation of each setting: core.fsmonitor (unless a
// boolean), core.sshCommand, core.gitProxy, core.pager, pager.* (unless
// a boolean), core.editor, sequence.editor, core.askPass, diff.external,
// diff.*.command, diff.*.textconv, interactive.diffFilter,
// merge.*.driver, filter.*.clean, smudge and process, credential.helper
// and credential.*.helper, gpg.program and gpg.*.program,
// gpg.ssh.defaultKeyCommand, alias.* and submodule.*.update starting with
// "!", remote.*.uploadpack and receivepack (run here for a repository on
// this machine), uploadpack.packObjectsHook, tar.*.command,
// trailer.*.command and cmd, imap.tunnel, sendemail.sendmailCmd,
// sendemail.toCmd and ccCmd, difftool.*.cmd, mergetool.*.cmd, man.*.cmd,
// browser.*.cmd, guitool.*.cmd; and as a program's path difftool.*.path,
// mergetool.*.path, man.*.path, browser.*.path and sendemail.smtpServer.
func runsCommand(section, key, value string) commandKind {
	switch section + "." + key {
	case "core.fsmonitor":
		if _, ok := gitBool(value); ok {
			return notCommand
		}
		return shellCommand
	case "core.sshcommand", "core.gitproxy", "core.pager", "core.editor", "sequence.editor", "core.askpass",
		"diff.external", "diff.command", "diff.textconv", "interactive.difffilter", "merge.driver",
		"filter.clean", "filter.smudge", "filter.process", "credential.helper", "gpg.program",
		"gpg.defaultkeycommand", "remote.uploadpack", "remote.receivepack", "uploadpack.packobjectshook",
		"tar.command", "trailer.command", "trailer.cmd", "imap.tunnel", "sendemail.sendmailcmd",
		"sendemail.tocmd", "sendemail.cccmd", "difftool.cmd", "mergetool.cmd", "man.cmd", "browser.cmd",
		"guitool.cmd":
		return shellCommand
	case "difftool.path", "mergetool.path", "man.path", "browser.path", "sendemail.smtpserver":
		return programPath
	}
	switch section {
	case "pager":
		if _, ok := gitBool(value); ok {
			return notCommand
		}
		return shellCommand
	case "alias":
		if strings.HasPrefix(value, "!") {
			return shellCommand
		}
	case "submodule":
		if key == "update" && strings.HasPrefix(value, "!") {
			return shellCommand
		}
	}
	return notCommand
}

// gitBool reads a git boolean.
func gitBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true, true
	case "", "false", "no", "off", "0":
		return false, true
	}
	return false, false
}

// command protects the files inside ws that the command value of key,
// read from the file from, runs or hands to what it runs: every word
// that is a path (holds a slash, or starts with "." or "~"), and every
// other word but the program's name that names an existing file at the
// top of the working tree, where git runs such commands. A path after
// "=" (an option's value, or an assignment such as LD_PRELOAD=./x.so) is
// a path too. A command line the sandbox cannot read word by word (an
// expansion other than $1..$9, $@, $* and $#, a substitution, a
// redirection, a subshell, a function, a glob, a backslash) is an error:
// what it runs cannot be judged.
func (c *configLook) command(kind commandKind, key, value, from string) error {
	why := key + " in " + from
	if kind == programPath {
		if value == "" {
			return nil
		}
		return c.commandWord(value, why)
	}
	segments, err := shellWords(strings.TrimPrefix(value, "!"))
	if err != nil {
		return &BoundError{fmt.Sprintf("%s runs %q, which the sandbox cannot judge (%v): refusing rather than leave what it runs writable; write the setting without shell syntax (the shell code in a script outside the workspace, named by its path), or give this program a git configuration without it (GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM)", why, value, err)}
	}
	for _, words := range segments {
		program := true
		for _, w := range words {
			if w == "" || positional(w) {
				program = false
				continue
			}
			if strings.HasPrefix(w, "-") {
				// An option; its value after "=" when it is a path.
				if _, v, ok := strings.Cut(w, "="); ok && pathLike(v) {
					if err := c.commandWord(v, why); err != nil {
						return err
					}
				}
				program = false
				continue
			}
			if name, v, ok := strings.Cut(w, "="); ok && validEnvName(name) {
				// An assignment before the program (LD_PRELOAD=./x.so),
				// or a name=value argument (ssh's -o ControlPath=...):
				// its value when it is a path.
				if pathLike(v) {
					if err := c.commandWord(v, why); err != nil {
						return err
					}
				}
				continue
			}
			if w == "{" || w == "}" || strings.HasSuffix(w, "()") {
				// A function's definition (f() { ...; }; f): its body's
				// commands are judged as any others.
				program = true
				continue
			}
			if program && !strings.Contains(w, "/") {
				// The program's name, looked up in PATH.
				program = false
				continue
			}
			program = false
			if pathLike(w) {
				if err := c.commandWord(w, why); err != nil {
					return err
				}
				continue
			}
			// A plain word: a file of that name at the top of the
			// working tree is what an interpreter given it would open.
			if c.worktree != "" {
				if _, err := os.Lstat(filepath.Join(c.worktree, w)); err == nil {
					if err := c.protect(filepath.Join(c.worktree, w), why); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// commandWord protects the path w a command names (absolute, under the
// home directory, or relative to the top of the working tree).
func (c *configLook) commandWord(w, why string) error {
	w = c.expand(w)
	if !filepath.IsAbs(w) {
		if c.worktree == "" {
			return &BoundError{fmt.Sprintf("%s names %q, relative to a working tree the sandbox does not know", why, w)}
		}
		w = filepath.Join(c.worktree, w)
	}
	return c.protect(w, why)
}

// pathLike reports whether a word of a command is a path: it holds a
// slash or starts with "." or "~".
func pathLike(w string) bool {
	return strings.Contains(w, "/") || strings.HasPrefix(w, ".") || strings.HasPrefix(w, "~")
}

// positional reports whether w is one of the shell's positional
// parameters, which git's caller supplies ($1..$9, $@, $*, $#).
func positional(w string) bool {
	return len(w) == 2 && w[0] == '$' && strings.IndexByte("123456789@*#", w[1]) >= 0
}

func validEnvName(n string) bool {
	if n == "" || '0' <= n[0] && n[0] <= '9' {
		return false
	}
	for i := 0; i < len(n); i++ {
		if !isAlnum(n[i]) && n[i] != '_' {
			return false
		}
	}
	return true
}

// maxCommandWords bounds the words of one command value.
const maxCommandWords = 1024

// shellWords splits a command line into simple commands (separated by
// ";", "|", "&", "&&", "||" and newlines) and their words, with single
// and double quotes undone; a function's definition (f() { ...; }) gives
// the words "f()", "{" and "}", each a command of its own. It refuses
// what it does not model: a backslash, a backquote, "$" other than a
// whole positional parameter ("$1", "\"$@\""), redirections, other
// parentheses and braces, glob characters, "#", and an unterminated
// quote.
func shellWords(s string) ([][]string, error) {
	var (
		segments [][]string
		words    []string
		cur      strings.Builder
		inWord   bool
		n        int
	)
	endWord := func() error {
		if inWord {
			if n++; n > maxCommandWords {
				return fmt.Errorf("more than %d words", maxCommandWords)
			}
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
		return nil
	}
	endSegment := func() error {
		if err := endWord(); err != nil {
			return err
		}
		if len(words) > 0 {
			segments = append(segments, words)
			words = nil
		}
		return nil
	}
	dollar := func(i int, quoted bool) (int, error) {
		// s[i] is '$': only a whole positional parameter.
		if i+1 < len(s) && strings.IndexByte("123456789@*#", s[i+1]) >= 0 {
			end := i + 2
			closeQ := end
			if quoted {
				if closeQ >= len(s) || s[closeQ] != '"' || cur.Len() > 0 {
					return 0, fmt.Errorf("an expansion inside a word")
				}
			} else if end < len(s) && !strings.ContainsRune(" \t\n;|&", rune(s[end])) || cur.Len() > 0 {
				return 0, fmt.Errorf("an expansion inside a word")
			}
			cur.WriteString(s[i:end])
			inWord = true
			return end, nil
		}
		return 0, fmt.Errorf("an expansion (%q)", "$")
	}
	for i := 0; i < len(s); {
		switch ch := s[i]; ch {
		case ' ', '\t':
			if err := endWord(); err != nil {
				return nil, err
			}
			i++
		case '\n', ';', '|', '&':
			if err := endSegment(); err != nil {
				return nil, err
			}
			i++
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("an unterminated quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			inWord = true
			i += end + 2
		case '"':
			i++
			for {
				if i >= len(s) {
					return nil, fmt.Errorf("an unterminated quote")
				}
				c := s[i]
				if c == '"' {
					i++
					break
				}
				switch c {
				case '\\', '`':
					return nil, fmt.Errorf("%q inside double quotes", c)
				case '$':
					j, err := dollar(i, true)
					if err != nil {
						return nil, err
					}
					i = j
					continue
				}
				cur.WriteByte(c)
				i++
			}
			inWord = true
		case '$':
			j, err := dollar(i, false)
			if err != nil {
				return nil, err
			}
			i = j
		case '(':
			// Only a function's name: f().
			if !inWord || !validEnvName(cur.String()) || i+1 >= len(s) || s[i+1] != ')' {
				return nil, fmt.Errorf("%q", ch)
			}
			cur.WriteString("()")
			if err := endSegment(); err != nil {
				return nil, err
			}
			i += 2
		case '{', '}':
			// Only a word of its own: a function's body.
			if inWord || i+1 < len(s) && !strings.ContainsRune(" \t\n;", rune(s[i+1])) {
				return nil, fmt.Errorf("%q", ch)
			}
			cur.WriteByte(ch)
			inWord = true
			if err := endSegment(); err != nil {
				return nil, err
			}
			i++
		case '\\', '`', '<', '>', ')', '*', '?', '[', ']', '#':
			return nil, fmt.Errorf("%q", ch)
		default:
			cur.WriteByte(ch)
			inWord = true
			i++
		}
	}
	if err := endSegment(); err != nil {
		return nil, err
	}
	return segments, nil
}

// envConfig names the configuration git takes from its environment.
const envConfig = "the environment's git configuration (GIT_CONFIG_COUNT, GIT_CONFIG_PARAMETERS)"

// maxEnvConfig bounds the variables read from the environment.
const maxEnvConfig = 1024

// envConfigVars returns the variables git reads from this process's
// environment, as git run in it would (GIT_CONFIG_COUNT with
// GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n, and GIT_CONFIG_PARAMETERS,
// what "git -c" passes on), each as section (without its subsection),
// key and value, lower case but the value. What it cannot read is an
// error, as git refuses it too.
func envConfigVars() ([][3]string, error) {
	var out [][3]string
	add := func(k, v string) error {
		first, rest, ok := strings.Cut(k, ".")
		if !ok {
			return &BoundError{fmt.Sprintf("%s: %q is not section.key", envConfig, k)}
		}
		key := rest[strings.LastIndexByte(rest, '.')+1:]
		if len(out) >= maxEnvConfig {
			return &BoundError{fmt.Sprintf("%s: more than %d variables", envConfig, maxEnvConfig)}
		}
		out = append(out, [3]string{strings.ToLower(first), strings.ToLower(key), v})
		return nil
	}
	if n := os.Getenv("GIT_CONFIG_COUNT"); n != "" {
		count, err := strconv.Atoi(n)
		if err != nil || count < 0 || count > maxEnvConfig {
			return nil, &BoundError{fmt.Sprintf("%s: GIT_CONFIG_COUNT %q", envConfig, n)}
		}
		for i := range count {
			k, ok := os.LookupEnv("GIT_CONFIG_KEY_" + strconv.Itoa(i))
			if !ok || k == "" {
				return nil, &BoundError{fmt.Sprintf("%s: GIT_CONFIG_KEY_%d missing", envConfig, i)}
			}
			if err := add(k, os.Getenv("GIT_CONFIG_VALUE_"+strconv.Itoa(i))); err != nil {
				return nil, err
			}
		}
	}
	if ps := os.Getenv("GIT_CONFIG_PARAMETERS"); ps != "" {
		// 'key'='value' 'key' ..., each part single-quoted with '\''
		// for a quote.
		rest := ps
		word := func() (string, bool) {
			if !strings.HasPrefix(rest, "'") {
				return "", false
			}
			var b strings.Builder
			rest = rest[1:]
			for {
				i := strings.IndexByte(rest, '\'')
				if i < 0 {
					return "", false
				}
				b.WriteString(rest[:i])
				rest = rest[i+1:]
				if strings.HasPrefix(rest, "\\''") {
					b.WriteByte('\'')
					rest = rest[3:]
					continue
				}
				return b.String(), true
			}
		}
		for rest = strings.TrimLeft(rest, " "); rest != ""; rest = strings.TrimLeft(rest, " ") {
			k, ok := word()
			if !ok {
				return nil, &BoundError{fmt.Sprintf("%s: GIT_CONFIG_PARAMETERS cannot be read", envConfig)}
			}
			v := ""
			if strings.HasPrefix(rest, "=") {
				rest = rest[1:]
				if v, ok = word(); !ok {
					return nil, &BoundError{fmt.Sprintf("%s: GIT_CONFIG_PARAMETERS cannot be read", envConfig)}
				}
			} else if kk, vv, ok := strings.Cut(k, "="); ok {
				// The older form: 'key=value'.
				k, v = kk, vv
			}
			if err := add(k, v); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
