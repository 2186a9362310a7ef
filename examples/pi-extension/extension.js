// agentctx for Pi: at each turn end, asks the agentctx advisor (`agentctx advise --stdio`) what to
// do and proposes it as Pi's own draft entries: tool-result clearing edits, background summaries
// through the user's model, compactions committed with no model wait. The decisions are the
// advisor's; this file only carries them. A missing, crashing or confused advisor is logged once
// and the session then runs exactly as Pi alone.
import { convertToLlm } from "@earendil-works/pi-coding-agent";
import { appendFileSync } from "node:fs";
import { AdvisorClient } from "./advisor-client.js";
import { summarize } from "./summarize.js";

const EDITABLE_ROLES = new Set(["user", "assistant", "toolResult"]);

// Whether a draft is one Pi accepts: an edit of an editable entry on the branch, or a compaction
// that keeps an entry of the branch. Anything else is the advisor's garbage.
function validDraft(draft, branch) {
  if (draft?.type === "context_edit") {
    const target = branch.get(draft.targetId);
    const r = draft.replacement;
    const content = r === null || (typeof r === "object" && (typeof r.content === "string" || Array.isArray(r.content)));
    const editable =
      target?.type === "custom_message" || (target?.type === "message" && EDITABLE_ROLES.has(target.message?.role));
    return content && editable;
  }
  if (draft?.type === "compaction")
    return typeof draft.summary === "string" && draft.summary.trim() !== "" && branch.has(draft.firstKeptEntryId);
  return false;
}

// The model's prompt-cache prices as multiples of its input price, when its cache is priced.
function cachePrices(model) {
  const c = model?.cost;
  if (!(c?.input > 0 && c.cacheRead > 0)) return undefined;
  const write = (c.cacheWrite > 0 ? c.cacheWrite : c.input) / c.input;
  const read = c.cacheRead / c.input;
  return read < write ? { write, read } : undefined;
}

