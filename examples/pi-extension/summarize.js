// One summary call through Pi's model registry (the user's model and credentials): the
// conversation as Pi renders it, then the advisor's checkpoint instructions as one user message.
export function tailMessages(messages, instructions) {
  return [...messages, { role: "user", content: [{ type: "text", text: instructions }], timestamp: Date.now() }];
}

/** Resolves to { text, usage } or throws with the reason the summary cannot be used. */
export async function summarize(ctx, pi, request, messages, signal) {
  const model = ctx.model;
  if (!model) throw new Error("no active model");
  // Pi 1.6 carries its prompt and tool set in the transcript's system messages: the request is
  // then the conversation's own, byte for byte. A transcript without one gets them as Pi's
  // request options would carry them.
  const context = { messages: tailMessages(messages, request.instructions) };
  if (!messages.some((m) => m.role === "system")) {
    const active = new Set(pi.getActiveTools());
    context.systemPrompt = ctx.getSystemPrompt();
    context.tools = pi
      .getAllTools()
      .filter((t) => active.has(t.name))
      .map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
  }
  const options = { maxTokens: request.maxOutputTokens, signal, sessionId: ctx.sessionManager.getSessionId() };
  const reply = await ctx.modelRegistry.complete(model, context, options);
  if (reply.stopReason === "error" || reply.stopReason === "aborted")
    throw new Error(reply.errorMessage ?? `summary ${reply.stopReason}`);
  if (reply.stopReason === "length") throw new Error("the summary hit the output cap");
  if (reply.content.some((b) => b.type === "toolCall")) throw new Error("the summary called a tool");
  const text = reply.content
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("\n");
  return { text, usage: reply.usage ?? null };
}
