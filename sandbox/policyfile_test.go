package sandbox_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox"
)

func TestReadPolicyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		t.Helper()
		p := filepath.Join(dir, "policy.json")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p, err := sandbox.ReadPolicyFile(write(`{"workspace": "work", "readOnly": ["/srv/docs"], "network": "host",
	  "env": ["LANG=C"], "limits": {"cpu": "10s", "memory": 1048576, "output": 100, "gitSearch": 500000}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Workspace != filepath.Join(dir, "work") || len(p.ReadOnly) != 1 || p.ReadOnly[0] != "/srv/docs" ||
		p.Network != "host" || p.Limits.CPU != 10*time.Second || p.Limits.Memory != 1<<20 || p.Limits.Output != 100 || p.Limits.GitSearch != 500000 {
		t.Errorf("policy: %+v", p)
	}
	p, err = sandbox.ReadPolicyFile(write(`{"network": "allow", "allow": ["api.example.com", "*.example.org:443,8443"], "limits": {"cpu": 1500}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Network != sandbox.NetworkAllow || len(p.Allow) != 2 || p.Allow[0].Host != "api.example.com" ||
		p.Allow[1].Host != "*.example.org" || len(p.Allow[1].Ports) != 2 || p.Allow[1].Ports[1] != 8443 {
		t.Errorf("allow list: %+v", p)
	}
	if p.Limits.CPU != 1500*time.Millisecond {
		t.Errorf("cpu given in milliseconds: %v, want 1.5s", p.Limits.CPU)
	}
	if p.Image != "" {
		t.Errorf("image %q from a policy that names none", p.Image)
	}
	if p, err = sandbox.ReadPolicyFile(write(`{"image": "clawtool-test/busybox:1"}`)); err != nil || p.Image != "clawtool-test/busybox:1" {
		t.Errorf("image: %+v, %v", p, err)
	}
	for text, want := range map[string]string{
		`{"network": "allow"}`:                                     "with an empty allow list",
		`{"network": "none", "allow": ["api.example.com"]}`:        `an allow list needs network "allow"`,
		`{"network": "allow", "allow": ["api.example.com:0"]}`:     "port 0 is out of range",
		`{"network": "allow", "allow": ["a.*.example.com"]}`:       "a wildcard is only",
		`{"workspace": "w", "readonly": ["/x"], "netwrk": "none"}`: `unknown field "netwrk"`,
		`{"limits": {"memory": -1}}`:                               "must not be negative",
		`{"limits": {"cpu": "soon"}}`:                              "invalid duration",
		`{"limits": {"gitSearch": -1}}`:                            "must not be negative",
		`{"env": ["API_KEY=x"]}`:                                   "API_KEY is refused",
		`{"network": "everywhere"}`:                                "unknown network",
		`{} {}`:                                                    "text after the JSON object",
		`{} ]`:                                                     "text after the JSON object",
		`{"protected": ["../x"]}`:                                  "not inside the workspace",
	} {
		name := write(text)
		if _, err := sandbox.ReadPolicyFile(name); err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), name+": ") {
			t.Errorf("%s: error %v, want %q in it, after the file's name", text, err, want)
		}
	}
	if _, err := sandbox.ReadPolicyFile(write(`{"env": ["A=` + strings.Repeat("x", sandbox.MaxPolicyBytes) + `"]}`)); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a file past MaxPolicyBytes: %v, want it refused", err)
	}
}

// TestParsePolicyRelativeDir: a relative path under a relative (or empty)
// directory stays relative, and Validate refuses it.
func TestParsePolicyRelativeDir(t *testing.T) {
	if _, err := sandbox.ParsePolicy([]byte(`{"workspace": "work"}`), ""); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("relative workspace without a directory: %v, want a refusal", err)
	}
	p, err := sandbox.ParsePolicy([]byte(`{"workspace": "work"}`), "/srv")
	if err != nil || p.Workspace != "/srv/work" {
		t.Errorf("ParsePolicy under /srv: %+v, %v", p, err)
	}
}

// FuzzParsePolicy: any text is a policy or an error, never a panic; a
// policy it returns passes Validate, names absolute paths only, and is
// what a second parse of the same text returns.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"workspace": "work", "readOnly": ["/srv/docs"], "network": "host", "env": ["LANG=C"], "limits": {"cpu": "10s", "memory": 1048576, "output": 100}}`,
		`{"network": "allow", "allow": ["api.example.com", "*.example.org:443,8443", "[2001:db8::1]:443"]}`,
		`{"limits": {"cpu": 1e300}}`,
		`{"limits": {"cpu": -5}}`,
		`{"without": ["seccomp", "bogus"]}`,
		`{"protected": ["../x", ".git/hooks"]}`,
		`{"env": ["A"], "workspace": "/"}`,
		`{} ]`,
		`[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := sandbox.ParsePolicy(data, "/base")
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("ParsePolicy returned a policy Validate refuses: %v", err)
		}
		for _, path := range append([]string{p.Workspace}, p.ReadOnly...) {
			if path != "" && !filepath.IsAbs(path) {
				t.Fatalf("ParsePolicy returned a relative path %q", path)
			}
		}
		again, err := sandbox.ParsePolicy(data, "/base")
		if err != nil || !reflect.DeepEqual(p, again) {
			t.Fatalf("a second parse differs: %+v, %v", again, err)
		}
	})
}
