"""The `piton` entry point: answers `--version` without loading anything, lists skills (`piton skills`),
then hands over to the app."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-v"]):
        from piton import __version__

        print(f"piton {__version__}")
        return
    if sys.argv[1:] == ["skills"]:
        sys.exit(list_skills())
    if not sys.argv[1:]:  # the REPL, as fast as it can draw: no argument parser to load
        from pathlib import Path

        from piton.cli.repl import run_repl
        from piton.core.options import RunOptions

        sys.exit(run_repl(RunOptions(cwd=Path.cwd())))
    try:
        from typer.exceptions import TyperException

        from piton.cli.app import app

        code = app(standalone_mode=False)
    except KeyboardInterrupt:  # Ctrl-C before the run started: nothing to save, nothing to show
        sys.stderr.write("piton: interrupted\n")
        sys.exit(130)
    except TyperException as e:  # a usage error: one line, not a framed box
        message = e.format_message() if hasattr(e, "format_message") else str(e)
        sys.stderr.write(f"piton: {' '.join(message.split())} (piton --help lists the options)\n")
        sys.exit(getattr(e, "exit_code", 2))
    sys.exit(code if isinstance(code, int) else 0)


def list_skills() -> int:
    """`piton skills`: what was found and where, without starting a session."""
    from pathlib import Path

    from rich.console import Console
    from rich.text import Text

    from piton.cli.commands import BUILTIN_NAMES
    from piton.skills.agents import discover_agent_types
    from piton.skills.catalog import discover
    from piton.skills.report import report

    cwd = Path.cwd()
    catalog = discover(cwd)
    types, warnings = discover_agent_types(cwd)
    console = Console(highlight=False)
    for text, style in report(catalog, types, [*catalog.warnings, *warnings], reserved=set(BUILTIN_NAMES)):
        console.print(Text(text, style=style), soft_wrap=True)
    return 0


if __name__ == "__main__":
    main()
