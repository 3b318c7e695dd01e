package mcptool_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
)

// inexactIDs are JSON-RPC ids go-sdk reads as a float64 and answers as
// another number: past 2^53, past 64 bits, with a fraction or an
// exponent, or a negative zero.
var inexactIDs = []string{"9007199254740993", "-9007199254740993", "9223372036854775807", "18446744073709551617", "1.5", "1e3", "-0", "1E400"}

// TestRequestIDsEchoedExactly: go-sdk reads a request's id as a float64
// and answers with it made an int64, so a client's id 9007199254740993
// was answered as 9007199254740992, 1.5 as 1 and 1e3 as 1000: the client
// took the response for another request's (two requests in flight
// whose ids differed past 2^53 got each other's answers, or one was
// refused as a duplicate). The server now refuses, with -32600 and a null
// id, an id it cannot echo exactly, over HTTP (both eras) and stdio. The
// control: the same request with go-sdk alone (ServeHTTPViaSDK) is
// answered with another id.
func TestRequestIDsEchoedExactly(t *testing.T) {
	reg := tool.NewRegistry()
	reg.Register(tool.Must(tool.New("echo", "Echo.", func(context.Context, struct{}) (string, error) { return "ok", nil })))
	srv := mcptool.NewServer(reg)
	t.Cleanup(func() { srv.Close() })

	sid := openSession25(t, srv, "", `{}`)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	ask := func(h func(http.ResponseWriter, *http.Request), era, id string) string {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{` + meta + `}}`
		if era == "2025-11-25" {
			// A progress token takes the call past the direct path, to go-sdk.
			body = `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"progressToken":1}}}`
		}
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", era)
		if era == "2025-11-25" {
			r.Header.Set("Mcp-Session-Id", sid)
		} else {
			r.Header.Set("Mcp-Method", "tools/list")
		}
		w := httptest.NewRecorder()
		h(w, r)
		return w.Body.String()
	}
	exact := func(out, id string) bool {
		return strings.Contains(out, `"id":`+id+`,`) || strings.Contains(out, `"id":`+id+`}`)
	}
	refused := func(out string) bool { return strings.Contains(out, `"id":null`) && strings.Contains(out, "-32600") }
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			wrong := 0
			for _, id := range inexactIDs {
				if out := ask(srv.ServeHTTPViaSDK, era, id); !exact(out, id) && !refused(out) {
					wrong++
				}
			}
			if wrong == 0 {
				t.Fatal("control: go-sdk answered every inexact id exactly or refused it; the attack did not work")
			}
			t.Logf("control: go-sdk answered %d of %d ids with another id", wrong, len(inexactIDs))
			for _, id := range inexactIDs {
				if out := ask(srv.ServeHTTP, era, id); !refused(out) {
					t.Errorf("id %s: %.300s, want -32600 with a null id", id, out)
				}
			}
			for _, id := range []string{`9007199254740992`, `-9007199254740992`, `0`, `"1.5"`} {
				if out := ask(srv.ServeHTTP, era, id); !exact(out, id) {
					t.Errorf("id %s: %.300s, want it echoed", id, out)
				}
			}
		})
	}
	t.Run("direct call", func(t *testing.T) {
		call := func(id string) string {
			body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{},` + meta + `}}`
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
				"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"} {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			return w.Body.String()
		}
		for _, id := range inexactIDs {
			if out := call(id); !refused(out) {
				t.Errorf("direct call, id %s: %.300s, want -32600 with a null id", id, out)
			}
		}
		if out := call("9007199254740992"); !exact(out, "9007199254740992") || !strings.Contains(out, `"ok"`) {
			t.Errorf("direct call, id 2^53: %.300s, want it answered", out)
		}
	})
	t.Run("batch", func(t *testing.T) {
		// A 2025-03-26 session may send a batch: each of its ids counts.
		batch := `[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}]`
		run := func(h http.Handler) (int, string) {
			hs := httptest.NewServer(h)
			defer hs.Close()
			init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
			status, msg, hd := send(t, hs.URL, rawCall{body: init})
			sid := hd.Get("Mcp-Session-Id")
			if status != http.StatusOK || sid == "" {
				t.Fatalf("initialize: %d %q", status, msg)
			}
			send(t, hs.URL, rawCall{session: sid, version: "2025-03-26", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`})
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, hs.URL, strings.NewReader(batch))
			for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
				"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-03-26"} {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			all, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			return resp.StatusCode, string(all)
		}
		if _, msg := run(srv.SDKSessionsHandler()); !strings.Contains(msg, "9007199254740992") {
			t.Fatalf("control: go-sdk answered the batch %.300s, not with the id made another; the attack did not work", msg)
		}
		if status, msg := run(srv); status != http.StatusBadRequest || !refused(msg) {
			t.Errorf("batch with an inexact id: %d %.300s, want 400 and -32600 with a null id", status, msg)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		for _, id := range inexactIDs {
			in := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
				`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
				`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}` + "\n"
			var out bytes.Buffer
			if err := srv.ServeIO(t.Context(), strings.NewReader(in), &out); err != nil {
				t.Fatal(err)
			}
			// The refusal and the answer to initialize may leave in either order.
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 2 || !refused(lines[0]) && !refused(lines[1]) {
				t.Errorf("stdio id %s: %.300s, want the answer to initialize and -32600 with a null id", id, out.String())
			}
		}
	})
}
