package mcptool

import (
	"encoding/json"
	"testing"
)

// FuzzFilterMessage: the client's message filter never panics, leaves a
// message it does not change as it was, and turns valid JSON into valid
// JSON. The seeds are a task handle of each form, a tools/list page with
// execution.taskSupport, and a tools/call request to augment.
func FuzzFilterMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t1","status":"working"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t1","status":"working","ttl":null}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"` + taskAugmentMeta + `":{}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"task\""}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"inputRequests":{"r":{"method":"roots/list"}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, fn := range []func([]byte) []byte{filterMessage, augmentTasks} {
			in := append([]byte(nil), msg...)
			out := fn(in)
			if json.Valid(msg) && !json.Valid(out) {
				t.Fatalf("%s became invalid JSON %s", msg, out)
			}
			if string(in) != string(msg) {
				t.Fatalf("the input was changed in place")
			}
		}
	})
}

// TestFilterTasks: a handle of either form becomes a result with no
// content and the handle under taskHandleMeta; execution.taskSupport is
// copied under taskSupportMeta; augmentation moves to params.task; a
// result that only mentions "task" in its text is left alone (control).
func TestFilterTasks(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t1"}}`,
			`{"id":1,"jsonrpc":"2.0","result":{"_meta":{"` + taskHandleMeta + `":{"resultType":"task","taskId":"t1"}},"content":[]}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t1"}}}`,
			`{"id":1,"jsonrpc":"2.0","result":{"_meta":{"` + taskHandleMeta + `":{"task":{"taskId":"t1"}}},"content":[]}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","execution":{"taskSupport":"required"}},{"name":"b"}]}}`,
			`{"id":1,"jsonrpc":"2.0","result":{"tools":[{"_meta":{"` + taskSupportMeta + `":"required"},"execution":{"taskSupport":"required"},"name":"a"},{"name":"b"}]}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a \"task\""}]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a \"task\""}]}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t1"},"content":[]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t1"},"content":[]}}`},
	} {
		if got := string(filterMessage([]byte(tc.in))); got != tc.want {
			t.Errorf("filterMessage(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	in := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"` + taskAugmentMeta + `":{},"progressToken":"p"}}}`
	want := `{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"a","task":{}}}`
	if got := string(augmentTasks([]byte(in))); got != want {
		t.Errorf("augmentTasks\n got %s\nwant %s", got, want)
	}
}
