// The AI SDK adapter: a generateText / streamText agent whose history lives in an agentctx session.
//
// Each step's messages are converted to the server's Anthropic format and appended as one batch
// with the step's usage, the turn is reported (`turn-end`, which may compact), and the next step
// gets the session's context back as ModelMessages through `prepareStep`. A context-overflow
// error is handed to `overflow` and the call is retried once from the compacted context.
import { AgentctxError } from "./client.mjs";

/** A ModelMessage part the server cannot carry: refused, never dropped. */
export class AgentctxConversionError extends Error {
  constructor(code, field, message) {
    super(`${field}: ${message}`);
    this.name = "AgentctxConversionError";
    this.code = code;
    this.field = field;
  }
}

const refuse = (field, message) => {
  throw new AgentctxConversionError("unsupported_part", field, message);
};

// Test hook only: AGENTCTX_ADAPTER_FAULT=drop-part|drop-tool-result makes the conversion lose data,
// so the framework tests can show that they catch it.
const fault = () => (typeof process !== "undefined" ? process.env.AGENTCTX_ADAPTER_FAULT : undefined);

function base64Of(data, field) {
  if (typeof data === "string") {
    const m = /^data:([^;,]+);base64,(.*)$/s.exec(data);
    if (m) return { data: m[2], mediaType: m[1] };
    if (/^[A-Za-z0-9+/=\s]+$/.test(data)) return { data };
    refuse(field, "an image must be inline base64 data (URLs are never fetched)");
  }
  if (data instanceof Uint8Array) return { data: Buffer.from(data).toString("base64") };
  if (data instanceof ArrayBuffer) return { data: Buffer.from(new Uint8Array(data)).toString("base64") };
  if (data && typeof data === "object" && data.type === "data") return base64Of(data.data, field);
  refuse(field, "an image must be inline base64 data (URLs are never fetched)");
}

function imageBlock(data, mediaType, field) {
  const b = base64Of(data, field);
  const type = mediaType ?? b.mediaType;
  if (!type || !type.startsWith("image/")) refuse(field, `only images can be stored, not ${type ?? "untyped data"}`);
  return { type: "image", source: { type: "base64", media_type: type, data: b.data } };
}

function userBlocks(content, field) {
  if (typeof content === "string") return content;
  return content.map((part, i) => {
    const f = `${field}[${i}]`;
    if (part.type === "text") return { type: "text", text: part.text };
    if (part.type === "image") return imageBlock(part.image, part.mediaType, f);
    if (part.type === "file") return imageBlock(part.data, part.mediaType, f);
    refuse(f, `a user part of type '${part.type}' cannot be stored`);
  });
}

function assistantBlocks(content, field) {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  const blocks = [];
  content.forEach((part, i) => {
    const f = `${field}[${i}]`;
    if (part.type === "text") blocks.push({ type: "text", text: part.text });
    else if (part.type === "reasoning")
      blocks.push({ type: "thinking", thinking: part.text, signature: part.providerOptions?.anthropic?.signature ?? "" });
    else if (part.type === "tool-call") {
      if (part.providerExecuted) refuse(f, "a provider-executed tool call cannot be stored");
      blocks.push({ type: "tool_use", id: part.toolCallId, name: part.toolName, input: part.input ?? {} });
    } else refuse(f, `an assistant part of type '${part.type}' cannot be stored`);
  });
  if (fault() === "drop-part" && blocks.length > 1) blocks.shift();
  return blocks;
}

function toolResultBlock(part, field) {
  const out = part.output;
  const block = { type: "tool_result", tool_use_id: part.toolCallId, is_error: false };
  if (out.type === "text") block.content = out.value;
  else if (out.type === "json") block.content = JSON.stringify(out.value);
  else if (out.type === "error-text") Object.assign(block, { content: out.value, is_error: true });
  else if (out.type === "error-json") Object.assign(block, { content: JSON.stringify(out.value), is_error: true });
  else if (out.type === "content")
    block.content = out.value.map((c, i) => {
      if (c.type === "text") return { type: "text", text: c.text };
      refuse(`${field}.output.value[${i}]`, `tool output content of type '${c.type}' cannot be stored`);
    });
  else refuse(`${field}.output`, `a tool output of type '${out.type}' cannot be stored`);
  return block;
}

/** ModelMessages to Anthropic-format messages (the request body's `messages`). Throws AgentctxConversionError. */
export function toAnthropicMessages(messages) {
  const out = [];
  messages.forEach((m, i) => {
    const field = `messages[${i}]`;
    if (m.role === "user") out.push({ role: "user", content: userBlocks(m.content, `${field}.content`) });
    else if (m.role === "assistant") out.push({ role: "assistant", content: assistantBlocks(m.content, `${field}.content`) });
    else if (m.role === "tool") {
      let blocks = m.content.map((part, j) => {
        if (part.type !== "tool-result") refuse(`${field}.content[${j}]`, `a tool part of type '${part.type}' cannot be stored`);
        return toolResultBlock(part, `${field}.content[${j}]`);
      });
      if (fault() === "drop-tool-result") blocks = blocks.slice(1);
      if (blocks.length) out.push({ role: "user", content: blocks });
    } else refuse(`${field}.role`, `a '${m.role}' message belongs in the call's instructions, not the session`);
  });
  return out;
}

