"""The status line under the prompt: model, permission mode, sandbox, context used, cost; or what
the settings' `statusLine` command prints."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from piton import __version__
from piton.core.safety.reap import kill_started

if TYPE_CHECKING:
    from pathlib import Path

    from piton.cli.turns import SessionTotals
    from piton.core.safety.sandbox import Launch
    from piton.runtime import Runtime


def status_line(runtime: Runtime, totals: SessionTotals, queued: int = 0, width: int = 200) -> str:
    """The line, fitted to `width` columns: what goes first when it is narrow is the least needed
    (the key hint, the sandbox, then the model's name is shortened); context and cost always stay."""
    agent = runtime.agent
    model = agent.config.model
    mode = agent.gate.permissions.mode if agent.gate is not None else "default"
    sandbox = agent.context.policy.mode if agent.context.policy is not None else "workspace-write"
    tail = [f"context {agent.context_used() / agent.context_window():.0%}"] if agent.history else []
    tail.append(f"${totals.cost_usd:.2f}")
    tail += [f"{queued} queued"] if queued else []
    if shells := len(agent.context.shells.running()):
        tail.append(f"{shells} shell{'s' if shells > 1 else ''}")
    if agents := len(agent.context.agents.running()):
        tail.append(f"{agents} agent{'s' if agents > 1 else ''}")
    workflows = getattr(agent.tools.get("Workflow"), "workflows", None)  # the runs, when workflows exist
    for run in workflows.running() if workflows is not None else []:
        tail.append(f"{run.workflow.name}{' · ' + run.phase if run.phase else ''}")
    short = model.removeprefix("claude-")
    for head in (
        [model, f"{mode} (shift+tab)", f"sandbox {sandbox}"],
        [model, mode, f"sandbox {sandbox}"],
        [model, mode],
        [short, mode],
        [short],
    ):
        line = " " + " · ".join(head + tail)
        if len(line) < width:
            return line
    return line[: max(width - 1, 1)]


class StatusCommand:
    """The settings' `statusLine` command: run with Claude Code's JSON on stdin when something
    changed (at start, after each turn), its first line of output shown in place of Piton's own
    status line. A command that fails or hangs leaves Piton's line in place, and says why once."""

    TIMEOUT_S = 5.0

    def __init__(self, command: str, say: Callable[[str], None], *, sandboxed: bool = True) -> None:
        self.command = command
        self.sandboxed = sandboxed  # in a read-only sandbox, unless the user's settings opt it out
        self.text: str | None = None
        self._say = say
        self._told = False
        self._running: asyncio.Task[None] | None = None

    def refresh(self, runtime: Runtime, totals: SessionTotals, redraw: Callable[[], None]) -> None:
        """Run the command again in the background (unless it is still running)."""
        if self._running is not None and not self._running.done():
            return
        self._running = asyncio.ensure_future(self._run(_status_input(runtime, totals), runtime, redraw))

    async def _run(self, payload: dict[str, Any], runtime: Runtime, redraw: Callable[[], None]) -> None:
        cwd = runtime.agent.config.cwd
        programs = runtime.programs
        if programs is None:
            return self._fail("did not run: the session has no sandbox for it")
        listed = {"CLAUDE_PROJECT_DIR": str(cwd)}
        launch = programs.launch(
            "status", self.command, cwd, os.environ, listed, opted_out=not self.sandboxed
        )
        if isinstance(launch, str):
            return self._fail(f"did not run: {launch}")
        try:
            await self._launched(launch, cwd, payload, redraw)
        finally:
            launch.close()

    async def _launched(
        self, launch: Launch, cwd: Path, payload: dict[str, Any], redraw: Callable[[], None]
    ) -> None:
        try:
            process = await asyncio.create_subprocess_exec(
                *launch.argv,
                cwd=cwd,
                env=launch.env,
                pass_fds=launch.pass_fds,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as e:
            return self._fail(f"could not start ({e.strerror or e})")
        launch.started()
        try:
            out, _ = await asyncio.wait_for(process.communicate(json.dumps(payload).encode()), self.TIMEOUT_S)
        except TimeoutError:
            kill_started(process)
            await process.wait()
            return self._fail(f"took longer than {self.TIMEOUT_S:g} s")
        if process.returncode != 0:
            return self._fail(f"failed (exit {process.returncode})")
        lines = out.decode("utf-8", errors="replace").strip().splitlines()
        # its colours are its own business; other control sequences would move the cursor
        self.text = _UNSAFE.sub("", lines[0])[:400] if lines else ""
        redraw()

    def _fail(self, why: str) -> None:
        self.text = None
        if not self._told:
            self._told = True
            from piton.core.safety.programs import OPT_OUT_HINT

            hint = f" (it ran in a read-only sandbox; {OPT_OUT_HINT})" if self.sandboxed else ""
            self._say(f"the statusLine command `{self.command}` {why}; showing Piton's own{hint}")


_UNSAFE = re.compile(r"\x1b\[[0-9;?]*[A-Za-ln-z]|\x1b[^\[]|[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f]")


def _status_input(runtime: Runtime, totals: SessionTotals) -> dict[str, Any]:
    """Claude Code's statusLine input."""
    agent = runtime.agent
    cwd = str(agent.config.cwd)
    return {
        "hook_event_name": "Status",
        "session_id": runtime.log.session_id,
        "transcript_path": str(runtime.log.path),
        "cwd": cwd,
        "model": {"id": agent.config.model, "display_name": agent.config.model},
        "workspace": {"current_dir": cwd, "project_dir": cwd},
        "version": __version__,
        "output_style": {"name": runtime.style_name},
        "cost": {"total_cost_usd": round(totals.cost_usd, 6)},
    }
