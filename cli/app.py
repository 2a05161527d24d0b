"""The command line: flags named as `claude` names them, parsed by typer."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from core import __version__

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    stream_json = "stream-json"


class Switch(StrEnum):
    on = "on"
    off = "off"


def _version(value: bool) -> None:
    if value:
        print(f"piton {__version__}")
        raise typer.Exit()


@app.command()
def piton(
    prompt: Annotated[
        str | None, typer.Argument(help="The prompt. With -p and no prompt, it is read from stdin.")
    ] = None,
    print_mode: Annotated[
        bool, typer.Option("-p", "--print", help="Answer once and exit (for scripts and CI).")
    ] = False,
    output_format: Annotated[
        OutputFormat, typer.Option("--output-format", help="With -p: text, json (one result) or stream-json.")
    ] = OutputFormat.text,
    verbose: Annotated[
        bool, typer.Option("--verbose", help="Show progress on stderr and full error traces.")
    ] = False,
    model: Annotated[
        str | None, typer.Option("--model", help="Model alias (sonnet, opus, haiku) or full model id.")
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help="Stop after this many model turns.")
    ] = None,
    append_system_prompt: Annotated[
        str | None, typer.Option("--append-system-prompt", help="Text appended to the system prompt.")
    ] = None,
    continue_latest: Annotated[
        bool, typer.Option("-c", "--continue", help="Continue the latest session in this directory.")
    ] = False,
    resume: Annotated[
        str | None, typer.Option("-r", "--resume", help="Resume the session with this id.")
    ] = None,
    thinking: Annotated[
        Switch | None, typer.Option("--thinking", help="Extended thinking on or off (default: on).")
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", "-v", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Piton: a coding assistant for your terminal."""
    from cli.headless import HeadlessOptions, run_headless
    from core.runtime import RunOptions

    if not print_mode:
        sys.stderr.write(
            'piton: the interactive REPL is not available in this build; use piton -p "your prompt"\n'
        )
        raise typer.Exit(2)
    options = RunOptions(
        cwd=Path.cwd(),
        model=model,
        thinking=None if thinking is None else thinking is Switch.on,
        max_turns=max_turns,
        append_system_prompt=append_system_prompt,
        continue_latest=continue_latest,
        resume=resume,
    )
    code = run_headless(HeadlessOptions(options, prompt, output_format.value, verbose))
    raise typer.Exit(code)
