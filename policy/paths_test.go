package policy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/policy"
)

const docsOnly = `
permit (principal, action, resource) when { context.args.path like "docs/*" };
`

// TestPathRootSymlinks checks that a path condition sees where symbolic
// links lead, inside the workspace, and that a link leading out of it is
// refused, whatever the condition says.
func TestPathRootSymlinks(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	for _, d := range []string{"ws/docs/sub", "ws/secrets", "outside"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(ws, "secrets", "k"), []byte("key"), 0o600)
	os.WriteFile(filepath.Join(ws, "docs", "a"), []byte("a"), 0o600)
	for link, target := range map[string]string{
		"docs/x":     "../secrets",        // in the workspace, out of docs
		"docs/out":   "../../outside",     // out of the workspace
		"docs/abs":   filepath.Join(dir),  // absolute
		"docs/ok":    "sub",               // stays in docs
		"docs/loop":  "loop",              // itself
		"docs/c1":    "c2",                // a chain ending in secrets
		"docs/c2":    "../secrets",        //
		"docs/dang":  "../secrets/new",    // dangling: a file to be created in secrets
		"docs/dots":  "missing/../../../", // climbs through a directory that does not exist
		"docs/alias": "./../docs/a",       // a link back into docs
	} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	a, err := policy.New("docs.cedar", []byte(docsOnly), policy.WithPathArguments("path"), policy.WithPathRoot(root, "write_file"))
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	type args struct {
		Path    string `json:"path"`
		Content string `json:"content,omitempty"`
	}
	for _, name := range []string{"write_file", "other"} {
		reg.Register(tool.Must(tool.New(name, "Writes.", func(ctx context.Context, in args) (string, error) { return "ok", nil })))
	}
	ctx := context.Background()
	tests := []struct {
		path, want string // want: "" allowed, else a part of the refusal
	}{
		{"docs/a", ""},
		{"docs/new/file", ""},                // does not exist yet
		{"docs/ok/f", ""},                    // docs/sub/f
		{"docs/alias", ""},                   // docs/a
		{"docs/x/../a", ""},                  // cleaned first, as the workspace tools do: docs/a
		{"docs/x/k", "no permission covers"}, // secrets/k
		{"docs/x", "no permission covers"},   // secrets
		{"docs/c1/k", "no permission covers"},
		{"docs/dang", "no permission covers"},
		{"docs/../secrets/k", "no permission covers"},
		{"docs/out/f", "leads outside the workspace through a symbolic link"},
		{"docs/abs/f", "leads outside the workspace through a symbolic link"},
		{"docs/loop/f", "more than 40 symbolic links"},
		{"docs/dots/f", "does not exist"},
		{"../ws/docs/a", "climbs out of the workspace"},
		{"/etc/passwd", "is absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			in, _ := json.Marshal(args{Path: tt.path})
			res := reg.Execute(ctx, "write_file", in)
			if tt.want == "" {
				if res.IsError {
					t.Errorf("refused: %s", res.Error)
				}
				return
			}
			if res.Kind != tool.KindDenied || !strings.Contains(res.Error, tt.want) {
				t.Errorf("got %q (%s), want denied with %q", res.Error, res.Kind, tt.want)
			}
		})
	}
	// A tool WithPathRoot does not name sees the lexical path only: the
	// link is not followed.
	if res := reg.Execute(ctx, "other", json.RawMessage(`{"path":"docs/x/k"}`)); res.IsError {
		t.Errorf("other tool: %s", res.Error)
	}
	// What the policy saw, for explain: the resolved path.
	if seen, err := a.PolicyArgs("write_file", json.RawMessage(`{"path":"docs/ok/f","content":"x"}`)); err != nil || string(seen) != `{"content":"x","path":"docs/sub/f"}` {
		t.Errorf("PolicyArgs docs/ok/f = %s, %v", seen, err)
	}
	if seen, err := a.PolicyArgs("other", json.RawMessage(`{"path":"docs/ok/f"}`)); err != nil || string(seen) != `{"path":"docs/ok/f"}` {
		t.Errorf("PolicyArgs for a tool outside the root = %s, %v", seen, err)
	}
	if _, err := a.PolicyArgs("write_file", json.RawMessage(`{"path":"docs/out/f"}`)); err == nil || !strings.Contains(err.Error(), "leads outside") {
		t.Errorf("PolicyArgs docs/out/f: %v", err)
	}
}

// TestPathRootUnconditionalPermit checks that a policy which permits a
// tool whatever its arguments (a decision the Authorizer caches) still has
// the tool's paths resolved in the workspace, so a link leading out is
// refused on every call, the first and the cached ones alike.
func TestPathRootUnconditionalPermit(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(dir, "outside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside", filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	a, err := policy.New("all.cedar", []byte(`permit (principal, action, resource);`),
		policy.WithPathArguments("path"), policy.WithPathRoot(root, "write_file"))
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry(tool.WithAuthorizer(a))
	type args struct {
		Path string `json:"path"`
	}
	reg.Register(tool.Must(tool.New("write_file", "Writes.", func(ctx context.Context, in args) (string, error) { return "ok", nil })))
	for i := range 3 {
		if res := reg.Execute(context.Background(), "write_file", json.RawMessage(`{"path":"in/f"}`)); res.IsError {
			t.Fatalf("call %d inside: %s", i, res.Error)
		}
		res := reg.Execute(context.Background(), "write_file", json.RawMessage(`{"path":"out/f"}`))
		if res.Kind != tool.KindDenied || !strings.Contains(res.Error, "leads outside the workspace") {
			t.Fatalf("call %d through the link: %q (%s), want denied", i, res.Error, res.Kind)
		}
	}
}
