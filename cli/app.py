"""The command line: flags named as `claude` names them, parsed by typer."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from piton import __version__

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


class PermissionMode(StrEnum):
    default = "default"
    acceptEdits = "acceptEdits"
    plan = "plan"
    bypassPermissions = "bypassPermissions"


class SandboxMode(StrEnum):
    read_only = "read-only"
    workspace_write = "workspace-write"
    danger_full_access = "danger-full-access"


def split_rules(values: list[str] | None) -> list[str]:
    """Rules given as repeated flags, or several in one value separated by commas or spaces (outside
    parentheses, so `Bash(git diff:*)` stays whole)."""
    rules: list[str] = []
    for value in values or []:
        current, depth = "", 0
        for ch in value:
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and (ch == "," or ch.isspace()):
                if current.strip():
                    rules.append(current.strip())
                current = ""
            else:
                current += ch
        if current.strip():
            rules.append(current.strip())
    return rules


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
    permission_mode: Annotated[
        PermissionMode | None,
        typer.Option(
            "--permission-mode", help="default, acceptEdits, plan (read-only tools) or bypassPermissions."
        ),
    ] = None,
    allowed_tools: Annotated[
        list[str] | None,
        typer.Option(
            "--allowedTools", "--allowed-tools", help='Rules to allow without asking: "Bash(npm test:*)" Edit'
        ),
    ] = None,
    disallowed_tools: Annotated[
        list[str] | None,
        typer.Option("--disallowedTools", "--disallowed-tools", help='Rules to deny: "Bash(git push:*)"'),
    ] = None,
    sandbox: Annotated[
        SandboxMode | None,
        typer.Option(
            "--sandbox", help="read-only, workspace-write (default) or danger-full-access (no sandbox)."
        ),
    ] = None,
    add_dir: Annotated[
        list[Path] | None,
        typer.Option(  # a missing one is a usage error here; one from a settings file is skipped instead
            "--add-dir",
            exists=True,
            file_okay=False,
            help="Another directory the tools may use (repeatable).",
        ),
    ] = None,
    trust_workspace: Annotated[
        bool,
        typer.Option(
            "--trust-workspace",
            "--trust",
            help="Trust this folder for this run: its settings' allow rules and its skills' allowed-tools "
            "take effect (for CI; the REPL asks and remembers instead).",
        ),
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", "-v", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Piton: a coding assistant for your terminal."""
    from piton.core.options import RunOptions

    options = RunOptions(
        cwd=Path.cwd(),
        model=model,
        thinking=None if thinking is None else thinking is Switch.on,
        max_turns=max_turns,
        append_system_prompt=append_system_prompt,
        continue_latest=continue_latest,
        resume=resume,
        permission_mode=permission_mode.value if permission_mode else None,
        allowed_tools=split_rules(allowed_tools),
        disallowed_tools=split_rules(disallowed_tools),
        sandbox=sandbox.value if sandbox else None,
        add_dirs=[d.expanduser().resolve() for d in add_dir or []],
        trust_workspace=trust_workspace,
    )
    if not print_mode:
        from piton.cli.repl import run_repl

        raise typer.Exit(run_repl(options, verbose=verbose, initial_prompt=prompt))
    from piton.cli.headless import HeadlessOptions, run_headless

    code = run_headless(HeadlessOptions(options, prompt, output_format.value, verbose))
    raise typer.Exit(code)
