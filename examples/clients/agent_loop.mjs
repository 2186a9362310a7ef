// A small agent loop against the agentctx agent server: Node 18+ with no dependencies.
//
// The agent keeps its conversation in OpenAI Chat Completions format; the server stores it,
// compacts it, and hands the context back in the same format. The model is scripted: two
// parallel tool calls, a context overflow the server recovers from, and a turn whose usage
// crosses the compaction threshold (the same script as agent_loop.py).
//
//     node agent_loop.mjs --url http://127.0.0.1:8080 [--token TOKEN]
//
// The token may also come from AGENTCTX_SERVER_TOKEN. The last line printed is a JSON report.

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const url = option("--url", "").replace(/\/$/, "");
const token = option("--token", process.env.AGENTCTX_SERVER_TOKEN ?? "");
if (!url) {
  console.error("usage: node agent_loop.mjs --url URL [--token TOKEN]");
  process.exit(2);
}

// The agent server's HTTP API: JSON in, JSON out, failures thrown with their status and body.
async function call(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

const toolCall = (id, name, args) => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } });

// One Chat Completions response: its message, finish_reason and usage.
function reply({ content = null, calls, promptTokens, completionTokens = 40 }) {
  const message = { role: "assistant", content };
  if (calls) message.tool_calls = calls;
  return {
    message,
    finish_reason: calls ? "tool_calls" : "stop",
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
  };
}

const OVERFLOW = {
  error: {
    status: 400,
    body: JSON.stringify({
      error: {
        message: "This model's maximum context length is 4000 tokens. However, your messages resulted in 4400 tokens.",
        type: "invalid_request_error",
        code: "context_length_exceeded",
      },
    }),
  },
};

// What the scripted model answers, call after call; `expect` is the role the request must end with.
const SCRIPT = [
  ["user", reply({ calls: [toolCall("call_1", "read_file", { path: "Makefile" }), toolCall("call_2", "run", { command: "make" })], promptTokens: 1200 })],
  ["tool", reply({ content: "The link line lacks -lm; added it to LDLIBS.", promptTokens: 1800 })],
  ["user", reply({ calls: [toolCall("call_3", "run", { command: "make test" })], promptTokens: 2600 })],
  ["tool", OVERFLOW],
  ["tool", reply({ content: "All 12 tests pass.", promptTokens: 900 })],
  ["user", reply({ calls: [toolCall("call_4", "read_file", { path: "CHANGES" })], promptTokens: 3100 })],
  ["tool", reply({ content: "Fixed the link line (-lm); the build and all 12 tests pass.", promptTokens: 4200 })],
];

const TASKS = ["The build fails; find out why and fix it.", "Run the tests.", "Summarize what you did."];

function runTool(name, args) {
  if (name === "read_file" && args.path === "CHANGES")
    return Array.from({ length: 80 }, (_, i) => `- change ${i}: kept the build green\n`).join("");
  if (name === "read_file") return "CC=cc\nCFLAGS=-O2 -Wall\n" + "# generated rules\n".repeat(120) + "app: main.o util.o\n\t$(CC) -o $@ $^\n";
  if (args.command === "make") return "cc -o app main.o util.o\n" + "util.o: undefined reference to `sqrt'\n".repeat(60) + "make: *** [app] Error 1";
  if (name === "run") return "error: tool failed: make test needs the build first";
  return `error: unknown tool ${name}`;
}

let step = 0;
function complete(messages) {
  const [expect, answer] = SCRIPT[step++];
  const last = messages[messages.length - 1].role;
  if (last !== expect) throw new Error(`step ${step}: the context ends with ${last}, not ${expect}`);
  return answer;
}

async function runTask(sid, task, stats) {
  stats.entries += (await call("POST", `/v1/sessions/${sid}/messages?format=openai`, { messages: [{ role: "user", content: task }] })).ids.length;
  let retried = false;
  let answer;
  for (;;) {
    const context = (await call("GET", `/v1/sessions/${sid}/context?wire=openai`)).wire;
    answer = complete(context);
    if (answer.error) {
      // The provider refused the request: the server decides whether it was an overflow.
      const outcome = await call("POST", `/v1/sessions/${sid}/overflow`, answer.error);
      if (!outcome.retry || retried) throw new Error(`the model call failed and is not retried: ${JSON.stringify(outcome)}`);
      retried = true;
      stats.overflowRetries += 1;
      stats.compactions += outcome.compacted ? 1 : 0;
      continue;
    }
    const batch = [answer.message];
    for (const c of answer.message.tool_calls ?? [])
      batch.push({ role: "tool", tool_call_id: c.id, content: runTool(c.function.name, JSON.parse(c.function.arguments)) });
    const posted = await call("POST", `/v1/sessions/${sid}/messages?format=openai`, {
      messages: batch,
      usage: answer.usage,
      stop_reason: answer.finish_reason,
    });
    stats.entries += posted.ids.length;
    if (batch.length === 1) break;
  }
  const turn = await call("POST", `/v1/sessions/${sid}/turn-end`, { format: "openai", usage: answer.usage });
  stats.compactions += turn.compacted ? 1 : 0;
  console.log(`turn done: tokens=${turn.tokens} threshold=${turn.threshold} compacted=${turn.compacted}`, turn.message ?? "");
}

const sid = (await call("POST", "/v1/sessions", { cwd: process.cwd() })).id;
const stats = { session: sid, entries: 0, compactions: 0, overflowRetries: 0 };
for (const task of TASKS) await runTask(sid, task, stats);
const context = await call("GET", `/v1/sessions/${sid}/context?wire=openai`);
stats.contextMessages = context.wire.length;
stats.startsWithSummary = context.messages[0].role === "compactionSummary";
stats.lastMessage = context.wire[context.wire.length - 1];
console.log(JSON.stringify(stats));
