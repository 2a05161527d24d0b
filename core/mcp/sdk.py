"""In-process servers of an Agent SDK client (`{"type": "sdk", "name": …}`): a transport whose
streams go through the control protocol. Each JSON-RPC message the MCP client writes becomes a
`control_request` `{"subtype": "mcp_message", "server_name", "message"}` to the client that drives
Piton, and the `mcp_response` it answers becomes the message read back.

The control channel lives on the conversation's event loop, the MCP connections on the MCP thread's:
`SdkHost` is the bridge, bound once the conversation serves (servers that start before that wait).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

# a control request to the client, on the conversation's loop: its `response` object
Requester = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
_INTERNAL_ERROR = -32603


class SdkHostError(Exception):
    """No client can carry the messages (none drives Piton, or it went away)."""


class SdkHost:
    """The client that hosts in-process servers, once the conversation that talks to it serves."""

    def __init__(self) -> None:
        self._bound: concurrent.futures.Future[tuple[asyncio.AbstractEventLoop, Requester]] = (
            concurrent.futures.Future()
        )

    def bind(self, loop: asyncio.AbstractEventLoop, request: Requester) -> None:
        """Called on `loop`, the conversation's, once it can send control requests."""
        if not self._bound.done():
            self._bound.set_result((loop, request))

    async def send(self, server: str, message: dict[str, Any]) -> dict[str, Any]:
        """Carry one JSON-RPC message to the client's server `server`; the client's JSON-RPC answer."""
        loop, request = await asyncio.wrap_future(self._bound)
        payload = {"subtype": "mcp_message", "server_name": server, "message": message}
        try:
            future = asyncio.run_coroutine_threadsafe(_ask(request, payload), loop)
        except RuntimeError:  # the conversation's loop has ended
            raise SdkHostError("the SDK client is gone") from None
        response = await asyncio.wrap_future(future)
        answer = response.get("mcp_response")
        if not isinstance(answer, dict):
            raise SdkHostError("the SDK client answered without an mcp_response")
        return answer


async def _ask(request: Requester, payload: dict[str, Any]) -> dict[str, Any]:
    return await request(payload)


def _error(message_id: Any, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message_id, "error": {"code": _INTERNAL_ERROR, "message": text}}


@asynccontextmanager
async def sdk_transport(server: str, host: SdkHost | None) -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) streams of the MCP SDK's `Transport` shape for the client's server `server`.
    Messages go concurrently: a long tool call does not hold up a ping or another call."""
    import anyio
    import mcp_types
    from mcp.shared.message import SessionMessage

    if host is None:
        raise SdkHostError(
            "an in-process (sdk) server is reached through the Agent SDK client that defines it; "
            "no such client drives this run"
        )
    to_server, outgoing = anyio.create_memory_object_stream[SessionMessage](16)
    incoming, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](16)

    async def forward(item: SessionMessage) -> None:
        message = item.message.model_dump(by_alias=True, mode="json", exclude_unset=True)
        message_id, is_request = message.get("id"), "method" in message and "id" in message
        try:
            answer = await host.send(server, message)
        except Exception as e:  # the client refused or is gone: the request fails, the session decides
            answer = _error(message_id, f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)
        if not is_request:
            return  # a notification's or a response's carrier answers with an acknowledgement only
        answer.setdefault("id", message_id)
        parsed = mcp_types.jsonrpc_message_adapter.validate_python(answer, by_name=False)
        await incoming.send(SessionMessage(parsed))

    async def pump() -> None:
        async with anyio.create_task_group() as tasks:
            async for item in outgoing:
                tasks.start_soon(forward, item)

    async with incoming, from_server, to_server, outgoing, anyio.create_task_group() as tasks:
        tasks.start_soon(pump)
        try:
            yield from_server, to_server
        finally:
            tasks.cancel_scope.cancel()
