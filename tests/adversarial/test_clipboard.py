"""Ctrl-V runs a clipboard program outside the sandbox. One planted in the project (an activated
`.venv/bin` comes first on PATH), or reached through a relative PATH entry, must never be that program;
the user's own, elsewhere on PATH, is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from piton.cli.clipboard import ClipboardError, find_program, read_image
from tests.fakes.images import png

PNG = png()


def plant(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "xclip"
    program.write_text("#!/bin/sh\n" + body)
    program.chmod(0o755)
    return program


def test_an_xclip_planted_in_the_project_never_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    marker = tmp_path / "pwned"
    planted = plant(project / ".venv" / "bin", f'touch "{marker}"\n')
    monkeypatch.chdir(project)
    env = {"PATH": f"{planted.parent}{os.pathsep}.venv/bin{os.pathsep}/nonexistent", "DISPLAY": ":0"}
    assert find_program("xclip", [project], env) is None
    with pytest.raises(ClipboardError, match="no clipboard program found"):
        read_image([project], env)
    assert not marker.exists()


def test_a_link_out_of_the_project_does_not_launder_a_planted_program(tmp_path: Path) -> None:
    project = tmp_path / "project"
    planted = plant(project / "tools", "exit 0\n")
    outside = tmp_path / "bin"
    outside.mkdir()
    (outside / "xclip").symlink_to(planted)  # the entry is outside; the program it names is not
    assert find_program("xclip", [project], {"PATH": str(outside)}) is None


def test_the_users_own_program_reads_the_image(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    image = tmp_path / "clip.png"
    image.write_bytes(PNG)
    own = plant(
        tmp_path / "bin",
        f'case "$*" in *TARGETS*) echo TARGETS; echo image/png ;; *image/png*) cat "{image}" ;; esac\n',
    )
    env = {"PATH": f"{project}{os.pathsep}{own.parent}", "DISPLAY": ":0"}
    assert find_program("xclip", [project], env) == str(own)
    assert read_image([project], env) == PNG
