"""The protocol's requests, answered by Piton: `initialize` (what it can do, how it authenticates),
sessions (new, load with their history, list, close), modes, prompts and cancels. Each session is
a Piton session in the editor's folder, with the editor's MCP servers beside the user's and the
project's, and the editor answering the permission questions."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import PROTOCOL_VERSION, RequestError, schema

from piton.acp.approver import EditorApprover
from piton.acp.session import EditorSession
from piton.core.records import record

if TYPE_CHECKING:
    from acp.interfaces import Client

    from piton.acp.prompt import Block
    from piton.core.options import RunOptions

log = logging.getLogger("piton.acp")
API_KEY_METHOD = "anthropic-api-key"
McpServer = schema.HttpMcpServer | schema.SseMcpServer | schema.McpServerStdio | schema.AcpMcpServer


@record
class AgentOptions:
    model: str | None = None
    permission_mode: str | None = None


class PitonAgent:
    def __init__(self, options: AgentOptions) -> None:
        self.options = options
        self.sessions: dict[str, EditorSession] = {}
        self._client: Client | None = None
        self.capabilities = schema.ClientCapabilities()
        self._told: set[asyncio.Task[None]] = set()  # updates sent after an answer (kept from the GC)

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RequestError.internal_error({"reason": "no editor is connected"})
        return self._client

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: schema.ClientCapabilities | None = None,
        client_info: schema.Implementation | None = None,
        **kwargs: Any,
    ) -> schema.InitializeResponse:
        from piton.core.version import __version__

        self.capabilities = client_capabilities or schema.ClientCapabilities()
        if client_info is not None:
            log.info("editor: %s %s", client_info.name, client_info.version)
        return schema.InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_info=schema.Implementation(name="piton", title="Piton", version=__version__),
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                prompt_capabilities=schema.PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=schema.McpCapabilities(http=True, sse=True),
                session_capabilities=schema.SessionCapabilities(list=schema.SessionListCapabilities()),
            ),
            auth_methods=[
                schema.EnvVarAuthMethod(
                    type="env_var",
                    id=API_KEY_METHOD,
                    name="Anthropic API key",
                    description="Set ANTHROPIC_API_KEY in the environment the editor starts Piton with",
                    vars=[schema.AuthEnvVar(name="ANTHROPIC_API_KEY", label="API key", secret=True)],
                    link="https://console.anthropic.com/settings/keys",
                )
            ],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> schema.AuthenticateResponse | None:
        if method_id != API_KEY_METHOD:
            raise RequestError.invalid_params(
                {"methodId": method_id, "reason": "not an authentication method of Piton's"}
            )
        _require_credentials(self.options.model)
        return schema.AuthenticateResponse()

    # -- sessions ----------------------------------------------------------------------------------

    async def new_session(
        self, cwd: str, mcp_servers: list[McpServer] | None = None, **kwargs: Any
    ) -> schema.NewSessionResponse:
        session = await self._open(cwd, mcp_servers or [], resume=None)
        return schema.NewSessionResponse(session_id=session.session_id, modes=session.modes())

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[McpServer] | None = None, **kwargs: Any
    ) -> schema.LoadSessionResponse:
        if (open_now := self.sessions.pop(session_id, None)) is not None:
            await open_now.close()  # reopened: the one log has one writer
        session = await self._open(cwd, mcp_servers or [], resume=session_id)
        return schema.LoadSessionResponse(modes=session.modes())

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> schema.ListSessionsResponse:
        from piton.core.conversation.session import SessionStore

        where = Path(cwd) if cwd else Path.cwd()
        found = [
            schema.SessionInfo(
                session_id=s.session_id,
                cwd=str(where),
                title=(s.first_prompt[:80] or None),
                updated_at=datetime.fromtimestamp(s.modified, UTC).isoformat(),
            )
            for s in SessionStore().recent(where, limit=100)
        ]
        return schema.ListSessionsResponse(sessions=found)

    async def close_session(self, session_id: str, **kwargs: Any) -> schema.CloseSessionResponse | None:
        if (session := self.sessions.pop(session_id, None)) is not None:
            await session.close()
        return schema.CloseSessionResponse()

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> schema.SetSessionModeResponse | None:
        self._session(session_id).set_mode(mode_id)
        return schema.SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[Block], **kwargs: Any) -> schema.PromptResponse:
        return await self._session(session_id).prompt(prompt)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        if (session := self.sessions.get(session_id)) is not None:
            session.cancel()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.debug("ignored the notification %s", method)

    async def close(self) -> None:
        """The editor went away: every session ends as the terminal's do (shells, hooks, the log)."""
        sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            try:
                await session.close()
            except Exception as e:  # one session's failure must not leave the others open
                log.warning("a session did not close cleanly: %s", e)

    def _session(self, session_id: str) -> EditorSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": session_id, "reason": "no such session is open"})
        return session

    async def _open(self, cwd: str, servers: list[McpServer], resume: str | None) -> EditorSession:
        from piton.core.conversation.session import SessionError
        from piton.core.providers import ProviderError
        from piton.runtime import Parts, SetupError
        from piton.session import Session
        from piton.starting import default_provider

        folder = Path(cwd)
        if not folder.is_absolute() or not os.path.isdir(folder):  # noqa: ASYNC240 (one stat)
            raise RequestError.invalid_params({"cwd": cwd, "reason": "not an absolute path to a folder"})
        options = self._run_options(folder, servers, resume)
        approver = EditorApprover(self.client, "", folder)
        try:
            provider = default_provider(options)
            provider.check()
            parts = Parts(approver=approver)
            session = Session.open(
                options, provider, parts=parts, report=_report, loop=asyncio.get_running_loop()
            )
        except ProviderError as e:
            if e.kind == "config":
                raise RequestError.auth_required({"reason": str(e), "methodId": API_KEY_METHOD}) from None
            raise RequestError.internal_error({"reason": str(e)}) from None
        except (SessionError, SetupError) as e:
            raise RequestError.invalid_params({"reason": str(e)}) from None
        approver.session_id, approver.gate = session.session_id, session.agent.gate
        editor = EditorSession(self.client, session, folder)
        try:
            for shown in await session.start():
                log.info("%s", getattr(shown, "text", shown))
            if resume is not None:  # the history goes before the answer, as the protocol asks
                await editor.opened(replay=True)
        except BaseException:  # a session the editor never learns of must not stay open
            await editor.close()
            raise
        self.sessions[session.session_id] = editor
        if resume is None:  # told after the answer: the editor knows the session only once it has its id
            task = asyncio.get_running_loop().create_task(_after_answer(editor.opened(replay=False)))
            self._told.add(task)
            task.add_done_callback(self._told.discard)
        return editor

    def _run_options(self, folder: Path, servers: list[McpServer], resume: str | None) -> RunOptions:
        from piton.core.options import RunOptions
        from piton.core.project.claude_home import machine_is_sandbox

        config = [json.dumps({"mcpServers": _servers(servers)})] if servers else []
        return RunOptions(
            cwd=folder,
            model=self.options.model,
            permission_mode=self.options.permission_mode,
            resume=resume,
            if_busy="refuse",  # another piton writes it: `session/load` cannot hand the editor a new id
            mcp_config=config,
            machine_is_sandbox=machine_is_sandbox(),
        )


