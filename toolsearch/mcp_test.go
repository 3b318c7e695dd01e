package toolsearch

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFollowsMCPResync checks that an index over a registry that imports
// an MCP server's tools follows the server: tools it adds, changes and
// removes (notifications/tools/list_changed) are found, found anew or no
// longer found.
func TestFollowsMCPResync(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "0"}, nil)
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
	}
	object := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcp.Tool{Name: "post_message", Description: "Post a message to a chat channel.", InputSchema: object}, handler)

	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	c, err := mcptool.Connect(t.Context(), ct)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	r := tool.NewRegistry()
	ix := New(r)
	defer ix.Close()
	changed := make(chan string, 16)
	stop := r.OnChange(func(name string) { changed <- name })
	defer stop()
	if err := c.Import(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	<-changed
	expect := func(what, query string, want []string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			if got := names(ix.Search(query, 5)); slices.Equal(got, want) {
				return
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("%s: Search(%q) = %q, want %q", what, query, names(ix.Search(query, 5)), want)
			}
		}
	}
	expect("imported", "send a chat message", []string{"post_message"})
	s.AddTool(&mcp.Tool{Name: "forecast", Description: "Weather forecast for a city.", InputSchema: object}, handler)
	expect("added", "will it rain tomorrow", []string{"forecast"})
	s.AddTool(&mcp.Tool{Name: "forecast", Description: "Stock price forecast for a ticker.", InputSchema: object}, handler)
	expect("changed", "stock price of a ticker", []string{"forecast"})
	expect("changed", "city", nil)
	s.RemoveTools("post_message")
	expect("removed", "send a chat message", nil)
}
