"""An editor for the tests: the protocol's own client (the official SDK) driving a real `piton acp`
over its stdin and stdout. It records every session update, answers permission questions as the
test says, and serves `fs/*` from a dict of buffers when the test offers them."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, schema
from acp.client.connection import ClientSideConnection
from acp.interfaces import Client
from acp.stdio import spawn_agent_process

from tests.helpers import PITON

Answer = Callable[[schema.ToolCallUpdate, list[schema.PermissionOption]], str | None]


def first(kind: str) -> Answer:
    """Choose the first option of `kind` (allow_once, allow_always, reject_once)."""

    def choose(_: schema.ToolCallUpdate, options: list[schema.PermissionOption]) -> str | None:
        return next(o.option_id for o in options if o.kind == kind)

    return choose


class Editor:
    def __init__(self, answer: Answer | None = None, buffers: dict[str, str] | None = None) -> None:
        self.updates: list[Any] = []
        self.questions: list[tuple[schema.ToolCallUpdate, list[schema.PermissionOption]]] = []
        self.answer = answer or first("allow_once")
        self.buffers = buffers  # path -> text: offered as fs/* when set
        self.written: dict[str, str] = {}
        self.reads: list[str] = []
        self.asked = asyncio.Event()

    # -- the client's side of the protocol --------------------------------------------------------
    async def request_permission(
        self,
        session_id: str,
        tool_call: schema.ToolCallUpdate,
        options: list[schema.PermissionOption],
        **_: Any,
    ) -> schema.RequestPermissionResponse:
        self.questions.append((tool_call, options))
        self.asked.set()
        chosen = self.answer(tool_call, options)
        if chosen is None:
            return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=chosen)
        )

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **_: Any
    ) -> schema.ReadTextFileResponse:
        assert self.buffers is not None
        self.reads.append(path)
        # a file the editor has no buffer of is read from the disk, by name, as an editor does
        found = self.buffers[path] if path in self.buffers else await asyncio.to_thread(Path(path).read_text)
        return schema.ReadTextFileResponse(content=found)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **_: Any
    ) -> schema.WriteTextFileResponse:
        assert self.buffers is not None
        self.buffers[path] = self.written[path] = content
        return schema.WriteTextFileResponse()

    def on_connect(self, conn: Any) -> None:
        pass

    def as_client(self) -> Client:
        """This editor as the SDK's connection takes it: the methods it lacks (terminals,
        elicitation) are answered by the connection as not found."""
        return cast("Client", self)

    # -- what the tests read ----------------------------------------------------------------------
    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(kind) if u.content.type == "text")

    def capabilities(self) -> schema.ClientCapabilities:
        offered = self.buffers is not None
        return schema.ClientCapabilities(
            fs=schema.FileSystemCapabilities(read_text_file=offered, write_text_file=offered), terminal=False
        )


@contextlib.asynccontextmanager
async def connected(
    editor: Editor, *args: str, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """`piton acp ARGS` started as an editor starts it, initialized."""
    environment = {k: v for k, v in os.environ.items() if k != "IS_SANDBOX"} | (env or {})
    async with spawn_agent_process(editor.as_client(), PITON, "acp", *args, env=environment) as (
        conn,
        process,
    ):
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=editor.capabilities())
        yield conn, process


def text(words: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=words)


def folder(path: Path) -> str:
    return str(path.resolve())
