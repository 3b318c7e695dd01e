package mcptool_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// concurrency counts the calls running at once on a server and records
// the most it saw; a call waits until want calls run at once, or until it
// is canceled.
type concurrency struct {
	mu      sync.Mutex
	running int
	most    int
	full    chan struct{}
	want    int
}

func (c *concurrency) call(ctx context.Context) {
	c.mu.Lock()
	c.running++
	c.most = max(c.most, c.running)
	if c.running == c.want {
		close(c.full)
	}
	c.mu.Unlock()
	select {
	case <-c.full:
	case <-ctx.Done():
	}
	c.mu.Lock()
	c.running--
	c.mu.Unlock()
}

// TestImportedBatchRunsInParallel runs a batch of calls to imported tools
// through an Executor: tools that claim nothing run at once, a tool whose
// server says destructiveHint true runs one call at a time, and
// WithMaxInFlight overrides both.
func TestImportedBatchRunsInParallel(t *testing.T) {
	const n = 4
	for _, tt := range []struct {
		name     string
		hints    *mcp.ToolAnnotations
		opts     []mcptool.ClientOption
		wantMost int
	}{
		{"no annotations", nil, nil, n},
		{"title only", &mcp.ToolAnnotations{Title: "Wait"}, nil, n},
		{"destructive stated", &mcp.ToolAnnotations{DestructiveHint: new(true)}, nil, 1},
		{"destructive but read-only", &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: new(true)}, nil, n},
		{"host asks for one at a time", nil, []mcptool.ClientOption{mcptool.WithMaxInFlight(1)}, 1},
		{"host lifts the limit", &mcp.ToolAnnotations{DestructiveHint: new(true)}, []mcptool.ClientOption{mcptool.WithMaxInFlight(-1)}, n},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.wantMost
			c := &concurrency{full: make(chan struct{}), want: want}
			s := mcp.NewServer(&mcp.Implementation{Name: "gate", Version: "0"}, nil)
			s.AddTool(&mcp.Tool{Name: "gate", InputSchema: map[string]any{"type": "object"}, Annotations: tt.hints},
				func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					c.call(ctx)
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
				})
			cl := connect(t, s, tt.opts...)
			reg := tool.NewRegistry()
			if err := cl.Import(t.Context(), reg); err != nil {
				t.Fatal(err)
			}
			calls := make([]tool.Call, n)
			for i := range calls {
				calls[i] = tool.Call{ID: fmt.Sprint(i), Name: "gate", Args: []byte(`{}`)}
			}
			if want == 1 {
				c.want = 0 // nothing to wait for
				close(c.full)
			}
			ctx, cancel := context.WithTimeout(t.Context(), wait)
			defer cancel()
			outs, err := tool.NewExecutor(reg).Run(ctx, calls)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range outs {
				if o.Result.IsError {
					t.Errorf("call %s: %s", o.ID, o.Result.Error)
				}
			}
			if c.most != want {
				t.Errorf("at most %d calls ran at once, want %d", c.most, want)
			}
		})
	}
}
