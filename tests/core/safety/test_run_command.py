"""The command orchestrator carries a plan out: which sandbox, the lock, the guard, where it starts.

The session here is a plain object that meets the orchestrator's protocols (as `ToolContext` and
`BackgroundShells` do), and sandboxes are made by a stand-in that runs commands unconfined, so
that what the orchestrator itself does shows without bubblewrap: the Bash tests run the same path in
the real sandbox.
"""

from __future__ import annotations

import asyncio
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from piton.core.safety.lasting import GuardError
from piton.core.safety.lock import CommandLock
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.run_command import CommandRunner, Ran, Refused, Started
from piton.core.safety.sandbox import NoSandbox, Sandbox, Unavailable

if TYPE_CHECKING:
    from piton.core.safety.policy import SandboxMode


@dataclass
class FakeShells:
    """Records what it was asked to leave running; fails as told."""

    lock: CommandLock
    fail: BaseException | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    lock_was_free: list[bool] = field(default_factory=list)

    async def start(
        self,
        command: str,
        *,
        cwd: Path,
        sandbox: Sandbox,
        policy: SandboxPolicy,
        description: str = "",
        timeout_s: float | None = None,
    ) -> str:
        self.lock_was_free.append(await _gets_in(self.lock, exclusive=False))
        if self.fail is not None:
            raise self.fail
        self.calls.append(
            {"command": command, "cwd": cwd, "sandbox": sandbox, "policy": policy, "timeout_s": timeout_s}
        )
        return f"shell {len(self.calls)}: {description}"


@dataclass
class Session:
    lock: CommandLock = field(default_factory=CommandLock)
    sandbox: Sandbox | None = None
    state: dict[str, Any] = field(default_factory=dict)
    shells: FakeShells = field(init=False)

    def __post_init__(self) -> None:
        self.shells = FakeShells(self.lock)


@dataclass
class Maker:
    """Makes unconfined sandboxes (or ones that cannot start) and remembers for which policies."""

    unavailable: str | None = None
    made: list[SandboxPolicy] = field(default_factory=list)

    def __call__(self, policy: SandboxPolicy) -> Sandbox:
        self.made.append(policy)
        return Unavailable(self.unavailable) if self.unavailable else NoSandbox(policy)


async def _gets_in(lock: CommandLock, *, exclusive: bool, within_s: float = 0.1) -> bool:
    """Whether `lock` can be taken (shared or exclusively) within `within_s`."""
    try:
        async with asyncio.timeout(within_s):
            async with lock.exclusive() if exclusive else lock.shared():
                return True
    except TimeoutError:
        return False


def runner(
    workspace: Path, mode: SandboxMode = "workspace-write"
) -> tuple[CommandRunner[str], Session, Maker]:
    session, maker = Session(), Maker()
    policy = SandboxPolicy.create(mode, workspace)
    return CommandRunner(session, policy, make=maker), session, maker


def ran(outcome: Ran | Refused) -> Ran:
    assert isinstance(outcome, Ran), outcome
    return outcome


def test_each_sandbox_is_made_once_from_the_policy_its_plan_names(tmp_path: Path) -> None:
    run, session, maker = runner(tmp_path)

    async def go() -> None:
        for command in ("ls", "touch a", "ls", "touch b"):
            ran(await run.run(command, timeout_s=10))

    asyncio.run(go())
    assert [p.mode for p in maker.made] == ["read-only", "workspace-write"]
    assert isinstance(session.sandbox, NoSandbox) and session.sandbox.policy is maker.made[1]


def test_a_sandbox_that_cannot_start_refuses_with_its_reason_and_nothing_runs(tmp_path: Path) -> None:
    run, session, maker = runner(tmp_path)
    maker.unavailable = "no bubblewrap here"

    async def go() -> tuple[Ran | Refused, Started[str] | Refused]:
        return await run.run("touch ran", timeout_s=10), await run.start("touch ran", timeout_s=None)

    assert asyncio.run(go()) == (Refused("no sandbox", "no bubblewrap here"),) * 2
    assert not (tmp_path / "ran").exists() and session.shells.calls == []