def _servers(servers: list[McpServer]) -> dict[str, dict[str, Any]]:
    """The editor's MCP servers in the settings' shape: they join the user's and the project's as
    servers named on the command line do (the user configured them in the editor)."""
    out: dict[str, dict[str, Any]] = {}
    for server in servers:
        if isinstance(server, schema.McpServerStdio):
            env = {v.name: v.value for v in server.env}
            out[server.name] = {"command": server.command, "args": list(server.args), "env": env}
        elif isinstance(server, schema.HttpMcpServer | schema.SseMcpServer):
            headers = {h.name: h.value for h in server.headers}
            out[server.name] = {"type": server.type, "url": server.url, "headers": headers}
        else:
            log.warning(
                "the MCP server %s is reached through the editor, which Piton does not do", server.name
            )
    return out


def _require_credentials(model: str | None) -> None:
    """Anthropic's credentials, unless the model is served elsewhere (`ollama:…` needs no key)."""
    from piton.core.providers.credentials import NO_API_KEY, credential_source
    from piton.core.providers.route import needs_anthropic

    if needs_anthropic(model) and credential_source() is None:
        raise RequestError.auth_required({"reason": NO_API_KEY, "methodId": API_KEY_METHOD})


async def _after_answer(telling: Awaitable[None]) -> None:
    await asyncio.sleep(0)  # the answer is written first
    try:
        await telling
    except Exception as e:  # the editor went away meanwhile
        log.info("could not tell the editor about its new session: %s", e)


def _report(line: str) -> None:
    log.warning("%s", line)
