package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/miniopenclaw/tool/internal/boundedfile"
	"github.com/miniopenclaw/tool/internal/jsonduration"
)

// MaxPolicyBytes bounds the text of a policy: [ReadPolicyFile] refuses a
// larger file and [ParsePolicy] a larger text.
const MaxPolicyBytes = 1 << 20

// policyJSON is the JSON shape of a policy.
type policyJSON struct {
	Workspace       string   `json:"workspace"`
	ReadOnly        []string `json:"readOnly"`
	Protected       []string `json:"protected"`
	Network         Network  `json:"network"`
	Allow           []string `json:"allow"`
	DenyUnixSockets bool     `json:"denyUnixSockets"`
	Env             []string `json:"env"`
	Image           string   `json:"image"`
	Limits          struct {
		CPU       jsonDuration `json:"cpu"`
		Memory    int64        `json:"memory"`
		Processes int          `json:"processes"`
		FileSize  int64        `json:"fileSize"`
		OpenFiles int          `json:"openFiles"`
		Tmp       int64        `json:"tmp"`
		Output    int          `json:"output"`
		GitSearch int          `json:"gitSearch"`
	} `json:"limits"`
	Without []Layer `json:"without"`
}

// ReadPolicyFile reads a policy file (at most [MaxPolicyBytes]) with
// [ParsePolicy], relative paths relative to the file's directory. Its
// errors name the file.
func ReadPolicyFile(name string) (*Policy, error) {
	b, err := boundedfile.Read(name, MaxPolicyBytes)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		return nil, err
	}
	p, err := ParsePolicy(b, dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// ParsePolicy parses a policy written as a JSON object with the fields of
// [Policy], named in lower camel case ("workspace", "readOnly",
// "protected", "network", "allow", "denyUnixSockets", "env", "image",
// "limits", "without"), limits in bytes and "cpu" as a duration ("10s", or a number
// of milliseconds):
//
//	{"workspace": "work", "readOnly": ["/srv/docs"], "network": "none",
//	 "limits": {"cpu": "10s", "memory": 268435456, "output": 65536}}
//
// "allow" is the allow list of "network": "allow", each rule written as
// [ParseHostRule] reads it ("api.example.com", "*.example.org:443,8443",
// "[2001:db8::1]:443").
//
// "image" names the container image the policy's commands run in: only a
// container backend runs such a policy (the native backend refuses it),
// and a configuration of package plugins runs a stdio MCP server under it
// in a container.
//
// Relative paths are relative to dir (a relative result is refused, as
// Validate refuses it). A field the policy does not know is an error, not
// ignored, and so are a negative limit, text after the object, a text
// longer than [MaxPolicyBytes] and a policy that [Policy.Validate]
// refuses.
func ParsePolicy(data []byte, dir string) (*Policy, error) {
	if len(data) > MaxPolicyBytes {
		return nil, fmt.Errorf("sandbox: a policy of %d bytes, more than %d", len(data), MaxPolicyBytes)
	}
	var f policyJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a valid sandbox policy: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not a valid sandbox policy: text after the JSON object")
	}
	p := &Policy{
		Protected: f.Protected, Network: f.Network, DenyUnixSockets: f.DenyUnixSockets,
		Env: f.Env, Image: f.Image, Without: f.Without,
		Limits: Limits{
			CPU: time.Duration(f.Limits.CPU), Memory: f.Limits.Memory, Processes: f.Limits.Processes,
			FileSize: f.Limits.FileSize, OpenFiles: f.Limits.OpenFiles, Tmp: f.Limits.Tmp, Output: f.Limits.Output,
			GitSearch: f.Limits.GitSearch,
		},
	}
	for _, rule := range f.Allow {
		r, err := ParseHostRule(rule)
		if err != nil {
			return nil, fmt.Errorf("allow: %w", err)
		}
		p.Allow = append(p.Allow, r)
	}
	if f.Workspace != "" {
		p.Workspace = underDir(dir, f.Workspace)
	}
	for _, ro := range f.ReadOnly {
		p.ReadOnly = append(p.ReadOnly, underDir(dir, ro))
	}
	l := p.Limits
	if l.CPU < 0 || l.Memory < 0 || l.Processes < 0 || l.FileSize < 0 || l.OpenFiles < 0 || l.Tmp < 0 || l.Output < 0 || l.GitSearch < 0 {
		return nil, errors.New("limits must not be negative")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

func underDir(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// A jsonDuration is a time.Duration written as a Go duration string
// ("30s") or a number of milliseconds.
type jsonDuration time.Duration

func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	v, err := jsonduration.Parse(b)
	*d = jsonDuration(v)
	return err
}