export default function agentctx(pi) {
  let advisor = null;
  let settings = {};
  let pending = null; // { planId, done: Promise<answer|null> }
  let lastCompaction = null;
  let warned = false;

  const log = (ctx, message) => {
    if (warned) return;
    warned = true;
    const text = `agentctx: ${message}; Pi continues without it`;
    if (ctx?.hasUI) ctx.ui.notify(text, "warning");
    else process.stderr.write(text + "\n");
  };
  const stats = (record) => {
    if (!settings.statsFile) return;
    try {
      appendFileSync(settings.statsFile, JSON.stringify(record) + "\n");
    } catch {}
  };
  const showStatus = (ctx, answer) => {
    if (!ctx?.hasUI || typeof answer?.contextTokens !== "number") return;
    const k = (n) => `${Math.round(n / 1000)}k`;
    const last = lastCompaction ? `, last compaction ${lastCompaction}` : "";
    ctx.ui.setStatus("agentctx", `agentctx ${k(answer.contextTokens)}/${k(answer.threshold)}${last}`);
  };
  const ask = async (ctx, request) => {
    const answer = await advisor?.ask(request);
    if (answer?.error) log(ctx, `advisor error ${answer.error.code}: ${answer.error.message}`);
    return answer && !answer.error ? answer : null;
  };
  // The drafts of an answer, or null (and the advisor retired) when any would fail Pi's validation.
  const draftsOf = (ctx, drafts) => {
    const branch = new Map(ctx.sessionManager.getBranch().map((e) => [e.id, e]));
    if (drafts.every((d) => validDraft(d, branch))) return drafts;
    advisor?.fail("the advisor proposed an entry Pi would refuse");
    return null;
  };

  async function open(ctx) {
    advisor?.close();
    advisor = null;
    pending = null;
    const file = ctx.sessionManager.getSessionFile();
    if (!file) return; // an in-memory session: nothing to follow
    settings = pi.getSettings()?.agentctx ?? {};
    const binary = settings.binary ?? process.env.AGENTCTX_BIN ?? "agentctx";
    advisor = new AdvisorClient(binary, { onFailure: (why) => log(ctx, why) });
    const { binary: _b, statsFile: _s, ...advisorSettings } = settings;
    const answer = await ask(ctx, {
      op: "open",
      session: file,
      settings: advisorSettings,
      contextWindow: ctx.model?.contextWindow ?? 200000,
      modelMaxTokens: ctx.model?.maxTokens ?? 0,
      model: ctx.model ? `${ctx.model.provider}/${ctx.model.id}` : undefined,
      cachePrices: cachePrices(ctx.model),
    });
    if (!answer) advisor?.fail("the advisor could not open the session");
    showStatus(ctx, answer);
  }

  // Runs one summary and hands it back; resolves to the advisor's answer (a draft when due).
  async function runSummary(ctx, request, messages, signal) {
    try {
      const { text, usage } = await summarize(ctx, pi, request, messages, signal);
      return await ask(ctx, { op: "summary", planId: request.planId, summary: text, usage });
    } catch (err) {
      await ask(ctx, { op: "failed", planId: request.planId, reason: String(err?.message ?? err) });
      return null;
    }
  }

  function proposal(ctx, event, answer) {
    let drafts = null;
    if (answer?.action === "clear") drafts = answer.edits;
    if (answer?.action === "commit") drafts = [answer.compaction, ...(answer.edits ?? [])];
    if (!drafts) return undefined;
    drafts = draftsOf(ctx, drafts);
    if (!drafts) return undefined;
    if (answer.action === "commit") lastCompaction = answer.compaction.details?.agentctx?.reason ?? "agentctx";
    return { entries: [...event.entries, ...drafts] };
  }

  pi.on("session_start", async (_event, ctx) => open(ctx));
  pi.on("model_select", async (_event, ctx) => open(ctx));
  pi.on("session_shutdown", async () => advisor?.close());

  pi.on("turn_end", async (event, ctx) => {
    if (!advisor || advisor.dead || event.outcome !== "completed") return undefined;
    const started = performance.now();
    let answer = await ask(ctx, { op: "turn_end" });
    const action = answer?.action ?? "none";
    if (answer?.action === "summarize" && answer.foreground) {
      answer = await runSummary(ctx, answer, event.context.llmMessages, ctx.signal);
    } else if (answer?.action === "summarize") {
      const request = answer;
      pending = { planId: request.planId, done: runSummary(ctx, request, event.context.llmMessages, undefined) };
    } else if (answer?.action === "wait") {
      answer = pending?.planId === answer.planId ? await pending.done : await ask(ctx, { op: "failed", planId: answer.planId });
    }
    if (answer?.action === "commit" || answer?.discarded) pending = null;
    const result = proposal(ctx, event, answer);
    showStatus(ctx, answer);
    const drafts = result ? result.entries.length - event.entries.length : 0;
    stats({ turn: event.turnIndex, action, result: answer?.action ?? "none", drafts, holdMs: performance.now() - started });
    return result;
  });

  // `/compact`, overflow recovery and Pi's own threshold: agentctx's plan and prompt.
  pi.on("session_before_compact", async (event, ctx) => {
    if (!advisor || advisor.dead) return undefined;
    let answer = await ask(ctx, { op: "compact", reason: event.reason, customInstructions: event.customInstructions });
    if (answer?.action === "summarize") {
      const messages = convertToLlm(ctx.sessionManager.buildSessionProjection().messages);
      answer = await runSummary(ctx, answer, messages, event.signal);
    }
    if (answer?.action !== "commit") return undefined;
    const draft = draftsOf(ctx, [answer.compaction])?.[0];
    if (!draft) return undefined;
    pending = null;
    lastCompaction = event.reason;
    stats({ compact: event.reason, result: "commit" });
    const { summary, firstKeptEntryId, details, usage } = draft;
    return { compaction: { summary, firstKeptEntryId, tokensBefore: event.preparation.tokensBefore, details, usage } };
  });
}
