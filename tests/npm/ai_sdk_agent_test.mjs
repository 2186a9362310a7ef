// A 150-step tool-using AI SDK agent (generateText, the real `ai` package) whose history lives in
// the agent server, against a loopback OpenAI-compatible model with a 24,000-token window.
//
//     node ai_sdk_agent_test.mjs SERVER_BIN      (AGENTCTX_NODE_MODULES: the pinned packages)
// Exit 0 with "ok: ..." when every check holds; 1 with the failures.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { AgentctxClient, AgentctxError } from "../../examples/clients/typescript/client.mjs";
import { agentctx, AgentctxConversionError, toAnthropicMessages, fromAnthropicMessages } from "../../examples/clients/typescript/ai-sdk.mjs";
import { startServer, startLoopbackModel, fileText } from "./harness.mjs";

const modules = process.env.AGENTCTX_NODE_MODULES;
const load = async (name) => import(pathToFileURL(createRequire(modules + "/").resolve(name)).href);
const { generateText, tool, isStepCount, stepCountIs } = await load("ai");
const { createOpenAICompatible } = await load("@ai-sdk/openai-compatible");
const { z } = await load("zod");

const WINDOW = 24000;
const PLAN = [50, 50, 50];
const failures = [];
const check = (ok, what) => ok || failures.push(what);

const server = await startServer(process.argv[2], { compaction: { reserveTokens: 200000 - (WINDOW - 4000), keepRecentTokens: 6000 } });
const client = new AgentctxClient({ url: server.url, token: server.token });
const sid = (await client.createSession({ cwd: process.cwd() })).id;
const model = await startLoopbackModel({
  plan: PLAN,
  window: WINDOW,
  forceOverflowAt: 90,
  expectContext: async () => (await client.getContext(sid, "openai")).wire,
});

// The client keeps the server's error code and field.
try {
  await client.appendWireMessages(sid, "openai", { messages: [{ role: "tool", tool_call_id: "nope", content: "x" }] });
  check(false, "an unpaired tool result was accepted");
} catch (err) {
  check(err instanceof AgentctxError && err.code === "unpaired_tool_call" && err.field?.startsWith("messages[0]"),
    `the client lost the error's code or field: ${err.code} ${err.field}`);
}
// What the server cannot carry is refused by name.
try {
  toAnthropicMessages([{ role: "user", content: [{ type: "file", data: "JVBERi0=", mediaType: "application/pdf" }] }]);
  check(false, "a PDF file part was not refused");
} catch (err) {
  check(err instanceof AgentctxConversionError && err.code === "unsupported_part" && err.field === "messages[0].content[0]",
    `the refusal does not name the part: ${err.message}`);
}

// Every part the server stores comes back as it went in (reasoning is stored, never sent back).
{
  const rid = (await client.createSession({})).id;
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
  const sent = [
    { role: "user", content: [{ type: "text", text: "Look at this." }, { type: "image", image: png, mediaType: "image/png" }] },
    { role: "assistant", content: [{ type: "reasoning", text: "The image is tiny." }, { type: "text", text: "Reading two files." },
      { type: "tool-call", toolCallId: "t1", toolName: "read_file", input: { path: "a.c" } },
      { type: "tool-call", toolCallId: "t2", toolName: "read_file", input: { path: "b.c" } }] },
    { role: "tool", content: [
      { type: "tool-result", toolCallId: "t1", toolName: "read_file", output: { type: "text", value: "int a;" } },
      { type: "tool-result", toolCallId: "t2", toolName: "read_file", output: { type: "error-text", value: "no such file" } }] },
    { role: "assistant", content: [{ type: "text", text: "b.c is missing." }] },
  ];
  await client.appendWireMessages(rid, "anthropic", { messages: toAnthropicMessages(sent) });
  const back = fromAnthropicMessages((await client.getContext(rid, "anthropic")).wire);
  const expected = structuredClone(sent);
  expected[1].content.shift(); // the reasoning part: stored, not in the view
  check(JSON.stringify(back) === JSON.stringify(expected), `the round trip changed the messages:\n  ${JSON.stringify(back)}\n  ${JSON.stringify(expected)}`);
  const stored = await client.getEntry(rid, (await client.getContext(rid)).messages[1].entryId);
  check(stored.message.content[0].type === "thinking" && stored.message.content[0].thinking === "The image is tiny.", `the reasoning was not stored: ${JSON.stringify(stored.message.content[0])}`);
}

const provider = createOpenAICompatible({ name: "loopback", baseURL: model.url, apiKey: "none" });
let manual;
const tools = {
  read_file: tool({
    description: "Read a file",
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => {
      const n = Number(/\d+/.exec(path)[0]);
      // A manual compaction mid-run, once the context holds enough to compact.
      if (n >= 70 && !manual && (await client.getContext(sid)).estimatedTokens > 12000)
        manual = await client.compact(sid, { instructions: "Keep the file names read." }).catch((err) => {
          // Right after a threshold compaction there is nothing to compact yet: the next step tries again.
          if (err.code !== "already_compacted" && err.code !== "nothing_to_compact")
            failures.push(`the manual compaction failed: ${err.message}`);
          return undefined;
        });
      return fileText(n, 1500);
    },
  }),
};
const session = agentctx({ client, sessionId: sid });
const stop = (isStepCount ?? stepCountIs)(1000);
try {
  for (const [i] of PLAN.entries())
    await session.run(generateText, {
      model: provider.chatModel("loopback"),
      instructions: "You are a careful coding agent.",
      tools,
      maxRetries: 0,
      stopWhen: stop,
      messages: [{ role: "user", content: `Task ${i + 1}: read the next ${PLAN[i]} files.` }],
    });
} catch (err) {
  failures.push(`the run failed: ${err.stack}\n${server.log().slice(-2000)}`);
}

const s = model.state;
const context = await client.getContext(sid, "openai");
check(s.toolSteps === 150, `${s.toolSteps} tool steps, not 150`);
check(s.problems.length === 0, `the model saw bad requests:\n  ${s.problems.join("\n  ")}`);
check(session.stats.compactions >= 2, `${session.stats.compactions} compactions`);
check(s.overflows >= 1 && session.stats.overflowRetries === s.overflows, `overflows ${s.overflows}, recovered ${session.stats.overflowRetries}`);
check(manual && manual.tokensAfter < manual.tokensBefore, `the manual compaction: ${JSON.stringify(manual)}`);
check(context.messages[0].role === "compactionSummary", `the context starts with ${context.messages[0].role}`);
check(s.maxTokens <= WINDOW || s.overflows > 0, `a request of ${s.maxTokens} tokens`);
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
