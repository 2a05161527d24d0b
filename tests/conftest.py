"""Test isolation: no test reaches a real API host, and none touches the user's home or state dir.

Tests marked `sandbox` need a working bubblewrap sandbox (Linux). Where it cannot start, they fail
at once with the one line that says why and how to install it, never skip, and the run ends with
that line once more.
"""

from __future__ import annotations

import compileall
import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from piton.testing.bytecode import compile_package
from tests.fakes import network
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import DEAD_URL


def pytest_configure(config: pytest.Config) -> None:
    network.install()
    # Where PYTHONDONTWRITEBYTECODE is set (CI machines often set it), every run would rewrite and
    # compile each test module again in each worker, and each `piton` a test starts would compile
    # Piton: half the collection's time. The bytecode goes to __pycache__, as anywhere else.
    sys.dont_write_bytecode = False
    # A run started in the background (a non-interactive shell's `&`, some CI runners) inherits
    # SIGINT and SIGQUIT ignored, and so would every process a test starts: a Ctrl-C test would then
    # test nothing. Tests start their processes as a terminal's foreground would.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    if not hasattr(config, "workerinput"):  # once per run, in the process that starts the workers
        compile_package()
        compileall.compile_dir(Path(__file__).parent, quiet=2, workers=0)  # for the helper processes
    config.addinivalue_line("markers", "sandbox: needs a working shell sandbox (bubblewrap on Linux)")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: half as many workers again as cores. A quarter of the suite's time is spent
    waiting on the processes tests start (`piton`, MCP servers, sandboxes), which another worker
    can fill."""
    return max(2, (os.cpu_count() or 1) * 3 // 2)


@cache
def sandbox_problem() -> str | None:
    """Why the shell sandbox cannot start on this machine, in Piton's own words; None when it can."""
    if not sys.platform.startswith("linux"):
        return None
    from piton.core.safety.policy import SandboxPolicy
    from piton.core.safety.sandbox.bwrap import BwrapSandbox

    with tempfile.TemporaryDirectory() as workspace:
        return BwrapSandbox(SandboxPolicy.create("workspace-write", Path(workspace))).unavailable_reason()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("sandbox") is not None and (problem := sandbox_problem()) is not None:
        pytest.fail(f"needs the sandbox: {problem}", pytrace=False)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    reports = [*terminalreporter.stats.get("failed", []), *terminalreporter.stats.get("error", [])]
    count = sum("needs the sandbox:" in str(getattr(r, "longrepr", "")) for r in reports)
    if count:
        terminalreporter.section("sandbox", sep="=", red=True, bold=True)
        terminalreporter.line(f"{count} tests need the shell sandbox, which cannot start here:")
        terminalreporter.line(f"  {sandbox_problem()}")


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
    for name in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_MODEL", "NO_COLOR", "CLAUDE_CONFIG_DIR", "IS_SANDBOX"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, DEAD_URL)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    # scripted replies call every tool directly, as a model that was sent every definition would;
    # tool search's own tests (tests/cli/test_tool_search.py) run with the default, which defers
    monkeypatch.setenv("ENABLE_TOOL_SEARCH", "false")
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
