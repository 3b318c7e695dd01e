package mcptool_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pagingServer serves n tools named t0…, each with description desc, and
// answers every tools/list with all of them and the cursor next gives
// (the empty string ends the listing). pages counts the tools/list
// requests.
func pagingServer(n int, desc string, next func(page int64) string, pages *atomic.Int64) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "paging", Version: "0"}, nil)
	for i := range n {
		s.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%d", i), Description: desc, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
	}
	s.AddReceivingMiddleware(func(h mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return h(ctx, method, req)
			}
			if p, ok := req.GetParams().(*mcp.ListToolsParams); ok && p != nil {
				p.Cursor = "" // the cursors are ours, not the server's
			}
			res, err := h(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok {
				lr.NextCursor = next(pages.Add(1))
			}
			return res, err
		}
	})
	return s
}

func TestImportLimits(t *testing.T) {
	big := strings.Repeat("long ", 200_000) // 1 MB
	for _, tt := range []struct {
		name      string
		tools     int
		desc      string
		next      func(page int64) string
		opts      []mcptool.ClientOption
		wantTools int
		wantPages int64
		wantErr   string
	}{
		{"repeated cursor", 2, "A tool.", func(int64) string { return "same" }, nil, 2, 2, `repeated the cursor "same"`},
		{"endless cursors", 1, "A tool.", func(p int64) string { return fmt.Sprint("c", p) }, nil, 1, mcptool.DefaultMaxPages, "more than 100 pages"},
		{"endless cursors, own limit", 1, "A tool.", func(p int64) string { return fmt.Sprint("c", p) },
			[]mcptool.ClientOption{mcptool.WithImportLimits(0, 5, 0)}, 1, 5, "more than 5 pages"},
		{"too many tools", 30, "A tool.", func(int64) string { return "" },
			[]mcptool.ClientOption{mcptool.WithImportLimits(10, 0, 0)}, 10, 1, "more than 10 tools"},
		{"long description", 1, big, func(int64) string { return "" }, nil, 1, 1, "description of 1000000 bytes is cut to 16384"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var pages atomic.Int64
			c := connect(t, pagingServer(tt.tools, tt.desc, tt.next, &pages), tt.opts...)
			reg := tool.NewRegistry()
			err := c.Import(context.Background(), reg) // no deadline: the limits must end it
			if !errors.Is(err, mcptool.ErrImportLimit) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Import: %v, want ErrImportLimit saying %q", err, tt.wantErr)
			}
			if got := len(reg.List()); got != tt.wantTools {
				t.Errorf("imported %d tools, want %d", got, tt.wantTools)
			}
			if got := pages.Load(); got != tt.wantPages {
				t.Errorf("read %d pages, want %d", got, tt.wantPages)
			}
			for _, tl := range reg.List() {
				if len(tl.Description()) > mcptool.DefaultMaxDescriptionBytes+100 {
					t.Errorf("tool %s: a description of %d bytes was imported", tl.Name(), len(tl.Description()))
				}
			}
		})
	}
}
