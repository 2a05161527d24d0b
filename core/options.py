"""What the user asked for on the command line: kept light, so the terminal can start before the
agent's modules are loaded."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(slots=True)
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
