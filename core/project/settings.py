"""Settings: Piton's and Claude Code's files, merged with Claude Code's precedence
(`core/project/settings_sources` says which files, in which order, and which speak for the user).

Later files override earlier ones key by key, except permission rules and added directories, which
add up across files (as Claude Code's do); a deny rule beats an ask rule beats an allow rule
whichever file names it. A file or value that cannot be used is skipped with a warning; it never
stops Piton from starting, and a key Piton does not apply is named (`unsupported`). Project files
come with the code (anyone who can commit can write them): what would widen the sandbox is taken
from the user's own files only; the sandbox mode and the permission mode are the user's choice,
which a project may narrow and never widen (and managed policy narrows whatever the user chose);
and the project's allow rules, hooks and environment grant only in a folder the user trusts
(`core/project/trust`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from piton.core.project.jsonfile import JsonFileError, read
from piton.core.project.settings_keys import ExtensionSettings
from piton.core.project.settings_layers import at, brief
from piton.core.project.settings_sources import (
    MANAGED_FILES,
    SETTING_SOURCES,
    Source,
    settings_files,
    shown,
    user_config_dir,
)
from piton.core.records import record

__all__ = ["SETTING_SOURCES", "Settings", "load_settings", "settings_files", "user_config_dir"]


# Values from the strictest to the widest: a project may move the user's choice left, never right.
SANDBOX_STRICTNESS = ("read-only", "workspace-write", "danger-full-access")
MODE_STRICTNESS = ("plan", "default", "acceptEdits", "bypassPermissions")
# How an unknown value of a narrowed setting is read, from any file: the sandbox mode as the strictest
# (a misspelt "read_only" must not leave the sandbox wider than its writer meant); an unknown
# permission mode is ignored, the user's choice or the default standing.
_UNKNOWN_READS_AS: dict[tuple[str, ...], str] = {("sandbox", "mode"): SANDBOX_STRICTNESS[0]}


def _mode_value(layer: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The value at `keys`; for the sandbox mode, Claude Code's `"sandbox": {"enabled": false}` too
    (no sandbox: danger-full-access)."""
    value = at(layer, keys)
    if value is None and keys == ("sandbox", "mode") and at(layer, ("sandbox", "enabled")) is False:
        return "danger-full-access"
    return value


