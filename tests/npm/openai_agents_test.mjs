// A 150-step tool-using OpenAI Agents SDK agent (the real `@openai/agents` runner, Chat Completions
// model) whose session is an AgentctxSession, against a loopback OpenAI-compatible model with a
// 24,000-token window.
//
//     node openai_agents_test.mjs SERVER_BIN      (AGENTCTX_NODE_MODULES: the pinned packages)
// Exit 0 with "ok: ..." when every check holds; 1 with the failures.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { AgentctxClient } from "../../examples/clients/typescript/client.mjs";
import { AgentctxSession, toResponsesInput } from "../../examples/clients/typescript/openai-agents.mjs";
import { AgentctxConversionError } from "../../examples/clients/typescript/ai-sdk.mjs";
import { startServer, startLoopbackModel, fileText } from "./harness.mjs";

const modules = process.env.AGENTCTX_NODE_MODULES;
const load = async (name) => import(pathToFileURL(createRequire(modules + "/").resolve(name)).href);
const agents = await load("@openai/agents");
const { z } = await load("zod");
const OpenAI = (await load("openai")).default;

const WINDOW = 24000;
const PLAN = [50, 50, 50];
const failures = [];
const check = (ok, what) => ok || failures.push(what);

const server = await startServer(process.argv[2], { compaction: { reserveTokens: 200000 - (WINDOW - 4000), keepRecentTokens: 6000 } });
const client = new AgentctxClient({ url: server.url, token: server.token });
const session = new AgentctxSession({ client, cwd: process.cwd() });
const sid = await session.getSessionId();
const model = await startLoopbackModel({
  plan: PLAN,
  window: WINDOW,
  forceOverflowAt: 90,
  expectContext: async () => (await client.getContext(sid, "openai")).wire,
});

// What the server cannot carry is refused by name.
try {
  toResponsesInput([{ type: "computer_call", callId: "c", action: {} }]);
  check(false, "a computer call was not refused");
} catch (err) {
  check(err instanceof AgentctxConversionError && err.field === "input[0].type", `the refusal does not name the item: ${err.message}`);
}

// Every item the server stores comes back as it went in.
{
  const rid = (await client.createSession({})).id;
  const png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
  const sent = [
    { type: "message", role: "user", content: [{ type: "input_text", text: "Look at this." }, { type: "input_image", image: png }] },
    { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Reading it." }] },
    { type: "function_call", callId: "t1", name: "read_file", arguments: "{\"path\":\"a.c\"}", status: "completed" },
    { type: "function_call_result", callId: "t1", name: "read_file", status: "completed", output: { type: "text", text: "int a;" } },
    { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Done." }] },
  ];
  await client.appendWireMessages(rid, "responses", { input: toResponsesInput(sent) });
  const back = await new AgentctxSession({ client, sessionId: rid }).getItems();
  check(JSON.stringify(back) === JSON.stringify(sent), `the round trip changed the items:\n  ${JSON.stringify(back)}\n  ${JSON.stringify(sent)}`);
}

agents.setTracingDisabled(true);
let manual;
const readFile = agents.tool({
  name: "read_file",
  description: "Read a file",
  parameters: z.object({ path: z.string() }),
  execute: async ({ path }) => {
    const n = Number(/\d+/.exec(path)[0]);
      // A manual compaction mid-run, once the context holds enough to compact.
      if (n >= 70 && !manual && (await client.getContext(sid)).estimatedTokens > 12000)
        manual = await session.compact("Keep the file names read.").catch((err) => {
          // Right after a threshold compaction there is nothing to compact yet: the next step tries again.
          if (err.code !== "already_compacted" && err.code !== "nothing_to_compact")
            failures.push(`the manual compaction failed: ${err.message}`);
          return undefined;
        });
    return fileText(n, 1500);
  },
});
const agent = new agents.Agent({
  name: "coder",
  instructions: "You are a careful coding agent.",
  tools: [readFile],
  model: new agents.OpenAIChatCompletionsModel(new OpenAI({ baseURL: model.url, apiKey: "none", maxRetries: 0 }), "loopback"),
});
const outputs = [];
try {
  for (const [i] of PLAN.entries()) {
    const result = await session.run(agents.run, agent, `Task ${i + 1}: read the next ${PLAN[i]} files.`, { maxTurns: 200 });
    outputs.push(result.finalOutput);
  }
} catch (err) {
  failures.push(`the run failed: ${err.stack}\n${server.log().slice(-2000)}`);
}

// popItem and clearSession branch: the log keeps what they remove.
const before = await client.getContext(sid, "responses");
const popped = await session.popItem();
const after = await client.getContext(sid, "responses");
check(popped?.role === "assistant" && after.wire.length === before.wire.length - 1, `popItem: ${JSON.stringify(popped)} ${after.wire.length}/${before.wire.length}`);
check((await client.getEntry(sid, before.leafId)).id === before.leafId, "the popped entry is gone from the log");

const s = model.state;
check(s.toolSteps === 150, `${s.toolSteps} tool steps, not 150`);
check(outputs.length === 3 && outputs.every((o) => /^Task \d done/.test(o)), `final outputs: ${JSON.stringify(outputs)}`);
check(s.problems.length === 0, `the model saw bad requests:\n  ${s.problems.join("\n  ")}`);
check(session.stats.compactions >= 2, `${session.stats.compactions} compactions`);
check(s.overflows >= 1 && session.stats.overflowRetries === s.overflows, `overflows ${s.overflows}, recovered ${session.stats.overflowRetries}`);
check(manual && manual.tokensAfter < manual.tokensBefore, `the manual compaction: ${JSON.stringify(manual)}`);
check(before.messages[0].role === "compactionSummary", `the context starts with ${before.messages[0].role}`);
await session.clearSession();
check((await session.getItems()).length === 0, "clearSession left items");
model.stop();
server.stop();
const figures = `${s.answers} answers, ${s.requests} requests, ${s.toolSteps} tool steps, ${session.stats.compactions} compactions (+1 manual), ${s.overflows} overflows recovered, largest request ${s.maxTokens} tokens`;
const fault = process.env.AGENTCTX_ADAPTER_FAULT;
if (fault) {
  // The adapter was told to lose data: the checks must catch it.
  const caught = failures.length > 0;
  console.log(caught ? `ok: AGENTCTX_ADAPTER_FAULT=${fault} was caught:\n${failures.map((f) => f.slice(0, 600)).join("\n")}` : `FAILED: AGENTCTX_ADAPTER_FAULT=${fault} went unnoticed (${figures})`);
  process.exit(caught ? 0 : 1);
}
if (failures.length) {
  console.log(`FAILED (${figures}):\n${failures.join("\n")}`);
  process.exit(1);
}
console.log(`ok: ${figures}`);
