"""One MCP server's connection, on the MCP thread's event loop: start it, keep its transport and
session open in one task (the SDK's anyio context managers must be entered and left in the same
task), list its tools, prompts and resources, follow their `list_changed` notices, serve calls,
restart it after it died.

Every method here runs on the MCP loop; other threads read `state` (plain attribute reads of
immutable values) and call through `piton.core.mcp.manager`.
"""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import field
from pathlib import Path
from typing import Any, Literal, TextIO, cast

import anyio

from piton.core.mcp.config import ServerConfig
from piton.core.mcp.offers import PromptInfo, ResourceInfo, list_prompts, list_resources
from piton.core.mcp.sdk import SdkHost, sdk_transport
from piton.core.mcp.tool import Caller, McpCallError, McpTool
from piton.core.mcp.transport import (
    EndWatch,
    describe,
    inherited_env,
    resolve_command,
    stderr_tail,
    watched,
)
from piton.core.records import record
from piton.core.safety.programs import OPT_OUT_HINT, Programs
from piton.core.safety.sandbox import Launch
from piton.core.tls import trusted

Status = Literal["starting", "connected", "failed", "pending", "disabled", "stopped", "needs-auth"]
_CHANGES = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}
_HTTP_TIMEOUT_S, _HTTP_READ_TIMEOUT_S = 30.0, 300.0


@record
class ServerState:
    """What people see of a server: `/mcp`, `piton mcp list`, the start-up report."""

    config: ServerConfig
    status: Status = "starting"
    error: str | None = None
    tools: tuple[McpTool, ...] = ()
    prompts: tuple[PromptInfo, ...] = ()
    resources: tuple[ResourceInfo, ...] = ()
    instructions: str | None = None
    server_info: tuple[str, str] | None = None  # (name, version) from the handshake
    restarts: int = 0
    reported: bool = field(default=False)  # a failure is told once


class SandboxRefused(Exception):
    """A stdio server whose sandbox cannot start: it does not start either."""


