"""`piton config list|get|set|add|remove`: the settings files, read and written from the command line.

Keys are dotted paths into a file (`model`, `permissions.defaultMode`, `env.DEBUG`); a value is
JSON when it parses as JSON (`false`, `3`, `["a"]`), else a string. Writing goes to Piton's own file
of the chosen scope (user `~/.piton/settings.json`, project `.piton/settings.json`, local
`.piton/settings.local.json`, the default, which is added to `.git/info/exclude`), never to
Claude Code's files, which are read as they are. Reading shows every file that sets a key, lowest
precedence first, so the last line is the one that wins (lists such as `permissions.allow` add up).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from piton.core.project.git_exclude import exclude_from_git
from piton.core.project.jsonfile import JsonFileError, read_object, write_object
from piton.core.project.settings_sources import Source, settings_files, shown, user_config_dir

_SCOPES = ("user", "project", "local")
_MISSING = object()
# what a project's file may set only as far as workspace trust allows
_GRANTS = ("permissions", "hooks", "env", "sandbox", "statusLine", "mcpServers", "enabledPlugins")


class ConfigError(Exception):
    pass


def scope_file(scope: str, cwd: Path) -> Path:
    if scope == "user":
        return user_config_dir() / "settings.json"
    return cwd / ".piton" / ("settings.json" if scope == "project" else "settings.local.json")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="piton config", description="Read and change settings.")
    commands = parser.add_subparsers(dest="command", required=True)

    def scoped(name: str, help_text: str, default: str | None) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("-s", "--scope", choices=_SCOPES, default=default)
        sub.add_argument("-g", "--global", dest="scope", action="store_const", const="user")
        return sub

    scoped("list", "Every key of every settings file (or of one scope's file).", None).add_argument(
        "--json", action="store_true", help="the files and their contents as JSON"
    )
    scoped("get", "A key's value in each file that sets it; the last one wins.", None).add_argument("key")
    setter = scoped("set", "Set a key in one scope's file (local by default).", "local")
    setter.add_argument("key")
    setter.add_argument("value")
    for name, help_text in (("add", "Add values to a list key"), ("remove", "Remove values, or the key")):
        sub = scoped(name, f"{help_text} (local by default).", "local")
        sub.add_argument("key")
        sub.add_argument("values", nargs="*" if name == "remove" else "+")
    return parser


def main(argv: list[str], out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # argparse has said what was wrong (or printed the help)
        return int(e.code or 0)
    cwd = Path.cwd()
    try:
        if args.command == "list":
            return _list(cwd, args.scope, args.json, out)
        if args.command == "get":
            return _get(cwd, args.scope, _path(args.key), out)
        target = scope_file(args.scope, cwd)
        data = _read(target)
        keys = _path(args.key)
        if args.command == "set":
            _put(data, keys, _value(args.value))
        elif args.command == "add":
            _add(data, keys, [_value(v) for v in args.values])
        else:
            _remove(data, keys, [_value(v) for v in args.values])
        _write(target, data, args.scope)
    except ConfigError as e:
        err.write(f"piton config: {e}\n")
        return 1
    except OSError as e:
        err.write(f"piton config: cannot write {shown(target)}: {e.strerror or e}\n")
        return 1
    out.write(f"{args.key} in {shown(target)} ({args.scope}): {_show(_at(data, keys))}\n")
    for note in _notes(cwd, target, keys):
        out.write(f"! {note}\n")
    return 0


def save(scope: str, cwd: Path, keys: list[str], value: Any) -> Path:
    """Set `keys` to `value` in Piton's own file of `scope`, and say which file that is. ConfigError
    for a file that cannot be read as settings, OSError for one that cannot be written."""
    target = scope_file(scope, cwd)
    data = _read(target)
    _put(data, keys, value)
    _write(target, data, scope)
    return target


def _write(target: Path, data: dict[str, Any], scope: str) -> None:
    write_object(target, data, private=scope != "project")
    if scope == "local":  # the user's own: kept out of the project's commits
        exclude_from_git(target)


def _path(key: str) -> list[str]:
    keys = key.split(".")
    if not all(keys):
        raise ConfigError(f"not a key: {key!r} (dotted names, such as permissions.defaultMode)")
    return keys


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _show(value: Any) -> str:
    return "(not set)" if value is _MISSING else json.dumps(value, ensure_ascii=False)


def _read(path: Path) -> dict[str, Any]:
    try:
        return read_object(path)
    except JsonFileError as e:  # never overwrite what the user wrote and we cannot read
        raise ConfigError(f"{shown(path)}: {e}; fix or remove it first") from e


def _at(data: Any, keys: list[str]) -> Any:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return _MISSING
        data = data[key]
    return data


def _parent(data: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    for key in keys[:-1]:
        child = data.setdefault(key, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{key} holds {_show(child)}, not an object")
        data = child
    return data


def _put(data: dict[str, Any], keys: list[str], value: Any) -> None:
    _parent(data, keys)[keys[-1]] = value


def _add(data: dict[str, Any], keys: list[str], values: list[Any]) -> None:
    parent = _parent(data, keys)
    current = parent.setdefault(keys[-1], [])
    if not isinstance(current, list):
        raise ConfigError(f"{'.'.join(keys)} holds {_show(current)}, not a list; use set")
    current += [v for v in values if v not in current]


def _remove(data: dict[str, Any], keys: list[str], values: list[Any]) -> None:
    parent = _at(data, keys[:-1]) if len(keys) > 1 else data
    if not isinstance(parent, dict) or keys[-1] not in parent:
        raise ConfigError(f"{'.'.join(keys)} is not set there")
    if not values:
        del parent[keys[-1]]
        return
    current = parent[keys[-1]]
    if not isinstance(current, list):
        raise ConfigError(f"{'.'.join(keys)} is not a list; remove the key without values")
    parent[keys[-1]] = [v for v in current if v not in values]


def _files(cwd: Path, scope: str | None) -> list[Source]:
    files = [f for f in settings_files(cwd) if f.path.is_file()]
    if scope is not None:
        files = [f for f in files if f.scope == scope]
    return files


def _list(cwd: Path, scope: str | None, as_json: bool, out: TextIO) -> int:
    contents: list[tuple[Source, dict[str, Any] | str]] = []
    for source in _files(cwd, scope):
        try:
            contents.append((source, read_object(source.path)))
        except JsonFileError as e:
            contents.append((source, f"cannot be used: {e}"))
    if as_json:
        listing = [{"file": str(s.path), "scope": s.scope, "settings": c} for s, c in contents]
        out.write(json.dumps(listing, indent=2) + "\n")
        return 0
    if not contents:
        out.write(
            f"No settings files{f' in the {scope} scope' if scope else ''}. Set a key with: "
            "piton config set KEY VALUE\n"
        )
        return 0
    for source, content in contents:
        out.write(f"{shown(source.path)} ({source.scope})\n")
        if isinstance(content, str):
            out.write(f"  {content}\n")
            continue
        for key, value in _flat(content):
            out.write(f"  {key} = {_show(value)}\n")
    return 0


def _flat(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Objects are opened up to their leaves, except those whose keys are names (env, hooks…)."""
    pairs: list[tuple[str, Any]] = []
    for key, value in data.items():
        if isinstance(value, dict) and value and key not in ("hooks", "mcpServers", "models"):
            pairs += _flat(value, f"{prefix}{key}.")
        else:
            pairs.append((f"{prefix}{key}", value))
    return pairs


def _get(cwd: Path, scope: str | None, keys: list[str], out: TextIO) -> int:
    found = 0
    for source in _files(cwd, scope):
        try:
            value = _at(read_object(source.path), keys)
        except JsonFileError:
            continue
        if value is not _MISSING:
            found += 1
            out.write(f"{_show(value)}  ({shown(source.path)}, {source.scope})\n")
    if not found:
        out.write(f"{'.'.join(keys)} is not set\n")
    return 0 if found else 1


def _notes(cwd: Path, target: Path, keys: list[str]) -> list[str]:
    """What Piton makes of the file now: keys it does not apply, values it cannot use."""
    from piton.core.project.settings import load_settings
    from piton.core.project.settings_keys import unsupported

    notes: list[str] = []
    top = _at(_read(target), keys[:1])
    if top is not _MISSING and unsupported({keys[0]: top}):
        notes.append(f"Piton does not apply {'.'.join(keys)} (kept for Claude Code)")
    notes += [w for w in load_settings(cwd).warnings if shown(target) in w or str(target) in w]
    if target.parent.parent == cwd and keys[0] in _GRANTS:
        notes.append(f"a project's file applies {keys[0]} in full only once you trust the folder")
    return notes
