// Types of the agentctx agent server's HTTP API, one interface per schema of docs/openapi.json
// (the schema `Error` is `ErrorBody` here). check_client.mjs compares them with the document.

export type WireFormat = "openai" | "responses" | "anthropic";
export type CompactionReason = "threshold" | "overflow" | "manual" | "model_change";
type JsonObject = { [key: string]: unknown };

export interface BudgetShortfall {
  inputTokens: number;
  allowance: number;
  requiredTokens: number;
  boundary: { entryId: string; position: number };
  required: { entryId: string; position: number };
}
export interface ErrorBody {
  error: { code: string; message: string; field?: string; budget?: BudgetShortfall };
}
export interface CreateSessionRequest {
  cwd?: string;
  settings?: { jobs?: JsonObject };
}
export interface Created {
  id: string;
  compaction?: { entryId: string; reason: CompactionReason; tokensBefore: number; tokensAfter: number };
}
export interface EntryRequest {
  type: string;
  [key: string]: unknown;
}
export interface CompactRequest {
  instructions?: string;
}
export interface CompactResult {
  entryId: string;
  firstKeptEntryId: string;
  tokensBefore: number;
  tokensAfter: number;
  summary: string;
}
export interface ContextMessage {
  role: string;
  entryId: string;
  tokens: number;
}
export interface Context {
  leafId: string | null;
  estimatedTokens: number;
  messages: ContextMessage[];
  native?: { provider: "anthropic" | "openai"; entryId: string };
  wire?: JsonObject[];
  /** With `?wire=responses` under OpenAI inline compaction: the request's `context_management`. */
  contextManagement?: JsonObject[];
}
export interface WireMessagesRequest {
  messages?: JsonObject[];
  input?: JsonObject[];
  usage?: JsonObject;
  stop_reason?: string;
  provider?: string;
  model?: string;
  /** The reply's `input_transformations` as the provider returned them (responses, anthropic). */
  input_transformations?: JsonObject[];
  /** POST with a reply's compaction item: the view's `leafId` the loop's request was built from. */
  coveredLeafId?: string;
}
export interface WireMessagesResult {
  ids: string[];
  /** POST with a Responses reply's compaction item: whether the session adopted it
   * (`{adopted, entryId?, reason?: "hook_result", error?, message?}`). */
  compaction?: JsonObject;
}
export interface TurnEndRequest {
  format: WireFormat;
  usage?: JsonObject;
}
export interface TurnOutcome {
  compacted: boolean;
  retry: boolean;
  tokens: number;
  contextWindow: number;
  threshold: number;
  reason?: CompactionReason;
  entryId?: string;
  tokensBefore?: number;
  tokensAfter?: number;
  message?: string;
}
export interface OverflowRequest {
  status: number;
  body?: string;
}
export interface OverflowOutcome {
  overflow: boolean;
  retry: boolean;
  compacted: boolean;
  reason?: CompactionReason;
  entryId?: string;
  tokensBefore?: number;
  tokensAfter?: number;
  message?: string;
}
export interface ViewRequest {
  maxTokens: number;
  reservedOutput?: number;
  safetyMargin?: number;
  systemTokens?: number;
  requiredEntryIds?: string[];
}
export interface RequestView {
  reason: "fits" | "trimmed" | "single_group_overflow" | "required_overflow";
  messages: ContextMessage[];
  keptEntryIds: string[];
  tokens: {
    maxTokens: number;
    system: number;
    fixed: number;
    messages: number;
    reservedOutput: number;
    safetyMargin: number;
    availableForMessages: number;
    total: number;
  };
}
export interface Entry {
  type: string;
  id: string;
  parentId?: string | null;
  timestamp?: string;
  [key: string]: unknown;
}
export interface ReplaceHistoryResult {
  changed: boolean;
  shared: number;
  forkId: string | null;
  oldLeafId: string | null;
  ids: string[];
}

export interface Route {
  operationId: string;
  method: "GET" | "POST" | "PUT";
  path: string;
  query?: string[];
}
export declare const ROUTES: readonly Route[];

/** A non-2xx answer; code, field and budget are the server's error object's. */
export declare class AgentctxError extends Error {
  readonly status: number;
  readonly code: string;
  readonly field?: string;
  readonly budget?: BudgetShortfall;
  readonly body: ErrorBody | string;
}

export interface AgentctxClientOptions {
  url: string;
  /** Default: AGENTCTX_SERVER_TOKEN. */
  token?: string;
  fetch?: typeof fetch;
}

export declare class AgentctxClient {
  constructor(options: AgentctxClientOptions);
  readonly url: string;
  getMetrics(): Promise<string>;
  getOpenApi(): Promise<JsonObject>;
  createSession(body?: CreateSessionRequest): Promise<Created>;
  appendEntry(id: string, entry: EntryRequest): Promise<Created>;
  getEntry(id: string, entryId: string): Promise<Entry>;
  appendWireMessages(id: string, format: WireFormat, body: WireMessagesRequest): Promise<WireMessagesResult>;
  replaceWireMessages(id: string, format: WireFormat, body: WireMessagesRequest): Promise<ReplaceHistoryResult>;
  turnEnd(id: string, body: TurnEndRequest): Promise<TurnOutcome>;
  overflow(id: string, body: OverflowRequest): Promise<OverflowOutcome>;
  requestView(id: string, body: ViewRequest): Promise<RequestView>;
  compact(id: string, body?: CompactRequest): Promise<CompactResult>;
  getContext(id: string, wire?: WireFormat): Promise<Context>;
  /** The text/event-stream Response; read its body. */
  getEvents(id: string): Promise<Response>;
}
