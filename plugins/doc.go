// Package plugins loads tools named in one configuration file, MCP
// servers and WebAssembly modules, into a [tool.Registry], and reloads
// the file when it changes, without a restart.
//
// # The file
//
// The file is the "mcpServers" JSON that desktop agent hosts and editors
// read, so an existing one works as it is, with optional additions:
//
//	{
//	  "mcpServers": {
//	    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"],
//	              "prefix": "fs_", "tools": ["read_*", "list_directory"], "unsandboxed": true},
//	    "search": {"url": "https://search.example/mcp",
//	               "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}}
//	  },
//	  "wasmModules": {
//	    "text": {"path": "reactormod.wasm", "abi": "reactor", "timeout": "2s", "memoryPages": 256,
//	             "tools": [{"name": "upper", "description": "Upper-cases text.",
//	                        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]}
//	  },
//	  "defaults": {"timeout": "30s", "maxOutput": 65536},
//	  "sandboxPolicy": "sandbox.json",
//	  "permissions": "permissions.json"
//	}
//
// See [Config], [Server] and [Module] for every field. ${NAME} is replaced
// with the environment variable's value; the values substituted in "env",
// "headers", "args" and "url" are secrets, which never appear in errors,
// [Status] or logs ([Config.Redact]).
//
// # Loading and reloading
//
// A [Host] loads each entry on its own: one that fails (a missing
// command, a server that exits, a module that does not compile) is
// reported in [Host.Status] with its reason, and the others load all the
// same. [Host.Watch] reloads the file when it changes: only the entries
// whose settings changed restart, removed ones close, new ones start, and
// the registry changes in place, so an mcptool server serving it sends
// notifications/tools/list_changed. A call in flight on an entry that
// closes ends with an error Result. A file that does not parse changes
// nothing: the last good configuration stays.
//
// A server that ends on its own (its process exits, its connection
// breaks) is restarted with exponential backoff ([RestartPolicy]): its
// tools stay listed, calls to them give an error Result of kind
// unavailable at once, and the entry is [Restarting]; after too many
// restarts in a row it is [Failed] until the file changes or reloads.
//
// # The sandbox policy
//
// "sandboxPolicy" names a policy file ([sandbox.ReadPolicyFile]) that bounds every
// entry, or keeps it from loading:
//
//   - a WebAssembly module sees the policy's workspace and read-only
//     directories, read-only, each at its own path (a module never writes
//     host files); a module's own "workspace" must lie inside them, and
//     is then all it sees, at "/". The policy's memory limit caps
//     "memoryPages", its output limit the result budget, its CPU limit
//     the call's deadline. Its network, environment, process, file and
//     /tmp settings add nothing: a module has no network, no processes
//     and no environment but its own "env".
//   - a stdio MCP server runs confined in the native sandbox under it,
//     or under the policy its entry names ([Server.SandboxPolicy]): the
//     read-only system and the policy's read-only paths, its own
//     workspace ([Server.Workspace]) or none, the policy's environment
//     plus the entry's "env", the policy's network and limits. A server
//     that cannot run confined fails alone, its error quoting the
//     denials it met, and never runs unconfined, unless the server sets
//     "unsandboxed": true to run outside the sandbox knowingly. With
//     "image" (the entry's [Server.Image], or the policy's) it runs in a
//     container of that image instead, under the same policy.
//     [Status] says where each server runs.
//   - a Streamable HTTP server runs elsewhere; the policy does not
//     concern it.
//
// A policy file that cannot be read or is not valid fails every entry:
// none is ever loaded without the policy it was given.
//
// # The WebAssembly tool ABIs
//
// A module is called in one of two ways, chosen by "abi" or, when that
// is not set, by its exports (a module exporting clawtool_call is a
// reactor). Either way its arguments are first checked against the
// tool's inputSchema (arguments that do not match never reach it), it
// sees no files unless granted (above, or "workspace": a directory,
// read-only, at "/"), no environment but "env", no network, clock or host
// functions beyond WASI's; its memory is capped at memoryPages; a call
// that runs past its timeout is stopped with a timeout Result; output
// past the result budget stops it.
//
// "command" (any module that does not export clawtool_call): a WASI
// preview 1 command (a _start function), instantiated afresh for each
// call, so no state survives a call:
//
//   - its arguments (argv) are the module's name in the configuration and
//     the tool's name as the module defines it, so one module can serve
//     several tools;
//   - the call's arguments are a JSON object on its standard input;
//   - what it writes to standard output is the result;
//   - exiting with a non-zero status is a tool error whose message is what
//     it wrote to standard error.
//
// Built from Go, such a module starts the Go runtime on every call
// (several milliseconds):
//
//	GOOS=wasip1 GOARCH=wasm go build -o toolmod.wasm .
//
// "reactor": a WASI reactor, instantiated once (its _initialize runs
// then) and kept warm, each call a pair of calls to its exports:
//
//   - clawtool_alloc(size i32) -> i32 returns the address of a buffer of
//     size bytes, into which the host writes the tool's name and then the
//     call's arguments (JSON);
//   - clawtool_call(ptr, nameLen, argsLen i32) -> i64 runs the tool and
//     returns its result's address in the high 32 bits and its length in
//     the low 32: a JSON object, {"output": TEXT} or {"error": MESSAGE}
//     (a tool error). Anything else is a malformed result, an error
//     Result saying so; a result longer than the result budget is refused
//     unread.
//
// What a reactor writes to standard output is dropped (it counts against
// the output limit); its standard error explains a call that fails. Its
// memory and globals persist from one call to the next: a reactor keeps
// state, and is trusted to keep one caller's data from the next, which a
// command module does not need to be. "instances" warm instances (1 by
// default) serve calls, each one at a time; a call waits for a free one
// within its deadline. An instance is closed, and the next call
// instantiates a fresh one, when its call is stopped at the deadline,
// traps, exits or writes past the output limit, and after a call that
// left its memory above three quarters of memoryPages. Built from Go
// 1.24 or later, with the exports marked //go:wasmexport:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o reactormod.wasm .
//
// Example modules, serving the same tools, are in this package's
// testdata/toolmod (a command) and testdata/reactormod (a reactor).
package plugins
