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
	"github.com/miniopenclaw/tool/sandbox"
	"github.com/miniopenclaw/tool/sandbox/workspace"
)

// Catalog P, path rows: attempts to reach a file a policy forbids through
// the form of a path argument, against the workspace's file tools
// (package sandbox/workspace) under a Cedar policy, as clawtool call
// --workspace --policy sets them up. The tools resolve each path once,
// before the call is decided (tool.WithResolve); the policy decides on
// the resolved path; the tool opens exactly that, following no link.
//
// Each row is one attack; runPathRow checks, in a fixture of its own:
//
//   - the control: the attack is aimed at the secret. The host, reading
//     the row's control path the way the kernel does (links followed),
//     gets the secret; for a row that swaps a link between the decision
//     and the open, it reads it after the swap.
//   - the plain forms: read_file secrets/key is denied, read_file docs/a
//     is allowed, so the policy does refuse the target and the tool does
//     run.
//   - the attack: refused with the row's kind and message, and the
//     host-side check: no result (output or error) holds the secret's
//     text, the secret file is unchanged, and nothing was created in
//     secrets/.
//
// Each row runs with the Authorizer's cache (and its compiled fast path)
// and without it.
//
// The rows' type is local until catalog P's own (policy/catalog_test.go)
// lands; each field has its counterpart there.

// pathPolicies permits everything except what names secrets/ (or lists
// it through a glob pattern).
const pathPolicies = `
permit (principal, action, resource);
@id("no-secrets")
@reason("secrets/ is off limits")
forbid (principal, action, resource) when {
	context.args has path && (context.args.path == "secrets" || context.args.path like "secrets/*")
};
@id("no-secret-globs")
@reason("listing secrets/ is off limits")
forbid (principal, action, resource) when {
	context.args has pattern && context.args.pattern like "secrets*"
};
`

const secretText = "TOP-SECRET-KEY"

// A pathRow is one attack of catalog P's path rows.
type pathRow struct {
	// id is P-path-N; name says in a few words what the attack tries.
	id, name string
	// setup plants files and links in the workspace ws (and outside, in
	// its parent); nil plants none beyond the fixture's.
	setup func(t *testing.T, ws string)
	// tool and args are the attack's call, as the model sends it.
	tool, args string
	// swap, when set, runs after the policy allowed the call and before
	// the tool runs: a concurrent exec that swaps a link in.
	swap func(t *testing.T, ws string)
	// kind and want are the refusal: the result's kind and a part of its
	// message.
	kind tool.ErrorKind
	want string
	// control is a path, relative to ws unless absolute, that the host
	// reads to the secret, links followed (after swap, if any).
	control string
}

