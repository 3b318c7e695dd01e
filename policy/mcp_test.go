package policy_test

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/policy"
)

// TestMCPPerPrincipal serves one registry over MCP to two sessions made
// for different principals: each lists and calls only its own tools.
func TestMCPPerPrincipal(t *testing.T) {
	a := newTestAuthorizer(t)
	reg, _ := testRegistry(t, a)
	srv := mcptool.NewServer(reg, mcptool.WithToolFilter(func(ctx context.Context, name string) bool {
		tl, ok := reg.Get(name)
		return ok && a.CanList(ctx, name, tool.OptionsOf(tl))
	}))
	defer srv.Close()
	session := func(p policy.Principal) *mcp.ClientSession {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.MCP().Connect(policy.WithPrincipal(t.Context(), p), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	for _, tt := range []struct {
		p         policy.Principal
		tools     []string
		call      string
		args      map[string]any
		allowed   bool
		forbidden string
	}{
		{carol, []string{"read_file", "report", "search"}, "read_file", map[string]any{"path": "docs/a"}, true, "write_file"},
		{bob, []string{"delete_file", "read_file", "search", "write_file"}, "write_file", map[string]any{"path": "docs/a", "content": "x"}, true, "report"},
	} {
		cs := session(tt.p)
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if !slices.Equal(names, tt.tools) {
			t.Errorf("%s lists %v, want %v", tt.p.ID, names, tt.tools)
		}
		r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tt.call, Arguments: tt.args})
		if err != nil || r.IsError {
			t.Errorf("%s calls %s: %v %+v", tt.p.ID, tt.call, err, r)
		}
		// A hidden tool called anyway is refused by the registry.
		r, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tt.forbidden, Arguments: map[string]any{"path": "docs/a", "content": "x"}})
		if err != nil || !r.IsError {
			t.Errorf("%s calls hidden %s: %v %+v", tt.p.ID, tt.forbidden, err, r)
		}
	}
}
