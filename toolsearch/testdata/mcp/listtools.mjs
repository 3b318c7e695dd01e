// Lists the tools an MCP server offers over stdio, as JSON on stdout:
// [{"name","description","inputSchema"}...]. Speaks JSON-RPC directly (no
// SDK): initialize, notifications/initialized, tools/list with paging.
// Usage: node listtools.mjs CMD ARGS...   (gives up after 20 s)
import { spawn } from "node:child_process";

const [cmd, ...args] = process.argv.slice(2);
const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "ignore"] });
const timer = setTimeout(() => { console.error("timeout"); child.kill(); process.exit(2); }, Number(process.env.LISTTOOLS_TIMEOUT_MS || 20000));
let buf = "", nextID = 1;
const waiting = new Map();
child.stdout.on("data", (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, i).trim();
    buf = buf.slice(i + 1);
    if (!line) continue;
    let msg;
    try { msg = JSON.parse(line); } catch { continue; }
    if (msg.id !== undefined && waiting.has(msg.id)) { waiting.get(msg.id)(msg); waiting.delete(msg.id); }
  }
});
function call(method, params) {
  const id = nextID++;
  child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  return new Promise((resolve) => waiting.set(id, resolve));
}
const init = await call("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "listtools", version: "1" } });
if (init.error) { console.error(JSON.stringify(init.error)); process.exit(1); }
child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
const tools = [];
let cursor;
do {
  const r = await call("tools/list", cursor ? { cursor } : {});
  if (r.error) { console.error(JSON.stringify(r.error)); process.exit(1); }
  for (const t of r.result.tools) tools.push({ name: t.name, description: t.description ?? "", inputSchema: t.inputSchema ?? {} });
  cursor = r.result.nextCursor;
} while (cursor);
clearTimeout(timer);
process.stdout.write(JSON.stringify(tools, null, 1) + "\n");
child.kill();
process.exit(0);
