// A client on the official TypeScript SDK's experimental tasks (the
// 2025-11-25 form) that runs tools as tasks against a server and prints
// one JSON object with what it saw, for TestPeerTypeScriptTasksClient
// (peers_test.go). Usage:
//   node ts-tasks-client.mjs stdio COMMAND [ARGS...]
//   node ts-tasks-client.mjs http URL
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, target, ...rest] = process.argv.slice(2);
const transport = mode === "http"
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args: rest, stderr: "inherit" });
const client = new Client({ name: "ts-tasks-peer", version: "0.0.1" }, { capabilities: { elicitation: {} } });
// The questions a task asks on tasks/result: recorded, and answered yes.
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push({ message: req.params.message, relatedTask: req.params._meta?.["io.modelcontextprotocol/related-task"]?.taskId });
  return { action: "accept", content: { confirm: true } };
});
await client.connect(transport);

const out = { version: client.getServerVersion(), capabilities: client.getServerCapabilities() };
const tools = await client.listTools();
out.execution = {};
for (const t of tools.tools) if (t.execution) out.execution[t.name] = t.execution.taskSupport;

async function stream(name, args) {
  const seen = [];
  try {
    for await (const m of client.experimental.tasks.callToolStream({ name, arguments: args })) {
      seen.push({ type: m.type, taskId: m.task?.taskId, status: m.task?.status, result: m.result, error: m.error?.message });
    }
  } catch (e) {
    seen.push({ type: "thrown", error: e.message, code: e.code });
  }
  return seen;
}
out.slow = await stream("slow_compute", { seconds: 0.2, label: "ts" });
out.failing = await stream("failing_job", {});
out.confirm = await stream("confirm_delete", { filename: "a.txt" });
out.asked = asked;
const list = await client.experimental.tasks.listTasks();
out.listed = list.tasks.map((t) => ({ taskId: t.taskId, status: t.status }));
try {
  await client.experimental.tasks.cancelTask(list.tasks[0].taskId);
  out.cancelTerminal = { ok: true };
} catch (e) {
  out.cancelTerminal = { code: e.code, message: e.message };
}
try {
  await client.experimental.tasks.getTask("no-such-task");
  out.unknown = { ok: true };
} catch (e) {
  out.unknown = { code: e.code };
}
console.log(JSON.stringify(out));
await client.close();
