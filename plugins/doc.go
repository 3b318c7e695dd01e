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
//	              "prefix": "fs_", "tools": ["read_*", "list_directory"]},
//	    "search": {"url": "https://search.example/mcp",
//	               "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}}
//	  },
//	  "wasmModules": {
//	    "text": {"path": "toolmod.wasm", "timeout": "2s", "memoryPages": 256,
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
// # The WebAssembly tool ABI
//
// A module is a WASI preview 1 command (a _start function), run once per
// call by the sandbox's wasm backend:
//
//   - its arguments (argv) are the module's name in the configuration and
//     the tool's name as the module defines it, so one module can serve
//     several tools;
//   - the call's arguments, already checked against the tool's
//     inputSchema, are a JSON object on its standard input;
//   - what it writes to standard output is the result;
//   - exiting with a non-zero status is a tool error whose message is what
//     it wrote to standard error.
//
// It sees no files unless "workspace" grants a directory (read-only, at
// "/"), no environment but "env", no network, clock or host functions
// beyond WASI's; its memory is capped at memoryPages; a call that runs
// past its timeout is stopped with a timeout Result; output past the
// result budget stops it. A module built from Go:
//
//	GOOS=wasip1 GOARCH=wasm go build -o toolmod.wasm .
//
// The source of such a module, serving three tools, is in this package's
// testdata/toolmod.
package plugins
