"""AgentctxSession: the OpenAI Agents SDK's session method names on an agentctx session.

Duck-typed (the SDK is not imported): items are Responses `input` items (dicts), stored with
`POST /messages?format=responses`; `pop_item` and `clear_session` branch (`PUT /messages`), the
log keeps what they remove.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .client import AgentctxClient, AgentctxError, CompactResult, OverflowOutcome, TurnOutcome

Item = Dict[str, Any]


class AgentctxSession:
    def __init__(self, client: AgentctxClient, session_id: Optional[str] = None, cwd: Optional[str] = None) -> None:
        self.client = client
        self.session_id = session_id
        self.cwd = cwd

    async def get_session_id(self) -> str:
        return self.session_id_sync()

    def session_id_sync(self) -> str:
        if not self.session_id:
            self.session_id = self.client.create_session({"cwd": self.cwd} if self.cwd else {})["id"]
        return self.session_id

    def _wire(self) -> List[Item]:
        return self.client.get_context(self.session_id_sync(), "responses").get("wire", [])

    async def get_items(self, limit: Optional[int] = None) -> List[Item]:
        items = self._wire()
        return items if limit is None else items[max(0, len(items) - limit):]

    async def add_items(self, items: List[Item], usage: Optional[Dict[str, Any]] = None) -> None:
        if items:
            body: Dict[str, Any] = {"input": items}
            if usage:
                body["usage"] = usage
            self.client.append_wire_messages(self.session_id_sync(), "responses", body)

    async def pop_item(self) -> Optional[Item]:
        wire = self._wire()
        if not wire:
            return None
        self.client.replace_wire_messages(self.session_id_sync(), "responses", {"input": wire[:-1]})
        return wire[-1]

    async def clear_session(self) -> None:
        if not self.session_id:
            return
        try:
            self.client.replace_wire_messages(self.session_id, "responses", {"input": []})
        except AgentctxError as err:
            if err.code != "summarized_history":
                raise
            self.session_id = None  # the summary cannot be branched away: a new server session
            self.session_id_sync()

    async def turn_end(self, usage: Optional[Dict[str, Any]] = None) -> TurnOutcome:
        body: Dict[str, Any] = {"format": "responses"}
        if usage:
            body["usage"] = usage
        return self.client.turn_end(self.session_id_sync(), body)

    async def overflow(self, status: int, body: str) -> OverflowOutcome:
        return self.client.overflow(self.session_id_sync(), {"status": status, "body": body})

    async def compact(self, instructions: Optional[str] = None) -> CompactResult:
        return self.client.compact(self.session_id_sync(), {"instructions": instructions} if instructions else {})
