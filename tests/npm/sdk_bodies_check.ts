// The request bodies agentctx builds for the newest compaction forms, checked against the SDK types by hand:
//   npm install openai@7.60.0 @anthropic-ai/sdk@1.17.0 typescript@5.9.3   (in a scratch folder), then
//   tsc --strict --noEmit --target es2022 --module nodenext --moduleResolution nodenext --skipLibCheck sdk_bodies_check.ts
// Shapes mirror tests/providers/inline_compaction_test.cpp, input_transformations_test.cpp and native_test.cpp.
import type { ResponseCreateParamsNonStreaming, Response, ResponseInputItem } from 'openai/resources/responses/responses';
import type { MessageCreateParamsNonStreaming, BetaMessage, BetaRawMessageDeltaEvent, BetaRawMessageStartEvent } from '@anthropic-ai/sdk/resources/beta/messages/messages';

// OpenAI inline compaction: build_native_request with native.openai "inline".
const inlineRequest: ResponseCreateParamsNonStreaming = {
  model: 'gpt-loop',
  input: [
    { role: 'user', content: [{ type: 'input_text', text: 'fix the build' }] },
    { type: 'function_call', call_id: 'call_1', name: 'bash', arguments: '{"command":"ls"}' },
    { type: 'function_call_output', call_id: 'call_1', output: 'Makefile src' },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Found it.' }] } as ResponseInputItem,
    { type: 'compaction', id: 'cmp_item_1', encrypted_content: 'ENC' },
    { type: 'compaction_trigger' },
  ],
  instructions: 'SYS',
  context_management: [{ type: 'compaction', compact_threshold: 150000 }],
  store: false,
};

// The loop's own request with the view's contextManagement (GET /context?wire=responses).
const loopRequest: ResponseCreateParamsNonStreaming = {
  model: 'gpt-loop',
  input: [{ role: 'user', content: [{ type: 'input_text', text: 'go on' }] }],
  context_management: [{ type: 'compaction' }],
};

// A reply's input_transformations as agentctx reads them.
const removed: NonNullable<Response['input_transformations']> = [
  { id: 'rs_a1', action: 'removed', reason: 'prefix_mismatch', type: 'reasoning' },
  { id: 'rs_b2', action: 'removed', reason: 'turn_boundary', type: 'reasoning' },
];

// Anthropic native compaction with the loop's thinking and drop_block.
const anthropicNative: MessageCreateParamsNonStreaming = {
  model: 'claude-loop',
  max_tokens: 12096,
  system: 'SYS',
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'fix the build' }] },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'read', input: { path: 'a' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'text', text: 'x' }] }] },
  ],
  tools: [{ name: 'read', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } }],
  tool_choice: { type: 'auto' },
  thinking: { type: 'enabled', budget_tokens: 8000, block_binding: { prefix_mismatch_behavior: 'drop_block' } },
  context_management: { edits: [{ type: 'compact_20260112', trigger: { type: 'input_tokens', value: 50000 }, pause_after_compaction: true, instructions: null }] },
  metadata: { user_id: 'r1' },
  betas: ['compact-2026-01-12', 'thinking-binding-controls-2026-08-01'],
};

const dropped: NonNullable<BetaMessage['input_transformations']> = [
  { type: 'thinking_dropped', reason: 'prefix_binding_mismatch', path: 'messages.4.content.0' },
  { type: 'thinking_mismatch_allowed', reason: 'prefix_binding_mismatch', path: 'messages.6.content.0' },
];
const startList: BetaRawMessageStartEvent['message']['input_transformations'] = dropped;
const deltaList: BetaRawMessageDeltaEvent['input_transformations'] = dropped;

export { inlineRequest, loopRequest, removed, anthropicNative, startList, deltaList };
