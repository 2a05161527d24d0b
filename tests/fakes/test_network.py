"""The guard that keeps tests away from real hosts."""

from __future__ import annotations

import socket

import pytest

from tests.fakes import network


def test_resolving_a_real_host_fails_and_is_recorded() -> None:
    with pytest.raises(OSError, match=r"may not resolve example\.com"):
        socket.getaddrinfo("example.com", 443)
    assert network.escapes == ["example.com"]
    network.escapes.clear()  # seen and expected here; the fixture would fail the test otherwise


def test_connecting_to_a_real_address_fails() -> None:
    with socket.socket() as s, pytest.raises(OSError, match=r"may not connect to 160\.79\.104\.10"):
        s.connect(("160.79.104.10", 443))
    network.escapes.clear()


def test_the_sdk_cannot_reach_the_real_api_from_a_test(monkeypatch: pytest.MonkeyPatch) -> None:
    import anthropic  # here, not at the top: collecting the suite need not pay for the SDK

    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    client = anthropic.Anthropic(api_key="test-key", max_retries=0)
    with pytest.raises(anthropic.APIConnectionError):
        client.messages.create(
            model="claude-sonnet-5-5", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        )
    network.escapes.clear()


def test_loopback_stays_reachable() -> None:
    assert network.is_local("127.0.0.1") and network.is_local("::1") and network.is_local("localhost")
    assert not network.is_local("example.com")
