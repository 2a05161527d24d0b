"""OAuth for remote MCP servers: when an HTTP or SSE server answers 401 with OAuth metadata, the SDK's
`OAuthClientProvider` registers Piton, and the user authorizes it in a browser; the redirect comes
back to a listener on 127.0.0.1. Tokens (and the registration) are kept per server under Piton's
state directory, readable by the user alone, and reused at the next start.

A server configured with its own `Authorization` header gets no OAuth: the header is the user's
choice of credentials.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from piton.core.mcp.config import ServerConfig

CALLBACK_PATH = "/callback"
AUTH_WAIT_S = 300.0  # how long a start waits for the user to authorize in the browser
_PAGE = b"<html><body><p>Piton is authorized. You can close this window.</p></body></html>"


def wants_oauth(config: ServerConfig) -> bool:
    return config.transport in ("http", "sse") and not any(
        k.lower() == "authorization" for k in config.headers
    )


def token_file(config: ServerConfig, state: Path | None = None) -> Path:
    """One file per server name and URL: a server moved elsewhere is authorized afresh."""
    from piton.core.conversation.session import state_dir
    from piton.core.mcp.tool import normalize

    digest = hashlib.sha256(config.url.encode()).hexdigest()[:12]
    return (state or state_dir()) / "mcp-auth" / f"{normalize(config.name)}-{digest}.json"


class FileTokenStorage:
    """The SDK's `TokenStorage` on one JSON file (mode 0600, in a 0700 folder)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _store(self, key: str, value: Any) -> None:
        data = self._load()
        data[key] = value
        folder = self.path.parent
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(folder, 0o700)
        fd, temp = tempfile.mkstemp(prefix=".auth-", dir=folder)  # created 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out)
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise

    @property
    def port(self) -> int | None:
        port = self._load().get("port")
        return port if isinstance(port, int) else None

    def keep_port(self, port: int) -> None:
        self._store("port", port)

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        raw = self._load().get("tokens")
        return OAuthToken.model_validate(raw) if isinstance(raw, dict) else None

    async def set_tokens(self, tokens: Any) -> None:
        self._store("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._load().get("client")
        return OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None

    async def set_client_info(self, client_info: Any) -> None:
        self._store("client", client_info.model_dump(mode="json", exclude_none=True))


def _free_port(preferred: int | None) -> int:
    """The port of the last authorization (its redirect URI is the one registered), else any."""
    for port in (preferred, 0):
        if port is None:
            continue
        with socket.socket() as probe, contextlib.suppress(OSError):
            probe.bind(("127.0.0.1", port))
            return int(probe.getsockname()[1])
    raise OSError("no free port on 127.0.0.1 for the OAuth redirect")


class Redirect:
    """The listener the browser is sent back to: it takes the first `/callback?code=…&state=…`."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[tuple[str, str | None]] | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def open(self) -> None:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = (await reader.readline()).decode("latin-1").split()
            while (await reader.readline()).strip():
                pass  # the headers say nothing we need
            target = urlsplit(request[1] if len(request) > 1 else "/")
            query = {k: v[0] for k, v in parse_qs(target.query).items()}
            done = target.path == CALLBACK_PATH and ("code" in query or "error" in query)
            status = b"200 OK" if done else b"404 Not Found"
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n")
            writer.write(_PAGE if done else b"")
            await writer.drain()
            if done and self._result is not None and not self._result.done():
                if "code" in query:
                    self._result.set_result((query["code"], query.get("state")))
                else:
                    self._result.set_exception(PermissionError(f"authorization refused: {query['error']}"))
        finally:
            writer.close()

    async def wait(self) -> Any:
        from mcp.client.auth import AuthorizationCodeResult

        assert self._result is not None, "open() first"
        try:
            code, state = await self._result
        finally:
            self.close()
        return AuthorizationCodeResult(code=code, state=state)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None


def client_auth(config: ServerConfig, ask: Callable[[str], None], state: Path | None = None) -> Any:
    """The SDK's OAuth provider for one server (an `httpx2.Auth`); `ask(url)` tells the user where
    to authorize, when the server asks for it."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    storage = FileTokenStorage(token_file(config, state))
    port = _free_port(storage.port)
    redirect = Redirect(port)
    metadata = OAuthClientMetadata(
        client_name="Piton",
        redirect_uris=[redirect.uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )

    async def send_user(url: str) -> None:
        storage.keep_port(port)
        await redirect.open()
        ask(url)

    return OAuthClientProvider(
        server_url=config.url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=send_user,
        callback_handler=redirect.wait,
    )
