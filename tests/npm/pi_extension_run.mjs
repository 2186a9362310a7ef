// Runs the real Pi 1.6.0 (SDK, from the npm cache) over a long scripted tool-using session with a
// faux model, with or without examples/pi-extension, and prints one JSON report: requests, billed
// input (uncached + 1.25 × written + 0.1 × read, the faux provider's prompt cache), compactions,
// summary calls, tool calls separated from their results, extension errors, turn_end hold times.
//   node pi_extension_run.mjs --npm-cache DIR --mode with|without --work DIR
//        [--agentctx BIN] [--extension DIR] [--turns 300] [--per-prompt 20] [--window 200000]
//        [--settings JSON]   (the `agentctx` settings object, written to Pi's settings file)
//        [--unpriced 1]      (the model declares no prices: the advisor gets no cache prices)
//        [--pi-compaction JSON]  (Pi's own `compaction` settings over the defaults below)
//        [--overflow-at N]   (the model answers request N with a context-overflow error, once)
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const arg = {};
for (let i = 2; i < process.argv.length; i += 2) arg[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const nm = join(arg["npm-cache"], "node_modules/@earendil-works");
const pi = await import(join(nm, "pi-coding-agent/dist/index.js"));
const ai = await import(join(nm, "pi-ai/dist/index.js"));
const models = await import(join(nm, "pi-ai/dist/models.js"));

const mode = arg.mode ?? "with";
const turns = Number(arg.turns ?? 300);
const perPrompt = Number(arg["per-prompt"] ?? 20);
const window = Number(arg.window ?? 200000);
const work = resolve(arg.work);

// A workspace of real files the model reads and greps: sizes vary from 1 to 14 KB.
rmSync(work, { recursive: true, force: true });
mkdirSync(join(work, "src"), { recursive: true });
const files = [];
for (let i = 0; i < 48; i++) {
  const lines = [];
  const count = 20 + ((i * 37) % 300);
  for (let l = 0; l < count; l++)
    lines.push(`export function step${i}_${l}(input: number): number { return input * ${l} + ${i}; } // line ${l}`);
  const name = `src/module${i}.ts`;
  writeFileSync(join(work, name), lines.join("\n") + "\n");
  files.push(name);
}

// The model: a read or a grep per turn, a short answer at the end of each prompt; a checkpoint
// summary when asked for one (Pi's own request or the extension's).
const requests = { turns: 0, summaries: 0, separated: 0, billedTurns: 0, billedSummaries: 0 };
const textOf = (m) =>
  typeof m?.content === "string" ? m.content : (m?.content ?? []).map((b) => b.text ?? "").join("\n");
const isSummaryRequest = (ctx) => {
  const last = ctx.messages.at(-1);
  // Pi's history and split-turn prefix requests, and the extension's checkpoint request.
  return last?.role === "user" && /^<conversation>|^# Conversation\n|## Goal/.test(textOf(last));
};
// Every tool result must follow its call, and every call of an earlier message have its result.
function separatedCalls(messages) {
  const calls = new Set();
  const answered = new Set();
  let bad = 0;
  messages.forEach((m, i) => {
    if (m.role === "assistant")
      for (const b of m.content) if (b.type === "toolCall") calls.add(b.id);
    if (m.role === "toolResult") {
      if (!calls.has(m.toolCallId)) bad++;
      answered.add(m.toolCallId);
    }
  });
  for (const id of calls) if (!answered.has(id)) bad++;
  return bad;
}
let step = 0;
let inPrompt = 0;
const overflowAt = Number(arg["overflow-at"] ?? 0);
let overflowed = 0; // the request number that got the overflow error
const script = (ctx) => {
  if (isSummaryRequest(ctx))
    return ai.fauxAssistantMessage(
      "## Goal\nWork through the module review tasks.\n\n## Progress\n### Done\n- [x] Read and grepped the modules so far\n\n## Next Steps\n1. Continue with the next module\n"
    );
  if (overflowAt > 0 && !overflowed && requests.turns >= overflowAt) {
    overflowed = requests.turns;
    return ai.fauxAssistantMessage([], { stopReason: "error", errorMessage: `prompt is too long: ${window + 1} tokens > ${window} maximum` });
  }
  const last = ctx.messages.at(-1);
  if (last?.role === "user" && textOf(last).startsWith("Task ")) inPrompt = 0;
  if (inPrompt++ >= perPrompt) return ai.fauxAssistantMessage("Done: the modules of this task are reviewed.");
  const n = step++;
  const file = files[(n * 7) % files.length];
  // What the model says before each call (kept by clearing, only a summary removes it).
  const note = ai.fauxText(
    `Step ${n}: ${file} is next. ` +
      Array.from({ length: 6 + (n % 9) }, (_, i) => `Observation ${i}: step${n % 48}_${i} scales its input and adds the module index.`).join(" ")
  );
  if (n % 3 === 2)
    return ai.fauxAssistantMessage([note, ai.fauxToolCall("bash", { command: `grep -n "line 1" ${file} | head -40` })], { stopReason: "toolUse" });
  return ai.fauxAssistantMessage([note, ai.fauxToolCall("read", { path: file })], { stopReason: "toolUse" });
};
// Priced as billed below: a cache write costs 1.25 and a read 0.1 of an uncached input token.
const cost = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const core = ai.createFauxCore({ models: [{ id: "faux-1", contextWindow: window, maxTokens: 16384, ...(arg.unpriced ? {} : { cost }) }] });
core.setResponses(Array.from({ length: turns * 3 + 200 }, () => script));
const billed = (u) => (u ? u.input + 1.25 * u.cacheWrite + 0.1 * u.cacheRead : 0);
// The billed input's parts: uncached, written to and read from the cache (turns and summaries).
const parts = { input: 0, cacheWrite: 0, cacheRead: 0 };
const addParts = (u) => u && ["input", "cacheWrite", "cacheRead"].forEach((k) => (parts[k] += u[k]));
// Cache writes of the turn requests by what changed the context since the request before:
// a compaction, a clearing, or nothing (the turn's own new messages only).
const writesAfter = { compaction: 0, clearing: 0, plain: 0 };
let seen = { compactions: 0, edits: 0 };
function changeSinceLast() {
  const entries = typeof session === "undefined" ? [] : session.sessionManager.getEntries();
  const now = { compactions: entries.filter((e) => e.type === "compaction").length, edits: entries.filter((e) => e.type === "context_edit").length };
  const change = now.compactions > seen.compactions ? "compaction" : now.edits > seen.edits ? "clearing" : "plain";
  seen = now;
  return change;
}
const measured = (fn) => (model, ctx, options) => {
  const summary = isSummaryRequest(ctx);
  if (summary) requests.summaries++;
  else {
    requests.turns++;
    requests.separated += separatedCalls(ctx.messages);
  }
  const change = summary ? null : changeSinceLast();
  const stream = fn(model, ctx, options);
  stream.result().then((m) => {
    addParts(m.usage);
    if (change && m.usage) writesAfter[change] += m.usage.cacheWrite;
    if (summary) requests.billedSummaries += billed(m.usage);
    else requests.billedTurns += billed(m.usage);
  });
  return stream;
};
const provider = models.createProvider({
  id: "faux",
  auth: { apiKey: { name: "Faux", resolve: async () => ({ auth: {} }) } },
  models: core.models,
  api: { stream: measured(core.stream), streamSimple: measured(core.streamSimple), fetchDeferred: core.fetchDeferred, cancelDeferred: core.cancelDeferred },
});

const agentDir = join(work, "agent");
mkdirSync(agentDir, { recursive: true });
const modelRuntime = await pi.ModelRuntime.create({ authPath: join(agentDir, "auth.json"), modelsPath: join(agentDir, "models.json") });
modelRuntime.registerNativeProvider(provider);
const statsFile = join(work, "extension-stats.jsonl");
const agentctxSettings = { binary: arg.agentctx, statsFile, ...JSON.parse(arg.settings ?? "{}") };
// Pi's user settings file in its agent folder, read by Pi as a user's would be.
const piCompaction = { enabled: true, reserveTokens: 16384, keepRecentTokens: 20000, ...JSON.parse(arg["pi-compaction"] ?? "{}") };
writeFileSync(
  join(agentDir, "settings.json"),
  JSON.stringify({ compaction: piCompaction, retry: { enabled: false }, ...(mode === "with" ? { agentctx: agentctxSettings } : {}) }, null, 2)
);
const settingsManager = pi.SettingsManager.create(work, agentDir);
const resourceLoader = new pi.DefaultResourceLoader({
  cwd: work,
  agentDir,
  settingsManager,
  additionalExtensionPaths: mode === "with" ? [resolve(arg.extension)] : [],
  noSkills: true,
  noPromptTemplates: true,
  noThemes: true,
  noContextFiles: true,
});
await resourceLoader.reload();
const { session } = await pi.createAgentSession({
  cwd: work,
  agentDir,
  model: core.getModel(),
  thinkingLevel: "off",
  modelRuntime,
  resourceLoader,
  tools: ["read", "bash"],
  sessionManager: pi.SessionManager.create(work, join(work, "sessions")),
  settingsManager,
});
const errors = [];
// A UI as Pi's interactive and RPC modes give extensions: it records the status line (with the
// request count when it was set) and the notifications; every other method does nothing.
const statusLine = [];
const notices = [];
const ui = Object.fromEntries(
  ["select", "confirm", "input", "editor", "custom", "onTerminalInput", "setWorkingMessage", "setWorkingVisible",
    "setWorkingIndicator", "setHiddenThinkingLabel", "setWidget", "setFooter", "setHeader", "setTitle",
    "setEditorText", "getEditorText", "pasteToEditor", "addAutocompleteProvider", "setEditorComponent",
    "getEditorComponent"].map((m) => [m, () => undefined])
);
ui.setStatus = (key, text) => statusLine.push({ key, text, requests: requests.turns });
ui.notify = (message, type) => notices.push({ message, type });
await session.bindExtensions({ uiContext: ui, onError: (e) => errors.push(e.error ?? String(e)) });
const loadErrors = resourceLoader.getExtensions().errors.map((e) => e.error ?? String(e));

const started = performance.now();
const prompts = Math.ceil(turns / perPrompt);
// Half way, one `/compact` with a focus (through session_before_compact when the extension is loaded).
let manual = null;
async function compactNow() {
  try {
    await session.compact("the modules reviewed last");
    const last = session.sessionManager.getEntries().filter((e) => e.type === "compaction").at(-1);
    manual = { fromHook: !!last?.fromHook, reason: last?.details?.agentctx?.reason ?? null };
  } catch (err) {
    manual = { error: String(err?.message ?? err) };
  }
}
for (let p = 0; p < prompts; p++) {
  await session.prompt(`Task ${p}: review the next modules and report.`);
  if (p === Math.floor(prompts / 2)) await compactNow();
}
const seconds = (performance.now() - started) / 1000;
const measuredRequests = requests;
const file = session.sessionManager.getSessionFile();
session.dispose();

// What Pi wrote, and Pi's own projection of the reloaded file.
const entries = readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const reopened = pi.SessionManager.open(file);
const projection = reopened.buildSessionProjection();
const projected = projection.entries.flatMap((pe) => pe.messages.map((m) => ({ role: m.role, entryId: pe.sourceEntry.id })));
const stats = existsSync(statsFile) ? readFileSync(statsFile, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
// After each turn end's clearing edits: how many tool results of the context are left uncleared
// (the `keep` newest; the context starts at the latest compaction's first kept entry).
function keptAfterClearing() {
  const kept = new Set();
  const index = new Map(entries.map((e, i) => [e.id, i]));
  let results = []; // [position, id] of tool results in the context
  const cleared = new Set();
  entries.forEach((e, i) => {
    if (e.type === "message" && e.message?.role === "toolResult") results.push([i, e.id]);
    if (e.type === "compaction") results = results.filter(([at]) => at >= (index.get(e.firstKeptEntryId) ?? i));
    if (e.type === "context_edit") cleared.add(e.targetId);
    if (e.type === "context_edit" && entries[i + 1]?.type !== "context_edit")
      kept.add(results.filter(([, id]) => !cleared.has(id)).length);
  });
  return [...kept].sort((a, b) => a - b);
}
const holds = stats.filter((s) => typeof s.holdMs === "number").map((s) => s.holdMs).sort((a, b) => a - b);
const report = {
  mode,
  file,
  seconds,
  requests: measuredRequests.turns,
  summaryCalls: measuredRequests.summaries,
  billedInput: Math.round(measuredRequests.billedTurns + measuredRequests.billedSummaries),
  billedTurns: Math.round(measuredRequests.billedTurns),
  billedSummaries: Math.round(measuredRequests.billedSummaries),
  inputTokens: parts,
  cacheWritesAfter: writesAfter,
  separatedToolCalls: requests.separated,
  manualCompaction: manual,
  compactions: entries.filter((e) => e.type === "compaction").length,
  extensionCompactions: entries.filter((e) => e.type === "compaction" && e.fromHook).length,
  contextEdits: entries.filter((e) => e.type === "context_edit").length,
  proposed: {
    commits: stats.filter((s) => s.result === "commit").length,
    commitsWithoutWait: stats.filter((s) => s.result === "commit" && s.action === "commit").length,
    // Clearing edits: a clearing's drafts, and those a commit carries after its compaction.
    edits: stats.reduce((n, s) => n + (s.result === "clear" ? s.drafts : s.result === "commit" && s.drafts > 1 ? s.drafts - 1 : 0), 0),
    clearings: stats.filter((s) => s.result === "clear").length,
    summaries: stats.filter((s) => s.action === "summarize").length,
  },
  turnEndHoldMs: holds.length
    ? { max: holds.at(-1), p50: holds[Math.floor(holds.length / 2)], mean: holds.reduce((a, b) => a + b, 0) / holds.length }
    : null,
  keptAfterClearing: keptAfterClearing(),
  prompts,
  promptsAnswered: entries.filter((e) => e.message?.role === "assistant" && textOf(e.message).startsWith("Done:")).length,
  overflowedAt: overflowed,
  hookCompactions: stats.filter((s) => s.compact).map((s) => s.compact),
  errors: [...loadErrors, ...errors],
  // The status line after each change (`agentctx` key), and the compactions' reasons in file order.
  statusLine: statusLine.filter((st) => st.key === "agentctx").map((st) => st.text),
  compactionReasons: entries.filter((e) => e.type === "compaction").map((e) => e.details?.agentctx?.reason ?? null),
  notices,
  projection: projected,
};
process.stdout.write(JSON.stringify(report) + "\n", () => process.exit(0));
