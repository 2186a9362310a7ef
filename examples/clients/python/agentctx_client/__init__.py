"""Client of the agentctx agent server (standard library only) and a duck-typed AgentctxSession."""

from .client import ROUTES, AgentctxClient, AgentctxError
from .session import AgentctxSession

__all__ = ["ROUTES", "AgentctxClient", "AgentctxError", "AgentctxSession"]
