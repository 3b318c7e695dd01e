package plugins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/miniopenclaw/tool/sandbox"
)

// maxPolicyBytes bounds a sandbox policy file.
const maxPolicyBytes = 1 << 20

// policyFile is the JSON shape of a sandbox policy file.
type policyFile struct {
	Workspace       string          `json:"workspace"`
	ReadOnly        []string        `json:"readOnly"`
	Protected       []string        `json:"protected"`
	Network         sandbox.Network `json:"network"`
	Allow           []string        `json:"allow"`
	DenyUnixSockets bool            `json:"denyUnixSockets"`
	Env             []string        `json:"env"`
	Limits          struct {
		CPU       Duration `json:"cpu"`
		Memory    int64    `json:"memory"`
		Processes int      `json:"processes"`
		FileSize  int64    `json:"fileSize"`
		OpenFiles int      `json:"openFiles"`
		Tmp       int64    `json:"tmp"`
		Output    int      `json:"output"`
	} `json:"limits"`
	Without []sandbox.Layer `json:"without"`
}

// ReadPolicy reads a sandbox policy file: a JSON object with the fields
// of [sandbox.Policy], named in lower camel case ("workspace",
// "readOnly", "protected", "network", "allow", "denyUnixSockets", "env",
// "limits", "without"), limits in bytes and "cpu" as a duration:
//
//	{"workspace": "work", "readOnly": ["/srv/docs"], "network": "none",
//	 "limits": {"cpu": "10s", "memory": 268435456, "output": 65536}}
//
// "allow" is the allow list of "network": "allow", each rule written as
// [sandbox.ParseHostRule] reads it ("api.example.com",
// "*.example.org:443,8443", "[2001:db8::1]:443").
//
// Relative paths are relative to the file's directory. A field the
// policy does not know is an error, not ignored, and so is a policy that
// [sandbox.Policy.Validate] refuses.
func ReadPolicy(name string) (*sandbox.Policy, error) {
	b, err := readBounded(name, maxPolicyBytes)
	if err != nil {
		return nil, err
	}
	var f policyFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: not a valid sandbox policy: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: not a valid sandbox policy: text after the JSON object", name)
	}
	dir, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		return nil, err
	}
	p := &sandbox.Policy{
		Protected: f.Protected, Network: f.Network, DenyUnixSockets: f.DenyUnixSockets,
		Env: f.Env, Without: f.Without,
		Limits: sandbox.Limits{
			CPU: time.Duration(f.Limits.CPU), Memory: f.Limits.Memory, Processes: f.Limits.Processes,
			FileSize: f.Limits.FileSize, OpenFiles: f.Limits.OpenFiles, Tmp: f.Limits.Tmp, Output: f.Limits.Output,
		},
	}
	for _, rule := range f.Allow {
		r, err := sandbox.ParseHostRule(rule)
		if err != nil {
			return nil, fmt.Errorf("%s: allow: %w", name, err)
		}
		p.Allow = append(p.Allow, r)
	}
	if f.Workspace != "" {
		p.Workspace = resolve(dir, f.Workspace)
	}
	for _, ro := range f.ReadOnly {
		p.ReadOnly = append(p.ReadOnly, resolve(dir, ro))
	}
	l := p.Limits
	if l.CPU < 0 || l.Memory < 0 || l.Processes < 0 || l.FileSize < 0 || l.OpenFiles < 0 || l.Tmp < 0 || l.Output < 0 {
		return nil, fmt.Errorf("%s: limits must not be negative", name)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

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