@pytest.mark.parametrize(("command", "shared"), [("sleep 0.6", True), ("sleep 0.6 && touch x", False)])
def test_the_lock_is_held_while_a_command_runs_and_shared_only_by_lookers(
    tmp_path: Path, command: str, shared: bool
) -> None:
    run, session, _ = runner(tmp_path)

    async def go() -> tuple[bool, bool]:
        task = asyncio.create_task(run.run(command, timeout_s=10))
        await asyncio.sleep(0.2)
        seen = await _gets_in(session.lock, exclusive=False), await _gets_in(session.lock, exclusive=True)
        ran(await task)
        return seen

    assert asyncio.run(go()) == (shared, False)


def test_the_guard_puts_back_what_a_command_changed_whatever_the_sandbox_let_through(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    config, settings = tmp_path / ".git" / "config", tmp_path / ".claude" / "settings.json"
    was = config.read_bytes()
    run, _, _ = runner(tmp_path)  # an unconfined stand-in: the writes themselves succeed
    command = f"printf '[core]\\n\\tfsmonitor = evil\\n' > {config}; mkdir .claude; echo '{{}}' > {settings}"
    outcome = ran(asyncio.run(run.run(command, timeout_s=10)))
    assert config.read_bytes() == was and not settings.exists()
    assert [n for n in outcome.notes if str(config) in n or str(settings) in n] != []


def test_the_next_command_starts_where_the_last_ended_within_the_roots(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    run, _, _ = runner(tmp_path)

    async def go() -> list[Ran]:
        return [ran(await run.run(c, timeout_s=10)) for c in ("cd sub", "pwd", "cd /", "pwd", "cd sub")]

    root = tmp_path.resolve()
    _, inside, out, back, _ = asyncio.run(go())
    assert inside.result.output.strip() == str(root / "sub")
    assert any("was reset to" in note for note in out.notes)
    assert back.result.output.strip() == str(root)
    (tmp_path / "sub").rmdir()
    gone = ran(asyncio.run(run.run("pwd", timeout_s=10)))
    assert gone.result.output.strip() == str(root) and "is gone" in gone.notes[0]


def test_a_command_left_running_is_started_alone_in_its_lasting_sandbox(tmp_path: Path) -> None:
    run, session, maker = runner(tmp_path)

    async def go() -> list[Started[str] | Refused]:
        return [
            await run.start("npm run dev", timeout_s=5.0, description="dev server"),
            await run.start("npm run watch", timeout_s=None),
            await run.start("tail -f log", timeout_s=None),
        ]

    first, second, third = asyncio.run(go())
    assert first == Started("shell 1: dev server", ()) and isinstance(second, Started)
    assert isinstance(third, Started)
    assert [(p.mode, p.lasting) for p in maker.made] == [("workspace-write", True), ("read-only", False)]
    dev, watch, tail = session.shells.calls
    assert dev["sandbox"] is watch["sandbox"] is not tail["sandbox"]
    assert (dev["policy"], dev["cwd"], dev["timeout_s"]) == (maker.made[0], tmp_path, 5.0)
    assert session.shells.lock_was_free == [False] * 3  # the orchestrator held the lock throughout


@pytest.mark.parametrize(
    ("error", "cause"),
    [(GuardError("a folder is a symbolic link"), "not held"), (OSError("no such file"), "not started")],
)
def test_a_command_that_cannot_be_left_running_is_refused_with_why(
    tmp_path: Path, error: BaseException, cause: Literal["not held", "not started"]
) -> None:
    run, session, _ = runner(tmp_path)
    session.shells.fail = error
    outcome = asyncio.run(run.start("npm run dev", timeout_s=None))
    assert outcome == Refused(cause, str(error))
