package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listingServer answers every tools/list with page(n, cursor), n counting
// the requests from 1, and records the cursors it is sent.
func listingServer(page func(n int64, cursor string) *mcp.ListToolsResult, cursors *atomic.Int64) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile-listing", Version: "0"}, nil)
	var n atomic.Int64
	s.AddReceivingMiddleware(func(h mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return h(ctx, method, req)
			}
			var cursor string
			if p, ok := req.GetParams().(*mcp.ListToolsParams); ok && p != nil {
				cursor = p.Cursor
			}
			if cursor != "" && cursors != nil {
				cursors.Add(int64(len(cursor)))
			}
			return page(n.Add(1), cursor), nil
		}
	})
	return s
}

// TestHostileListingOfLongNames: a server lists, page after page, tools
// whose names are 32 KiB long and whose schemas are refused. A broken
// tool was left out with an error that held its whole name, and the bytes
// the listing holds counted only the tools it built: the errors of one
// listing grew with every page, up to the cap of tools times the size of
// a response. A name over DefaultMaxNameBytes is now refused, its error
// naming the tool cut short, and the errors are counted with the tools.
func TestHostileListingOfLongNames(t *testing.T) {
	const pages, perPage, nameLen = 60, 8, 32 << 10
	page := func(n int64, _ string) *mcp.ListToolsResult {
		res := &mcp.ListToolsResult{NextCursor: fmt.Sprint("c", n)}
		if n == pages {
			res.NextCursor = ""
		}
		for i := range perPage {
			name := fmt.Sprintf("t%d_%d_", n, i) + strings.Repeat("n", nameLen)
			res.Tools = append(res.Tools, &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "string"}})
		}
		// A tool with a name of the specification's length imports.
		res.Tools = append(res.Tools, &mcp.Tool{Name: fmt.Sprintf("ok%d_", n) + strings.Repeat("k", 100), InputSchema: map[string]any{"type": "object"}})
		return res
	}
	// Control: with the name bound out of the way, what the listing
	// returns grows with the server's pages.
	reg := tool.NewRegistry()
	err := connect(t, listingServer(page, nil), mcptool.WithNameBytes(1<<30)).Import(t.Context(), reg)
	if err == nil || len(err.Error()) < pages*perPage*nameLen {
		t.Fatalf("control: Import returned %d bytes of errors, want the attack to hold at least %d", len(err.Error()), pages*perPage*nameLen)
	}

	reg = tool.NewRegistry()
	err = connect(t, listingServer(page, nil)).Import(t.Context(), reg)
	if !errors.Is(err, mcptool.ErrImportLimit) || !strings.Contains(err.Error(), fmt.Sprintf("its name of %d bytes is longer than the limit of %d", nameLen+len("t1_0_"), mcptool.DefaultMaxNameBytes)) {
		t.Fatalf("Import: %.300v, want ErrImportLimit naming the bound of names", err)
	}
	if n := len(err.Error()); n > pages*perPage*1024 {
		t.Errorf("Import returned %d bytes of errors for %d tools, want each cut short", n, pages*perPage)
	}
	var te *mcptool.ToolError
	if !errors.As(err, &te) || len(te.Tool) > 200 {
		t.Errorf("ToolError %v: want one whose Tool is cut short", te)
	}
	if reg.Len() != pages {
		t.Errorf("imported %d tools, want the %d with names of ordinary length", reg.Len(), pages)
	}
}

// TestHostileListingErrorsCounted: a server lists pages of tools whose
// schemas are all refused. Their errors now count toward the bytes one
// listing holds (WithListingBytes here; DefaultMaxListingBytes), like the
// tools it builds: past the bound the rest are counted, not built.
func TestHostileListingErrorsCounted(t *testing.T) {
	const pages, perPage = 200, 50
	page := func(n int64, _ string) *mcp.ListToolsResult {
		res := &mcp.ListToolsResult{NextCursor: fmt.Sprint("c", n)}
		if n == pages {
			res.NextCursor = ""
		}
		for i := range perPage {
			name := fmt.Sprintf("t%d_%d_", n, i) + strings.Repeat("n", 900)
			res.Tools = append(res.Tools, &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "string"}})
		}
		return res
	}
	// Control: the bound of listing bytes raised, every error is kept.
	err := connect(t, listingServer(page, nil), mcptool.WithImportLimits(1<<20, 0, 0), mcptool.WithListingBytes(1<<30)).Import(t.Context(), tool.NewRegistry())
	if err == nil || len(err.Error()) < pages*perPage*900 {
		t.Fatalf("control: Import returned %d bytes of errors, want at least %d", len(err.Error()), pages*perPage*900)
	}
	const bound = 1 << 20
	err = connect(t, listingServer(page, nil), mcptool.WithImportLimits(1<<20, 0, 0), mcptool.WithListingBytes(bound)).Import(t.Context(), tool.NewRegistry())
	if !errors.Is(err, mcptool.ErrImportLimit) || !strings.Contains(err.Error(), "tools left out") {
		t.Fatalf("Import: %.300v, want ErrImportLimit saying how many tools were left out", err)
	}
	if n := len(err.Error()); n > 2*bound {
		t.Errorf("Import returned %d bytes of errors, want about the bound of %d", n, bound)
	}
}

