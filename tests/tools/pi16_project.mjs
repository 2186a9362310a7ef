// Projects a session file with Pi 1.6.0's own code at the given leaves and prints each message's role, entry, estimate, text and tool-call arguments.
// Usage: node tests/tools/pi16_project.mjs PI_PACKAGE_DIR SESSION.jsonl LEAF_ID...
// PI_PACKAGE_DIR is an installed @earendil-works/pi-coding-agent 1.6.0 (npm). The tests read the
// printed JSON from tests/fixtures and never need Pi or Node.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [pkg, file, ...leaves] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(join(pkg, "dist/core", rel)).href);
const { SessionManager, buildSessionProjection } = await load("session-manager.js");
const { estimateTokens } = await load("compaction/compaction.js");

const text = (content) =>
  typeof content === "string" ? content : (content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("");
const calls = (content) =>
  Array.isArray(content) ? content.filter((b) => b.type === "toolCall").map((b) => ({ id: b.id, arguments: b.arguments })) : [];

const sm = SessionManager.open(file, "/tmp/pi16-project-sessions");
const entries = sm.getEntries();
const out = {};
for (const leaf of leaves) {
  out[leaf] = buildSessionProjection(entries, leaf).entries.flatMap((pe) =>
    pe.messages.map((m) => ({
      role: m.role,
      entryId: pe.sourceEntry.id,
      tokens: estimateTokens(m),
      text: m.role === "compactionSummary" ? m.summary : text(m.content),
      calls: calls(m.content),
    })));
}
console.log(JSON.stringify(out, null, 1));
