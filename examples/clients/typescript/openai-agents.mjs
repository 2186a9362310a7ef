// The OpenAI Agents SDK adapter: `AgentctxSession`, the SDK's Session interface on an agentctx
// session (the server's Responses format), so a run keeps its history in agentctx and compacts.
//
// The runner reads history once (getItems) and writes the run's items at its end (addItems).
// `callModelInputFilter` (passed in the run options, or by `session.run`) appends each step's
// new items before the next model call, reports the turn (which may compact), and hands the
// model the session's context; addItems then skips what the filter already appended.
import { AgentctxError } from "./client.mjs";
import { AgentctxConversionError } from "./ai-sdk.mjs";

const refuse = (field, message) => {
  throw new AgentctxConversionError("unsupported_part", field, message);
};
const injectedFault = () => (typeof process !== "undefined" ? process.env.AGENTCTX_ADAPTER_FAULT : undefined);

// What identifies an item once stored: its Responses form.
const itemKey = (item) => {
  try {
    return JSON.stringify(toResponsesInput([item], { faults: false }));
  } catch {
    return undefined;
  }
};
const wireKey = (w) => itemKey(fromResponsesInput([w])[0]);

function userPart(part, field) {
  if (typeof part === "string") return { type: "input_text", text: part };
  if (part.type === "input_text") return { type: "input_text", text: part.text };
  if (part.type === "input_image") {
    const url = typeof part.image === "string" ? part.image : part.imageUrl ?? part.image_url;
    if (typeof url !== "string" || !url.startsWith("data:")) refuse(field, "an image must be an inline base64 data URL");
    return { type: "input_image", image_url: url };
  }
  refuse(field, `a user part of type '${part.type}' cannot be stored`);
}

function outputText(output, field) {
  if (typeof output === "string") return output;
  if (output?.type === "text") return output.text;
  if (Array.isArray(output))
    return output.map((p, i) => (p.type === "text" || p.type === "input_text" ? p.text : refuse(`${field}[${i}]`, `tool output of type '${p.type}' cannot be stored`))).join("");
  refuse(field, `tool output of type '${output?.type}' cannot be stored`);
}

/** Agents SDK input items as Responses `input` items. Throws AgentctxConversionError. */
export function toResponsesInput(items, { faults = true } = {}) {
  const fault = () => (faults ? injectedFault() : undefined);
  const out = [];
  items.forEach((item, i) => {
    const f = `input[${i}]`;
    const type = item.type ?? "message";
    if (type === "message" && item.role === "user")
      out.push({ type: "message", role: "user", content: typeof item.content === "string" ? item.content : item.content.map((p, j) => userPart(p, `${f}.content[${j}]`)) });
    else if (type === "message" && item.role === "assistant") {
      const parts = typeof item.content === "string" ? [{ type: "output_text", text: item.content }] : item.content;
      const content = parts.map((p, j) => {
        if (p.type === "output_text") return { type: "output_text", text: p.text };
        if (p.type === "refusal") return { type: "refusal", refusal: p.refusal };
        refuse(`${f}.content[${j}]`, `an assistant part of type '${p.type}' cannot be stored`);
      });
      if (fault() === "drop-part" && items[i + 1]?.type === "function_call") return;
      out.push({ type: "message", role: "assistant", content });
    } else if (type === "message") refuse(`${f}.role`, `a '${item.role}' message belongs in the agent's instructions, not the session`);
    else if (type === "function_call") out.push({ type: "function_call", call_id: item.callId, name: item.name, arguments: item.arguments ?? "{}" });
    else if (type === "function_call_result") {
      if (fault() === "drop-tool-result") return;
      out.push({ type: "function_call_output", call_id: item.callId, output: outputText(item.output, `${f}.output`) });
    } else if (type === "reasoning") {
      const summary = (item.content ?? []).map((c) => ({ type: "summary_text", text: c.text }));
      const r = { type: "reasoning", summary };
      if (item.providerData?.encryptedContent) r.encrypted_content = item.providerData.encryptedContent;
      out.push(r);
    } else refuse(`${f}.type`, `an item of type '${type}' cannot be stored`);
  });
  return out;
}

