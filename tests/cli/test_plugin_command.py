"""`piton plugin …` against local git repositories (file:// URLs) and a local marketplace: install,
list, enable, disable, uninstall, marketplace add and list. No network."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from piton.cli.plugin_command import main
from piton.core.project.settings import load_settings
from piton.skills.plugins import load_plugins

PLUGINS = Path(__file__).parents[1] / "fixtures" / "plugins"


def git_repo(source: Path, dest: Path) -> str:
    shutil.copytree(source, dest)
    for command in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", "-C", str(dest), *command], check=True, capture_output=True)
    return dest.as_uri()


def enabled(home: Path) -> dict[str, bool]:
    data = json.loads((home / ".piton" / "settings.json").read_text())
    table: dict[str, bool] = data["enabledPlugins"]
    return table


def test_install_from_a_git_repository_then_list_disable_enable_uninstall(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, cwd = Path.home(), tmp_path
    url = git_repo(PLUGINS / "fixture-plugin", tmp_path / "repo")
    assert main(["install", url], home, cwd) == 0
    dest = home / ".piton" / "plugins" / "cache" / "git" / "fixture-plugin" / "1.2.0"
    assert (dest / "commands" / "hello.md").is_file() and not (dest / ".git").exists()
    assert enabled(home) == {"fixture-plugin@git": True}
    record = json.loads((home / ".piton" / "plugins" / "installed_plugins.json").read_text())
    assert record["plugins"]["fixture-plugin@git"][0]["installPath"] == str(dest)
    assert [p.root for p in load_plugins(cwd, load_settings(cwd), None).plugins] == [dest]
    capsys.readouterr()
    assert main(["list"], home, cwd) == 0 and "fixture-plugin@git 1.2.0  enabled" in capsys.readouterr().out
    assert main(["disable", "fixture-plugin"], home, cwd) == 0
    assert enabled(home) == {"fixture-plugin@git": False}
    assert not load_plugins(cwd, load_settings(cwd), None).plugins
    assert main(["enable", "fixture-plugin@git"], home, cwd) == 0 and enabled(home)["fixture-plugin@git"]
    assert main(["uninstall", "fixture-plugin"], home, cwd) == 0
    assert not dest.exists() and enabled(home) == {}
    assert main(["enable", "fixture-plugin"], home, cwd) == 1


def test_install_from_a_local_and_a_git_marketplace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = Path.home()
    assert main(["install", "fixture-plugin@fixture-market"], home, tmp_path) == 1
    assert "no marketplace named fixture-market" in capsys.readouterr().err
    assert main(["marketplace", "add", str(PLUGINS)], home, tmp_path) == 0
    assert main(["marketplace", "list"], home, tmp_path) == 0
    assert "fixture-market" in capsys.readouterr().out
    assert main(["install", "fixture-plugin@fixture-market"], home, tmp_path) == 0
    assert enabled(home) == {"fixture-plugin@fixture-market": True}
    url = git_repo(PLUGINS, tmp_path / "market")
    shutil.rmtree(home / ".piton" / "plugins" / "cache")
    assert main(["marketplace", "add", url], home, tmp_path) == 0
    clone = home / ".piton" / "plugins" / "marketplaces" / "fixture-market"
    assert (clone / ".claude-plugin" / "marketplace.json").is_file()
    assert main(["install", "fixture-plugin@fixture-market"], home, tmp_path) == 0
    assert (home / ".piton" / "plugins" / "cache" / "fixture-market" / "fixture-plugin" / "1.2.0").is_dir()


def test_install_from_a_local_folder_and_bad_sources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = Path.home()
    assert main(["install", str(PLUGINS / "fixture-plugin")], home, tmp_path) == 0
    assert enabled(home) == {"fixture-plugin@local": True}
    assert main(["install", (tmp_path / "nowhere").as_uri()], home, tmp_path) == 1
    assert main(["install", "nothing-here"], home, tmp_path) == 1
    assert "git clone" in capsys.readouterr().err
