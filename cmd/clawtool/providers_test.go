package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/openaitool"
)

type rawTool struct{ name, params string }

func (t rawTool) Name() string                { return t.name }
func (t rawTool) Description() string         { return "A test tool." }
func (t rawTool) Parameters() json.RawMessage { return json.RawMessage(t.params) }
func (t rawTool) Execute(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, nil
}

func TestRenderDefinitions(t *testing.T) {
	tools := []tool.Tool{rawTool{"echo", `{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer","default":1}},"required":["text"]}`}}
	for _, tt := range []struct {
		format string
		want   string // a fragment the format must have
	}{
		{"openai", `"function":{"name":"echo"`},
		{"openai-strict", `"strict":true`},
		{"responses", `"type":"function","name":"echo"`},
		{"anthropic", `"input_schema":`},
		{"gemini", `"functionDeclarations":`},
		{"mcp", `"inputSchema":`},
	} {
		t.Run(tt.format, func(t *testing.T) {
			out, err := renderDefinitions(tt.format, tools)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(out) || !strings.Contains(string(out), tt.want) {
				t.Errorf("renderDefinitions(%q) = %s, want JSON with %s", tt.format, out, tt.want)
			}
		})
	}
}

func TestRenderDefinitionsErrors(t *testing.T) {
	open := []tool.Tool{rawTool{"tags", `{"type":"object","properties":{"tags":{"type":"object","additionalProperties":{"type":"string"}}}}`}}
	_, err := renderDefinitions("openai-strict", open)
	var se *openaitool.StrictError
	if !errors.As(err, &se) || se.Tool != "tags" || se.Keyword != "additionalProperties" {
		t.Errorf("openai-strict error = %v, want one naming tags and additionalProperties", err)
	}
	if _, err := renderDefinitions("gemini", open); err == nil || !strings.Contains(err.Error(), `"tags"`) {
		t.Errorf("gemini error = %v, want one naming tags", err)
	}
	if _, err := renderDefinitions("cohere", open); err == nil || !strings.Contains(err.Error(), "openai-strict") {
		t.Errorf("unknown format error = %v, want the list of formats", err)
	}
}

// Every format the schema command offers works on the built-in tools.
func TestSchemaCommandFormats(t *testing.T) {
	for _, f := range providerFormats() {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"schema", "--format", f}, strings.NewReader(""), &stdout, &stderr)
		if code != exitOK || !json.Valid(stdout.Bytes()) {
			t.Errorf("schema --format %s: exit %d, stderr %s", f, code, stderr.String())
		}
	}
}
