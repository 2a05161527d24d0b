"""Fetching one web page for the model, from Piton's own process (the sandbox's network stays off).

The host is resolved once and the connection goes to the address that was checked (TLS still
verifies the host's certificate, by name): a name that resolves to a public address when checked
and to 127.0.0.1 when used cannot reach the machine's own services. Private, loopback, link-local
and other non-public addresses are refused unless `allow_private(host)` says a rule names the host.
`http://` becomes `https://` for public hosts. Redirects are followed on the same host only; one to
another host is returned, for the model to fetch (and be allowed) on its own.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit, urlunsplit

from piton.core.records import record

if TYPE_CHECKING:
    import httpx2

MAX_BYTES = 10 * 1024 * 1024  # of a response body; the rest is not read
MAX_REDIRECTS = 10
TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 10.0
_REDIRECTS = (301, 302, 303, 307, 308)


class FetchError(Exception):
    """The page could not be fetched; the message says why, in one line."""


@record(frozen=True)
class Page:
    url: str  # where the content came from, after same-host redirects
    status: int
    content_type: str
    body: bytes
    truncated: bool = False  # the body was over MAX_BYTES
    redirect: str | None = None  # a redirect to another host, not followed


_EMBEDDING = tuple(  # IPv6 prefixes whose addresses carry an IPv4 address in their last 32 bits
    ipaddress.ip_network(n) for n in ("64:ff9b::/96", "64:ff9b:1::/48", "::/96")
)
_SITE_LOCAL = ipaddress.ip_network("fec0::/10")


def _public(address: str) -> bool:
    """Whether `address` is on the public internet, judging an IPv6 address that carries an IPv4 one
    (mapped, NAT64, 6to4, Teredo, IPv4-compatible) by the IPv4 address it leads to."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _SITE_LOCAL:
            return False
        carried = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if carried is None and any(ip in net for net in _EMBEDDING):
            carried = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if carried is not None and not _public(str(carried)):
            return False
    return ip.is_global and not ip.is_multicast


def _proxy_note() -> str:
    """Said when a connection fails on a machine that sets a proxy: WebFetch does not use it."""
    import os

    names = [
        n
        for n in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")
        if os.environ.get(n)
    ]
    return f" (WebFetch connects directly and does not use the proxy in {names[0]})" if names else ""


async def _resolve(host: str, port: int) -> list[str]:
    try:
        return [str(ipaddress.ip_address(host.strip("[]")))]  # an address already: nothing to look up
    except ValueError:
        pass
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise FetchError(f"cannot resolve {host} ({e.strerror or e})") from e
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _split(url: str) -> tuple[str, str, int, str]:
    """Scheme, host, port and the rest (path and query) of an absolute http(s) URL."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(f"not an http or https URL: {url[:200]}")
    if parts.username or parts.password:
        raise FetchError("a URL with a user name or password in it is not fetched")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as e:
        raise FetchError(f"a bad port in {url[:200]}") from e
    rest = urlunsplit(("", "", parts.path or "/", parts.query, ""))
    return parts.scheme, parts.hostname.lower(), port, rest


async def fetch(
    url: str,
    *,
    allow_private: Callable[[str], bool],
    user_agent: str,
    wait_s: float = TIMEOUT_S,
    max_bytes: int = MAX_BYTES,
) -> Page:
    """The page at `url`. FetchError, in one line, when it cannot be fetched or may not be."""
    import httpx2

    from piton.core import tls

    first_host = _split(url)[1]
    try:
        verify = tls.trusted()  # for http too: a redirect may lead to https
    except tls.CertificatesError as e:
        raise FetchError(str(e)) from e
    async with httpx2.AsyncClient(
        follow_redirects=False,
        verify=verify,
        trust_env=False,  # a proxy would resolve the name again, past the address check
        timeout=httpx2.Timeout(wait_s, connect=CONNECT_TIMEOUT_S),
    ) as client:
        for _ in range(MAX_REDIRECTS + 1):
            scheme, host, port, rest = _split(url)
            if host != first_host:
                return Page(url, 0, "", b"", redirect=url)
            addresses = await _resolve(host, port)
            private = [a for a in addresses if not _public(a)]
            if private and not allow_private(host):
                raise FetchError(
                    f"{host} resolves to {private[0]}, a private or local address; a permission rule "
                    f"WebFetch(domain:{host}) allows it"
                )
            named = f"[{host}]" if ":" in host else host
            if scheme == "http" and not private and port == 80:  # a server on another port may not speak TLS
                scheme, port = "https", 443
                url = urlunsplit(("https", named, *urlsplit(url)[2:]))
            target = _Target(scheme, host, port, rest, user_agent, wait_s)
            response = await _send(client, target, addresses)
            try:
                if response.status_code in _REDIRECTS and "location" in response.headers:
                    url = urljoin(url, response.headers["location"])
                    continue
                body, truncated = await _read(response, max_bytes, host, wait_s)
            finally:
                await response.aclose()
            return Page(url, response.status_code, response.headers.get("content-type", ""), body, truncated)
    raise FetchError(f"more than {MAX_REDIRECTS} redirects")


@record(frozen=True)
class _Target:
    """Where one request goes, by name: the addresses it is sent to were checked for that name."""

    scheme: str
    host: str
    port: int
    rest: str  # path and query
    user_agent: str
    wait_s: float


async def _send(client: httpx2.AsyncClient, target: _Target, addresses: list[str]) -> httpx2.Response:
    """The response (streamed, to be closed) from the first of the checked `addresses` that can be
    reached, asked for the host by name (the Host header, and the TLS server name and certificate)."""
    import httpx2

    named = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.scheme == "https" else 80
    host_header = named if target.port == default else f"{named}:{target.port}"
    for address in addresses:  # each checked address in turn: one may be unreachable from here
        literal = f"[{address}]" if ":" in address else address
        request = client.build_request(
            "GET",
            f"{target.scheme}://{literal}:{target.port}{target.rest}",
            headers={
                "Host": host_header,
                "User-Agent": target.user_agent,
                "Accept": "text/html, text/markdown, text/plain, application/pdf;q=0.9, */*;q=0.5",
            },
            extensions={"sni_hostname": target.host} if target.scheme == "https" else {},
        )
        try:
            return await client.send(request, stream=True)
        except httpx2.ConnectError as e:
            if address == addresses[-1]:
                raise FetchError(f"cannot connect to {target.host}: {e}{_proxy_note()}") from e
        except httpx2.TimeoutException as e:
            raise FetchError(f"{target.host} did not answer within {target.wait_s:g} s{_proxy_note()}") from e
        except httpx2.HTTPError as e:
            raise FetchError(f"cannot fetch {target.host}: {e}{_proxy_note()}") from e
    raise FetchError(f"cannot connect to {target.host}: no address to try")


async def _read(response: httpx2.Response, max_bytes: int, host: str, wait_s: float) -> tuple[bytes, bool]:
    import httpx2

    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                return b"".join(chunks)[:max_bytes], True
    except httpx2.TimeoutException as e:
        raise FetchError(f"{host} stopped sending for {wait_s:g} s") from e
    except httpx2.HTTPError as e:
        raise FetchError(f"the answer from {host} broke off: {e}") from e
    return b"".join(chunks), False
