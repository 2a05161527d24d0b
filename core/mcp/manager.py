"""The session's MCP servers: one background thread with its own event loop holds every server's
connection, so servers start the moment the session is built (whichever loop the terminal, `-p` or
the control protocol runs later) and stop together when it closes.

The agent's side never touches the SDK: before each model request its tool registry calls `sync`
(through `ToolRegistry.on_refresh`), which waits, the first time only, for servers still starting
(up to `MCP_TIMEOUT`), then adds the tools of servers that became ready and drops those a server
withdrew. Tool calls cross to the MCP loop and back; cancelling one cancels it there.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any

from piton.core.mcp.config import ServerConfig
from piton.core.mcp.connection import Connection, ServerState
from piton.core.mcp.offers import PromptInfo, ResourceInfo
from piton.core.mcp.sdk import SdkHost
from piton.core.mcp.tool import McpCallError, McpTool
from piton.core.safety.programs import Programs
from piton.core.shells import SWEEP_EVERY_S
from piton.core.tools import ToolRegistry

DEFAULT_CONNECT_MS = 30_000  # Claude Code's MCP_TIMEOUT default
DEFAULT_TOOL_MS = 600_000  # a call may take as long as the longest shell command
_CLOSE_WAIT_S = 10.0  # each stdio server gets 2 s to exit after its stdin closes, then a kill


def env_seconds(name: str, default_ms: int) -> float:
    """A timeout from an environment variable in milliseconds (Claude Code's names and unit)."""
    try:
        value = int(os.environ.get(name, "").strip())
    except ValueError:
        value = default_ms
    return max(value, 1) / 1000


class McpManager:
    def __init__(
        self,
        servers: Iterable[ServerConfig],
        *,
        cwd: Path,
        pending: Iterable[ServerConfig] = (),
        disabled: Iterable[ServerConfig] = (),
        connect_timeout: float | None = None,
        call_timeout: float | None = None,
        host: SdkHost | None = None,
        programs: Programs,
    ) -> None:
        """`host`: the Agent SDK client that serves the `sdk` servers, when one drives the run;
        `programs`: how stdio servers start (in the session's sandbox for them)."""
        self.connect_timeout = connect_timeout or env_seconds("MCP_TIMEOUT", DEFAULT_CONNECT_MS)
        self.call_timeout = call_timeout or env_seconds("MCP_TOOL_TIMEOUT", DEFAULT_TOOL_MS)
        self._programs = programs
        self._connections = {
            s.name: Connection(
                s,
                self.call,
                cwd=cwd,
                connect_timeout=self.connect_timeout,
                changed=self._changed,
                host=host,
                programs=programs,
            )
            for s in servers
        }
        self._idle = [ServerState(s, "pending") for s in pending]
        self._idle += [ServerState(s, "disabled") for s in disabled]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._settled = threading.Event()  # no server is starting
        self._running = threading.Event()  # the loop is up (or gave up)
        self._lock = threading.Lock()
        self._waited = False
        self._reporter: Callable[[str], None] | None = None
        self._reporter_loop: asyncio.AbstractEventLoop | None = None
        self._unreported: list[str] = []
        self._registered: dict[int, set[str]] = {}  # per registry: the MCP tools put in it
        self._told_auth: set[str] = set()  # the authorization URLs told already

    # -- life -------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start every server on the MCP thread; returns at once."""
        if self._thread is not None or not self._connections:
            self._settled.set()
            return
        self._thread = threading.Thread(target=self._main, name="piton-mcp", daemon=True)
        self._thread.start()
        atexit.register(self.close)  # a path that forgot to close still leaves no server behind

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        finally:
            self._running.set()
            self._settled.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._running.set()
        confined = self.confines_any
        if confined:
            await self._programs.watch_servers()
        tasks = [asyncio.ensure_future(c.serve()) for c in self._connections.values()]
        sweeper = asyncio.ensure_future(self._sweep_while_serving()) if confined else None
        await self._stop.wait()
        for connection in self._connections.values():
            connection.stop()
        await asyncio.wait(tasks, timeout=_CLOSE_WAIT_S)
        if sweeper is not None:
            sweeper.cancel()
            await self._sweep()  # the last: what a server planted as it ended

    async def _sweep_while_serving(self) -> None:
        """Remove the settings files and hook frameworks' files the servers plant below the roots,
        every few seconds while they run (a session started there, or a commit, would obey them)."""
        while True:
            await asyncio.sleep(SWEEP_EVERY_S)
            await self._sweep()

    async def _sweep(self) -> None:
        for note in await self._programs.servers_guard.sweep():
            self._report(f"MCP servers: {note}")

    def close(self) -> None:
        """Stop every server (their processes exit or are killed) and the thread. Idempotent."""
        thread = self._thread
        if thread is None:
            return
        self._running.wait(5)
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop ended meanwhile
                loop.call_soon_threadsafe(stop.set)
        if thread is not threading.current_thread():
            thread.join(_CLOSE_WAIT_S + 2)
        atexit.unregister(self.close)

    @property
    def confines_any(self) -> bool:
        """Whether any of its servers starts in a sandbox."""
        return any(c.confined for c in self._connections.values())

    # -- state, for people ------------------------------------------------------------------------
    def states(self) -> list[ServerState]:
        return [c.state for c in self._connections.values()] + list(self._idle)

    def _changed(self) -> None:
        """On the MCP loop, after any change: settle waiters, report new failures."""
        states = [c.state for c in self._connections.values()]
        if any(s.status == "starting" for s in states):
            self._settled.clear()
        else:
            self._settled.set()
        for state in states:
            if state.status == "failed" and not state.reported:
                state.reported = True
                self._report(f"MCP server {state.config.name} failed: {state.error}")
            elif state.status == "needs-auth" and state.error not in self._told_auth:
                self._told_auth.add(state.error or "")
                self._report(f"MCP server {state.config.name} needs authentication: {state.error}")
            elif state.status == "connected":
                state.reported = False

    def report_to(
        self, reporter: Callable[[str], None], loop: asyncio.AbstractEventLoop | None = None
    ) -> None:
        """Where failures are told, one line each: with `loop` (the caller's), as they happen;
        without, at the next `sync`. Called on the thread that `reporter` belongs to."""
        with self._lock:
            self._reporter, self._reporter_loop = reporter, loop
            lines = self._unreported if loop is not None else []
            if loop is not None:
                self._unreported = []
        for line in lines:
            reporter(line)

    def _report(self, line: str) -> None:
        with self._lock:
            reporter, loop = self._reporter, self._reporter_loop
            if reporter is None or loop is None:
                self._unreported.append(line)
                return
        try:
            loop.call_soon_threadsafe(reporter, line)
        except RuntimeError:  # that loop is gone: the line waits for the next sync
            with self._lock:
                self._unreported.append(line)

    def notices(self) -> list[str]:
        """Failures not told yet (taken: each is told once)."""
        with self._lock:
            lines, self._unreported = self._unreported, []
        return lines

    # -- the agent's side -------------------------------------------------------------------------
    def tools(self) -> list[McpTool]:
        return [t for c in self._connections.values() if c.state.status == "connected" for t in c.state.tools]

    async def wait_started(self, seconds: float | None = None) -> None:
        """Until no server is starting, or `seconds` (MCP_TIMEOUT by default)."""
        if self._settled.is_set():
            return
        wait = self.connect_timeout if seconds is None else seconds
        await asyncio.get_running_loop().run_in_executor(None, self._settled.wait, wait)

    def attach(self, registry: ToolRegistry) -> None:
        """Keep `registry` in step with the servers' tools before each model request."""
        registry.on_refresh(self._refresh)

    async def _refresh(self, registry: ToolRegistry) -> None:
        if not self._waited:
            self._waited = True
            await self.wait_started()
        self.sync(registry)

    def sync(self, registry: ToolRegistry) -> None:
        """Add the tools of connected servers to `registry`, drop the ones no longer offered."""
        if self._reporter is not None and self._reporter_loop is None:
            for line in self.notices():
                self._reporter(line)
        wanted = {tool.name: tool for tool in self.tools()}
        mine = self._registered.setdefault(id(registry), set())
        current = {tool.name: tool for tool in registry if tool.name in mine}
        for name in mine - wanted.keys():
            registry.unregister(name)
        for name, tool in wanted.items():
            if current.get(name) is not tool:
                registry.register(tool)
        self._registered[id(registry)] = set(wanted)

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        """Call `tool` of `server` from any event loop; `McpCallError` when it cannot be done."""
        connection = self._connections.get(server)
        if connection is None:
            raise McpCallError(f"No MCP server named {server}")
        return await self._cross(connection.call(tool, arguments, self.call_timeout))

    # -- prompts and resources ----------------------------------------------------------------------
    def prompts(self) -> list[PromptInfo]:
        """The prompts of the connected servers (each a `/mcp__<server>__<prompt>` command)."""
        return [
            p for c in self._connections.values() if c.state.status == "connected" for p in c.state.prompts
        ]

    def resources(self) -> list[ResourceInfo]:
        return [
            r for c in self._connections.values() if c.state.status == "connected" for r in c.state.resources
        ]

    def server_names(self) -> list[str]:
        return list(self._connections)

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str]) -> Any:
        """`prompts/get`: the SDK's GetPromptResult; `McpCallError` when it cannot be had."""
        connection = self._connection(server)
        return await self._cross(
            connection.request(lambda client: client.get_prompt(name, arguments), name, self.call_timeout)
        )

    async def read_resource(self, server: str, uri: str) -> Any:
        """`resources/read`: the SDK's ReadResourceResult; `McpCallError` when it cannot be had."""
        connection = self._connection(server)
        return await self._cross(
            connection.request(lambda client: client.read_resource(uri), uri, self.call_timeout)
        )

    def _connection(self, server: str) -> Connection:
        connection = self._connections.get(server)
        if connection is None:
            raise McpCallError(f"No MCP server named {server}")
        return connection

    async def _cross(self, work: Coroutine[Any, Any, Any]) -> Any:
        loop = self._loop
        if loop is None or loop.is_closed() or self._stop is None or self._stop.is_set():
            work.close()
            raise McpCallError("The MCP servers have been stopped")
        if loop is asyncio.get_running_loop():
            return await work
        future: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(work, loop)
        return await asyncio.wrap_future(future)  # cancelling this cancels the call on the MCP loop
