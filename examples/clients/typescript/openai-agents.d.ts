// Types of the OpenAI Agents SDK adapter (openai-agents.mjs). Items are the SDK's AgentInputItem
// objects, typed structurally here so that the adapter has no dependency on `@openai/agents`.
import type { AgentctxClient, CompactResult } from "./client.js";

type Json = { [key: string]: unknown };
/** An Agents SDK AgentInputItem. */
export type AgentInputItem = { type?: string; role?: string; [key: string]: unknown };

export declare function toResponsesInput(items: AgentInputItem[]): Json[];
export declare function fromResponsesInput(wire: Json[]): AgentInputItem[];

/** The SDK's Session interface on an agentctx session (Responses format). */
export declare class AgentctxSession {
  constructor(options: { client: AgentctxClient; sessionId?: string; cwd?: string });
  readonly client: AgentctxClient;
  sessionId: string | undefined;
  readonly stats: { turns: number; compactions: number; overflowRetries: number };
  getSessionId(): Promise<string>;
  getItems(limit?: number): Promise<AgentInputItem[]>;
  addItems(items: AgentInputItem[]): Promise<void>;
  popItem(): Promise<AgentInputItem | undefined>;
  clearSession(): Promise<void>;
  compact(instructions?: string): Promise<CompactResult>;
  /** Pass in the run options with `session` (session.run does both). */
  callModelInputFilter(args: { modelData: { input: AgentInputItem[]; instructions?: string } }): Promise<{ input: AgentInputItem[]; instructions?: string }>;
  /** `runFn(agent, input, { ...options, session, callModelInputFilter })`, retried once after an overflow. */
  run<R>(runFn: (agent: any, input: any, options: any) => Promise<R>, agent: unknown, input: string | AgentInputItem[], options?: Json): Promise<R>;
}
