package mcptool

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestFillInputParams(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}}}}`,
			`{"id":1,"jsonrpc":"2.0","result":{"inputRequests":{"r":{"method":"roots/list","params":{}}},"resultType":"input_required"}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"inputRequests":{"r":{"method":"roots/list","params":null}}}}`,
			`{"id":1,"jsonrpc":"2.0","result":{"inputRequests":{"r":{"method":"roots/list","params":{}}}}}`},
		// Nothing to do: returned as it came.
		{`{"jsonrpc":"2.0","id":1,"result":{"inputRequests":{"r":{"method":"roots/list","params":{}}}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"inputRequests":{"r":{"method":"roots/list","params":{}}}}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`},
		{`not JSON "inputRequests"`, `not JSON "inputRequests"`},
	} {
		if got := string(fillInputParams([]byte(tt.in))); got != tt.want {
			t.Errorf("fillInputParams(%s)\n= %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

// fixedResponse is a RoundTripper that answers with one body.
type fixedResponse struct{ contentType, body string }

func (f fixedResponse) RoundTrip(*http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", f.contentType)
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(f.body))}, nil
}

func TestInputParamsTransport(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"result":{"inputRequests":{"r":{"method":"roots/list"}}}}`
	fixed := `{"id":1,"jsonrpc":"2.0","result":{"inputRequests":{"r":{"method":"roots/list","params":{}}}}}`
	for _, tt := range []struct{ contentType, body, want string }{
		{"application/json", msg, fixed},
		{"text/event-stream", "id: 1\nevent: message\ndata: " + msg + "\n\n", "id: 1\nevent: message\ndata: " + fixed + "\n\n"},
		{"text/event-stream; charset=utf-8", "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n", "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n"},
	} {
		req, _ := http.NewRequest("POST", "http://127.0.0.1/mcp", nil)
		resp, err := inputParamsTransport{base: fixedResponse{tt.contentType, tt.body}}.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: %q, %v\nwant %q", tt.contentType, got, err, tt.want)
		}
	}
}
