package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAskOnTerminal: the person's answers become the elicitation's
// result (accept with typed content, decline, cancel at the end of
// input); answers that do not fit are asked again; forms a terminal
// cannot ask for, and a field never answered right, are errors; the
// server's text is shown with its control characters escaped.
func TestAskOnTerminal(t *testing.T) {
	form := map[string]any{"type": "object", "properties": map[string]any{
		"name":  map[string]any{"type": "string", "title": "Name"},
		"age":   map[string]any{"type": "integer"},
		"ok":    map[string]any{"type": "boolean"},
		"color": map[string]any{"type": "string", "enum": []any{"red", "blue"}},
		"note":  map[string]any{"type": "string"},
		"size":  map[string]any{"type": "number", "default": 1.5},
	}, "required": []any{"name", "age", "ok", "color"}}
	many := map[string]any{}
	for i := range maxElicitFields + 1 {
		many[fmt.Sprint("f", i)] = map[string]any{"type": "string"}
	}
	for _, tc := range []struct {
		name    string
		schema  any
		input   string
		want    *mcp.ElicitResult
		wantErr string
	}{
		{"accept", form, "y\nAnn\n42\ny\nblue\n\n\n", &mcp.ElicitResult{Action: "accept",
			Content: map[string]any{"name": "Ann", "age": int64(42), "ok": true, "color": "blue", "size": 1.5}}, ""},
		{"optional and default given", form, "yes\nAnn\n1\nn\nred\nhi\n2\n", &mcp.ElicitResult{Action: "accept",
			Content: map[string]any{"name": "Ann", "age": int64(1), "ok": false, "color": "red", "note": "hi", "size": 2.0}}, ""},
		{"bad answers asked again", form, "y\n\nAnn\nold\n42\nmaybe\ny\ngreen\nred\n\n\n", &mcp.ElicitResult{Action: "accept",
			Content: map[string]any{"name": "Ann", "age": int64(42), "ok": true, "color": "red", "size": 1.5}}, ""},
		{"decline", form, "n\n", &mcp.ElicitResult{Action: "decline"}, ""},
		{"empty is decline", form, "\n", &mcp.ElicitResult{Action: "decline"}, ""},
		{"no input is cancel", form, "", &mcp.ElicitResult{Action: "cancel"}, ""},
		{"no form", nil, "y\n", &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, ""},
		{"never a valid answer", form, "y\nAnn\nx\ny\nz\n", nil, `no valid answer to "age" after 3 tries`},
		{"input ends in the form", form, "y\nAnn\n", nil, `reading the answer to "age"`},
		{"nested field", map[string]any{"type": "object", "properties": map[string]any{"o": map[string]any{"type": "object"}}}, "y\n", nil, `field "o" is of type "object"`},
		{"too many fields", map[string]any{"type": "object", "properties": many}, "y\n", nil, "more than the 32"},
		{"not an object schema", []any{1}, "y\n", nil, "not an object schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var shown bytes.Buffer
			res, err := askOnTerminal(&shown, bufio.NewReader(strings.NewReader(tc.input)),
				&mcp.ElicitParams{Message: "Who?\x1b[2J", RequestedSchema: tc.schema})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res, tc.want) {
				t.Errorf("result %+v, want %+v", res, tc.want)
			}
			if strings.Contains(shown.String(), "\x1b") || !strings.Contains(shown.String(), `asks: Who?\x1b[2J`) {
				t.Errorf("shown %q", shown.String())
			}
		})
	}
}

// TestCallElicitsOnTerminal: clawtool call --mcp-url, calling a tool
// whose task waits for input (an elicitation), puts the question on the
// terminal and sends the answer back with tasks/update; the task then
// completes. Without a terminal (the control of the defence-less case is
// the answered row) the call fails with an error saying so, and the task
// is cancelled.
func TestCallElicitsOnTerminal(t *testing.T) {
	r := tool.NewRegistry()
	r.Register(tool.Must(tool.New("ask", "Asks for a name.", func(ctx context.Context, _ struct{}) (string, error) {
		if res, ok := mcptool.InputResponses(ctx)["name"].(*mcp.ElicitResult); ok {
			if res.Action != "accept" {
				return "", errors.New("no name: " + res.Action)
			}
			return fmt.Sprint("hello ", res.Content["name"]), nil
		}
		return "", mcptool.RequestInput(ctx, mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}},
				"required": []any{"name"}}}}, "")
	}, tool.WithTask(tool.TaskRequired))))
	srv := mcptool.NewServer(r, mcptool.WithTasks(mcptool.TaskLimits{PollInterval: time.Millisecond, PollsPerSecond: 1000, PollBurst: 1000}))
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	url := hs.URL + "/mcp"

	old := openTerminal
	defer func() { openTerminal = old }()
	for _, tc := range []struct {
		name     string
		terminal func(shown *bytes.Buffer) (io.ReadWriteCloser, error)
		code     int
		stdout   string
		stderr   string
	}{
		{"answered", func(shown *bytes.Buffer) (io.ReadWriteCloser, error) {
			return fakeTerminal{strings.NewReader("y\nAnn\n"), shown}, nil
		}, exitOK, `"output": "hello Ann"`, "input_required"},
		{"declined", func(shown *bytes.Buffer) (io.ReadWriteCloser, error) {
			return fakeTerminal{strings.NewReader("n\n"), shown}, nil
		}, exitToolError, "no name: decline", "input_required"},
		{"no terminal", func(*bytes.Buffer) (io.ReadWriteCloser, error) {
			return nil, errors.New("open /dev/tty: no such device or address")
		}, exitToolError, "there is no terminal to ask on", "cancelled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var shown bytes.Buffer
			openTerminal = func() (io.ReadWriteCloser, error) { return tc.terminal(&shown) }
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"call", "--no-builtins", "--mcp-url", url, "ask"}, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d, want %d\nstdout %s\nstderr %s", code, tc.code, stdout.String(), stderr.String())
			}
			if tc.code == exitOK && !strings.Contains(shown.String(), "the MCP server asks: Your name?") {
				t.Errorf("terminal %q", shown.String())
			}
		})
	}
}
