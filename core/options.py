"""What the user asked for on the command line: kept light, so the terminal can start before the
agent's modules are loaded."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Any, Literal

from piton.core.records import record


@record
class RunOptions:
    cwd: Path
    model: str | None = None
    thinking: bool | None = None
    max_turns: int | None = None
    append_system_prompt: str | None = None
    continue_latest: bool = False
    resume: str | None = None
    permission_mode: str | None = None
    allowed_tools: list[str] = field(default_factory=list)
    disallowed_tools: list[str] = field(default_factory=list)
    sandbox: str | None = None
    add_dirs: list[Path] = field(default_factory=list)
    trust_workspace: bool = False  # --trust-workspace: the folder's own grants count for this run
    # "stdio": permission questions go to the client that drives Piton over the control protocol
    permission_prompt_tool: str | None = None
    system_prompt: str | None = None  # --system-prompt: replaces Piton's own ("" leaves none)
    tools: list[str] | None = None  # --tools: the built-in tools offered (None: all of them)
    setting_sources: list[str] | None = None  # --setting-sources: user, project, local (None: all)
    settings: str | None = None  # --settings: one more layer, a file or inline JSON, above the files
    session_id: str | None = None  # --session-id: the id a new session takes
    fork_session: bool = False  # with a resumed session: go on in a new one with the same history
    # a resumed session another piton is writing: go on in a new one, or refuse (an editor's
    # `session/load`, which cannot be told of a new id)
    if_busy: Literal["fork", "refuse"] = "fork"
    max_budget_usd: float | None = None  # stop the run once it has cost more
    # IS_SANDBOX=1 in the environment Piton started with: commands run without bwrap
    machine_is_sandbox: bool = False
    json_schema: dict[str, Any] | None = None  # --json-schema: the answer is a JSON value matching it
    thinking_display: str | None = None  # --thinking-display: summarized or omitted (the API's default)
    effort: str | None = None  # --effort: low, medium, high, xhigh or max, for models that take it
    max_budget_tokens: int | None = None  # --max-budget-tokens: tokens (all kinds) a run may use
    fallback_model: str | None = None  # --fallback-model: the model for when the main one is overloaded
    agents: str | None = None  # --agents: JSON {name: {description, prompt, tools, model}}
    mcp_config: list[str] = field(default_factory=list)  # --mcp-config: files or inline JSON
    strict_mcp_config: bool = False  # --strict-mcp-config: only the servers of --mcp-config
    plugin_dirs: list[Path] = field(default_factory=list)  # --plugin-dir: plugin folders to load
