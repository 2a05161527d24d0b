"""What a `piton` command line runs, and its parse without typer for the usual case.

The argument parser (`cli/app.py`, typer) costs a tenth of a second to load. A command line made
only of the table's options (`cli/flags.py`) and a prompt, each well formed, is parsed here to the
very values typer would give (a test holds the two to that); anything else (`--help`, a misspelt
option, a value out of range) goes to typer, which says what is wrong.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from piton.cli.flags import FLAGS, Flag
from piton.cli.options import fail, headless_options, run_options, split_rules

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


# -- the parse without typer -----------------------------------------------------------------------
_BY_NAME = {name: flag for flag in FLAGS for name in flag.names}


def quick_parse(args: list[str]) -> tuple[str | None, dict[str, Any]] | None:
    """`(prompt, values)` as typer would parse `args` (already through `expand_lists`), or None when
    typer has to: help, an unknown or malformed option, a value it would refuse."""
    values: dict[str, Any] = {f.dest: False if f.takes is None else None for f in FLAGS}
    prompt: str | None = None
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if not arg.startswith("-") or arg == "-":
            if prompt is not None:
                return None  # a second argument: typer's error
            prompt = arg
            continue
        name, equals, attached = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        flag = _BY_NAME.get(name)
        if flag is None:
            return None
        if flag.takes is None:
            if equals:
                return None
            values[flag.dest] = True
            continue
        if not equals:
            if index == len(args):
                return None
            attached = args[index]
            index += 1
        value = _value(flag, attached)
        if value is None:
            return None
        values[flag.dest] = [*(values[flag.dest] or []), value] if flag.many else value
    return prompt, values


def _value(flag: Flag, text: str) -> Any:
    """The option's value as typer converts it, or None when typer would refuse it."""
    if flag.choices:
        return text if text in flag.choices else None
    value: Any = text
    try:
        if flag.takes == "int":
            value = int(text)
        elif flag.takes == "float":
            value = float(text)
    except ValueError:
        return None
    if flag.minimum is not None and value < flag.minimum:
        return None
    if flag.takes in ("path", "dir"):
        value = Path(text)
        if flag.takes == "dir" and not value.is_dir():
            return None
    return value


# -- the run ---------------------------------------------------------------------------------------
def run_command(prompt: str | None, values: dict[str, Any]) -> int:
    """What a parsed command line asks for: a rewind, the terminal, or one run; its exit status."""
    options = run_options(values)
    if values["rewind_files"] or values["rewind_to"]:
        from piton.cli.rewind_files import run_rewind

        checkpoint, conversation = _rewind(values, prompt)
        return run_rewind(options, checkpoint, conversation=conversation)
    # a client speaking stream-json (the Agent SDK passes no -p) is never a terminal session
    if not values["print_mode"] and values["input_format"] in (None, "text"):
        from piton.cli.repl import run_repl

        if values["resume"] == "" and prompt is None:  # `-r` alone: choose the session, as /resume does
            prompt = "/resume"
        return run_repl(options, verbose=values["verbose"], initial_prompt=prompt)
    if values["resume"] == "":
        fail("--resume needs a session id with -p (--continue takes the latest; the REPL lets you choose)")
    from piton.cli.headless import run_headless

    return run_headless(headless_options(options, prompt, values))


def _rewind(values: dict[str, Any], prompt: str | None) -> tuple[str, bool]:
    """The checkpoint to rewind to, and whether the conversation goes back too."""
    if not (values["resume"] or values["continue_latest"]):
        fail("--rewind-files and --rewind-to need --resume ID (or --continue)")
    if prompt is not None:
        fail("--rewind-files and --rewind-to are a step of their own: pass no prompt")
    return values["rewind_to"] or values["rewind_files"], values["rewind_to"] is not None
