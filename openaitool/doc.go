// Package openaitool connects a tool registry to the OpenAI APIs, Chat
// Completions and Responses, and to any server that speaks them (Ollama,
// vLLM, llama.cpp). It has no dependency on an OpenAI SDK: the wire shapes
// are small structs of its own, checked against the official SDK by the
// tests of the interop module.
//
// It does three conversions:
//
//   - Definitions out: [NewTools] converts a list of tools (a registry's
//     [tool.Registry.List]) once; [Tools.Chat] and [Tools.Responses] give
//     the request's "tools" array.
//   - Tool calls in: [ChatCalls] and [ResponsesCalls] read a response into
//     [tool.Call] values for an executor; [Tools.Normalize] undoes strict mode's
//     nullable rewrite in their arguments.
//   - Results back: [ChatResults] gives the role:"tool" messages and
//     [ResponsesResults] the function_call_output items for the outcomes.
//
// # Tool search
//
// For registries too large to send whole, [Tools.ResponsesDeferred] marks
// tools with defer_loading next to the Responses API's tool_search tool.
// Run on the client ([ClientToolSearch]), the model's searches come back
// as tool_search_call items ([ToolSearchCalls]), answered with the found
// tools' definitions in a [ToolSearchOutput] item. Chat Completions has no
// such form: send the meta-tool of package toolsearch instead.
//
// # Strict mode
//
// OpenAI's strict mode ("strict": true) makes the model follow a tool's
// schema exactly, but accepts only a subset of JSON Schema. [StrictMode]
// is off, on or auto; [StrictSchema] documents the rewrite and the schemas
// it refuses. The rewrite makes optional properties required and nullable;
// when the model sends null for one, [Tools.Normalize] puts the default
// back before the call runs. Arguments are always validated against the
// tool's own schema when the call runs, strict or not.
//
// # Malformed input
//
// The parsers never panic and never drop a call: a call whose arguments
// are malformed, or that names an unknown tool, is returned as it is, and
// running it gives the model an error result for that call, which lets it
// correct itself. Only a response that cannot be read at all is an error.
package openaitool
