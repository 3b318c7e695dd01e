// A client on the official TypeScript SDK that exercises a server's tools
// and prints one JSON object with what it saw, for the peer tests
// (peers_test.go). Usage:
//   node ts-client.mjs stdio COMMAND [ARGS...]
//   node ts-client.mjs http URL
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...rest] = process.argv.slice(2);
const transport = mode === "http"
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args: rest, stderr: "inherit" });
const client = new Client({ name: "ts-peer", version: "0.0.1" });
await client.connect(transport);

const out = { server: client.getServerVersion(), capabilities: client.getServerCapabilities() };
let cursor, pages = 0;
out.tools = [];
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  pages++;
  for (const t of page.tools) out.tools.push(t.name);
  cursor = page.nextCursor;
} while (cursor);
out.pages = pages;

async function call(name, args) {
  try {
    return await client.callTool({ name, arguments: args });
  } catch (e) {
    return { protocolError: { code: e.code, message: e.message } };
  }
}
out.ok = await call("add", { a: 2, b: 40 });
out.invalid = await call("add", { a: "two", b: 40 });
out.unknown = await call("no_such_tool", {});
console.log(JSON.stringify(out));
await client.close();
