"""Piton as a Harbor agent, to run many tasks in parallel on Harbor's local Docker or cloud sandboxes:

    harbor run -a piton.harbor:PitonAgent -m anthropic/claude-sonnet-4-5 -d terminal-bench@2.0

Options (`--ak name=value`): `version` (the piton-code release to install; the latest by default),
`wheel` (a local wheel or sdist to upload and install instead), `reasoning_effort`, `max_turns`,
`max_budget_usd`, `thinking_display` (summarized or omitted) and `disable_web_search` (as for Claude
Code). After the run, the transcript Piton wrote in Claude Code's format becomes the
trial's `trajectory.json` (ATIF), and its tokens and cost go into the trial's context.

Harbor itself must be installed where it runs (it needs Python 3.12 or later); this module is
imported there, and only there.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path, PurePosixPath
from typing import Any

from piton.harbor_run import (
    LOG_NAME,
    RunFlags,
    install_script,
    package_spec,
    run_command,
    run_env,
    setup_command,
)
from piton.trajectory import build, context_totals

try:
    from harbor.agents.installed.base import BaseInstalledAgent
    from harbor.environments.base import BaseEnvironment
    from harbor.models.agent.context import AgentContext
except ImportError as e:  # pragma: no cover - depends on what is installed where it is imported
    raise ImportError(
        "piton.harbor is a Harbor agent: install Harbor (pip install harbor, Python 3.12 or later) "
        "in the environment that runs `harbor run`"
    ) from e


class PitonAgent(BaseInstalledAgent):  # type: ignore[misc]
    """Installs Piton in the task's container and runs it there as Harbor runs Claude Code."""

    def __init__(
        self,
        logs_dir: Path,
        *args: Any,
        wheel: str | None = None,
        reasoning_effort: str | None = None,
        max_turns: int | str | None = None,
        max_budget_usd: float | str | None = None,
        thinking_display: str | None = None,
        disable_web_search: bool | str = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(logs_dir, *args, **kwargs)
        self._wheel = wheel
        self._flags = RunFlags(
            effort=reasoning_effort or os.environ.get("CLAUDE_CODE_EFFORT_LEVEL") or None,
            max_turns=int(max_turns) if max_turns not in (None, "") else None,
            max_budget_usd=float(max_budget_usd) if max_budget_usd not in (None, "") else None,
            model=self._model(),
            thinking_display=thinking_display or None,
            disable_web_search=str(disable_web_search).lower() in ("1", "true", "yes"),
        )

    @staticmethod
    def name() -> str:
        return "piton"

    def get_version_command(self) -> str | None:
        return "piton --version"

    def parse_version(self, stdout: str) -> str:
        return stdout.strip().split()[-1] if stdout.strip() else ""

    def _model(self) -> str | None:
        """`-m anthropic/claude-sonnet-4-5` names the model after its provider."""
        name = getattr(self, "model_name", None)
        return name.split("/", 1)[-1] if name else None

    @property
    def _remote_logs(self) -> PurePosixPath:
        return PurePosixPath(str(self.environment_logs_dir))

    async def install(self, environment: BaseEnvironment) -> None:
        spec = package_spec(self.version(), None)
        if self._wheel:
            remote = f"/installed-agent/{Path(self._wheel).name}"
            await environment.upload_file(self._wheel, remote)
            spec = remote
        await self.exec_as_root(environment, install_script(spec))

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        sessions = (self._remote_logs / "sessions").as_posix()
        env = run_env(os.environ, sessions, self._flags)
        await self.exec_as_agent(environment, setup_command(sessions), env=env)
        variable = f"PITON_INSTRUCTION_{uuid.uuid4().hex.upper()}"
        command = run_command(variable, self._remote_logs.as_posix(), self._flags)
        await self.exec_as_agent(
            environment, command, env={**env, variable: self.render_instruction(instruction)}
        )

    def populate_context_post_run(self, context: AgentContext) -> None:
        trajectory = build(self.logs_dir / "sessions", self.logs_dir / LOG_NAME, self._flags.model)
        if trajectory is None:
            self.logger.debug("no Piton transcript under %s", self.logs_dir / "sessions")
            return
        (self.logs_dir / "trajectory.json").write_text(
            json.dumps(trajectory, indent=2, ensure_ascii=False), encoding="utf-8"
        )
        for name, value in context_totals(trajectory).items():
            setattr(context, name, value)
