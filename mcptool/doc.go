// Package mcptool connects a [tool.Registry] to the Model Context Protocol
// (MCP), in both directions, on the official go-sdk.
//
// # Serving a registry
//
// [NewServer] serves a registry's tools to any MCP client: over stdio
// ([Server.ServeStdio]), over Streamable HTTP ([Server] is an
// http.Handler that speaks the stateless 2026-07-28 revision and
// 2025-11-25 sessions on one endpoint, and answers the common 2026-07-28
// tools/call itself, with one JSON body), or over any go-sdk transport
// ([Server.Run]). Calls go through [tool.Registry.Execute], so they get
// its strict parsing, validation, defaults, time limits, panic guard and
// result budget; failures, invalid arguments included, are results with
// isError set. Changes to the registry reach clients as
// notifications/tools/list_changed.
//
// Result.Parts (images, audio, resources) are sent as MCP content blocks
// after the text. A tool reports progress with [tool.ReportProgress]; when
// the client asked for progress (a progressToken), the reports reach it as
// notifications/progress. What a tool writes to [tool.ClientLogger]
// reaches the client as notifications/message at the level it chose, and
// [RequestInput] lets a tool ask the client for sampling, elicitation or
// roots, in both protocol eras; an [ElicitApprover] puts a call that
// needs a person's approval (package policy) to the client's user. A
// client's notifications/cancelled (or, on 2026-07-28 HTTP, a closed
// response stream) cancels the tool's context.
//
// # Importing a server's tools
//
// [Connect] connects to an MCP server, started as a process ([Command]) or
// reached by URL ([URL]); [Client.Import] registers its tools in a
// registry as ordinary [tool.Tool] values and keeps them in sync, within
// the bounds of [WithImportLimits]. See [Client] for how names are
// mapped, how calls, errors, structured content and progress are
// handled, and what happens when the server goes away. In a
// [tool.Executor] batch, calls to imported tools run in parallel unless
// the server says a tool is destructive ([WithMaxInFlight]).
//
// # Security
//
// Tool annotations that come from a server are hints from that server,
// not facts: do not base a safety decision on them for a server you do not
// trust. Bind HTTP servers to 127.0.0.1 unless they sit behind
// authentication.
package mcptool