/** The session's Responses context (`GET /context?wire=responses`) as Agents SDK input items. */
export function fromResponsesInput(wire) {
  const names = new Map();
  return wire.map((w) => {
    if (w.type === "function_call") {
      names.set(w.call_id, w.name);
      return { type: "function_call", callId: w.call_id, name: w.name, arguments: w.arguments, status: "completed" };
    }
    if (w.type === "function_call_output") {
      const text = typeof w.output === "string" ? w.output : w.output.map((p) => p.text ?? "").join("");
      return { type: "function_call_result", callId: w.call_id, name: names.get(w.call_id) ?? "unknown", status: "completed", output: { type: "text", text } };
    }
    if (w.role === "assistant") {
      const parts = typeof w.content === "string" ? [{ type: "output_text", text: w.content }] : w.content;
      return { type: "message", role: "assistant", status: "completed", content: parts.map((p) => (p.type === "refusal" ? { type: "refusal", refusal: p.refusal } : { type: "output_text", text: p.text })) };
    }
    if (typeof w.content === "string") return { type: "message", role: "user", content: w.content };
    return {
      type: "message",
      role: "user",
      content: w.content.map((p) => (p.type === "input_image" ? { type: "input_image", image: p.image_url } : { type: "input_text", text: p.text })),
    };
  });
}

function count(map, key, by) {
  if (key !== undefined) map.set(key, (map.get(key) ?? 0) + by);
}

function providerFailure(err) {
  for (let e = err; e; e = e.cause) {
    const status = e.status ?? e.statusCode;
    if (typeof status === "number") return { status, body: JSON.stringify(e.error ?? { message: e.message }) };
    if (e === e.cause) break;
  }
  return undefined;
}

export class AgentctxSession {
  /** @param {{client: import("./client.mjs").AgentctxClient, sessionId?: string, cwd?: string}} options */
  constructor({ client, sessionId, cwd } = {}) {
    if (!client) throw new TypeError("AgentctxSession: client is required");
    this.client = client;
    this.sessionId = sessionId;
    this.cwd = cwd;
    this.historyLength = 0; // items getItems last returned: the run's input starts after them
    this.appended = 0; // items of the current run the filter already appended
    this.appendedKeys = new Map(); // and their keys, with counts
    this.stats = { turns: 0, compactions: 0, overflowRetries: 0 };
    this.acceptsRunContext = true; // the runner then passes its RunContext, whose usage turn-end reports
    this.runContext = undefined;
    this.usageSeen = { requests: 0, inputTokens: 0, outputTokens: 0 };
    this.callModelInputFilter = this.callModelInputFilter.bind(this);
  }

  async getSessionId() {
    if (!this.sessionId) this.sessionId = (await this.client.createSession(this.cwd ? { cwd: this.cwd } : {})).id;
    return this.sessionId;
  }