@record
class Settings(ExtensionSettings):
    """Every settings file read for a run, and what they decide together."""

    def _widening(self, keys: tuple[str, ...], widens: Any) -> None:
        """Warn when a project file tries to set `keys` to a value that only the user's file may."""
        for layer, trusted in zip(self.layers, self.trusted, strict=True):
            value = at(layer, keys)
            if not trusted and value is not None and widens(value):
                self.warnings.append(
                    f"ignored {'.'.join(keys)}={brief(value)} from the project's settings: only your "
                    "own settings (~/.piton, ~/.claude) or a command-line flag may widen what Piton may do"
                )

    @property
    def model(self) -> str | None:
        value = self._last("model")
        return value if isinstance(value, str) and value.strip() else None

    @property
    def output_style(self) -> str | None:
        """`outputStyle`: the name of the style the model answers in (a project's file may choose
        one: a style only changes how the model talks)."""
        value = self._last("outputStyle")
        return value if isinstance(value, str) and value.strip() else None

    @property
    def model_prices(self) -> dict[str, tuple[float, float]]:
        """`modelPrices`: `{"openai:gpt-5": {"input": 1.25, "output": 10}}`, dollars per million
        tokens, for models the built-in table does not price. The user's own files only: a project
        could otherwise make a run look free."""
        value = self._last("modelPrices", trusted_only=True)
        prices: dict[str, tuple[float, float]] = {}
        for model, price in value.items() if isinstance(value, dict) else []:
            if isinstance(price, dict) and all(
                isinstance(price.get(k), int | float) for k in ("input", "output")
            ):
                prices[str(model)] = (float(price["input"]), float(price["output"]))
        return prices

    @property
    def tool_timeouts(self) -> dict[str, float]:
        """`toolTimeouts`: `{"WebFetch": 30, "mcp__github__*": 60}`, seconds a tool's call may take.
        A project's file may set them too: a limit only narrows what a call may do."""
        value = self._last("toolTimeouts")
        if not isinstance(value, dict):
            return {}
        return {str(k): float(v) for k, v in value.items() if isinstance(v, int | float) and v > 0}

    def agent_caps(self) -> dict[str, float]:
        """`agents`: `{"maxRunning": 4, "maxTotal": 50, "maxCostUsd": 5}`: background agents at once,
        agents a session starts, what they spend together. Any file may set them and the smallest
        value wins: a cap only narrows what the model may start."""
        caps: dict[str, float] = {}
        for layer in self.layers:
            for key in ("maxRunning", "maxTotal", "maxCostUsd"):
                value = at(layer, ("agents", key))
                if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
                    caps[key] = min(caps.get(key, float(value)), float(value))
        return caps

    @property
    def agents_wait_in_print(self) -> bool:
        """`"agents": {"waitInPrint": false}`: a `-p` run ends with its answer, stopping the background
        agents still at work, instead of waiting for their reports."""
        return self._last("agents", "waitInPrint") is not False

    @property
    def memory_in_project(self) -> bool:
        """`"memoryInProject": true` in the user's own settings: the memory tool's folder is the
        project's `.piton/memories`. Never a project's say: its folder would then be the project's
        choice, for a tool that writes unasked."""
        return self._last("memoryInProject", trusted_only=True) is True

    @property
    def thinking(self) -> bool | None:
        """`"thinking": false` turns extended thinking off (Claude Code's `alwaysThinkingEnabled` too)."""
        for key in ("thinking", "alwaysThinkingEnabled"):
            value = self._last(key)
            if isinstance(value, bool):
                return value
        return None

    def rules(self, behavior: str, *, trusted_only: bool = False) -> list[str]:
        """Permission rules of one behavior (allow, ask, deny) from every file."""
        return self._all("permissions", behavior, trusted_only=trusted_only)

    def project_rules(self, behavior: str) -> list[tuple[Path, str]]:
        """The project files' rules of one behavior, each with the file that names it."""
        out: list[tuple[Path, str]] = []
        for layer, trusted, path in zip(self.layers, self.trusted, self._paths(), strict=True):
            value = at(layer, ("permissions", behavior))
            if not trusted and isinstance(value, list):
                out += [(path, v) for v in value if isinstance(v, str)]
        return out

    def narrowed(self, keys: tuple[str, str], order: tuple[str, ...], flag: str | None, default: str) -> str:
        """A setting whose values run from strictest to widest (`order`): the user's choice (`flag`,
        else the user's file, else `default`), narrowed by the project's files when they ask for
        something stricter, never widened by them. An ignored project value is noted once; an
        unknown value is noted naming its file and key, and read as `_UNKNOWN_READS_AS` says."""
        name = ".".join(keys)
        unknown_as = _UNKNOWN_READS_AS.get(keys)

        def known(value: Any, path: Path) -> str | None:
            if value in order:
                return str(value)
            reading = f"read as {unknown_as!r}, the strictest" if unknown_as else "ignored"
            self._warn(
                f"unknown {name}={brief(value)} in {shown(path)} (one of {', '.join(order)}): {reading}"
            )
            return unknown_as

        layers = list(zip(self.layers, self.trusted, self._paths(), self._scopes(), strict=True))
        user = flag
        if user is None:
            for layer, trusted, path, scope in layers:
                value = _mode_value(layer, keys)
                if trusted and scope != "managed" and value is not None:
                    user = known(value, path)
        chosen = user or default
        asked: tuple[str, Path, bool] | None = None  # the project's value, by the files' own precedence
        for layer, trusted, path, scope in layers:
            value = _mode_value(layer, keys)
            if (trusted and scope != "managed") or value is None:
                continue
            if (reading := known(value, path)) is not None:
                if scope == "managed" and asked is not None and order.index(asked[0]) < order.index(reading):
                    continue  # policy narrows; it does not widen what a project narrowed
                asked = (reading, path, reading != value)
        if asked is None:
            return chosen
        value, path, unknown = asked
        if order.index(value) < order.index(chosen):
            if user is not None and not unknown:  # an unknown value was said once already
                self._warn(f"{shown(path)} narrows {name} to {value!r} (you chose {chosen!r})")
            return value
        if order.index(value) > order.index(chosen) and path.name != "managed-settings.json":
            self._warn(
                f"ignored {name}={value!r} from {shown(path)}: a project's settings may narrow your "
                f"choice ({chosen!r}), never widen it; only your own settings (~/.piton, ~/.claude) or "
                "a command-line flag may widen it"
            )
        return chosen

    @property
    def trusted_folders(self) -> list[str]:
        """`"trustedFolders"` in the user's own file: folders whose files may grant (paths or globs)."""
        found = self._all("trustedFolders", trusted_only=True)
        for entry in found:
            if not entry.strip().startswith(("/", "~")):
                self._warn(f"ignored trustedFolders entry {entry!r}: use an absolute path or ~/…")
        return [e for e in found if e.strip().startswith(("/", "~"))]

    @property
    def additional_directories(self) -> list[str]:
        """`permissions.additionalDirectories` of the user's own file (relative to the working
        directory, or `~/…`); an entry that names no directory is skipped with a warning naming the
        file and the key: a setting, unlike a flag, does not stop Piton from starting."""
        found: list[str] = []
        for layer, trusted, path in zip(self.layers, self.trusted, self._paths(), strict=True):
            value = at(layer, ("permissions", "additionalDirectories"))
            if not trusted or not isinstance(value, list):
                continue
            for entry in value:
                if not isinstance(entry, str) or not entry.strip():
                    self._warn(
                        f"ignored permissions.additionalDirectories entry {brief(entry)} in {shown(path)}"
                    )
                elif self.base is not None and not (self.base / os.path.expanduser(entry)).is_dir():
                    self._warn(
                        f"ignored permissions.additionalDirectories entry {entry!r} in {shown(path)}: "
                        "not a directory"
                    )
                else:
                    found.append(entry)
        return found

    @property
    def network(self) -> bool:
        """Network access inside the shell sandbox (`"sandbox": {"network": true}`), off by default."""
        return self._last("sandbox", "network", trusted_only=True) is True

    @property
    def auto_compact(self) -> bool:
        """`"autoCompact": false` turns automatic compaction off (/compact still works)."""
        return self._last("autoCompact") is not False

    @property
    def compact_threshold(self) -> float | None:
        """`"autoCompactThreshold"`: the share of the window at which compaction starts, as a fraction
        (0.7) or a percentage (70); between 10% and 95%."""
        value = self._last("autoCompactThreshold")
        if value is None:
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            fraction = value / 100 if value > 1 else float(value)
            if 0.1 <= fraction <= 0.95:
                return fraction
        self._warn(f"ignored autoCompactThreshold={brief(value)}: use a share of the window, 0.1 to 0.95")
        return None

    def model_limits(self, model: str) -> tuple[int | None, int | None]:
        """(context window, output tokens) overrides for `model`: `"models": {"<id>": {"contextWindow":
        N, "maxOutputTokens": N}}`, or a top-level `"contextWindow"` for every model."""
        found: list[int | None] = []
        for key in ("contextWindow", "maxOutputTokens"):
            value = self._last("models", model, key)
            if value is None and key == "contextWindow":
                value = self._last(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1_024):
                self._warn(f"ignored {key}={brief(value)} for {model}: expected a whole number of tokens")
                value = None
            found.append(value)
        return found[0], found[1]

    def check_project_files(self) -> None:
        """Note each widening value a project file tried to set (they are ignored). The sandbox and
        permission modes are judged against the user's choice (`narrowed`)."""
        self._widening(("sandbox", "network"), lambda v: v is True)
        self._widening(("permissions", "additionalDirectories"), lambda v: bool(v))
        self._widening(("trustedFolders",), lambda v: bool(v))

    @property
    def credential_paths(self) -> list[str]:
        """`"sandbox": {"credentialPaths": ["~/.company-token"]}`: more places under each home that
        the model's tools never read, from every file (a project may hide more, never less)."""
        return [p for p in self._all("sandbox", "credentialPaths") if p.strip().strip("~/")]

    @property
    def sandbox_limits(self) -> dict[str, Any]:
        """`"sandbox": {"limits": {...}}`, from the user's own file only: a project cannot loosen
        them (`piton.core.safety.sandbox.limits` reads the values)."""
        value = self._last("sandbox", "limits", trusted_only=True)
        return value if isinstance(value, dict) else {}


