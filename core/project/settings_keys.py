"""The settings keys Piton understands, and the ones a file sets that it does not.

Claude Code's settings files hold many keys; Piton applies those it has a meaning for and names
every other one (in /status and `piton doctor`), so that a rule or a hook the user relies on is
never dropped without a word.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from piton.core.project.settings_layers import Layers, at, brief
from piton.core.project.settings_sources import shown

# top-level key -> the sub-keys understood (None: the value is taken whole)
SUPPORTED: dict[str, frozenset[str] | None] = {
    "$schema": None,
    "permissions": frozenset(
        {"allow", "deny", "ask", "defaultMode", "additionalDirectories", "disableBypassPermissionsMode"}
    ),
    "model": None,
    "env": None,
    "hooks": None,
    "disableAllHooks": None,
    "statusLine": None,
    "mcpServers": None,
    "enableAllProjectMcpServers": None,
    "enabledMcpjsonServers": None,
    "disabledMcpjsonServers": None,
    "enabledPlugins": None,
    "alwaysThinkingEnabled": None,
    "cleanupPeriodDays": None,
    "includeCoAuthoredBy": None,
    "outputStyle": None,
    "sandbox": frozenset(
        {"mode", "network", "limits", "credentialPaths", "enabled", "autoAllowBashIfSandboxed"}
    ),
    # Piton's own
    "thinking": None,
    "trustedFolders": None,
    "autoCompact": None,
    "autoCompactThreshold": None,
    "models": None,
    "contextWindow": None,
    "memoryInProject": None,
    "modelPrices": None,
    "toolTimeouts": None,
    "agents": frozenset({"maxRunning", "maxTotal", "maxCostUsd", "waitInPrint"}),
}


def unsupported(layer: dict[str, Any]) -> list[str]:
    """The keys of one settings file that Piton does not apply (`sandbox.network` in Claude Code's
    object form among them: Piton's network is on or off)."""
    found: list[str] = []
    for key, value in layer.items():
        if key not in SUPPORTED:
            found.append(key)
            continue
        known = SUPPORTED[key]
        if known is None or not isinstance(value, dict):
            continue
        found += [f"{key}.{sub}" for sub in value if sub not in known]
        if key == "sandbox" and "network" in value and not isinstance(value["network"], bool):
            found.append("sandbox.network (only true or false)")
    return found


class ExtensionSettings(Layers):
    """The keys that reach beyond permissions: environment, hooks, the status line, MCP servers,
    session cleanup and commit attribution."""

    __slots__ = ()

    def env(self, *, trusted_only: bool = False) -> dict[str, str]:
        """`"env"`: variables for the model's commands and for hooks, later files winning. Values are
        taken as written (never expanded from Piton's own environment), so a file cannot copy a
        secret Piton holds into the sandbox; what the user lists there goes in on purpose."""
        merged: dict[str, str] = {}
        for layer, trusted, path in zip(self.layers, self.trusted, self._paths(), strict=True):
            value = layer.get("env")
            if value is None or (trusted_only and not trusted):
                continue
            if not isinstance(value, dict):
                self._warn(f"ignored env in {shown(path)}: expected an object of names and values")
                continue
            for name, text in value.items():
                if isinstance(text, (str, int, float)) and not isinstance(text, bool) and name.strip():
                    merged[str(name)] = str(text)
                else:
                    self._warn(f"ignored env {name!r} in {shown(path)}: expected a string value")
        return merged

    def hook_layers(self) -> list[tuple[Path, bool, dict[str, Any]]]:
        """Each file's `"hooks"` object with the file and whether it speaks for the user; none at all
        when the user's own files say `"disableAllHooks": true` (a project's saying so turns off
        only the project's hooks: it must not switch off a guard the user set)."""
        if self._last("disableAllHooks", trusted_only=True) is True:
            return []
        project_off = any(
            layer.get("disableAllHooks") is True
            for layer, trusted in zip(self.layers, self.trusted, strict=True)
            if not trusted
        )
        out: list[tuple[Path, bool, dict[str, Any]]] = []
        for layer, trusted, path in zip(self.layers, self.trusted, self._paths(), strict=True):
            value = layer.get("hooks")
            if value is None or (project_off and not trusted):
                continue
            if isinstance(value, dict):
                out.append((path, trusted, value))
            else:
                self._warn(f"ignored hooks in {shown(path)}: expected an object of events")
        return out

    def status_line(self) -> tuple[Path, bool, dict[str, Any]] | None:
        """`"statusLine": {"type": "command", "command": …}` from the last file that sets it."""
        for layer, trusted, path in zip(
            reversed(self.layers), reversed(self.trusted), reversed(self._paths()), strict=True
        ):
            value = layer.get("statusLine")
            if isinstance(value, dict) and isinstance(value.get("command"), str) and value["command"].strip():
                return path, trusted, value
            if value is not None:
                self._warn(f"ignored statusLine in {shown(path)}: expected a command to run")
                return None
        return None

    @property
    def mcp_servers(self) -> dict[str, Any]:
        """`"mcpServers"` of the user's own files (a project's are approved like `.mcp.json`'s)."""
        merged: dict[str, Any] = {}
        for layer, trusted in zip(self.layers, self.trusted, strict=True):
            value = layer.get("mcpServers")
            if trusted and isinstance(value, dict):
                merged.update(value)
        return merged

    def project_mcp_servers(self) -> list[tuple[Path, dict[str, Any]]]:
        """`"mcpServers"` of the project's settings files, each with its file."""
        return [
            (path, layer["mcpServers"])
            for layer, trusted, path in zip(self.layers, self.trusted, self._paths(), strict=True)
            if not trusted and isinstance(layer.get("mcpServers"), dict)
        ]

    @property
    def enable_all_project_mcp_servers(self) -> bool:
        """Only the user's own files may start every server a project's `.mcp.json` names."""
        return self._last("enableAllProjectMcpServers", trusted_only=True) is True

    @property
    def enabled_mcpjson_servers(self) -> list[str]:
        return self._all("enabledMcpjsonServers", trusted_only=True)

    @property
    def disabled_mcpjson_servers(self) -> list[str]:
        """Any file may turn a server off."""
        return self._all("disabledMcpjsonServers")

    @property
    def cleanup_period_days(self) -> float | None:
        """`"cleanupPeriodDays"`: sessions untouched for longer are deleted at start (user's files)."""
        value = self._last("cleanupPeriodDays", trusted_only=True)
        if value is None:
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return float(value)
        self._warn(f"ignored cleanupPeriodDays={brief(value)}: expected a number of days")
        return None

    @property
    def include_co_authored_by(self) -> bool:
        """`"includeCoAuthoredBy"`: commits the model writes credit Piton in a trailer."""
        return self._last("includeCoAuthoredBy") is True

    @property
    def bypass_disabled(self) -> bool:
        """`permissions.disableBypassPermissionsMode: "disable"`, from any file (it only narrows)."""
        return any(
            at(layer, ("permissions", "disableBypassPermissionsMode")) == "disable" for layer in self.layers
        )

    @property
    def auto_allow_sandboxed_bash(self) -> bool:
        """Claude Code's `sandbox.autoAllowBashIfSandboxed`, from the user's own files: commands that
        run in the sandbox need no question (deny and ask rules still apply)."""
        return self._last("sandbox", "autoAllowBashIfSandboxed", trusted_only=True) is True

    def unsupported_keys(self) -> list[str]:
        """`key (file)` for each key a file sets that Piton does not apply."""
        return [
            f"{key} ({shown(path)})"
            for layer, path in zip(self.layers, self._paths(), strict=True)
            for key in unsupported(layer)
        ]