  async #wire() {
    return (await this.client.getContext(await this.getSessionId(), "responses")).wire ?? [];
  }

  async getItems(limit, runContext) {
    if (runContext) this.#watchUsage(runContext);
    const items = fromResponsesInput(await this.#wire());
    this.historyLength = items.length;
    this.appended = 0;
    this.appendedKeys = new Map();
    return limit === undefined ? items : items.slice(Math.max(0, items.length - limit));
  }

  #watchUsage(runContext) {
    if (runContext === this.runContext) return;
    this.runContext = runContext;
    const u = runContext.usage ?? {};
    this.usageSeen = { requests: u.requests ?? 0, inputTokens: u.inputTokens ?? 0, outputTokens: u.outputTokens ?? 0 };
  }

  // The usage of the model requests since the last report, as the Responses usage object.
  #newUsage() {
    const u = this.runContext?.usage;
    if (!u || (u.requests ?? 0) <= this.usageSeen.requests) return undefined;
    const requests = u.requests - this.usageSeen.requests;
    const input = Math.max(0, (u.inputTokens - this.usageSeen.inputTokens) / requests);
    const output = Math.max(0, (u.outputTokens - this.usageSeen.outputTokens) / requests);
    this.usageSeen = { requests: u.requests, inputTokens: u.inputTokens, outputTokens: u.outputTokens };
    return { input_tokens: Math.round(input), output_tokens: Math.round(output), total_tokens: Math.round(input + output) };
  }

  async #append(items, usage) {
    if (!items.length) return;
    const id = await this.getSessionId();
    const body = { input: toResponsesInput(items) };
    if (usage) body.usage = usage;
    await this.client.appendWireMessages(id, "responses", body);
  }

  /**
   * The run's items. The runner hands over what the model saw (which the filter already appended,
   * or the session's context gave it) and the run's last output: only items that are neither are
   * appended.
   */
  async addItems(items, runContext) {
    if (runContext) this.#watchUsage(runContext);
    const known = new Map(this.appendedKeys);
    if (items.length) for (const w of await this.#wire()) count(known, wireKey(w), 1);
    const fresh = items.filter((item) => {
      const key = itemKey(item);
      if (!key || !(known.get(key) > 0)) return true;
      count(known, key, -1);
      count(this.appendedKeys, key, -1);
      return false;
    });
    const usage = this.#newUsage();
    await this.#append(fresh, usage);
    if (fresh.some((i) => i.role === "assistant")) await this.#turnEnd(usage);
  }

  async #turnEnd(usage) {
    const body = { format: "responses" };
    if (usage) body.usage = usage;
    const turn = await this.client.turnEnd(await this.getSessionId(), body);
    this.stats.turns += 1;
    if (turn.compacted) this.stats.compactions += 1;
    return turn;
  }

  /** The run option that appends each step's items and gives the model the session's context. */
  async callModelInputFilter({ modelData }) {
    const fresh = modelData.input.slice(this.historyLength + this.appended);
    const usage = fresh.length ? this.#newUsage() : undefined;
    await this.#append(fresh, usage);
    this.appended += fresh.length;
    for (const item of fresh) count(this.appendedKeys, itemKey(item), 1);
    if (fresh.some((i) => i.role === "assistant" || i.type === "function_call")) await this.#turnEnd(usage);
    return { ...modelData, input: fromResponsesInput(await this.#wire()) };
  }

  /** Removes the last item as a branch: the log keeps it, the context no longer shows it. */
  async popItem() {
    const wire = await this.#wire();
    if (!wire.length) return undefined;
    const last = fromResponsesInput(wire).at(-1);
    await this.client.replaceWireMessages(await this.getSessionId(), "responses", { input: wire.slice(0, -1) });
    return last;
  }

  /** An empty context as a branch to a new root; after a compaction (whose summary cannot be branched away) a new server session. */
  async clearSession() {
    if (!this.sessionId) return;
    try {
      await this.client.replaceWireMessages(this.sessionId, "responses", { input: [] });
    } catch (err) {
      if (!(err instanceof AgentctxError) || err.code !== "summarized_history") throw err;
      this.sessionId = undefined;
      await this.getSessionId();
    }
    this.historyLength = 0;
    this.appended = 0;
    this.appendedKeys = new Map();
  }

  /** Manual compaction (`POST /compact`). */
  async compact(instructions) {
    return this.client.compact(await this.getSessionId(), instructions ? { instructions } : {});
  }

  /** `run(agent, input, {session, callModelInputFilter})`, retried once from the compacted context after an overflow. */
  async run(runFn, agent, input, options = {}) {
    const opts = { ...options, session: this, callModelInputFilter: this.callModelInputFilter };
    try {
      return await runFn(agent, input, opts);
    } catch (err) {
      if (err instanceof AgentctxError || err instanceof AgentctxConversionError) throw err;
      const failure = providerFailure(err);
      if (!failure) throw err;
      const outcome = await this.client.overflow(await this.getSessionId(), failure);
      if (!outcome.retry) throw err;
      this.stats.overflowRetries += 1;
      if (outcome.compacted) this.stats.compactions += 1;
      return await runFn(agent, [], opts);
    }
  }
}
