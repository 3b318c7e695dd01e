package main

import (
	"fmt"
	"strings"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/anthropictool"
	"github.com/miniopenclaw/tool/geminitool"
	"github.com/miniopenclaw/tool/mcptool"
	"github.com/miniopenclaw/tool/openaitool"
)

// providerFormats lists the definition formats of `clawtool schema
// --format`, in the order help shows them.
func providerFormats() []string {
	return []string{"openai", "openai-strict", "responses", "anthropic", "gemini", "mcp"}
}

// renderDefinitions renders tools as the tool definitions of one model
// API or protocol:
//
//	openai         Chat Completions "tools" array (strict off)
//	openai-strict  the same with "strict": true, schemas rewritten to the strict subset
//	responses      Responses API "tools" array (flat function tools, strict off)
//	anthropic      Messages API "tools" array
//	gemini         generateContent "tools" array (functionDeclarations, Gemini's schema dialect)
//	mcp            MCP tools/list "tools" array
//
// openai-strict and gemini fail, naming the tool and the keyword, for a
// schema the format cannot express.
func renderDefinitions(format string, tools []tool.Tool) ([]byte, error) {
	switch format {
	case "openai":
		return openaitool.ChatTools(tools)
	case "openai-strict":
		return openaitool.ChatTools(tools, openaitool.WithStrict(openaitool.StrictOn))
	case "responses":
		return openaitool.ResponsesTools(tools)
	case "anthropic":
		return anthropictool.Tools(tools)
	case "gemini":
		return geminitool.Tools(tools)
	case "mcp":
		return mcptool.Definitions(tools)
	}
	return nil, fmt.Errorf("unknown format %q (known: %s)", format, strings.Join(providerFormats(), ", "))
}
