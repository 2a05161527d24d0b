"""The `piton` entry point: answers `--version` without loading anything, lists skills (`piton skills`)
and manages MCP servers (`piton mcp`),
tells a `-p` run that no credentials exist before loading the argument parser, then hands over to
the app; a finished `-p` run leaves without tearing the interpreter down."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # `--version` must not pay for importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn


def main() -> None:
    # text that is not valid Unicode (a file name with stray bytes, say) is shown escaped rather
    # than ending the run halfway through a line
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    args = sys.argv[1:]
    printing = _print_mode(args) and _subcommand(args) is None
    if printing:
        _exit_without_teardown()
    code = dispatch(args)
    if printing:
        leave(code)
    sys.exit(code)


def dispatch(args: list[str]) -> int:
    """What `piton ARGS` does, in this process; its exit status. `main` adds only what a process
    needs around it (the streams' error handling, and the quick exit of a `-p` run)."""
    if args in (["--version"], ["-v"]):
        from piton.core.version import __version__  # not through the package: that loads importlib

        print(f"piton {__version__}")
        return 0
    if {"--help", "-h"} & set(args) and args[0] not in _SUBCOMMANDS and "--" not in args:
        from piton.cli.help_text import help_text  # one screen, without loading the parser

        sys.stdout.write(help_text())
        return 0
    subcommand = _subcommand(args)
    if subcommand is not None:
        return subcommand(args[1:])
    if _print_without_credentials(args):
        from piton.core.providers.credentials import NO_API_KEY

        sys.stderr.write(f"piton: {NO_API_KEY}\n")
        return 1
    if not args:  # the REPL, as fast as it can draw: no argument parser to load
        from pathlib import Path

        from piton.cli.repl import run_repl
        from piton.core.options import RunOptions

        return run_repl(RunOptions(cwd=Path.cwd()))
    return _run_app(args)


_LEAVING: list[int] = []  # the status a finished `-p` run leaves with (see `leave`)


def _exit_without_teardown() -> None:
    """A finished `-p` run leaves without tearing the interpreter down: freeing the thousands of objects
    of the loaded modules one by one takes tens of milliseconds, and the OS frees them at once. The handler is
    registered first, so it runs last: every other exit handler (logging's, the libraries') has run."""
    import atexit

    def leave_now() -> None:
        if _LEAVING:
            os._exit(_LEAVING[0])

    atexit.register(leave_now)


def _run_app(args: list[str]) -> int:
    """Everything else goes to the app's argument parser; the exit status (a `-p` run leaves here)."""
    from piton.cli.command import expand_lists, quick_parse, run_command

    expanded = expand_lists(args)
    parsed = quick_parse(expanded)
    try:
        if parsed is not None:  # the usual command line: no need to load the parser
            code: object = run_command(*parsed)
        else:
            code = _parse_and_run(expanded)
    except KeyboardInterrupt:  # Ctrl-C before the run started: nothing to save, nothing to show
        sys.stderr.write("piton: interrupted\n")
        return 130
    return code if isinstance(code, int) else 0


def _parse_and_run(args: list[str]) -> object:
    """The app's parser, for what `quick_parse` leaves to it: help, and usage errors in one line."""
    from typer.exceptions import TyperException

    from piton.cli.app import app

    try:
        return app(args=args, standalone_mode=False)
    except TyperException as e:  # a usage error: one line, not a framed box
        message = e.format_message() if hasattr(e, "format_message") else str(e)
        sys.stderr.write(f"piton: {' '.join(message.split())} (piton --help lists the options)\n")
        return int(getattr(e, "exit_code", 2))


def _subcommand(args: list[str]) -> Callable[[list[str]], int] | None:
    """The subcommand `args` name, which needs no argument parser: it takes the arguments after its name."""
    if not args or args[0] not in _SUBCOMMANDS:
        return None
    run, any_words = _SUBCOMMANDS[args[0]]
    return run if any_words or all(a.startswith("-") for a in args[1:]) else None


def _options(command: str, args: list[str], allowed: tuple[str, ...], about: str) -> bool | int:
    """A subcommand's own options: True to go on, else the exit code (after its usage for
    `--help`, or one line naming an option it does not take)."""
    usage = f"usage: piton {command} {' '.join(f'[{a}]' for a in allowed)}".rstrip()
    if "-h" in args or "--help" in args:
        print(f"{usage}\n\n{about}")
        return 0
    if unknown := [a for a in args if a not in allowed]:
        print(f"piton {command}: unknown option {unknown[0]}\n{usage}", file=sys.stderr)
        return 2
    return True


def _skills(args: list[str]) -> int:
    about = "The skills, custom commands and subagent types found here, and where each comes from."
    if (done := _options("skills", args, ("--json",), about)) is not True:
        return int(done)
    return list_skills(as_json="--json" in args)


def _mcp(args: list[str]) -> int:  # `piton mcp add|add-json|list|get|remove …`
    from piton.cli.mcp_command import main as mcp_main

    return mcp_main(args)


def _acp(args: list[str]) -> int:  # `piton acp`: the Agent Client Protocol on stdin/stdout, for editors
    from piton.acp.server import main as acp_main

    return acp_main(args)


def _plugin(args: list[str]) -> int:  # `piton plugin install|list|enable|disable|uninstall|marketplace …`
    from piton.cli.plugin_command import main as plugin_main

    return plugin_main(args)


def _config(args: list[str]) -> int:  # `piton config list|get|set|add|remove …`
    from piton.cli.config_command import main as config_main

    return config_main(args)


def _eval(args: list[str]) -> int:  # `piton eval [SUITE] [--record | --live] …`
    from piton.cli.eval_command import main as eval_main

    return eval_main(args)


def _update(args: list[str]) -> int:
    from piton.cli.update_command import update

    return update(args)


def _doctor(args: list[str]) -> int:
    from pathlib import Path

    from piton.cli.doctor import doctor

    about = (
        "Checks the setup: credentials, the API, the sandbox, settings, hooks, plugins, skills and MCP\n"
        "servers. --trust-workspace: as a run with that flag sees this folder."
    )
    if (done := _options("doctor", args, ("--trust-workspace",), about)) is not True:
        return int(done)
    return doctor(Path.cwd(), trust_workspace="--trust-workspace" in args)


# `piton NAME …` -> what runs it, and whether it takes words after NAME (else only options: a word
# makes `piton doctor my code` a prompt for the app)
_SUBCOMMANDS: dict[str, tuple[Callable[[list[str]], int], bool]] = {
    "skills": (_skills, False),
    "mcp": (_mcp, True),
    "plugin": (_plugin, True),
    "config": (_config, True),
    "eval": (_eval, True),
    "update": (_update, True),
    "doctor": (_doctor, False),
    "acp": (_acp, True),
}


def print_options() -> dict[str, tuple[str, ...] | None]:
    """The app's options, from the table the app is built from (`cli/flags.py`): None for a switch,
    else the values it accepts (empty: any). Whatever else an argument list holds goes to the parser."""
    from piton.cli.flags import values_by_name

    return values_by_name()


def _print_without_credentials(args: list[str]) -> bool:
    """A well-formed `-p` run with a prompt argument, and no credentials the SDK could find: that is
    known in milliseconds, where the argument parser alone takes a tenth of a second. Anything the
    scan does not recognise (help, an unknown option, a bad value) is left to the parser."""
    known = print_options()
    printing, prompts = False, 0
    pending: str | None = None  # an option waiting for its value
    model: str | None = None
    provider: str | None = None
    for arg in args:
        if pending is not None:
            name, pending = pending, None
            if not _accepts(name, arg, known):
                return False
            model = arg if name == "--model" else model
            provider = arg if name == "--provider" else provider
        elif arg.startswith("--") and "=" in arg:
            name, _, value = arg.partition("=")
            if known.get(name) is None or not _accepts(name, value, known):
                return False
            model = value if name == "--model" else model
            provider = value if name == "--provider" else provider
        elif arg in known:
            printing = printing or arg in ("-p", "--print")
            pending = None if known[arg] is None else arg
        elif arg.startswith("-"):
            return False
        else:
            prompts += 1
    if not printing or prompts != 1 or pending is not None:
        return False
    from piton.core.models import with_provider

    try:
        model = with_provider(provider, model)
    except ValueError:  # the parser says what is wrong
        return False
    from piton.core.providers.credentials import credential_source
    from piton.core.providers.route import needs_anthropic

    if not needs_anthropic(model) or credential_source() is not None:
        return False
    # about to refuse: the user's settings may name another model or cloud (slower, and rare)
    from pathlib import Path

    from piton.core.options import RunOptions
    from piton.starting import starting_model

    return (
        needs_anthropic(starting_model(RunOptions(cwd=Path.cwd(), model=model)))
        and credential_source() is None
    )


def _accepts(name: str, value: str, known: dict[str, tuple[str, ...] | None]) -> bool:
    if name == "--max-turns":
        return value.isdigit() and int(value) >= 1
    if name in ("--max-thinking-tokens", "--max-budget-usd", "--max-budget-tokens", "-r", "--resume"):
        return False  # a number's form, or a value that may be absent: the parser judges
    allowed = known[name]
    return not allowed or value in allowed


def _print_mode(args: list[str]) -> bool:
    """Whether the arguments asked for `-p` (a combined flag such as `-pc` just exits the slow way)."""
    for arg in args:
        if arg == "--":
            return False
        if arg in ("-p", "--print"):
            return True
    return False


def leave(code: int) -> NoReturn:
    """End a finished `-p` run. The run has closed its provider and synced its session log; what is
    still buffered is flushed here, so that a reader that went away (`| head`) ends the run as a
    broken pipe would (141) rather than with a traceback at exit. The exit handlers run, and then
    the process goes without the interpreter's teardown (`_exit_without_teardown`)."""
    import contextlib

    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away after all
        code = code or 141
        with contextlib.suppress(OSError):  # nothing more can reach it: no second error at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    _LEAVING.append(code)
    sys.exit(code)


def list_skills(*, as_json: bool = False) -> int:
    """`piton skills` (`--json`): what was found and where, without starting a session."""
    from pathlib import Path

    from piton.cli.commands import BUILTIN_NAMES
    from piton.core.project.settings import load_settings
    from piton.skills.agents import discover_agent_types
    from piton.skills.catalog import discover
    from piton.skills.plugins import load_plugins
    from piton.skills.report import report

    cwd = Path.cwd()
    catalog = discover(cwd)
    types, warnings = discover_agent_types(cwd)
    # the user's own plugins (a project's wait for trust, which only a session asks about)
    plugins = load_plugins(cwd, load_settings(cwd), None, (), catalog)
    types = {**{a.name: a for a in plugins.agents}, **types}
    warnings += plugins.warnings
    known = known_tool_names()
    if as_json:
        import json

        from piton.skills.report import as_json as to_json

        print(json.dumps(to_json(catalog, types, [*catalog.warnings, *warnings], known), indent=2))
        return 0
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False)
    lines = report(
        catalog, types, [*catalog.warnings, *warnings], reserved=set(BUILTIN_NAMES), known_tools=known
    )
    for text, style in lines:
        console.print(Text(text, style=style), soft_wrap=True)
    return 0


def known_tool_names() -> set[str]:
    """The tools an agent definition may name: Piton's own (its MCP servers' are `mcp__…`)."""
    from piton.runtime import default_tools

    return {t.name for t in default_tools()} | {"Task", "Skill", "SearchSkills"}


if __name__ == "__main__":
    main()
