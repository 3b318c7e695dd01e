package runstore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
)

// sealed returns a minimal saved run: one prompt, the model's call, the
// call waiting for an approval.
func sealed(t *testing.T) []byte {
	t.Helper()
	body := []byte(`{"api":"openai","model":"local","step":1,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"kv","arguments":"{}"}}]}],"calls":[{"id":"c1","name":"kv","args":"{}","approval":"0123456789abcdef01234567"}]}`)
	sum := sha256.Sum256(body)
	doc, err := json.Marshal(map[string]any{"format": "clawtool.agent.run", "version": 1, "sha256": hex.EncodeToString(sum[:]), "run": json.RawMessage(body)})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}
