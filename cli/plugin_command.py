"""`piton plugin …`: install and manage Claude Code plugins, with Claude Code's verbs.

piton plugin install <path | git-url | name@marketplace>
piton plugin list | enable <name> | disable <name> | uninstall <name>
piton plugin marketplace add <path | git-url | owner/repo> | marketplace list
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="piton plugin", description="Install and manage plugins.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("install", help="Install and enable a plugin.").add_argument("source")
    commands.add_parser("list", help="The installed plugins, and whether each is enabled.")
    for verb in ("enable", "disable", "uninstall"):
        commands.add_parser(verb, help=f"{verb.capitalize()} an installed plugin.").add_argument("name")
    market = commands.add_parser("marketplace", help="Add or list plugin marketplaces.")
    verbs = market.add_subparsers(dest="verb", required=True)
    verbs.add_parser("add", help="Add a marketplace.").add_argument("source")
    verbs.add_parser("list", help="The marketplaces added, and their plugins.")
    return parser


def main(argv: list[str], home: Path | None = None, cwd: Path | None = None) -> int:
    from piton.skills.plugin_store import StoreError

    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    home = home if home is not None else Path.home()
    cwd = cwd if cwd is not None else Path.cwd()
    try:
        return _run(args, home, cwd)
    except StoreError as e:
        sys.stderr.write(f"piton plugin: {e}\n")
        return 1


def _run(args: argparse.Namespace, home: Path, cwd: Path) -> int:
    from piton.skills import plugin_install as store
    from piton.skills.plugin_store import set_enabled

    if args.command == "install":
        done = store.install(args.source, home, cwd)
        print(f"Installed {done.plugin_id} in {done.path} and enabled it; it loads in new sessions.")
    elif args.command == "list":
        return _list(home, cwd)
    elif args.command in ("enable", "disable"):
        plugin = store.find(args.name, home)
        set_enabled(home, plugin.plugin_id, args.command == "enable")
        print(f"{plugin.plugin_id} {args.command}d (in ~/.piton/settings.json).")
    elif args.command == "uninstall":
        gone = store.uninstall(args.name, home)
        print(f"Uninstalled {gone.plugin_id}.")
    elif args.verb == "add":
        name, root = store.add_marketplace(args.source, home, cwd)
        print(f"Added marketplace {name} ({root}); install with: piton plugin install <plugin>@{name}")
    else:
        for name, root, listed in store.marketplaces(home):
            print(f"{name}  {root}\n  {', '.join(listed) or '(no plugins)'}")
    return 0


def _list(home: Path, cwd: Path) -> int:
    from piton.core.project.settings import load_settings
    from piton.skills.plugin_store import installed
    from piton.skills.plugins import enabled

    on = enabled(load_settings(cwd))
    plugins = installed(home)
    if not plugins:
        print("No plugins installed. Install one with: piton plugin install <path|git-url|name@marketplace>")
    for plugin in plugins:
        state = "enabled" if plugin.plugin_id in on else "disabled"
        by = " (installed by Claude Code)" if plugin.by != "piton" else ""
        version = f" {plugin.version}" if plugin.version else ""
        print(f"{plugin.plugin_id}{version}  {state}{by}  {plugin.path}")
    return 0
