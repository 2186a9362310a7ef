// The typed HTTP client of the agentctx agent server: one method per route of docs/openapi.json.
//
// ESM, no dependencies (Node 18+ or any runtime with fetch). Types: client.d.ts.

/** Every route: the method name is the document's operationId. */
export const ROUTES = Object.freeze([
  { operationId: "getMetrics", method: "GET", path: "/metrics" },
  { operationId: "getOpenApi", method: "GET", path: "/openapi.json" },
  { operationId: "createSession", method: "POST", path: "/v1/sessions" },
  { operationId: "appendEntry", method: "POST", path: "/v1/sessions/{id}/entries" },
  { operationId: "getEntry", method: "GET", path: "/v1/sessions/{id}/entries/{entryId}" },
  { operationId: "appendWireMessages", method: "POST", path: "/v1/sessions/{id}/messages", query: ["format"] },
  { operationId: "replaceWireMessages", method: "PUT", path: "/v1/sessions/{id}/messages", query: ["format"] },
  { operationId: "turnEnd", method: "POST", path: "/v1/sessions/{id}/turn-end" },
  { operationId: "overflow", method: "POST", path: "/v1/sessions/{id}/overflow" },
  { operationId: "requestView", method: "POST", path: "/v1/sessions/{id}/view" },
  { operationId: "compact", method: "POST", path: "/v1/sessions/{id}/compact" },
  { operationId: "getContext", method: "GET", path: "/v1/sessions/{id}/context", query: ["wire"] },
  { operationId: "getEvents", method: "GET", path: "/v1/sessions/{id}/events" },
]);

/** A non-2xx answer: the server's error.code, error.field and error.budget kept as they came. */
export class AgentctxError extends Error {
  constructor(method, path, status, body) {
    const error = body && typeof body === "object" && body.error ? body.error : {};
    super(`${method} ${path}: ${status} ${error.code ?? ""} ${error.message ?? ""}`.trim());
    this.name = "AgentctxError";
    this.status = status;
    this.code = error.code ?? "http_" + status;
    this.field = error.field;
    this.budget = error.budget;
    this.body = body;
  }
}

const segment = (value) => encodeURIComponent(String(value));

export class AgentctxClient {
  /** @param {{url: string, token?: string, fetch?: typeof fetch}} options */
  constructor({ url, token, fetch: fetchImpl } = {}) {
    if (!url) throw new TypeError("AgentctxClient: url is required");
    this.url = url.replace(/\/$/, "");
    this.token = token ?? (typeof process !== "undefined" ? process.env.AGENTCTX_SERVER_TOKEN : undefined);
    this.fetch = fetchImpl ?? globalThis.fetch;
  }

  async request(method, path, body, accept = "json") {
    const headers = {};
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    const res = await this.fetch(this.url + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (accept === "stream" && res.ok) return res;
    const text = await res.text();
    let parsed = text;
    if (accept === "json" || !res.ok) {
      try {
        parsed = JSON.parse(text);
      } catch {
        if (res.ok) throw new AgentctxError(method, path, res.status, { error: { code: "invalid_json", message: "the answer is not JSON" } });
      }
    }
    if (!res.ok) throw new AgentctxError(method, path, res.status, parsed);
    return parsed;
  }

  getMetrics() {
    return this.request("GET", "/metrics", undefined, "text");
  }
  getOpenApi() {
    return this.request("GET", "/openapi.json");
  }
  createSession(body = {}) {
    return this.request("POST", "/v1/sessions", body);
  }
  appendEntry(id, entry) {
    return this.request("POST", `/v1/sessions/${segment(id)}/entries`, entry);
  }
  getEntry(id, entryId) {
    return this.request("GET", `/v1/sessions/${segment(id)}/entries/${segment(entryId)}`);
  }
  appendWireMessages(id, format, body) {
    return this.request("POST", `/v1/sessions/${segment(id)}/messages?format=${segment(format)}`, body);
  }
  replaceWireMessages(id, format, body) {
    return this.request("PUT", `/v1/sessions/${segment(id)}/messages?format=${segment(format)}`, body);
  }
  turnEnd(id, body) {
    return this.request("POST", `/v1/sessions/${segment(id)}/turn-end`, body);
  }
  overflow(id, body) {
    return this.request("POST", `/v1/sessions/${segment(id)}/overflow`, body);
  }
  requestView(id, body) {
    return this.request("POST", `/v1/sessions/${segment(id)}/view`, body);
  }
  compact(id, body = {}) {
    return this.request("POST", `/v1/sessions/${segment(id)}/compact`, body);
  }
  getContext(id, wire) {
    const query = wire ? `?wire=${segment(wire)}` : "";
    return this.request("GET", `/v1/sessions/${segment(id)}/context${query}`);
  }
  /** The raw text/event-stream Response (read res.body); errors as for every route. */
  getEvents(id) {
    return this.request("GET", `/v1/sessions/${segment(id)}/events`, undefined, "stream");
  }
}
