"""Which credential locations each command's sandbox hides: looked at per folder holding them, yet a
location made, removed or changed in kind between two commands (at once, in the same clock tick) is
seen by the next one."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.sandbox.bwrap import BwrapSandbox
from piton.core.safety.sandbox.hidden import Present
from piton.core.safety.shell import run_shell

SECRET = "aws_secret_access_key = hidden-from-commands"


def test_locations_made_removed_or_changed_in_kind_are_seen_at_once(tmp_path: Path) -> None:
    home, config = tmp_path / "home", tmp_path / "home" / ".config"
    home.mkdir()
    targets = [str(home / ".aws"), str(home / ".netrc"), str(config / "gh"), str(tmp_path / "gone" / "x")]
    present = Present(targets)
    assert present() == []
    (home / ".aws").mkdir()
    (home / ".netrc").write_text("machine x password y\n")
    assert present() == [(str(home / ".aws"), True), (str(home / ".netrc"), False)]
    (config / "gh").mkdir(parents=True)  # its folder did not exist before
    assert (str(config / "gh"), True) in present()
    shutil.rmtree(home / ".aws")
    (home / ".aws").write_text("now a file\n")
    (home / ".netrc").unlink()
    assert present() == [(str(home / ".aws"), False), (str(config / "gh"), True)]


def test_a_locations_order_is_kept(tmp_path: Path) -> None:
    """Mounts go in the order of the locations (a folder's hiding before what shows through it)."""
    names = ["b", "a", "c"]
    for name in names:
        (tmp_path / name).mkdir()
    assert [t for t, _ in Present([str(tmp_path / n) for n in names])()] == [str(tmp_path / n) for n in names]


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home outside /tmp (the sandbox has a /tmp of its own: one there would not even show)."""
    root = Path(tempfile.mkdtemp(prefix="piton-home-", dir="/var/tmp"))
    monkeypatch.setenv("HOME", str(root))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.sandbox
def test_a_credential_made_between_two_commands_is_hidden_from_the_second(home: Path) -> None:
    ws = home / "ws"
    ws.mkdir()
    sandbox = BwrapSandbox(SandboxPolicy.create("workspace-write", ws))
    assert sandbox.unavailable_reason() is None

    def run(command: str) -> str:
        return asyncio.run(run_shell(command, cwd=ws, sandbox=sandbox, timeout_s=20)).output

    assert "No such file" in run("cat ~/.aws/credentials ~/.netrc")
    assert "visible" in run("echo visible > ~/ws/seen; cat ~/ws/seen")  # the home shows in the sandbox
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(SECRET + "\n")
    (home / ".netrc").write_text(SECRET + "\n")
    out = run("cat ~/.aws/credentials ~/.netrc; ls -a ~/.aws")
    assert SECRET not in out, out