// The fixture: ws/secrets/key holds the secret, ws/docs/a a document,
// and ../outside-key a secret outside the workspace.
func newPathFixture(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	for _, d := range []string{"secrets", "docs/sub"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{
		filepath.Join(ws, "secrets", "key"):   secretText,
		filepath.Join(ws, "docs", "a"):        "doc a",
		filepath.Join(ws, "docs", "sub", "b"): "doc b " + "needle",
		filepath.Join(base, "outside-key"):    secretText,
	} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func link(t *testing.T, ws, name, target string) {
	t.Helper()
	p := filepath.Join(ws, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// swapFor replaces the entry name of ws with a link to target, as a
// sandboxed command would between a decision and an open.
func swapFor(name, target string) func(t *testing.T, ws string) {
	return func(t *testing.T, ws string) {
		p := filepath.Join(ws, name)
		tmp := p + ".swap"
		if err := os.Symlink(target, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
}

// afterDecision runs swap once the Authorizer has allowed a call.
type afterDecision struct {
	a    tool.Authorizer
	swap func()
}

func (s afterDecision) Authorize(ctx context.Context, req tool.AccessRequest) error {
	if err := s.a.Authorize(ctx, req); err != nil {
		return err
	}
	if s.swap != nil {
		s.swap()
	}
	return nil
}

var pathRows = []pathRow{
	{id: "P-path-1", name: "a link named with a backslash (issue 25)",
		setup: func(t *testing.T, ws string) { link(t, ws, `docs\x`, "secrets/key") },
		tool:  "read_file", args: `{"path":"docs\\x"}`,
		kind: tool.KindInvalidArguments, want: "contains a backslash", control: `docs\x`},
	{id: "P-path-2", name: "backslashes as separators with ..",
		tool: "read_file", args: `{"path":"docs\\..\\secrets\\key"}`,
		kind: tool.KindInvalidArguments, want: "contains a backslash", control: "docs/../secrets/key"},
	{id: "P-path-3", name: ".. after a directory",
		tool: "read_file", args: `{"path":"docs/sub/../../secrets/key"}`,
		kind: tool.KindDenied, want: "secrets/ is off limits", control: "docs/sub/../../secrets/key"},
	{id: "P-path-4", name: ".. after a link to a directory (physical, as the kernel resolves it)",
		setup: func(t *testing.T, ws string) {
			link(t, ws, "docs/deep", "../secrets/inner")
			os.Mkdir(filepath.Join(ws, "secrets", "inner"), 0o755)
		},
		tool: "read_file", args: `{"path":"docs/deep/../key"}`,
		kind: tool.KindDenied, want: "secrets/ is off limits", control: "docs/deep/../key"},
	{id: "P-path-5", name: ".. out of the workspace",
		tool: "read_file", args: `{"path":"docs/../../outside-key"}`,
		kind: tool.KindInvalidArguments, want: "escapes the workspace", control: "docs/../../outside-key"},
	{id: "P-path-6", name: "a link climbing out of the workspace",
		setup: func(t *testing.T, ws string) { link(t, ws, "docs/out", "../../outside-key") },
		tool:  "read_file", args: `{"path":"docs/out"}`,
		kind: tool.KindInvalidArguments, want: "escapes the workspace through the symbolic link docs/out", control: "docs/out"},
	{id: "P-path-7", name: "an absolute path to the secret",
		tool: "read_file", args: `{"path":"WS/secrets/key"}`,
		kind: tool.KindInvalidArguments, want: "is absolute", control: "WS/secrets/key"},
	{id: "P-path-8", name: "an absolute link target inside the workspace",
		setup: func(t *testing.T, ws string) { link(t, ws, "docs/abs", filepath.Join(ws, "secrets", "key")) },
		tool:  "read_file", args: `{"path":"docs/abs"}`,
		kind: tool.KindInvalidArguments, want: "escapes the workspace through the symbolic link docs/abs", control: "docs/abs"},
	{id: "P-path-9", name: "a link to the secret file",
		setup: func(t *testing.T, ws string) { link(t, ws, "docs/k", "../secrets/key") },
		tool:  "read_file", args: `{"path":"docs/k"}`,
		kind: tool.KindDenied, want: "secrets/ is off limits", control: "docs/k"},
	{id: "P-path-10", name: "a link to the secrets directory, read through",
		setup: func(t *testing.T, ws string) { link(t, ws, "docs/s", "../secrets") },
		tool:  "read_file", args: `{"path":"docs/s/key"}`,
		kind: tool.KindDenied, want: "secrets/ is off limits", control: "docs/s/key"},
	{id: "P-path-11", name: "a link to the secrets directory, listed",
		setup: func(t *testing.T, ws string) { link(t, ws, "docs/s", "../secrets") },
		tool:  "list_dir", args: `{"path":"docs/s"}`,
		kind: tool.KindDenied, want: "secrets/ is off limits", control: "docs/s/key"},
	{id: "P-path-12", name: "a link to the secrets directory, searched",
		setup: func(t *testing.T, ws string) { link(t, ws, "docs/s", "../secrets") },
		tool:  "grep", args: `{"pattern":"SECRET","path":"docs/s"}`,
		kind: tool.KindDenied, want: "secrets/ is off limits", control: "docs/s/key"},
	{id: "P-path-13", name: "a link to the secrets directory, globbed",
		setup: func(t *testing.T, ws string) { link(t, ws, "docs/s", "../secrets") },
		tool:  "glob", args: `{"pattern":"docs/s/*"}`,
		kind: tool.KindDenied, want: "listing secrets/ is off limits", control: "docs/s/key"},
	{id: "P-path-14", name: "a chain of links",
		setup: func(t *testing.T, ws string) {
			link(t, ws, "docs/c1", "c2")
			link(t, ws, "docs/c2", "sub/../c3")
			link(t, ws, "docs/c3", "../secrets")
		},
		tool: "read_file", args: `{"path":"docs/c1/key"}`,
		kind: tool.KindDenied, want: "secrets/ is off limits", control: "docs/c1/key"},
	{id: "P-path-15", name: "a link in a parent directory",
		setup: func(t *testing.T, ws string) { link(t, ws, "pub", "docs/../secrets") },
		tool:  "read_file", args: `{"path":"pub/key"}`,
		kind: tool.KindDenied, want: "secrets/ is off limits", control: "pub/key"},
	{id: "P-path-16", name: "., // and a trailing slash",
		tool: "list_dir", args: `{"path":".//secrets/./"}`,
		kind: tool.KindDenied, want: "secrets/ is off limits", control: ".//secrets/./key"},
	{id: "P-path-17", name: "a file named with a trailing slash",
		tool: "read_file", args: `{"path":"secrets/key/"}`,
		kind: tool.KindInvalidArguments, want: "a file, as a directory", control: "secrets/key"},
	{id: "P-path-18", name: "a Unicode look-alike linked to the secrets directory",
		setup: func(t *testing.T, ws string) { link(t, ws, "ѕecrets", "secrets") }, // Cyrillic ѕ
		tool:  "read_file", args: `{"path":"ѕecrets/key"}`,
		kind: tool.KindDenied, want: "secrets/ is off limits", control: "ѕecrets/key"},
	{id: "P-path-19", name: "another case linked to the secrets directory",
		setup: func(t *testing.T, ws string) { link(t, ws, "Secrets", "secrets") },
		tool:  "read_file", args: `{"path":"Secrets/key"}`,
		kind: tool.KindDenied, want: "secrets/ is off limits", control: "Secrets/key"},
	{id: "P-path-20", name: "another case, no link (a case-sensitive file system: another file)",
		tool: "read_file", args: `{"path":"SECRETS/key"}`,
		kind: tool.KindToolError, want: "no such file", control: "secrets/key"},
	{id: "P-path-21", name: "a NUL byte after the secret's name",
		tool: "read_file", args: `{"path":"secrets/key\u0000.txt"}`,
		kind: tool.KindInvalidArguments, want: "NUL byte", control: "secrets/key"},
	{id: "P-path-22", name: "a dangling link into secrets, written",
		setup: func(t *testing.T, ws string) { link(t, ws, "docs/new", "../secrets/planted") },
		tool:  "read_file", args: `{"path":"docs/new"}`,
		kind: tool.KindInvalidArguments, want: "which does not exist", control: "secrets/key"},
	{id: "P-path-23", name: "a loop of links",
		setup: func(t *testing.T, ws string) { link(t, ws, "docs/loop", "loop") },
		tool:  "read_file", args: `{"path":"docs/loop/x"}`,
		kind: tool.KindInvalidArguments, want: "more than 40 symbolic links", control: "secrets/key"},
	{id: "P-path-24", name: "a write through a link to the secrets directory",
		setup: func(t *testing.T, ws string) { link(t, ws, "docs/s", "../secrets") },
		tool:  "write_file", args: `{"path":"docs/s/key","content":"overwritten"}`,
		kind: tool.KindInvalidArguments, want: "follow no links", control: "docs/s/key"},
	{id: "P-path-25", name: "an edit through a link to the secret",
		setup: func(t *testing.T, ws string) { link(t, ws, "docs/s", "../secrets") },
		tool:  "edit_file", args: `{"path":"docs/s/key","old":"TOP","new":"x"}`,
		kind: tool.KindInvalidArguments, want: "follow no links", control: "docs/s/key"},
	{id: "P-path-26", name: "a file swapped for a link to the secret after the decision",
		tool: "read_file", args: `{"path":"docs/a"}`,
		swap: swapFor("docs/a", "../secrets/key"),
		kind: tool.KindToolError, want: "symbolic link is in the way", control: "docs/a"},
	{id: "P-path-27", name: "a directory swapped for a link to secrets after the decision, listed",
		tool: "list_dir", args: `{"path":"docs/sub"}`,
		swap: swapFor("docs/sub", "../secrets"),
		kind: tool.KindToolError, want: "symbolic link is in the way", control: "docs/sub/key"},
	{id: "P-path-28", name: "a directory swapped for a link to secrets after the decision, searched",
		tool: "grep", args: `{"pattern":"SECRET|needle","path":"docs"}`,
		swap: swapFor("docs/sub", "../secrets"),
		kind: "", want: "no matches", control: "docs/sub/key"},
	{id: "P-path-29", name: "a parent swapped for a link to secrets after the decision, written",
		tool: "write_file", args: `{"path":"docs/sub/key","content":"overwritten"}`,
		swap: swapFor("docs/sub", "../secrets"),
		kind: tool.KindToolError, want: "symbolic link", control: "docs/sub/key"},
	{id: "P-path-30", name: "a file swapped for a link to the secret after the decision, edited",
		tool: "edit_file", args: `{"path":"docs/a","old":"doc","new":"x"}`,
		swap: swapFor("docs/a", "../secrets/key"),
		kind: tool.KindToolError, want: "symbolic link", control: "docs/a"},
}

func TestCatalogPaths(t *testing.T) {
	for _, row := range pathRows {
		for _, cached := range []bool{true, false} {
			name := row.id
			if !cached {
				name += "/uncached"
			}
			t.Run(name, func(t *testing.T) { runPathRow(t, row, cached) })
		}
	}
}

func runPathRow(t *testing.T, row pathRow, cached bool) {
	ws := newPathFixture(t)
	secretFile := filepath.Join(ws, "secrets", "key")
	if row.setup != nil {
		row.setup(t, ws)
	}
	opts := []policy.Option{policy.WithPathArguments("path")}
	if !cached {
		opts = append(opts, policy.WithCacheSize(0))
	}
	a, err := policy.New("paths.cedar", []byte(pathPolicies), opts...)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := workspace.New(sandbox.Policy{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	var swap func()
	reg := tool.NewRegistry(tool.WithAuthorizer(afterDecision{a: a, swap: func() {
		if swap != nil {
			swap()
		}
	}}))
	if err := ts.Register(reg); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	args := strings.ReplaceAll(row.args, "WS", ws)

	// The plain forms.
	if res := reg.Execute(ctx, "read_file", json.RawMessage(`{"path":"secrets/key"}`)); res.Kind != tool.KindDenied {
		t.Fatalf("plain form: read_file secrets/key = %+v, want denied", res)
	}
	if res := reg.Execute(ctx, "read_file", json.RawMessage(`{"path":"docs/a"}`)); res.IsError || res.Output != "doc a" {
		t.Fatalf("plain form: read_file docs/a = %+v", res)
	}

	// The attack.
	if row.swap != nil {
		swap = func() { row.swap(t, ws) }
	}
	res := reg.Execute(ctx, row.tool, json.RawMessage(args))
	swap = nil
	switch {
	case row.kind == "":
		if res.IsError || !strings.Contains(res.Output, row.want) {
			t.Errorf("%s: %+v, want output with %q", row.name, res, row.want)
		}
	case res.Kind != row.kind || !strings.Contains(res.Error, row.want):
		t.Errorf("%s: %q (%s), want %s with %q", row.name, res.Error, res.Kind, row.kind, row.want)
	}

	// The host-side check.
	if strings.Contains(res.Output+res.Error, secretText) || strings.Contains(res.Output, "key") && row.tool != "grep" {
		t.Errorf("%s: the result shows the secret: %+v", row.name, res)
	}
	if b, err := os.ReadFile(secretFile); err != nil || string(b) != secretText {
		t.Errorf("%s: the secret changed: %q, %v", row.name, b, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(ws, "secrets")); len(ents) > 2 {
		t.Errorf("%s: something was created in secrets/: %v", row.name, ents)
	}

	// The control: the attack's path does lead to the secret.
	control := strings.ReplaceAll(row.control, "WS", ws)
	if !filepath.IsAbs(control) {
		control = ws + "/" + control
	}
	if b, err := os.ReadFile(control); err != nil || string(b) != secretText {
		t.Errorf("%s: control: the host reads %q at %s (%v), not the secret", row.name, b, row.control, err)
	}
}
