"""How a `piton -p` process starts and ends: a missing key told without loading the SDK, nothing
lost by the fast exit, a tokenizer never loaded for a short run, and API time that is API time."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

from piton.core.conversation.session import SessionStore, load_session
from piton.testing.script import HttpError, ToolCall, reply
from tests.cli.test_piton_command import PITON
from tests.fakes.fake_api import FakeAnthropicAPI, Stall
from tests.helpers import CEILING_S

NO_KEY = "piton: ANTHROPIC_API_KEY is not set. Export your key (export ANTHROPIC_API_KEY=sk-ant-...) and run again.\n"


def imported(stderr: str) -> set[str]:
    """Top-level packages a `python -X importtime` run imported, from its report on stderr."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def run_traced(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "piton", *args],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CEILING_S,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["-p", "hi"], None),
        (["-p", "hi", "--output-format", "json", "--model", "opus"], None),
        (["-p"], "a prompt on standard input"),  # read first, then the same check, in the app
    ],
    ids=["plain", "with-options", "prompt-on-stdin"],
)
def test_a_missing_key_is_one_line_without_importing_the_sdk(
    project: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], stdin: str | None
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    done = run_traced(*args, stdin=stdin)
    assert done.returncode == 1
    assert [line for line in done.stderr.splitlines(keepends=True) if line.startswith("piton:")] == [NO_KEY]
    assert done.stdout == ""
    assert "anthropic" not in imported(done.stderr) and "tiktoken" not in imported(done.stderr)
    assert SessionStore().latest(project) is None


def test_bad_options_are_still_the_parsers_to_report_without_a_key(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    done = run_traced("-p", "hi", "--output-format", "yaml")
    assert done.returncode == 2 and "--output-format" in done.stderr


def test_the_fast_checks_options_are_the_apps() -> None:
    """The parser built from the option table, and the scan before it that reads the same table,
    know the same options and values."""
    import typer.main
    from typer.core import TyperOption

    from piton.cli.app import app
    from piton.cli.main import print_options

    known: dict[str, tuple[str, ...] | None] = {}
    for param in typer.main.get_command(app).params:
        if param.param_type_name != "option" or param.name in ("version", "help"):
            continue
        assert isinstance(param, TyperOption), param
        kind = param.type_descriptor.annotation
        choices = (
            tuple(str(c.value) for c in kind) if isinstance(kind, type) and issubclass(kind, Enum) else ()
        )
        for name in [*param.opts, *param.secondary_opts]:
            known[name] = None if param.is_flag else choices
    assert known == print_options()


@pytest.mark.parametrize("credential", ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"])
def test_a_first_party_run_loads_neither_the_sdk_nor_the_tokenizer(
    fake_api: FakeAnthropicAPI, project: Path, monkeypatch: pytest.MonkeyPatch, credential: str
) -> None:
    """Anthropic's API is spoken over plain HTTP: the SDK (a second of CPU) is for the clouds."""
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv(credential, "test-key")
    fake_api.add(reply("Looking.", ToolCall("Glob", {"pattern": "*.py"})), reply("Nothing here."))
    done = run_traced("-p", "what is here?", "--output-format", "stream-json", "--verbose")
    assert done.returncode == 0 and json.loads(done.stdout.splitlines()[-1])["result"] == "Nothing here."
    modules = imported(done.stderr)
    assert "httpx2" in modules and "anthropic" not in modules and "tiktoken" not in modules


def test_a_long_answer_piped_to_a_file_is_complete(
    fake_api: FakeAnthropicAPI, project: Path, tmp_path: Path
) -> None:
    answer = "".join(f"line {i}: {'ünïcode ' * 8}\n" for i in range(20_000))  # about 1.5 MB
    fake_api.add(reply(answer, chunk=4_000), reply(answer, chunk=4_000))
    for fmt in ("text", "stream-json"):
        out = tmp_path / f"out-{fmt}"
        with out.open("w") as sink:
            code = subprocess.run(
                [PITON, "-p", "q", "--output-format", fmt],
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.PIPE,
                timeout=CEILING_S,
                check=False,
            ).returncode
        assert code == 0
        written = out.read_text(encoding="utf-8")
        if fmt == "text":
            assert written == answer
        else:
            last = json.loads(written.splitlines()[-1])
            assert (last["type"], last["result"]) == ("result", answer)


def test_exit_codes_and_the_session_survive_the_fast_exit(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(reply("first answer"))
    ok = subprocess.run([PITON, "-p", "one"], capture_output=True, text=True, timeout=CEILING_S, check=False)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "first answer\n", "")
    session_id = SessionStore().latest(project)
    assert session_id is not None
    loaded = load_session(SessionStore().project_dir(project) / f"{session_id}.jsonl", session_id)
    assert [m.text for m in loaded.messages] == ["one", "first answer"] and loaded.warnings == []
    fake_api.add(HttpError(400, "invalid_request_error", "bad"))
    failed = subprocess.run(
        [PITON, "-p", "two"], capture_output=True, text=True, timeout=CEILING_S, check=False
    )
    assert failed.returncode == 1 and failed.stderr.startswith("piton: API error 400: bad")


def result_of(stdout: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(stdout)
    return result


def test_api_time_is_the_wait_on_the_api(fake_api: FakeAnthropicAPI, project: Path) -> None:
    """A reply that takes half a second counts as half a second of API time, within the run's."""
    fake_api.add(Stall(reply("quick"), after=1, seconds=0.5))
    done = subprocess.run(
        [PITON, "-p", "hi", "--output-format", "json"], capture_output=True, text=True, timeout=CEILING_S
    )
    result = result_of(done.stdout)
    assert result["result"] == "quick"
    assert 500 <= result["duration_api_ms"] <= result["duration_ms"], result


def test_help_fits_a_screen_groups_every_option_and_names_the_commands() -> None:
    """`--help` is made from the option table: every option under its group's heading (the flags
    only SDK clients send, on one line), no line past 100 columns, about 60 lines, no type noise;
    then the commands and the environment variables that matter."""
    from piton.cli.flags import FLAGS
    from piton.cli.help_text import CLIENT_FLAGS

    env = {**os.environ, "COLUMNS": "100"}
    done = subprocess.run(
        [str(PITON), "--help"], capture_output=True, text=True, timeout=CEILING_S, check=False, env=env
    )
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert len(lines) <= 64 and max(map(len, lines)) <= 100
    assert not re.search(r"<bool>|<str>|<int|\w…", done.stdout)
    headings = [line[:-1] for line in lines if re.fullmatch(r"[A-Z][\w ]+:", line)]
    groups = list(dict.fromkeys(flag.group for flag in FLAGS))
    assert headings == [*groups, "Commands", "Environment", "Examples"]
    for flag in FLAGS:
        if flag.names[0] in CLIENT_FLAGS:
            continue
        section = done.stdout.split(f"\n{flag.group}:\n")[1].split(":\n")[0]
        assert f"  {flag.names[0]}" in section or f", {flag.names[1]}" in section, flag.names
    assert all(name in done.stdout for name in CLIENT_FLAGS)
    for command in ("doctor", "config", "mcp", "plugin", "skills", "eval", "update", "acp"):
        assert f"piton {command}" in done.stdout
    narrow = subprocess.run(
        [str(PITON), "-h"], capture_output=True, text=True, timeout=CEILING_S, env={**env, "COLUMNS": "60"}
    )
    assert max(map(len, narrow.stdout.splitlines())) <= 60