/** The session's Anthropic-format context (`GET /context?wire=anthropic`) as ModelMessages. */
export function fromAnthropicMessages(wire) {
  const names = new Map();
  const out = [];
  for (const m of wire) {
    if (m.role === "assistant") {
      const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
      const content = [];
      for (const b of blocks) {
        if (b.type === "text") content.push({ type: "text", text: b.text });
        else if (b.type === "thinking") content.push({ type: "reasoning", text: b.thinking });
        else if (b.type === "tool_use") {
          names.set(b.id, b.name);
          content.push({ type: "tool-call", toolCallId: b.id, toolName: b.name, input: b.input });
        }
      }
      out.push({ role: "assistant", content });
      continue;
    }
    if (typeof m.content === "string") {
      out.push({ role: "user", content: m.content });
      continue;
    }
    const results = m.content.filter((b) => b.type === "tool_result");
    const rest = m.content.filter((b) => b.type !== "tool_result");
    if (results.length)
      out.push({
        role: "tool",
        content: results.map((b) => {
          const text = typeof b.content === "string" ? b.content : (b.content ?? []).map((c) => c.text ?? "").join("");
          return {
            type: "tool-result",
            toolCallId: b.tool_use_id,
            toolName: names.get(b.tool_use_id) ?? "unknown",
            output: { type: b.is_error ? "error-text" : "text", value: text },
          };
        }),
      });
    if (rest.length)
      out.push({
        role: "user",
        content: rest.map((b) =>
          b.type === "image" ? { type: "image", image: b.source.data, mediaType: b.source.media_type } : { type: "text", text: b.text },
        ),
      });
  }
  return out;
}

/** An AI SDK usage object as the Anthropic usage the server reads. */
export function anthropicUsage(usage) {
  if (!usage) return undefined;
  const read = usage.inputTokenDetails?.cacheReadTokens ?? usage.cachedInputTokens ?? 0;
  const write = usage.inputTokenDetails?.cacheWriteTokens ?? 0;
  return {
    input_tokens: Math.max(0, (usage.inputTokens ?? 0) - read - write),
    output_tokens: usage.outputTokens ?? 0,
    cache_read_input_tokens: read,
    cache_creation_input_tokens: write,
  };
}

// The failed call's HTTP status and body, when the error came from the provider's API.
function providerFailure(err) {
  for (let e = err; e; e = e.lastError ?? e.cause) {
    if (typeof e.statusCode === "number") return { status: e.statusCode, body: String(e.responseBody ?? e.message ?? "") };
    if (e === e.cause) break;
  }
  return undefined;
}

/**
 * An agentctx session for AI SDK calls. `run(generateText, options)` is the whole loop;
 * `prepareStep` and `finish(result)` are its parts for callers that drive generateText themselves.
 */
export function agentctx({ client, sessionId, onTurn } = {}) {
  if (!client || !sessionId) throw new TypeError("agentctx: client and sessionId are required");
  let posted = 0; // response messages of the current call already in the session
  const stats = { steps: 0, turns: 0, compactions: 0, overflowRetries: 0 };

  async function append(messages, usage, stopReason) {
    if (!messages.length) return;
    const body = { messages: toAnthropicMessages(messages) };
    if (usage) body.usage = anthropicUsage(usage);
    if (stopReason) body.stop_reason = stopReason;
    await client.appendWireMessages(sessionId, "anthropic", body);
    const turn = await client.turnEnd(sessionId, { format: "anthropic", usage: body.usage ?? {} });
    stats.turns += 1;
    if (turn.compacted) stats.compactions += 1;
    onTurn?.(turn);
  }

  const context = async () => fromAnthropicMessages((await client.getContext(sessionId, "anthropic")).wire ?? []);

  async function prepareStep({ stepNumber, steps, responseMessages }) {
    if (stepNumber > 0) {
      const last = steps[steps.length - 1];
      await append(responseMessages.slice(posted), last?.usage, last?.finishReason === "tool-calls" ? "tool_use" : undefined);
      posted = responseMessages.length;
    }
    stats.steps += 1;
    return { messages: await context() };
  }

  // The last step's messages: prepareStep appends a step's messages only when another step follows.
  // streamText's fields are promises that settle when its stream has been read.
  async function finish(result) {
    const steps = await result.steps;
    const last = steps?.at(-1);
    const response = await result.response;
    await append(last?.response?.messages ?? response?.messages ?? [], last?.usage ?? (await result.usage));
    posted = 0;
  }

  /** Appends `messages` (the new user turn), then runs `generate` until it ends, recovering one overflow per call. */
  async function run(generate, { messages = [], ...options }) {
    if (messages.length) await client.appendWireMessages(sessionId, "anthropic", { messages: toAnthropicMessages(messages) });
    for (let retried = false; ; ) {
      posted = 0;
      try {
        const result = await generate({ ...options, messages: await context(), prepareStep });
        await finish(result);
        return result;
      } catch (err) {
        if (err instanceof AgentctxError || err instanceof AgentctxConversionError) throw err;
        const failure = providerFailure(err);
        if (!failure || retried) throw err;
        const outcome = await client.overflow(sessionId, failure);
        if (!outcome.retry) throw err;
        retried = true;
        stats.overflowRetries += 1;
        if (outcome.compacted) stats.compactions += 1;
      }
    }
  }

  return { prepareStep, finish, run, context, stats };
}
