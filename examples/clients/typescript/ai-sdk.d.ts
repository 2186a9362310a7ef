// Types of the AI SDK adapter (ai-sdk.mjs). Messages are the AI SDK's ModelMessage objects, typed
// structurally here so that the adapter has no dependency on the `ai` package.
import type { AgentctxClient, TurnOutcome } from "./client.js";

type Json = { [key: string]: unknown };
/** An AI SDK ModelMessage (`role` system | user | assistant | tool, `content` string or parts). */
export type ModelMessage = { role: string; content: unknown; [key: string]: unknown };

/** A part the server cannot carry; `code` is "unsupported_part", `field` its path. */
export declare class AgentctxConversionError extends Error {
  readonly code: string;
  readonly field: string;
}

export declare function toAnthropicMessages(messages: ModelMessage[]): Json[];
export declare function fromAnthropicMessages(wire: Json[]): ModelMessage[];
export declare function anthropicUsage(usage: Json | undefined): Json | undefined;

export interface AgentctxStats {
  steps: number;
  turns: number;
  compactions: number;
  overflowRetries: number;
}

export interface AgentctxAiSdk {
  /** Pass as generateText's / streamText's `prepareStep`. */
  prepareStep(options: { stepNumber: number; steps: Json[]; responseMessages: ModelMessage[] }): Promise<{ messages: ModelMessage[] }>;
  /** Appends the last step's messages once the call has ended. */
  finish(result: { steps?: Json[]; response?: { messages: ModelMessage[] }; usage?: Json }): Promise<void>;
  /** Appends `messages`, then calls `generate` with the session's context; recovers one overflow. */
  run<R extends { steps?: Json[]; response?: { messages: ModelMessage[] } }>(
    generate: (options: any) => PromiseLike<R>,
    options: { messages?: ModelMessage[]; [key: string]: unknown },
  ): Promise<R>;
  /** The session's context as ModelMessages. */
  context(): Promise<ModelMessage[]>;
  readonly stats: AgentctxStats;
}

export declare function agentctx(options: {
  client: AgentctxClient;
  sessionId: string;
  onTurn?: (turn: TurnOutcome) => void;
}): AgentctxAiSdk;