def load_settings(
    cwd: Path,
    *,
    sources: list[str] | None = None,
    extra: str | None = None,
    managed: tuple[Path, ...] = MANAGED_FILES,
) -> Settings:
    """The settings files that `sources` names (all of them by default; managed policy always),
    and `extra` (`--settings`: a file or inline JSON) above them: given on the command line, it
    ranks like a flag, and is the user's own choice, trusted as their files are."""
    settings = Settings(base=cwd)
    files = settings_files(cwd, managed=managed)
    if extra is not None:
        data, path = extra_layer(extra, cwd)
        files.insert(next(i for i, f in enumerate(files) if f.scope == "managed"), Source(path, "flag"))
    for source in files:
        if source.scope in SETTING_SOURCES and sources is not None and source.scope not in sources:
            continue
        if source.scope == "flag":
            settings.add(data, source)
            continue
        try:
            layer = read(source.path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except JsonFileError as e:
            settings.warnings.append(f"ignored {source.path}: {e}")
            continue
        if not isinstance(layer, dict):
            settings.warnings.append(f"ignored {source.path}: expected a JSON object")
            continue
        settings.add(layer, source)
    settings.check_project_files()
    return settings


class SettingsFlagError(ValueError):
    """`--settings` names no readable JSON object; the message is one line for people."""


def extra_layer(value: str, cwd: Path) -> tuple[dict[str, Any], Path]:
    """`--settings` as a layer: inline JSON when it looks like an object, else a file's path."""
    import json

    if value.lstrip().startswith("{"):
        try:
            data = json.loads(value)
        except json.JSONDecodeError as e:
            raise SettingsFlagError(f"--settings: not valid JSON ({e})") from e
        path = cwd / "--settings"
    else:
        path = cwd / os.path.expanduser(value)
        try:
            data = read(path)
        except (FileNotFoundError, NotADirectoryError) as e:
            raise SettingsFlagError(f"--settings: no file {path}") from e
        except JsonFileError as e:
            raise SettingsFlagError(f"--settings {path}: {e}") from e
    if not isinstance(data, dict):
        raise SettingsFlagError("--settings: expected a JSON object")
    return data, path
