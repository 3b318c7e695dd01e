package mcptool

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseDirectCall checks the strict parse of the direct path against
// encoding/json: a body it accepts is valid JSON whose method is
// tools/call and whose id, name, arguments and capabilities are the ones
// it returns; it never panics.
func FuzzParseDirectCall(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		` { "params" : { "_meta":{"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}} , "name":"e\u0063ho" }, "id" : "x" , "method":"tools/call","jsonrpc":"2.0"} `,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"add","_meta":{}}}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"tools/call","params":{}}`,
		`[{"jsonrpc":"2.0"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":[[[[1]]]]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, ok := parseDirectCall(body)
		if !ok {
			return
		}
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
				Meta      struct {
					Version string          `json:"io.modelcontextprotocol/protocolVersion"`
					Caps    json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(body, &msg); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", body, err)
		}
		p := msg.Params
		if msg.JSONRPC != "2.0" || msg.Method != "tools/call" || p.Meta.Version != statelessVersion {
			t.Errorf("accepted %q: jsonrpc %q, method %q, version %q", body, msg.JSONRPC, msg.Method, p.Meta.Version)
		}
		if p.Name != c.name || !bytes.Equal(msg.ID, c.id) || !bytes.Equal(p.Arguments, c.args) || !bytes.Equal(p.Meta.Caps, c.caps) {
			t.Errorf("parsed %q as %+v; encoding/json reads %+v", body, c, msg)
		}
	})
}
