"""Test isolation: no test reaches a real API host, and none touches the user's home or state dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import network
from tests.fakes.fake_api import FakeAnthropicAPI

DEAD_URL = "http://127.0.0.1:9"  # the discard port: nothing listens, connections fail at once


def pytest_configure(config: pytest.Config) -> None:
    network.install()


@pytest.fixture(autouse=True)
def _isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fresh HOME and state dir, a dead API URL unless a test points at the fake, proxies that go nowhere
    (so a subprocess cannot reach a real host either), and a check that nothing tried to."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", DEAD_URL)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    for name in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_MODEL", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, DEAD_URL)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    network.escapes.clear()
    yield
    if network.escapes:
        pytest.fail(f"the test tried to reach a real host: {sorted(set(network.escapes))}")


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropicAPI]:
    """The fake Messages API, with ANTHROPIC_BASE_URL pointing at it (for the SDK and subprocesses)."""
    with FakeAnthropicAPI() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        yield fake
        assert not fake.unexpected, f"{len(fake.unexpected)} request(s) beyond the script"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project directory, made the working directory."""
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.chdir(root)
    return root
