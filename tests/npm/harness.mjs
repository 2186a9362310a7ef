// Shared by the framework tests: starts the agent server binary and a loopback OpenAI-compatible
// model (Chat Completions) that checks every request it receives.
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Starts `bin` on a free port with `settings`; resolves once it listens. */
export async function startServer(bin, settings) {
  const dir = mkdtempSync(join(tmpdir(), "agentctx-npm-"));
  writeFileSync(join(dir, "settings.json"), JSON.stringify(settings));
  const token = "npm-t0ken";
  const child = spawn(bin, ["--port", "0", "--data-dir", join(dir, "data"), "--settings", join(dir, "settings.json")], {
    env: { ...process.env, AGENTCTX_SERVER_TOKEN: token },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const kill = () => child.kill("SIGKILL");
  process.on("exit", kill); // a test that dies early leaves no server behind
  let log = "";
  const port = await new Promise((resolve, reject) => {
    const onData = (d) => {
      log += d;
      const m = /listening on http:\/\/[^:]+:(\d+) with data/.exec(log);
      if (m) resolve(Number(m[1]));
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => reject(new Error(`the server exited (${code}): ${log}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    log: () => log,
    stop: () => {
      process.off("exit", kill);
      child.removeAllListeners("exit");
      child.kill("SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const estimateTokens = (value) => Math.ceil(JSON.stringify(value).length / 4);

const textOf = (content) =>
  content == null ? "" : typeof content === "string" ? content : content.map((p) => p.text ?? p.refusal ?? "").join("");

/**
 * A Chat Completions message list reduced to what both sides must agree on. Consecutive user
 * messages count as one (their text parts in order): a view in a format that alternates roles
 * merges them.
 */
export function normalize(messages) {
  const out = [];
  for (const m of messages) {
    if (m.role === "system" || m.role === "developer") continue;
    const n = { role: m.role, text: textOf(m.content) };
    if (m.tool_calls?.length)
      n.calls = m.tool_calls.map((c) => ({ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments || "{}") }));
    if (m.tool_call_id) n.result = m.tool_call_id;
    if (m.role === "tool") n.text = textOf(m.content);
    const prev = out[out.length - 1];
    if (m.role === "user" && prev?.role === "user") prev.text += n.text;
    else out.push(n);
  }
  return out;
}

/** Every tool call answered by a result before the next assistant message, every result answering a call. */
export function pairingProblems(messages) {
  const problems = [];
  let open = new Set();
  const answered = new Set();
  for (const [i, m] of messages.entries()) {
    if (m.role === "assistant") {
      if (open.size) problems.push(`message ${i}: calls ${[...open].join(",")} have no result`);
      open = new Set((m.tool_calls ?? []).map((c) => c.id));
    } else if (m.role === "tool") {
      if (!open.has(m.tool_call_id)) problems.push(`message ${i}: result ${m.tool_call_id} answers no call`);
      open.delete(m.tool_call_id);
      answered.add(m.tool_call_id);
    } else if (open.size) problems.push(`message ${i}: calls ${[...open].join(",")} have no result before a ${m.role} message`);
  }
  if (open.size) problems.push(`the request ends with calls ${[...open].join(",")} without results`);
  return problems;
}

/**
 * The loopback model. `plan`: tool steps per task (a task ends with a text answer). Each answer
 * calls `read_file` with a text part; a request above `window` tokens, and the request number
 * `forceOverflowAt` once, are refused as a context overflow. `expectContext()` gives the
 * session's context (Chat Completions view) the request must equal.
 */
export async function startLoopbackModel({ plan, window, forceOverflowAt, expectContext }) {
  const state = { requests: 0, answers: 0, toolSteps: 0, overflows: 0, problems: [], produced: new Map(), maxTokens: 0 };
  let task = 0;
  let stepsInTask = 0;
  const problem = (m) => {
    if (state.problems.length < 20) state.problems.push(`request ${state.requests}: ${m}`);
  };

  async function answer(body) {
    state.requests += 1;
    const messages = body.messages ?? [];
    for (const p of pairingProblems(messages.filter((m) => m.role !== "system"))) problem(p);
    const tokens = estimateTokens(messages);
    state.maxTokens = Math.max(state.maxTokens, tokens);
    const expected = normalize(await expectContext());
    const got = normalize(messages);
    if (JSON.stringify(expected) !== JSON.stringify(got))
    {
      const at = got.findIndex((m, i) => JSON.stringify(m) !== JSON.stringify(expected[i]));
      problem(`the request is not the session's context: ${got.length} messages against ${expected.length}; first difference at ${at}: ${JSON.stringify(got[at])?.slice(-300)} against ${JSON.stringify(expected[at])?.slice(-300)} then ${JSON.stringify(expected[at + 1])?.slice(0, 200)}`);
    }
    for (const m of messages)
      for (const c of m.tool_calls ?? []) {
        const mine = state.produced.get(c.id);
        if (mine && mine !== textOf(m.content)) problem(`the assistant text of ${c.id} came back as '${textOf(m.content)}', not '${mine}'`);
      }
    if (tokens > window || state.requests === forceOverflowAt) {
      state.overflows += 1;
      return [400, { error: { message: `This model's maximum context length is ${window} tokens. However, your messages resulted in ${tokens} tokens.`, type: "invalid_request_error", code: "context_length_exceeded" } }];
    }
    state.answers += 1;
    const usage = { prompt_tokens: tokens, completion_tokens: 30, total_tokens: tokens + 30 };
    let message;
    if (stepsInTask < plan[task]) {
      stepsInTask += 1;
      state.toolSteps += 1;
      const id = `call_${state.toolSteps}`;
      const text = `Step ${state.toolSteps}: reading the next file.`;
      state.produced.set(id, text);
      message = { role: "assistant", content: text, tool_calls: [{ id, type: "function", function: { name: "read_file", arguments: JSON.stringify({ path: `src/file_${state.toolSteps}.c` }) } }] };
    } else {
      message = { role: "assistant", content: `Task ${task + 1} done after ${stepsInTask} steps.` };
      task += 1;
      stepsInTask = 0;
    }
    return [200, { id: `chatcmpl-${state.requests}`, object: "chat.completion", created: 0, model: "loopback",
      choices: [{ index: 0, message, finish_reason: message.tool_calls ? "tool_calls" : "stop" }], usage }];
  }

  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", async () => {
      let status = 404;
      let out = { error: { message: `no route ${req.url}` } };
      try {
        if (req.method === "POST" && req.url.endsWith("/chat/completions")) [status, out] = await answer(JSON.parse(raw));
      } catch (err) {
        problem(`the loopback model failed: ${err.stack}`);
        [status, out] = [500, { error: { message: String(err) } }];
      }
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(out));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, state, stop: () => server.close() };
}

/** A file body of about `tokens` tokens. */
export const fileText = (n, tokens) =>
  Array.from({ length: Math.ceil(tokens / 12) }, (_, i) => `/* file ${n} line ${i} */ int v${i} = ${i};`).join("\n");
