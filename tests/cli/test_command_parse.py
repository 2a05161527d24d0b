"""The parse without typer (`cli/command.quick_parse`) gives exactly what typer's parser gives, for
every option of the table, and leaves to typer whatever it would refuse or explain."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.exceptions import TyperException

from piton.cli.app import app
from piton.cli.command import expand_lists, quick_parse
from piton.cli.flags import FLAGS, Flag


def typer_parse(args: list[str]) -> tuple[str | None, dict[str, Any]]:
    """What the app's parser hands the command: the prompt and every option's value."""
    command = typer.main.get_command(app)
    with command.make_context("piton", list(args)) as context:
        params = dict(context.params)
    params.pop("version")
    prompt = params.pop("prompt")

    def plain(value: Any) -> Any:
        if isinstance(value, Enum):
            return value.value
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value] or None
        return value

    return prompt, {name: plain(value) for name, value in params.items()}


def sample(flag: Flag, tmp: Path) -> str:
    if flag.choices:
        return flag.choices[-1]
    return {"int": "3", "float": "0.5", "path": str(tmp / "file"), "dir": str(tmp)}.get(
        flag.takes or "", "some text"
    )


def command_lines(tmp: Path) -> list[list[str]]:
    """Each option alone (both spellings, `=` and apart), with a prompt before and after, repeated."""
    lines: list[list[str]] = [[], ["fix the bug"], ["-p", "fix the bug"], ["fix it", "-p"]]
    for flag in FLAGS:
        for name in flag.names:
            if flag.takes is None:
                lines += [[name], ["-p", name, "a prompt"]]
                continue
            value = sample(flag, tmp)
            lines += [[name, value], ["a prompt", name, value]]
            if name.startswith("--"):
                lines.append([f"{name}={value}", "-p"])
            if flag.many:
                lines.append([name, value, name, value, "-p", "q"])
            else:  # the last one given wins, as in every parser
                lines.append([name, value, name, value])
    lines.append(["-p", "--allowedTools", "Read", "Edit", "Bash(git diff:*)", "what changed?"])
    lines.append(["--model", "opus", "-p", "--output-format", "stream-json", "--verbose", "-"])
    return lines


def test_every_option_parses_as_typer_parses_it(tmp_path: Path) -> None:
    checked = 0
    for args in command_lines(tmp_path):
        expanded = expand_lists(args)
        quick = quick_parse(expanded)
        assert quick is not None, args
        assert quick == typer_parse(expanded), args
        checked += 1
    assert checked > 2 * len(FLAGS)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["-h"],
        ["--no-such-option"],
        ["one prompt", "and another"],
        ["--max-turns", "0"],  # below its minimum
        ["--max-turns", "many"],
        ["--max-budget-usd", "-1"],
        ["--output-format", "yaml"],
        ["--permission-mode", "yolo"],
        ["--add-dir", "/no/such/folder"],
        ["--print=yes"],
        ["--model"],  # a value missing
        ["-pc"],  # joined short switches: typer's to read
    ],
)
def test_what_typer_would_refuse_or_explain_is_left_to_it(args: list[str]) -> None:
    expanded = expand_lists(args)
    assert quick_parse(expanded) is None
    if args[0] in ("--help", "-h", "-pc"):
        return  # help is printed before any parser; joined switches are valid, and typer's to parse
    with pytest.raises(TyperException):
        typer_parse(expanded)
