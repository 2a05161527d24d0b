"""The command line: flags named as `claude` names them, parsed by typer from the table in
`cli/flags.py` and turned into the options of a run (`RunOptions`) and of its output."""

from __future__ import annotations

import inspect
import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from piton import __version__
from piton.cli.flags import FLAGS, Flag
from piton.cli.options import fail, headless_options, note, run_options, split_rules

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


# Options that, as in Claude Code, take several values after one flag (`--allowedTools Read Edit`).
# What follows is taken as another value only while it looks like a tool rule, so a prompt after
# the list stays the prompt.
LIST_OPTIONS = ("--allowedTools", "--allowed-tools", "--disallowedTools", "--disallowed-tools", "--tools")
_RULE = re.compile(r"(mcp__[\w*-]+|[A-Z]\w*)(\(.*\))?")


def expand_lists(args: list[str]) -> list[str]:
    """`--allowedTools Read Edit` as `--allowedTools Read --allowedTools Edit`, and `-r` without an
    id as `--resume=`, for the parser (whose options take one value each, and always one)."""
    out: list[str] = []
    listing: str | None = None  # the list option whose values may go on
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            return [*out, arg, *args[index:]]
        if arg in ("-r", "--resume") and (index == len(args) or args[index].startswith("-")):
            out.append(f"{arg}=" if arg.startswith("--") else "--resume=")  # no id: choose one
            continue
        if listing is not None and _looks_like_rules(arg):
            out += [listing, arg]
            continue
        listing = None
        out.append(arg)
        name, equals, _ = arg.partition("=")
        if equals and name in LIST_OPTIONS:
            listing = name
        elif arg in LIST_OPTIONS and index < len(args):
            out.append(args[index])  # its first value, whatever it holds ("" for no tools)
            index += 1
            listing = arg
    return out


def _looks_like_rules(arg: str) -> bool:
    rules = split_rules([arg])
    return bool(rules) and all(_RULE.fullmatch(rule) for rule in rules)


def _version(value: bool) -> None:
    if value:
        print(f"piton {__version__}")
        raise typer.Exit()


# -- the command, built from the table -------------------------------------------------------------
_TYPES: dict[str | None, Any] = {
    None: bool,
    "str": str,
    "int": int,
    "float": float,
    "path": Path,
    "dir": Path,
}


def _parameter(flag: Flag) -> inspect.Parameter:
    """The typer parameter of one option of the table."""
    kind: Any = StrEnum(flag.dest, {c: c for c in flag.choices}) if flag.choices else _TYPES[flag.takes]
    extra: dict[str, Any] = {"min": flag.minimum} if flag.minimum is not None else {}
    if flag.takes == "dir":  # a missing one is a usage error here; one from a settings file is skipped
        extra.update(exists=True, file_okay=False)
    option = typer.Option(*flag.names, help=flag.help, rich_help_panel=flag.group, **extra)
    annotation: Any = bool if flag.takes is None else (list[kind] | None if flag.many else kind | None)
    default = False if flag.takes is None else None
    return inspect.Parameter(
        flag.dest, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[annotation, option]
    )


def _command(run: Any) -> Any:
    """`run(prompt, values)` as a typer command taking the prompt and every option of the table."""

    def piton(**values: Any) -> None:
        """Piton: a coding assistant for your terminal."""
        values.pop("version", None)
        run(values.pop("prompt"), {k: v.value if isinstance(v, StrEnum) else v for k, v in values.items()})

    prompt = inspect.Parameter(
        "prompt",
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        default=None,
        annotation=Annotated[
            str | None, typer.Argument(help="The prompt. With -p and no prompt, it is read from stdin.")
        ],
    )
    version = inspect.Parameter(
        "version",
        inspect.Parameter.KEYWORD_ONLY,
        default=False,
        annotation=Annotated[
            bool, typer.Option("--version", "-v", callback=_version, is_eager=True, help="Print the version.")
        ],
    )
    parameters = [prompt, *(_parameter(flag) for flag in FLAGS), version]
    piton.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    piton.__annotations__ = {p.name: p.annotation for p in parameters}
    return piton


def _run(prompt: str | None, values: dict[str, Any]) -> None:
    """What a parsed command line asks for: a rewind, the terminal, or one run."""
    if values["json_schema"]:  # accepted, so that a client passing it runs on; said, so its user knows
        note("--json-schema is not supported yet: the answer is not checked against the schema")
    options = run_options(values)
    if values["rewind_files"] or values["rewind_to"]:
        from piton.cli.rewind_files import run_rewind

        checkpoint, conversation = _rewind(values, prompt)
        raise typer.Exit(run_rewind(options, checkpoint, conversation=conversation))
    # a client speaking stream-json (the Agent SDK passes no -p) is never a terminal session
    if not values["print_mode"] and values["input_format"] in (None, "text"):
        from piton.cli.repl import run_repl

        if values["resume"] == "" and prompt is None:  # `-r` alone: choose the session, as /resume does
            prompt = "/resume"
        raise typer.Exit(run_repl(options, verbose=values["verbose"], initial_prompt=prompt))
    if values["resume"] == "":
        fail("--resume needs a session id with -p (--continue takes the latest; the REPL lets you choose)")
    from piton.cli.headless import run_headless

    raise typer.Exit(run_headless(headless_options(options, prompt, values)))


def _rewind(values: dict[str, Any], prompt: str | None) -> tuple[str, bool]:
    """The checkpoint to rewind to, and whether the conversation goes back too."""
    if not (values["resume"] or values["continue_latest"]):
        fail("--rewind-files and --rewind-to need --resume ID (or --continue)")
    if prompt is not None:
        fail("--rewind-files and --rewind-to are a step of their own: pass no prompt")
    return values["rewind_to"] or values["rewind_files"], values["rewind_to"] is not None


app.command()(_command(_run))
