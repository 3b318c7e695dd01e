package mcptool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
		{"endless cursors", 1, "A tool.", func(p int64) string { return fmt.Sprint("c", p) }, nil, 1, mcptool.DefaultMaxPages, "more than 1000 pages"},
		{"endless cursors, own limit", 1, "A tool.", func(p int64) string { return fmt.Sprint("c", p) },
			[]mcptool.ClientOption{mcptool.WithImportLimits(0, 5, 0)}, 1, 5, "more than 5 pages"},
		{"too many tools", 30, "A tool.", func(int64) string { return "" },
			[]mcptool.ClientOption{mcptool.WithImportLimits(10, 0, 0)}, 10, 1, "20 tools left out: the server lists more than the cap of 10"},
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

// manyTools serves n tools named t0000…, pageSize a tools/list page, and
// counts the pages asked for. With desc set, tools/list gives every tool
// that description instead of its own.
func manyTools(n, pageSize int, pages *atomic.Int64, desc *atomic.Pointer[string]) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "0"}, &mcp.ServerOptions{PageSize: pageSize})
	for i := range n {
		s.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%04d", i), Description: "A tool.", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
	}
	s.AddReceivingMiddleware(func(h mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := h(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && method == "tools/list" {
				pages.Add(1)
				if d := desc.Load(); d != nil {
					for i, st := range lr.Tools {
						c := *st
						c.Description = *d
						lr.Tools[i] = &c
					}
				}
			}
			return res, err
		}
	})
	return s
}

// TestImportCap lists 1,500 tools over 15 pages: all are imported by
// default (the cap was 1,000, which cut such a server short), and a cap of
// 1,000 imports exactly 1,000 and reports the 500 left out.
func TestImportCap(t *testing.T) {
	for _, tt := range []struct {
		name      string
		opts      []mcptool.ClientOption
		wantTools int
		wantCut   *mcptool.ToolCapError
	}{
		{"default cap", nil, 1500, nil},
		{"cap of 1000", []mcptool.ClientOption{mcptool.WithImportLimits(1000, 0, 0)}, 1000, &mcptool.ToolCapError{Max: 1000, LeftOut: 500}},
		{"cap of 1000, filter", []mcptool.ClientOption{mcptool.WithImportLimits(1000, 0, 0),
			mcptool.WithFilter(func(name string) bool { return name >= "t0200" })}, 1000, &mcptool.ToolCapError{Max: 1000, LeftOut: 300}},
		{"cap and page limit", []mcptool.ClientOption{mcptool.WithImportLimits(1000, 12, 0)}, 1000, &mcptool.ToolCapError{Max: 1000, LeftOut: 200, AtLeast: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var pages atomic.Int64
			c := connect(t, manyTools(1500, 100, &pages, new(atomic.Pointer[string])), tt.opts...)
			reg := tool.NewRegistry()
			err := c.Import(context.Background(), reg)
			if got := reg.Len(); got != tt.wantTools {
				t.Errorf("imported %d tools, want %d", got, tt.wantTools)
			}
			var cut *mcptool.ToolCapError
			errors.As(err, &cut)
			if diff := cmp.Diff(tt.wantCut, cut); diff != "" {
				t.Errorf("cut (-want +got):\n%s\nerror: %v", diff, err)
			}
			switch {
			case tt.wantCut == nil && err != nil:
				t.Errorf("Import: %v, want nil", err)
			case tt.wantCut != nil && (!errors.Is(err, mcptool.ErrImportLimit) || !strings.Contains(err.Error(), "tools left out") || !strings.Contains(err.Error(), "WithImportLimits")):
				t.Errorf("Import: %v, want ErrImportLimit saying how many tools were left out and what raises the cap", err)
			}
			if want := int64(15); tt.wantCut != nil && tt.wantCut.AtLeast {
				if pages.Load() != 12 {
					t.Errorf("read %d pages, want the limit, 12", pages.Load())
				}
			} else if pages.Load() != want {
				t.Errorf("read %d pages, want %d", pages.Load(), want)
			}
		})
	}
}

// records is a slog.Handler that keeps what it is given.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
	seen chan struct{}
}

func newRecords() *records { return &records{seen: make(chan struct{}, 100)} }

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
	r.seen <- struct{}{}
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.recs {
		line := rec.Level.String() + " " + rec.Message
		rec.Attrs(func(a slog.Attr) bool {
			line += " " + a.String()
			return true
		})
		out = append(out, line)
	}
	return out
}

// TestReimportLogsOneLine changes every tool of a server at once: the
// re-import logs one summary line, not one warning per replaced tool.
func TestReimportLogsOneLine(t *testing.T) {
	var pages atomic.Int64
	desc := new(atomic.Pointer[string])
	s := manyTools(50, 0, &pages, desc)
	clientLog, regLog := newRecords(), newRecords()
	c := connect(t, s, mcptool.WithClientLogger(slog.New(clientLog)))
	reg := tool.NewRegistry(tool.WithLogger(slog.New(regLog)))
	if err := c.Import(t.Context(), reg); err != nil {
		t.Fatal(err)
	}
	desc.Store(new("A changed tool."))
	s.AddTool(&mcp.Tool{Name: "new", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	select {
	case <-clientLog.seen:
	case <-time.After(wait):
		t.Fatal("no re-import logged")
	}
	want := []string{"INFO mcptool: re-import after tools/list_changed added=1 changed=50 removed=0"}
	if diff := cmp.Diff(want, clientLog.lines()); diff != "" {
		t.Errorf("client log (-want +got):\n%s", diff)
	}
	if got := regLog.lines(); len(got) > 0 {
		t.Errorf("the registry logged %d lines, want none: %q", len(got), got[0])
	}
	if tl, _ := reg.Get("t0049"); tl == nil || tl.Description() != "A changed tool." {
		t.Errorf("t0049 not re-imported: %v", tl)
	}
}
