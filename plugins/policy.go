package plugins

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/miniopenclaw/tool/sandbox"
)

// modulePolicy bounds a module's settings by the policy p: the files it
// sees, its memory, its output and its deadline. It returns the
// directories the module sees read-only at their own paths, or an error
// when the module asks for more than p grants.
func modulePolicy(p *sandbox.Policy, m *Module, output *int, timeout *time.Duration) (readOnly []string, err error) {
	if p == nil {
		return nil, nil
	}
	var granted []string
	if p.Workspace != "" {
		granted = append(granted, p.Workspace)
	}
	granted = append(granted, p.ReadOnly...)
	if m.Workspace != "" {
		if !inside(m.Workspace, granted) {
			return nil, fmt.Errorf(`"workspace" %q is not inside a path "sandboxPolicy" grants (its workspace or read-only paths)`, m.Workspace)
		}
	} else {
		readOnly = granted
	}
	if mem := p.Limits.Memory; mem > 0 {
		m.MemoryPages = min(m.MemoryPages, uint32(max(1, min(mem>>16, 1<<16))))
	}
	if o := p.Limits.Output; o > 0 {
		if *output <= 0 || *output > o {
			*output = o
		}
	}
	if c := p.Limits.CPU; c > 0 {
		*timeout = min(*timeout, c)
	}
	return readOnly, nil
}

// inside reports whether path is one of dirs or under one of them, after
// symbolic links are resolved on both sides.
func inside(path string, dirs []string) bool {
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	rp := real(path)
	for _, d := range dirs {
		if rel, err := filepath.Rel(real(d), rp); err == nil && filepath.IsLocal(rel) {
			return true
		}
	}
	return false
}
