// Derives labelled queries from the READMEs the MCP server packages ship:
// where a README documents a tool by name (a list item or heading naming
// the tool in backticks or bold), the sentence it gives is a query whose
// answer is that tool. The README's authors wrote the text, not us; it is
// taken as it is, with the tool's name removed, and kept only when it
// differs from the tool's own description.
// Usage: node readme_queries.mjs SERVER=README.md[,README2.md] ... < catalog.json
import { readFileSync } from "node:fs";

const catalog = JSON.parse(readFileSync(0, "utf8"));
const byServer = new Map();
for (const s of catalog.servers) byServer.set(s.server, s);
const out = [];
for (const arg of process.argv.slice(2)) {
  const [server, files] = arg.split("=");
  const s = byServer.get(server);
  const names = new Map(s.tools.map((t) => [t.name, t]));
  const seen = new Set();
  for (const f of files.split(",")) {
    const lines = readFileSync(f, "utf8").split("\n");
    for (let i = 0; i < lines.length; i++) {
      const m = lines[i].match(/^\s*(?:[-*+]|\d+\.|#{2,5})\s*(?:\*\*)?`?([A-Za-z0-9_.-]+)`?(?:\*\*)?\s*(?:[-:–—|]\s*(.*))?$/);
      if (!m || !names.has(m[1]) || seen.has(m[1])) continue;
      let text = (m[2] || "").trim();
      for (let j = i + 1; !text && j < Math.min(lines.length, i + 4); j++) {
        const l = lines[j].trim();
        if (!l) continue;
        if (/^[-*]\s*(Inputs?|Required|Optional|Parameters|Returns)/i.test(l)) break;
        text = l.replace(/^[-*]\s*/, "").replace(/^(Description|Purpose|Title)\s*:\s*/i, "");
      }
      text = text.replace(/[`*_]/g, "").replace(/\s+/g, " ").trim();
      if (text.length < 12 || text.length > 300 || /\|/.test(text)) continue;
      if (text.toLowerCase() === names.get(m[1]).description.trim().toLowerCase()) continue;
      seen.add(m[1]);
      out.push(`${text} | ${server}__${m[1]}`);
    }
  }
}
process.stdout.write(out.join("\n") + "\n");
