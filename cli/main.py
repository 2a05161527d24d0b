"""The `piton` entry point: answers `--version` without loading anything, lists skills (`piton skills`)
and manages MCP servers (`piton mcp`),
tells a `-p` run that no credentials exist before loading the argument parser, then hands over to
the app; a finished `-p` run leaves without tearing the interpreter down."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # `--version` must not pay for importing typing
if TYPE_CHECKING:
    from typing import NoReturn


def main() -> None:
    # text that is not valid Unicode (a file name with stray bytes, say) is shown escaped rather
    # than ending the run halfway through a line
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    if sys.argv[1:] in (["--version"], ["-v"]):
        from piton import __version__

        print(f"piton {__version__}")
        return
    if sys.argv[1:] in (["skills"], ["skills", "--json"]):
        sys.exit(list_skills(as_json=sys.argv[2:] == ["--json"]))
    if sys.argv[1:2] == ["mcp"]:  # `piton mcp add|add-json|list|get|remove …`
        from piton.cli.mcp_command import main as mcp_main

        sys.exit(mcp_main(sys.argv[2:]))
    if sys.argv[1:2] == ["plugin"]:  # `piton plugin install|list|enable|disable|uninstall|marketplace …`
        from piton.cli.plugin_command import main as plugin_main

        sys.exit(plugin_main(sys.argv[2:]))
    if sys.argv[1:2] == ["config"]:  # `piton config list|get|set|add|remove …`
        from piton.cli.config_command import main as config_main

        sys.exit(config_main(sys.argv[2:]))
    if sys.argv[1:2] == ["eval"]:  # `piton eval [SUITE] [--record | --live] …`
        from piton.cli.eval_command import main as eval_main

        sys.exit(eval_main(sys.argv[2:]))
    if sys.argv[1:2] == ["update"]:
        from piton.cli.update_command import update

        sys.exit(update(sys.argv[2:]))
    if sys.argv[1:] == ["doctor"]:
        from pathlib import Path

        from piton.cli.doctor import doctor

        sys.exit(doctor(Path.cwd()))
    if _print_without_credentials(sys.argv[1:]):
        from piton.core.providers.credentials import NO_API_KEY

        sys.stderr.write(f"piton: {NO_API_KEY}\n")
        sys.exit(1)
    if not sys.argv[1:]:  # the REPL, as fast as it can draw: no argument parser to load
        from pathlib import Path

        from piton.cli.repl import run_repl
        from piton.core.options import RunOptions

        sys.exit(run_repl(RunOptions(cwd=Path.cwd())))
    try:
        from typer.exceptions import TyperException

        from piton.cli.app import app, expand_lists

        code = app(args=expand_lists(sys.argv[1:]), standalone_mode=False)
    except KeyboardInterrupt:  # Ctrl-C before the run started: nothing to save, nothing to show
        sys.stderr.write("piton: interrupted\n")
        sys.exit(130)
    except TyperException as e:  # a usage error: one line, not a framed box
        message = e.format_message() if hasattr(e, "format_message") else str(e)
        sys.stderr.write(f"piton: {' '.join(message.split())} (piton --help lists the options)\n")
        sys.exit(getattr(e, "exit_code", 2))
    code = code if isinstance(code, int) else 0
    if _print_mode(sys.argv[1:]):
        leave(code)
    sys.exit(code)


# The app's options (cli/app.py, checked by a test): None for a flag, else the values it accepts
# (empty: any). Whatever else an argument list holds goes to the app's parser.
_PRINT_OPTIONS: dict[str, tuple[str, ...] | None] = {
    "-p": None,
    "--print": None,
    "--verbose": None,
    "-c": None,
    "--continue": None,
    "--output-format": ("text", "json", "stream-json"),
    "--model": (),
    "--provider": (),
    "--max-turns": (),
    "--system-prompt": (),
    "--system-prompt-file": (),
    "--append-system-prompt": (),
    "--input-format": ("text", "stream-json"),
    "--include-partial-messages": None,
    "--include-hook-events": None,
    "--replay-user-messages": None,
    "--rewind-files": (),
    "--rewind-to": (),
    "--permission-prompt-tool": (),
    "--tools": (),
    "--setting-sources": (),
    "--settings": (),
    "--session-id": (),
    "--fork-session": None,
    "--max-budget-usd": (),
    "--max-budget-tokens": (),
    "--fallback-model": (),
    "--dangerously-skip-permissions": None,
    "--json-schema": (),
    "--effort": ("low", "medium", "high", "xhigh", "max"),
    "--agents": (),
    "--plugin-dir": (),
    "--max-thinking-tokens": (),
    "--mcp-config": (),
    "--strict-mcp-config": None,
    "-r": (),
    "--resume": (),
    "--thinking": ("on", "off", "adaptive", "disabled"),
    "--permission-mode": ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"),
    "--allowedTools": (),
    "--allowed-tools": (),
    "--disallowedTools": (),
    "--disallowed-tools": (),
    "--sandbox": ("read-only", "workspace-write", "danger-full-access"),
    "--add-dir": (),
    "--trust-workspace": None,
    "--trust": None,
}


def _print_without_credentials(args: list[str]) -> bool:
    """A well-formed `-p` run with a prompt argument, and no credentials the SDK could find: that is
    known in milliseconds, where the argument parser alone takes a tenth of a second. Anything the
    scan does not recognise (help, an unknown option, a bad value) is left to the parser."""
    printing, prompts = False, 0
    pending: str | None = None  # an option waiting for its value
    model: str | None = None
    provider: str | None = None
    for arg in args:
        if pending is not None:
            name, pending = pending, None
            if not _accepts(name, arg):
                return False
            model = arg if name == "--model" else model
            provider = arg if name == "--provider" else provider
        elif arg.startswith("--") and "=" in arg:
            name, _, value = arg.partition("=")
            if _PRINT_OPTIONS.get(name) is None or not _accepts(name, value):
                return False
            model = value if name == "--model" else model
            provider = value if name == "--provider" else provider
        elif arg in _PRINT_OPTIONS:
            printing = printing or arg in ("-p", "--print")
            pending = None if _PRINT_OPTIONS[arg] is None else arg
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


def _accepts(name: str, value: str) -> bool:
    if name == "--max-turns":
        return value.isdigit() and int(value) >= 1
    if name in ("--max-thinking-tokens", "--max-budget-usd", "--max-budget-tokens", "-r", "--resume"):
        return False  # a number's form, or a value that may be absent: the parser judges
    allowed = _PRINT_OPTIONS[name]
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
    broken pipe would (141) rather than with a traceback at exit."""
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