class Connection:
    def __init__(
        self,
        config: ServerConfig,
        caller: Caller,
        *,
        cwd: Path,
        connect_timeout: float,
        changed: Callable[[], None],
        host: SdkHost | None = None,
        programs: Programs,
    ) -> None:
        self.config = config
        self._programs = programs  # how a stdio server starts (sandboxed, unless opted out)
        self._launched = False  # this start got as far as its sandbox
        self.state = ServerState(config)
        self._caller = caller
        self._cwd = cwd
        self._connect_timeout = connect_timeout
        self._changed = changed  # the manager hears of every change of state or tools
        self._client: Any = None
        self._watch: list[EndWatch] = []  # the current session's read stream, watched for its end
        self._stopping = False
        self._done = anyio.Event()  # ends the current session (stop, or the server died)
        self._wake = anyio.Event()  # starts the server again after it died
        self._settled = anyio.Event()  # the current start has connected or failed
        self._restartable = False
        self._list_changed = anyio.Event()
        self._stale: set[str] = set()  # what the server said changed: "tools", "prompts", "resources"
        self._deadline: anyio.CancelScope | None = None  # the current start's
        self._host = host

    # -- the task that owns the session -----------------------------------------------------------
    async def serve(self) -> None:
        while not self.stopping():
            await self._session()
            if self.stopping():
                break
            await self._wake.wait()
            self._wake = anyio.Event()
        if self.state.status != "failed":  # a failure stays on record for whoever asks later
            self._set("stopped")

    def stopping(self) -> bool:
        return self._stopping

    def stop(self) -> None:
        self._stopping = True
        self._done.set()
        self._wake.set()

    def _set(self, status: Status, error: str | None = None) -> None:
        self.state.status, self.state.error = status, error
        if status != "starting":
            self._settled.set()
        self._changed()

    def _launch(self) -> Launch:
        """How a stdio server starts: in a sandbox like a command left running, unless the user's
        own configuration opts it out (`piton.core.safety.programs`)."""
        config = self.config
        # "command not found" before any sandbox starts; one found under /tmp is named by its path,
        # so that the sandbox, whose /tmp is its own, binds it
        path = {**inherited_env(), **config.env}.get("PATH", os.defpath)
        found = resolve_command(config.command, self._cwd, path)
        command = found if found.startswith("/tmp/") else config.command
        script = shlex.join([command, *config.args])
        launch = self._programs.launch(
            "server", script, self._cwd, inherited_env(), config.env, opted_out=self._opted_out()
        )
        if isinstance(launch, str):
            raise SandboxRefused(f"its sandbox cannot start: {launch}")
        if launch.pass_fds:  # nothing the SDK's stdio client could hand over
            launch.close()
            raise SandboxRefused("its sandbox needs a file descriptor the MCP client cannot pass")
        self._launched = self.confined  # a failure from here on is one inside the sandbox
        return launch

    @property
    def confined(self) -> bool:
        """A stdio server that starts in a sandbox."""
        return self.config.transport == "stdio" and self._programs.confining and not self._opted_out()

    def _opted_out(self) -> bool:
        """`"sandbox": false` from the user's own configuration; an `--mcp-config` file the model
        could have written (inside the project) cannot say it."""
        config = self.config
        if not (config.raw.get("sandbox") is False and config.users_own):
            return False
        given = config.scope == "flag" and os.path.isabs(config.source)
        return not (given and self._programs.policy.in_roots(Path(config.source)))

    def _transport(self, errlog: TextIO | None, launch: Launch | None) -> Any:
        config = self.config
        if launch is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            argv, env = launch.argv, launch.env or {}
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=self._cwd)
            return stdio_client(params, errlog=errlog) if errlog is not None else stdio_client(params)
        if config.transport == "sdk":
            return sdk_transport(config.url, self._host)
        from piton.core.mcp.oauth import client_auth, wants_oauth

        auth = client_auth(config, self._needs_auth) if wants_oauth(config) else None
        if config.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(
                config.url, headers=dict(config.headers), timeout=self._connect_timeout, auth=auth
            )
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        # the SDK's own limits: a response stream may stay open for long between events
        limits = httpx2.Timeout(_HTTP_TIMEOUT_S, read=_HTTP_READ_TIMEOUT_S)
        client = httpx2.AsyncClient(headers=dict(config.headers), auth=auth, timeout=limits, verify=trusted())
        return streamable_http_client(config.url, http_client=client)

    def _server_ended(self) -> None:
        """The server exited or hung up: said at once (the session winds down and the state says so),
        and started again at the next call."""
        self._done.set()

    def _needs_auth(self, url: str) -> None:
        """The server wants OAuth: the user is sent to `url`, and the start waits for them longer."""
        from piton.core.mcp.oauth import AUTH_WAIT_S

        if self._deadline is not None:
            self._deadline.deadline = anyio.current_time() + AUTH_WAIT_S
        self._set("needs-auth", f"open this URL in a browser to authorize Piton: {url}")

    async def _session(self) -> None:
        # `_settled` is made new by whoever starts the server, so that a waiter never holds a stale one
        self._done, self._list_changed = anyio.Event(), anyio.Event()
        self._launched = False
        self._set("starting")
        stdio = self.config.transport == "stdio"
        # a stdio server's stderr is kept off the terminal; its tail explains a failure
        with contextlib.ExitStack() as files:
            errlog: TextIO | None = None
            if stdio:  # a text file, which is what stdio_client takes
                errlog = cast(
                    TextIO,
                    files.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")),
                )
            deadline = anyio.CancelScope(deadline=anyio.current_time() + self._connect_timeout)
            self._deadline = deadline
            try:
                with deadline:
                    await self._connected(errlog, deadline)
                if deadline.cancelled_caught and self.state.status in ("starting", "needs-auth"):
                    self._fail(f"did not start within {self._connect_timeout:g} s (MCP_TIMEOUT)", errlog)
            except Exception as e:  # a server that cannot start is reported; the others go on
                self._fail(describe(e), errlog)
            finally:
                self._client = None

    def _fail(self, reason: str, errlog: TextIO | None) -> None:
        tail = stderr_tail(errlog)
        reason = f"{reason} (stderr: {tail})" if tail else reason
        if self._launched and self.config.users_own:
            reason += f"; it ran in the sandbox: {OPT_OUT_HINT}"  # the user's own server: say the way out
        self._set("failed", reason)

    async def _connected(self, errlog: TextIO | None, deadline: anyio.CancelScope) -> None:
        from mcp import Client
        from mcp_types import Implementation

        from piton.core.version import __version__

        self._watch.clear()
        async with AsyncExitStack() as stack:
            launch = self._launch() if self.config.transport == "stdio" else None
            if launch is not None:
                stack.callback(launch.close)  # after the server has exited: its cgroup goes
            client = Client(
                watched(self._transport(errlog, launch), self._watch, self._server_ended),
                message_handler=self._on_message,
                client_info=Implementation(name="piton", version=__version__),
                cache=None,  # every listing is asked afresh: list_changed must see the new tools
                # an SDK client's server answers the handshake Claude Code sends, not a probe first
                mode="legacy" if self.config.transport == "sdk" else "auto",
            )
            await stack.enter_async_context(client)
            self.state.instructions = client.instructions
            info = client.server_info
            self.state.server_info = (info.name, info.version) if info is not None else None
            await self._list_tools(client)
            await self._list_offers(client, {"prompts", "resources"})
            deadline.deadline = math.inf
            self._client = client
            self._restartable = True
            self._set("connected")
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._follow_changes, client)
                await self._done.wait()
                tasks.cancel_scope.cancel()
            if not self._stopping:
                self._set("failed", "the server exited; it is started again at the next call of its tools")

    async def _list_tools(self, client: Any) -> None:
        tools, cursor = [], None
        for _ in range(100):  # a server that pages forever is cut off
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        loaded = self.config.always_load
        self.state.tools = tuple(
            McpTool(self.config.name, tool, self._caller, deferred=not loaded) for tool in tools
        )
        self._changed()

    async def _list_offers(self, client: Any, kinds: set[str]) -> None:
        """Prompts and resources: a server that fails to list them still serves its tools."""
        if "prompts" in kinds:
            with contextlib.suppress(Exception):
                self.state.prompts = await list_prompts(self.config.name, client)
        if "resources" in kinds:
            with contextlib.suppress(Exception):
                self.state.resources = await list_resources(self.config.name, client)
        self._changed()

    async def _on_message(self, message: Any) -> None:
        kind = _CHANGES.get(getattr(message, "method", None) or "")
        if kind is not None:
            self._stale.add(kind)
            self._list_changed.set()

    async def _follow_changes(self, client: Any) -> None:
        """Relist what the server says changed. A 2026-era connection sends that only to a client
        that listens for it."""
        async with anyio.create_task_group() as tasks:
            if _modern(client):
                tasks.start_soon(self._listen, client)
            while True:
                await self._list_changed.wait()
                self._list_changed = anyio.Event()
                stale, self._stale = self._stale, set()
                if "tools" in stale:
                    with contextlib.suppress(Exception):  # the old list stays; the next change tries again
                        await self._list_tools(client)
                await self._list_offers(client, stale)

    async def _listen(self, client: Any) -> None:
        caps = client.server_capabilities
        wanted = {
            kind: bool(getattr(getattr(caps, kind, None), "list_changed", False))
            for kind in ("tools", "prompts", "resources")
        }
        with contextlib.suppress(Exception):  # only the notice of changes is lost
            async with client.listen(
                tools_list_changed=wanted["tools"],
                prompts_list_changed=wanted["prompts"],
                resources_list_changed=wanted["resources"],
            ) as subscription:
                # no replay: a change made before the server acknowledged is fetched now, once
                self._stale.update(kind for kind, on in wanted.items() if on)
                if self._stale:
                    self._list_changed.set()
                async for _ in subscription:
                    pass  # each event also reaches `_on_message`

    # -- calls ------------------------------------------------------------------------------------
    def _ended(self) -> bool:
        return bool(self._watch) and self._watch[-1].ended

    async def _usable(self) -> Any:
        if self.state.status == "connected" and self._client is not None and self._ended():
            self._settled = anyio.Event()
            self._done.set()
            await self._settled.wait()  # the session winds down and says the server exited
        if self.state.status == "failed" and self._restartable and not self._stopping:
            self._restartable = False  # one new start per death: a server that cannot start stays down
            self.state.restarts += 1
            self._settled = anyio.Event()
            self._wake.set()
        if self.state.status in ("starting", "failed") and not self._settled.is_set():
            with anyio.move_on_after(self._connect_timeout + 1):
                await self._settled.wait()
        if self.state.status != "connected" or self._client is None:
            why = self.state.error or self.state.status
            raise McpCallError(f"The MCP server {self.config.name} is not available: {why}")
        return self._client

    async def call(self, tool: str, arguments: dict[str, Any], limit: float | None) -> Any:
        return await self.request(lambda client: client.call_tool(tool, arguments), tool, limit)

    async def request(
        self, work: Callable[[Any], Awaitable[Any]], what: str, limit: float | None, timeout_name: str = ""
    ) -> Any:
        """`work(client)` on a usable session: a tool's call, a prompt's or a resource's fetch."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        client = await self._usable()
        name, tool = self.config.name, what
        try:
            with anyio.fail_after(limit if limit is not None else math.inf):
                return await work(client)
        except TimeoutError:
            raise McpCallError(
                f"The MCP server {name} did not answer {tool} within {limit:g} s "
                f"({timeout_name or 'MCP_TOOL_TIMEOUT'})"
            ) from None
        except MCPError as e:
            if e.code == CONNECTION_CLOSED:
                self._done.set()
                raise McpCallError(
                    f"The MCP server {name} closed the connection during the call of {tool}; it is "
                    "started again at the next call"
                ) from None
            raise McpCallError(
                f"The MCP server {name} refused the call of {tool}: {e.error.message}"
            ) from None
        except Exception as e:  # a result the SDK cannot read, a broken stream: the model is told
            raise McpCallError(f"The call of {tool} on the MCP server {name} failed: {describe(e)}") from None


def _modern(client: Any) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    caps = client.server_capabilities
    changing = any(
        getattr(getattr(caps, kind, None), "list_changed", False)
        for kind in ("tools", "prompts", "resources")
    )
    return client.protocol_version in MODERN_PROTOCOL_VERSIONS and changing
