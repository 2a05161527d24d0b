"""The `piton` entry point: answers `--version` without loading anything, then hands over to the app."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-v"]):
        from core import __version__

        print(f"piton {__version__}")
        return
    try:
        from cli.app import app

        app()
    except KeyboardInterrupt:  # Ctrl-C before the run started: nothing to save, nothing to show
        sys.stderr.write("piton: interrupted\n")
        sys.exit(130)


if __name__ == "__main__":
    main()
