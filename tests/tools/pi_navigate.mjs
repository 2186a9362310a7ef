// Drives Pi 1.6.0's own navigateTree on copies of a session file with a fake model and prints, per scenario, the hook order, what the hooks saw, the summary request and the appended lines.
// Usage: node tests/tools/pi_navigate.mjs PI_PACKAGE_DIR tests/fixtures/pi16_navigation.jsonl > tests/fixtures/pi16_navigation.json
// PI_PACKAGE_DIR is an installed @earendil-works/pi-coding-agent 1.6.0 (npm; Pi needs Node >= 22).
// navigateTree runs on a stand-in session object holding Pi's real SessionManager,
// ExtensionRunner, SettingsManager and summarization-auth code; only the model's stream is
// fake; the thinking level is the session's, as Pi restores it. New ids are printed as new1, new2, ... in append order; timestamps are dropped. The
// tests read the printed JSON from tests/fixtures and never need Pi or Node.
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";

const [pkg, file] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(join(pkg, "dist/core", rel)).href);
const { AgentSession } = await load("agent-session.js");
const { SessionManager } = await load("session-manager.js");
const { SettingsManager } = await load("settings-manager.js");
const { ExtensionRunner } = await load("extensions/runner.js");

const MODEL_TEXT = "## Goal\nApproach B";
const model = {
  id: "fake-model", name: "fake", api: "anthropic-messages", provider: "anthropic", baseUrl: "http://127.0.0.1:1",
  reasoning: true, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 200000, maxTokens: 64000,
};

async function scenario({ target, options = {}, before }) {
  const dir = mkdtempSync(join(tmpdir(), "pi-navigate-"));
  const path = join(dir, "s.jsonl");
  copyFileSync(file, path);
  const linesBefore = readFileSync(path, "utf8").split("\n").filter(Boolean).length;
  const sm = SessionManager.open(path, dir);
  // The level Pi restores when it opens the session: the path's latest thinking_level_change.
  const thinking = sm.buildSessionProjection().thinkingLevel;
  const order = [];
  const seen = {};
  const requests = [];
  const handlers = new Map();
  if (before) {
    handlers.set("session_before_tree", [async (event) => {
      const p = event.preparation;
      order.push("session_before_tree");
      seen.before = {
        targetId: p.targetId, oldLeafId: p.oldLeafId, commonAncestorId: p.commonAncestorId,
        entriesToSummarize: p.entriesToSummarize.map((e) => e.id), userWantsSummary: p.userWantsSummary,
        customInstructions: p.customInstructions ?? null, replaceInstructions: p.replaceInstructions ?? null,
        label: p.label ?? null, signal: event.signal instanceof AbortSignal,
      };
      return before;
    }]);
  }
  handlers.set("session_tree", [async (event) => {
    order.push("session_tree");
    seen.after = {
      newLeafId: event.newLeafId, oldLeafId: event.oldLeafId,
      summaryEntry: event.summaryEntry ? event.summaryEntry.id : null, fromExtension: event.fromExtension ?? null,
    };
  }]);
  const runner = new ExtensionRunner([{ path: "test-extension", handlers }], {}, dir, sm, undefined);
  // Usage as Pi's providers report it (calculateCost sets totalFromProvider).
  const streamFunction = async (m, context, requestOptions) => {
    order.push("model");
    const text = (msg) => (typeof msg.content === "string" ? msg.content : msg.content.map((b) => b.text).join(""));
    requests.push({
      system: context.messages.filter((x) => x.role === "system").map(text),
      prompt: context.messages.filter((x) => x.role === "user").map(text),
      roles: context.messages.map((x) => x.role), reasoning: requestOptions.reasoning ?? null,
      maxTokens: requestOptions.maxTokens ?? null,
    });
    return { result: async () => ({
      role: "assistant", content: [{ type: "text", text: MODEL_TEXT }], api: m.api, provider: m.provider, model: m.id,
      usage: { input: 900, output: 40, cacheRead: 0, cacheWrite: 0, totalTokens: 940,
               cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0, totalFromProvider: false } },
      stopReason: "stop", timestamp: 1767225700000,
    }) };
  };
  // navigateTree's `this`: the fields and helpers it reads, Pi's own where they matter.
  const self = {
    isStreaming: false, _promptPreflightCount: 0, isCompacting: false, model, thinkingLevel: thinking,
    messages: [], sessionManager: sm, settingsManager: SettingsManager.inMemory(), _extensionRunner: runner,
    agent: { streamFunction }, _modelRuntime: { getAuth: async () => undefined },
    _getSummarizationRequestAuth: AgentSession.prototype._getSummarizationRequestAuth,
    _summarizationRetryCallbacks: () => undefined,
    _refreshFinalizedContext: () => order.push("context_refreshed"),
    _restoreToolsFromTranscript: () => {}, _resolveIdleWaitIfIdle: () => {},
  };
  let result;
  try {
    const r = await AgentSession.prototype.navigateTree.call(self, target, options);
    result = { cancelled: r.cancelled, aborted: r.aborted ?? null, editorText: r.editorText ?? null,
               summaryEntry: r.summaryEntry ? r.summaryEntry.id : null };
  } catch (e) {
    result = { error: String(e.message) };
  }
  const appended = readFileSync(path, "utf8").split("\n").filter(Boolean).slice(linesBefore).map((l) => JSON.parse(l));
  // Lines in the file before a first append are written lazily by Pi: only count the new ones.
  const ids = new Map();
  const name = (id) => (id === null || id === undefined ? id : ids.get(id) ?? id);
  appended.forEach((e, k) => ids.set(e.id, `new${k + 1}`));
  const lines = appended.map((e) => {
    const o = { keys: Object.keys(e) };
    for (const [k, v] of Object.entries(e)) {
      if (k === "timestamp") continue;
      o[k] = k === "id" || k === "parentId" || k === "targetId" ? name(v) : v;
    }
    return o;
  });
  if (seen.after) {
    seen.after.newLeafId = name(seen.after.newLeafId);
    seen.after.summaryEntry = name(seen.after.summaryEntry);
  }
  if (result.summaryEntry) result.summaryEntry = name(result.summaryEntry);
  return { target, options, hookResult: before ?? null, thinking, order, seen, requests, result, leaf: name(sm.getLeafId()), lines };
}

const out = {
  modelText: MODEL_TEXT,
  scenarios: {
    summary_with_label_and_focus: await scenario({
      target: "u2", options: { summarize: true, customInstructions: "Focus on the lexer.", label: "lexer-try" }, before: undefined }),
    hook_overrides_instructions: await scenario({
      target: "u2", options: { summarize: true, customInstructions: "ignored" },
      before: { customInstructions: "Only the decisions.", replaceInstructions: true, label: "from-hook" } }),
    hook_supplies_summary: await scenario({
      target: "a2", options: { summarize: true },
      before: { summary: { summary: "Hook summary of the lexer work.", details: { source: "hook" } } } }),
    hook_summary_without_summarize: await scenario({
      target: "a2", options: { summarize: false },
      before: { summary: { summary: "Not used." } } }),
    hook_cancels: await scenario({ target: "u2", options: { summarize: true }, before: { cancel: true } }),
    label_without_summary: await scenario({ target: "a2", options: { label: "checkpoint" }, before: {} }),
    root_without_summary: await scenario({ target: "u1", options: { label: "start" }, before: {} }),
    root_with_summary: await scenario({ target: "u1", options: { summarize: true }, before: {} }),
  },
};
console.log(JSON.stringify(out, null, 1));
