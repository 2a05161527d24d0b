"""Piton as a library: `from piton import query, Agent, AgentOptions, tool`.

Nothing heavy loads until a session is opened: the provider's SDK, the tools and the settings are
imported by `Agent.connect`.
"""

from piton.api.client import Agent, PitonError, query
from piton.api.messages import (
    AssistantMessage,
    ResultMessage,
    RunMessage,
    StreamEvent,
    SystemMessage,
    UserMessage,
)
from piton.api.options import (
    AgentOptions,
    Allow,
    CanUseTool,
    Deny,
    HookCallback,
    HookMatcher,
    ToolPermissionContext,
)
from piton.api.tools import FunctionTool, tool
from piton.core.conversation.storage import SessionStorage, SqliteSessionStorage, StoredSession
from piton.telemetry import Telemetry

__all__ = [
    "Agent",
    "AgentOptions",
    "Allow",
    "AssistantMessage",
    "CanUseTool",
    "Deny",
    "FunctionTool",
    "HookCallback",
    "HookMatcher",
    "PitonError",
    "ResultMessage",
    "RunMessage",
    "SessionStorage",
    "SqliteSessionStorage",
    "StoredSession",
    "StreamEvent",
    "SystemMessage",
    "Telemetry",
    "ToolPermissionContext",
    "UserMessage",
    "query",
    "tool",
]