// TestHostileListingLongCursor: a server answers tools/list with a cursor
// of 1 MiB, page after page. The client sent each back and kept each (to
// find a repeated one): a thousand pages, a gigabyte. A cursor over
// DefaultMaxCursorBytes now ends the listing with what it has.
func TestHostileListingLongCursor(t *testing.T) {
	const pages = 20
	page := func(n int64, _ string) *mcp.ListToolsResult {
		res := &mcp.ListToolsResult{NextCursor: fmt.Sprint(n) + strings.Repeat("c", 1<<20)}
		if n == pages {
			res.NextCursor = ""
		}
		res.Tools = []*mcp.Tool{{Name: fmt.Sprint("t", n), InputSchema: map[string]any{"type": "object"}}}
		return res
	}
	var sent atomic.Int64
	reg := tool.NewRegistry()
	err := connect(t, listingServer(page, &sent), mcptool.WithCursorBytes(1<<30)).Import(t.Context(), reg)
	if err != nil || sent.Load() < (pages-1)<<20 || reg.Len() != pages {
		t.Fatalf("control: Import: %v; %d tools, %d bytes of cursors sent back, want the attack to go through", err, reg.Len(), sent.Load())
	}
	sent.Store(0)
	reg = tool.NewRegistry()
	err = connect(t, listingServer(page, &sent)).Import(t.Context(), reg)
	if !errors.Is(err, mcptool.ErrImportLimit) || !strings.Contains(err.Error(), fmt.Sprintf("longer than the limit of %d", mcptool.DefaultMaxCursorBytes)) {
		t.Fatalf("Import: %.300v, want ErrImportLimit naming the bound of cursors", err)
	}
	if sent.Load() != 0 || reg.Len() != 1 {
		t.Errorf("%d bytes of cursors sent back, %d tools imported; want none sent and the first page's tool", sent.Load(), reg.Len())
	}
}

// TestHostileSlowListingStorm: a server sends
// notifications/tools/list_changed without end and takes 10 s to answer
// each listing (as one of a thousand pages of 16 MiB would take a client
// to read). The client re-imported one second after each listing ended:
// it spent more than nine tenths of its time reading that server's
// listings. The gap after a re-import is now at least as long as the
// re-import took, so at most half of the time goes to them.
func TestHostileSlowListingStorm(t *testing.T) {
	const storm, every, slow = 120 * time.Second, 50 * time.Millisecond, 10 * time.Second
	run := func(t *testing.T, opts ...mcptool.ClientOption) int64 {
		var listings atomic.Int64
		synctest.Test(t, func(t *testing.T) {
			s := listingServer(func(int64, string) *mcp.ListToolsResult {
				listings.Add(1)
				time.Sleep(slow)
				return &mcp.ListToolsResult{Tools: []*mcp.Tool{{Name: "t", InputSchema: map[string]any{"type": "object"}}}}
			}, nil)
			noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			}
			s.AddTool(&mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}}, noop)
			ct, st := mcp.NewInMemoryTransports()
			ss, err := s.Connect(t.Context(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			c, err := mcptool.Connect(t.Context(), ct, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Import(t.Context(), tool.NewRegistry()); err != nil {
				t.Fatal(err)
			}
			listings.Store(0)
			// Each change of the server's tools sends list_changed.
			for i := range storm / every {
				if i%2 == 0 {
					s.AddTool(&mcp.Tool{Name: "u", InputSchema: map[string]any{"type": "object"}}, noop)
				} else {
					s.RemoveTools("u")
				}
				time.Sleep(every)
			}
			synctest.Wait()
		})
		return listings.Load()
	}
	// Control: with the old gap (one second after each re-import), the
	// client lists back to back.
	n := run(t, mcptool.WithReimportGap(time.Second), mcptool.WithFixedReimportGap())
	t.Logf("control: %d listings", n)
	if n < int64(storm/(slow+time.Second))-1 {
		t.Fatalf("control: %d listings of %v each in %v, want about %d", n, slow, storm, storm/(slow+time.Second))
	}
	n = run(t)
	t.Logf("defended: %d listings", n)
	if most := int64(storm/(2*slow)) + 1; n > most {
		t.Errorf("%d listings of %v each in %v, want at most %d (half the time)", n, slow, storm, most)
	}
}

// TestHostileMalformedContent: a server answers calls with content blocks
// that are not what they claim: image data that is not base64, a block of
// a type MCP does not have. Each call fails or describes the block, and
// the connection goes on: the next call works.
func TestHostileMalformedContent(t *testing.T) {
	answers := []string{
		`{"content":[{"type":"image","mimeType":"image/png","data":"%%% not base64 %%%"}]}`,
		`{"content":[{"type":"hologram","data":"x"}]}`,
		`{"content":[{"type":"text","text":"ok"}]}`,
	}
	var n atomic.Int32
	_, tr := newPipeServer(func(*pipeServer) {}, func(s *pipeServer, id json.RawMessage, _ []byte) {
		s.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + answers[int(n.Add(1)-1)%len(answers)] + `}`)
	})
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	reg := importHostile(t, ctx, tr)
	for i := range answers {
		res := reg.Execute(ctx, "t", []byte(`{}`))
		t.Logf("call %d: %+v", i, res)
		switch i {
		case 0:
			if !res.IsError || !strings.Contains(res.Error, "base64") {
				t.Errorf("call %d: %+v, want an error saying the data is not base64", i, res)
			}
		case 1:
			if !res.IsError && !strings.Contains(res.Output, "hologram") {
				t.Errorf("call %d: %+v, want the unknown block refused or described", i, res)
			}
		case 2:
			if res.IsError || res.Output != "ok" {
				t.Errorf("call %d: %+v, want ok: the connection goes on", i, res)
			}
		}
	}
}
