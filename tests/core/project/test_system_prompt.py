from __future__ import annotations

import os
import platform
import subprocess
from datetime import date
from importlib.resources import files
from pathlib import Path

import pytest

from piton.core.project.system_prompt import build_system_prompt, git_summary


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_the_template_ships_as_package_data() -> None:
    template = files("piton.core").joinpath("prompts/system.md").read_text(encoding="utf-8")
    assert "$cwd" in template and "$git_status" in template


def test_prompt_names_piton_the_directory_platform_and_date(tmp_path: Path) -> None:
    text = build_system_prompt(tmp_path, today=date(2026, 11, 21))
    assert text.startswith("You are Piton")
    assert f"Working directory: {tmp_path}" in text
    assert f"Platform: {platform.system()}" in text
    assert "Date: 2026-11-21" in text
    assert "Not a git repository." in text
    assert "$" not in text.split("# Environment")[1]  # every placeholder filled


def test_git_status_summary_shows_branch_changes_and_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "trunk")
    git(
        tmp_path,
        "-c",
        "user.email=a@b",
        "-c",
        "user.name=A",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "first commit",
    )
    (tmp_path / "new.py").write_text("x = 1\n")
    summary = git_summary(tmp_path)
    assert "Branch: trunk" in summary
    assert "?? new.py" in summary
    assert "first commit" in summary


def test_git_starts_only_where_a_repository_may_be(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir, started = tmp_path / "bin", tmp_path / "started"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f'#!/bin/sh\necho "$PWD" >> {started}\nexit 128\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    plain, inner = tmp_path / "plain", tmp_path / "repo" / "src"
    plain.mkdir()
    inner.mkdir(parents=True)
    (tmp_path / "repo" / ".git").write_text("gitdir: /elsewhere\n")  # a worktree's .git is a file
    assert git_summary(plain) == "Not a git repository."
    assert not started.exists()
    assert git_summary(inner) == "Not a git repository."  # git ran, and found none
    assert started.read_text().split() == [str(inner)]
    (tmp_path / "into-repo").symlink_to(inner)  # no .git above the link's own name
    git_summary(tmp_path / "into-repo")
    assert len(started.read_text().split()) == 2
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    git_summary(plain)
    assert started.read_text().split()[::2] == [str(inner), str(plain)]


def test_long_change_lists_are_capped(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    for i in range(60):
        (tmp_path / f"f{i:02}.txt").write_text("x")
    summary = git_summary(tmp_path)
    assert "... and 20 more" in summary
    assert summary.count("?? f") == 40


def test_appended_text_comes_last(tmp_path: Path) -> None:
    text = build_system_prompt(tmp_path, append="Always answer in French.")
    assert text.endswith("\n\nAlways answer in French.")
