"""Ctrl-O pages the transcript through a program Piton runs outside the sandbox. A `less` planted
in the project (an activated `.venv/bin` comes first on PATH) or a $PAGER pointing into it must not
be that program."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from piton.cli.transcript_view import pager_command


def plant(folder: Path) -> Path:
    folder.mkdir(parents=True)
    planted = folder / "less"
    planted.write_text('#!/bin/sh\ntouch "$HOME/pwned"\n')
    planted.chmod(0o755)
    return planted


def test_a_less_planted_first_on_path_is_not_the_pager(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    planted = plant(project / ".venv" / "bin")
    monkeypatch.setenv("PATH", f"{planted.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("PAGER", raising=False)
    command = pager_command(project)
    assert command is not None, "the system's less is missing (CI installs it)"
    assert command[0] in ("/usr/bin/less", "/bin/less", "/usr/local/bin/less")


def test_a_pager_inside_the_project_is_refused_and_the_users_own_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    planted = plant(project / "tools")
    monkeypatch.setenv("PAGER", str(planted))
    command = pager_command(project)
    assert command is not None and not command[0].startswith(str(project))
    monkeypatch.setenv("PAGER", "less -S")  # by name: it would be looked up on PATH
    command = pager_command(project)
    assert command is not None and command[0] != "less"
    mine = plant(tmp_path / "bin")
    monkeypatch.setenv("PAGER", f"{mine} -R")
    assert pager_command(project) == [str(mine), "-R"]


def test_an_editor_in_the_project_is_never_the_one_memory_edit_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from piton.cli.memory_edit import editor_command

    project = tmp_path / "project"
    planted = plant(project / ".venv" / "bin")  # named `less`; as an editor all the same
    monkeypatch.setenv("EDITOR", str(planted))
    monkeypatch.delenv("VISUAL", raising=False)
    command = editor_command([project])
    assert command is None or not Path(command[0]).resolve().is_relative_to(project.resolve())
    monkeypatch.setenv("EDITOR", "less")  # a name: looked up on PATH, the project's folders skipped
    monkeypatch.setenv("PATH", f"{planted.parent}{os.pathsep}{os.environ['PATH']}")
    command = editor_command([project])
    assert command is None or not Path(command[0]).resolve().is_relative_to(project.resolve())
