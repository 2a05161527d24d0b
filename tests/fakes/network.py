"""A guard that makes any attempt to reach a host other than this machine fail (and be noticed)."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

from typing_extensions import Buffer

escapes: list[str] = []  # hosts something tried to reach; the test fixture fails the test on any
_real_getaddrinfo = socket.getaddrinfo
_real_connect = socket.socket.connect


def is_local(host: Any) -> bool:
    if host in (None, "localhost", ""):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if not is_local(host):
        escapes.append(str(host))
        raise OSError(f"tests may not resolve {host}: only the fake API on 127.0.0.1 is reachable")
    return _real_getaddrinfo(host, *args, **kwargs)


def _guarded_connect(self: socket.SocketType, address: tuple[Any, ...] | str | Buffer) -> None:
    inet = self.family in (socket.AF_INET, socket.AF_INET6)
    if inet and isinstance(address, tuple) and not is_local(address[0]):
        escapes.append(str(address[0]))
        raise OSError(f"tests may not connect to {address[0]}: only the fake API on 127.0.0.1 is reachable")
    return _real_connect(self, address)


def install() -> None:
    socket.getaddrinfo = _guarded_getaddrinfo
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]  # patched on purpose
