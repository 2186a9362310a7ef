"""The typed HTTP client: one method per route of docs/openapi.json, errors keep code and field."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Literal, Optional, TypedDict

WireFormat = Literal["openai", "responses", "anthropic"]

#: Every route: (operationId, method, path); the method name is the operationId in snake case.
ROUTES = (
    ("getMetrics", "GET", "/metrics"),
    ("getOpenApi", "GET", "/openapi.json"),
    ("createSession", "POST", "/v1/sessions"),
    ("appendEntry", "POST", "/v1/sessions/{id}/entries"),
    ("getEntry", "GET", "/v1/sessions/{id}/entries/{entryId}"),
    ("appendWireMessages", "POST", "/v1/sessions/{id}/messages"),
    ("replaceWireMessages", "PUT", "/v1/sessions/{id}/messages"),
    ("turnEnd", "POST", "/v1/sessions/{id}/turn-end"),
    ("overflow", "POST", "/v1/sessions/{id}/overflow"),
    ("requestView", "POST", "/v1/sessions/{id}/view"),
    ("compact", "POST", "/v1/sessions/{id}/compact"),
    ("getContext", "GET", "/v1/sessions/{id}/context"),
    ("getEvents", "GET", "/v1/sessions/{id}/events"),
)


class Created(TypedDict, total=False):
    id: str
    compaction: Dict[str, Any]


class WireMessagesResult(TypedDict):
    ids: List[str]


class ReplaceHistoryResult(TypedDict):
    changed: bool
    shared: int
    forkId: Optional[str]
    oldLeafId: Optional[str]
    ids: List[str]


class TurnOutcome(TypedDict, total=False):
    compacted: bool
    retry: bool
    tokens: int
    contextWindow: int
    threshold: int
    reason: str
    entryId: str
    tokensBefore: int
    tokensAfter: int
    message: str


class OverflowOutcome(TypedDict, total=False):
    overflow: bool
    retry: bool
    compacted: bool
    reason: str
    entryId: str
    tokensBefore: int
    tokensAfter: int
    message: str


class CompactResult(TypedDict):
    entryId: str
    firstKeptEntryId: str
    tokensBefore: int
    tokensAfter: int
    summary: str


class Context(TypedDict, total=False):
    leafId: Optional[str]
    estimatedTokens: int
    messages: List[Dict[str, Any]]
    native: Dict[str, str]
    wire: List[Dict[str, Any]]


class AgentctxError(Exception):
    """A non-2xx answer: the server's error.code, error.field and error.budget as they came."""

    def __init__(self, method: str, path: str, status: int, body: Any) -> None:
        error = body.get("error", {}) if isinstance(body, dict) else {}
        self.status = status
        self.code: str = error.get("code", f"http_{status}")
        self.field: Optional[str] = error.get("field")
        self.budget: Optional[Dict[str, Any]] = error.get("budget")
        self.body = body
        super().__init__(f"{method} {path}: {status} {self.code} {error.get('message', '')}".strip())


def _seg(value: str) -> str:
    return urllib.parse.quote(str(value), safe="")


class AgentctxClient:
    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 300.0) -> None:
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("AGENTCTX_SERVER_TOKEN")
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = None, raw: bool = False) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                text = res.read().decode()
        except urllib.error.HTTPError as err:
            text = err.read().decode()
            try:
                parsed: Any = json.loads(text)
            except ValueError:
                parsed = text
            raise AgentctxError(method, path, err.code, parsed) from None
        return text if raw else json.loads(text)

    def get_metrics(self) -> str:
        return self.request("GET", "/metrics", raw=True)

    def get_open_api(self) -> Dict[str, Any]:
        return self.request("GET", "/openapi.json")

    def create_session(self, body: Optional[Dict[str, Any]] = None) -> Created:
        return self.request("POST", "/v1/sessions", body or {})

    def append_entry(self, id: str, entry: Dict[str, Any]) -> Created:
        return self.request("POST", f"/v1/sessions/{_seg(id)}/entries", entry)

    def get_entry(self, id: str, entryId: str) -> Dict[str, Any]:
        return self.request("GET", f"/v1/sessions/{_seg(id)}/entries/{_seg(entryId)}")

    def append_wire_messages(self, id: str, format: WireFormat, body: Dict[str, Any]) -> WireMessagesResult:
        return self.request("POST", f"/v1/sessions/{_seg(id)}/messages?format={_seg(format)}", body)

    def replace_wire_messages(self, id: str, format: WireFormat, body: Dict[str, Any]) -> ReplaceHistoryResult:
        return self.request("PUT", f"/v1/sessions/{_seg(id)}/messages?format={_seg(format)}", body)

    def turn_end(self, id: str, body: Dict[str, Any]) -> TurnOutcome:
        return self.request("POST", f"/v1/sessions/{_seg(id)}/turn-end", body)

    def overflow(self, id: str, body: Dict[str, Any]) -> OverflowOutcome:
        return self.request("POST", f"/v1/sessions/{_seg(id)}/overflow", body)

    def request_view(self, id: str, body: Dict[str, Any]) -> Dict[str, Any]:
        return self.request("POST", f"/v1/sessions/{_seg(id)}/view", body)

    def compact(self, id: str, body: Optional[Dict[str, Any]] = None) -> CompactResult:
        return self.request("POST", f"/v1/sessions/{_seg(id)}/compact", body or {})

    def get_context(self, id: str, wire: Optional[WireFormat] = None) -> Context:
        query = f"?wire={_seg(wire)}" if wire else ""
        return self.request("GET", f"/v1/sessions/{_seg(id)}/context{query}")

    def get_events(self, id: str) -> Any:
        """The open text/event-stream response (read it line by line; close it when done)."""
        req = urllib.request.Request(self.url + f"/v1/sessions/{_seg(id)}/events", method="GET")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            return urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as err:
            raise AgentctxError("GET", "/events", err.code, json.loads(err.read().decode() or "{}")) from None
