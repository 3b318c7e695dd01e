package mcptool

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTextResultJSON checks the fast encoding of a one-text-block result
// against json.Marshal, byte for byte, and that every other result is
// left to json.Marshal.
func TestTextResultJSON(t *testing.T) {
	text := func(s string, isError bool) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}, IsError: isError}
	}
	for _, tt := range []struct {
		name string
		res  *mcp.CallToolResult
		fast bool
	}{
		{"number", text("5", false), true},
		{"empty", text("", false), true},
		{"error", text("invalid arguments: a: want integer", true), true},
		{"punctuation", text("a/b {c} [d] 'e' ~ `f`", false), true},
		{"quote", text(`say "hi"`, false), false},
		{"backslash", text(`C:\\x`, false), false},
		{"newline", text("a\nb", false), false},
		{"HTML", text("a<b>&c", false), false},
		{"UTF-8", text("é", false), false},
		{"invalid UTF-8", text("\xff", false), false},
		{"DEL", text("\x7f", false), false},
		{"two blocks", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, false},
		{"structured", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: json.RawMessage(`{}`)}, false},
		{"meta", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}}, Meta: mcp.Meta{"k": "v"}}, false},
		{"annotated", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a", Annotations: &mcp.Annotations{Priority: 1}}}}, false},
		{"image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1}}}}, false},
		{"no content", &mcp.CallToolResult{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := textResultJSON(tt.res)
			if ok != tt.fast {
				t.Fatalf("fast path taken: %v, want %v", ok, tt.fast)
			}
			if !ok {
				return
			}
			want, err := json.Marshal(tt.res)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// FuzzParseSessionCall checks the strict parse of the direct session path
// against encoding/json: a body it accepts is valid JSON whose method is
// tools/call, whose params hold nothing but name and arguments, and whose
// id, name and arguments are the ones it returns; it never panics.
func FuzzParseSessionCall(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"calc","arguments":{"expression":"2+3"}}}`,
		` { "params" : { "arguments":{"text":"x"}, "name":"e\u0063ho" }, "id" : "a" , "method":"tools/call","jsonrpc":"2.0"} `,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"add"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","task":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"echo"}}`,
		`[{"jsonrpc":"2.0"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if id, ok := parseCancellation(body); ok && !json.Valid(id) {
			t.Errorf("cancellation of %q names request %q, not JSON", body, id)
		}
		c, ok := parseSessionCall(body)
		if !ok {
			return
		}
		var msg struct {
			JSONRPC string                     `json:"jsonrpc"`
			ID      json.RawMessage            `json:"id"`
			Method  string                     `json:"method"`
			Params  map[string]json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(body, &msg); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", body, err)
		}
		var name string
		if err := json.Unmarshal(msg.Params["name"], &name); err != nil {
			t.Fatalf("accepted %q without a string name: %v", body, err)
		}
		for k := range msg.Params {
			if k != "name" && k != "arguments" {
				t.Errorf("accepted %q with params member %q", body, k)
			}
		}
		if msg.JSONRPC != "2.0" || msg.Method != "tools/call" || name != c.name || !bytes.Equal(msg.ID, c.id) ||
			!bytes.Equal(msg.Params["arguments"], c.args) {
			t.Errorf("parsed %q as %+v; encoding/json reads %+v", body, c, msg)
		}
	})
}
