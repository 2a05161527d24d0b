"""The command line: flags named as `claude` names them, parsed by typer from the table in
`cli/flags.py` and turned into the options of a run (`RunOptions`) and of its output."""

from __future__ import annotations

import inspect
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from piton import __version__
from piton.cli.command import run_command
from piton.cli.flags import FLAGS, Flag

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


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
    raise typer.Exit(run_command(prompt, values))


app.command()(_command(_run))
