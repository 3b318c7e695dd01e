// A stdio MCP server on @modelcontextprotocol/sdk 1.32 with its
// experimental tasks API (the 2025-11-25 form: execution.taskSupport,
// task-augmented tools/call, tasks/get, tasks/result, tasks/cancel), for
// TestPeerTypeScriptTasks. Tools:
//   delay {ms}  completes after ms milliseconds with "slept MS ms"
//   fail        fails at once with an isError result
//   hang        never completes (the client cancels it)
// Every tool reports its calls on stderr as "called NAME", and a
// cancellation as "cancelled TASKID" when the store sees one.
import * as z from 'zod/v4';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';

const taskStore = new InMemoryTaskStore();
const server = new McpServer({ name: 'ts-task-server', version: '1.0.0' }, {
  capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
  taskStore,
  taskMessageQueue: new InMemoryTaskMessageQueue(),
});

const handlers = (start) => ({
  async createTask(args, { taskStore, taskRequestedTtl }) {
    const task = await taskStore.createTask({ ttl: taskRequestedTtl ?? 60000, pollInterval: 20 });
    start(task.taskId, args, taskStore);
    return { task };
  },
  async getTask(_args, { taskId, taskStore }) {
    return await taskStore.getTask(taskId);
  },
  async getTaskResult(_args, { taskId, taskStore }) {
    return await taskStore.getTaskResult(taskId);
  },
});

server.experimental.tasks.registerToolTask('delay', {
  description: 'Sleeps for ms milliseconds.',
  inputSchema: { ms: z.number() },
  execution: { taskSupport: 'optional' },
}, handlers((id, { ms }, store) => {
  console.error('called delay');
  setTimeout(() => store.storeTaskResult(id, 'completed', { content: [{ type: 'text', text: `slept ${ms} ms` }] }).catch(() => {}), ms);
}));

server.experimental.tasks.registerToolTask('fail', {
  description: 'Fails.',
  inputSchema: {},
  execution: { taskSupport: 'required' },
}, handlers((id, _args, store) => {
  console.error('called fail');
  store.storeTaskResult(id, 'failed', { content: [{ type: 'text', text: 'it broke' }], isError: true }).catch(() => {});
}));

server.experimental.tasks.registerToolTask('hang', {
  description: 'Never completes.',
  inputSchema: {},
  execution: { taskSupport: 'required' },
}, handlers((id) => {
  console.error('called hang ' + id);
  const timer = setInterval(async () => {
    const t = await taskStore.getTask(id).catch(() => null);
    if (t && t.status === 'cancelled') {
      console.error('cancelled ' + id);
      clearInterval(timer);
    }
  }, 10);
}));

await server.connect(new StdioServerTransport());
