"""Workflows: multi-agent work as a Python script the user can read and keep, in
`.piton/workflows/<name>.py`:

    \"\"\"Review every package, then summarise.\"\"\"
    BUDGET = {"agents": 6, "tokens": 400_000, "usd": 3}

    async def main(ctx):
        ctx.phase("review")
        reports = await ctx.parallel(*(ctx.agent(f"Review {p}") for p in ("api", "core")))
        ctx.phase("summary")
        return await ctx.pipeline(["Merge these reviews: {input}", "Shorten: {input}"], "\\n".join(reports))

The script runs in a read-only sandbox of its own (`workflow_boot`): it may read and compute; each
`ctx.agent` is a request Piton answers by running a subagent under the session's rules. A run goes
on in the background; its end reaches the main agent as a notification. Its budget (agents, tokens,
dollars), read from the file without running it, is what the user approves up front; Piton stops
the run when it is spent. Each agent's report is kept in a journal, so a run that was interrupted
can be resumed: the script runs again and the agents that had finished answer from the journal.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import hashlib
import json
import os
import secrets
import shlex
import sys
import time
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

from piton.core.conversation.session import private_state_dir
from piton.core.records import record
from piton.core.safety.policy import SandboxPolicy
from piton.core.safety.reap import kill_started
from piton.core.safety.sandbox import make_sandbox
from piton.core.safety.shell import start_process
from piton.core.subagent_runner import AgentRequest, SubagentRunner
from piton.core.team import AgentRun
from piton.core.workflow_boot import BOOT
from piton.core.worktrees import seen

FOLDERS = (".piton/workflows",)
CLAUDE_FOLDERS = (".claude/workflows",)  # Claude Code's JavaScript workflows: named, not run
RunState = Literal["running", "completed", "failed", "stopped"]


@record(frozen=True)
class Budget:
    agents: int = 10
    tokens: int = 1_000_000
    usd: float = 5.0

    def describe(self) -> str:
        return f"at most {self.agents} agents, {self.tokens:,} tokens, ${self.usd:.2f}"


@record(frozen=True)
class WorkflowFile:
    name: str
    path: Path
    description: str = ""
    budget: Budget = field(default_factory=Budget)


def read_workflow(path: Path) -> WorkflowFile:
    """A workflow's name, description (its docstring's first line) and BUDGET, read without running
    it; raises ValueError for a file that is not one."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    if not any(isinstance(n, ast.AsyncFunctionDef) and n.name == "main" for n in tree.body):
        raise ValueError(f"{path.name} defines no `async def main(ctx)`")
    doc = (ast.get_docstring(tree) or "").strip().splitlines()
    budget = Budget()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "BUDGET" for t in node.targets):
            given = ast.literal_eval(node.value)
            if not isinstance(given, dict):
                raise ValueError(f"{path.name}: BUDGET is a dict of agents, tokens and usd")
            budget = Budget(
                int(given.get("agents", budget.agents)),
                int(given.get("tokens", budget.tokens)),
                float(given.get("usd", budget.usd)),
            )
    return WorkflowFile(path.stem, path, doc[0] if doc else "", budget)


def discover(cwd: Path, home: Path) -> tuple[dict[str, WorkflowFile], list[str]]:
    """The workflows of the project, then the user's (a project's wins a name), and what was not
    loaded, a line each (Claude Code's JavaScript ones among them)."""
    found: dict[str, WorkflowFile] = {}
    notes: list[str] = []
    for base in (cwd, home):
        for folder in FOLDERS:
            for path in sorted((base / folder).glob("*.py")):
                try:
                    found.setdefault(path.stem, read_workflow(path))
                except (OSError, SyntaxError, ValueError) as e:
                    notes.append(f"workflow {path}: not loaded: {e}")
        for folder in CLAUDE_FOLDERS:
            for path in sorted((base / folder).glob("*.[jt]s")):
                notes.append(
                    f"workflow {path}: a Claude Code JavaScript workflow, which Piton does not run; "
                    "Piton's are Python (.piton/workflows/*.py, `async def main(ctx)`)"
                )
    return found, notes


@record
class WorkflowRun:
    id: str
    workflow: WorkflowFile
    args: dict[str, Any]
    state: RunState = "running"
    phase: str = ""
    agents: int = 0  # started (those answered from the journal are not counted)
    replayed: int = 0  # answered from the journal of an earlier run
    tokens: int = 0
    cost_usd: float = 0.0
    result: str = ""
    output: str = ""  # what the script printed (its traceback, when it failed)
    started: float = field(default_factory=time.time)
    ended: float | None = None
    task: asyncio.Task[None] | None = None

    def row(self) -> str:
        phase = f", phase {self.phase}" if self.phase else ""
        replayed = f" (+{self.replayed} from its journal)" if self.replayed else ""
        return (
            f"{self.id}: {self.workflow.name}, {self.state}{phase}, {self.agents} agents{replayed}, "
            f"{self.tokens:,} tokens, ${self.cost_usd:.2f}, {(self.ended or time.time()) - self.started:.0f}s"
        )


def journal_path(run_id: str) -> Path:
    return private_state_dir() / "workflows" / f"{run_id}.jsonl"


class Workflows:
    """The session's workflow runs."""

    def __init__(self, runner: SubagentRunner, found: dict[str, WorkflowFile]) -> None:
        self.runner = runner
        self.found = found  # the workflows there are, by name
        self.runs: dict[str, WorkflowRun] = {}

    def running(self) -> list[WorkflowRun]:
        return [r for r in self.runs.values() if r.state == "running"]

    def start(
        self, workflow: WorkflowFile, args: dict[str, Any], policy: SandboxPolicy, resume: str | None = None
    ) -> WorkflowRun:
        """Run `workflow` in the background (again, answering from `resume`'s journal)."""
        run = WorkflowRun(resume or f"wf-{secrets.token_hex(4)}", workflow, args)
        self.runs[run.id] = run
        run.task = asyncio.create_task(self._supervised(run, policy))
        self.runner.agents.hold(run.id, lambda: self.stop(run))
        return run

    async def stop(self, run: WorkflowRun) -> bool:
        if run.task is None or run.task.done():
            return False
        run.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await run.task
        return True

    async def _supervised(self, run: WorkflowRun, policy: SandboxPolicy) -> None:
        try:
            await _Execution(self.runner, run, policy).run()
        except asyncio.CancelledError:
            run.state, run.result = "stopped", "it was stopped"
            raise
        except Exception as e:  # a run's failure is its own, never the session's
            run.state, run.result = "failed", f"{type(e).__name__}: {e}"
        finally:
            run.ended = time.time()
            self.runner.agents.post(workflow_notification(run), releasing=run.id)


class _Execution:
    """One run of a script: its sandboxed process, and the agents it asks for."""

    def __init__(self, runner: SubagentRunner, run: WorkflowRun, policy: SandboxPolicy) -> None:
        self.runner, self.run_, self.policy = runner, run, policy
        self.journal = _Journal(journal_path(run.id))
        self.out: int | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        run = self.run_
        python = _interpreter()
        sandbox = make_sandbox(seen(self.policy.read_only(), python.parent.parent))
        if (reason := sandbox.unavailable_reason()) is not None:
            raise RuntimeError(f"the workflow's sandbox cannot start: {reason}")
        script_reads, piton_writes = os.pipe()  # Piton's answers
        piton_reads, script_writes = os.pipe()  # the script's requests
        ends = [str(run.workflow.path), str(script_reads), str(script_writes), json.dumps(run.args)]
        line = shlex.join([str(python), "-I", "-c", BOOT, *ends])
        try:
            where = self.policy.workspace
            process, launch = await start_process(sandbox, f"exec {line}", where, script_reads, script_writes)
        except BaseException:
            os.close(piton_reads)
            os.close(piton_writes)
            raise
        finally:  # the script's ends are the script's alone now
            os.close(script_reads)
            os.close(script_writes)
        self.out = piton_writes
        try:
            printed = asyncio.create_task(_read_all(process.stdout))
            await self._serve(piton_reads)
            # agents already at work when the script ended finish into the journal, for a resume
            await asyncio.gather(*self.tasks, return_exceptions=True)
            run.output = (await printed)[-4000:]
            await process.wait()
        finally:
            kill_started(process)
            for task in self.tasks:
                task.cancel()
            os.close(piton_writes)
            launch.close()
        if run.state == "running":
            run.state = "failed"
            run.result = run.result or f"the script ended without a result:\n{run.output.strip()}"

    async def _serve(self, fd: int) -> None:
        reader = asyncio.StreamReader(limit=1 << 22)
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0)
        )
        try:
            while line := await reader.readline():
                if self._take(json.loads(line)):
                    return
        finally:
            transport.close()

    def _take(self, message: dict[str, Any]) -> bool:
        """A line from the script; True once it has ended."""
        run, op = self.run_, message.get("op")
        if op == "phase":
            run.phase = str(message.get("name", ""))
            self.runner.agents.changed()
        elif op == "agent":
            task = asyncio.create_task(self._agent(message))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        elif op in ("done", "failed"):
            run.state = "completed" if op == "done" else "failed"
            run.result = str(message.get("result") or message.get("error") or "")
            return True
        return False

    async def _agent(self, message: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"id": message["id"]}
        try:
            reply |= {"ok": True, "report": await self._report(message)}
        except _Refused as e:
            reply |= {"ok": False, "error": str(e)}
        if self.out is not None:
            with contextlib.suppress(OSError):  # the script may have ended meanwhile
                os.write(self.out, (json.dumps(reply) + "\n").encode())

    async def _report(self, message: dict[str, Any]) -> str:
        run, budget = self.run_, self.run_.workflow.budget
        key = self.journal.key(message)
        if (kept := self.journal.take(key)) is not None:
            run.replayed += 1
            return kept
        if run.agents >= budget.agents or run.tokens >= budget.tokens or run.cost_usd >= budget.usd:
            raise _Refused(f"the workflow's budget is spent ({budget.describe()})")
        run.agents += 1
        request = AgentRequest(
            str(message.get("type") or "general-purpose"),
            str(message.get("prompt", "")),
            f"{run.workflow.name}{': ' + run.phase if run.phase else ''}",
            name=message.get("name") or None,
            isolation="worktree" if message.get("worktree") else None,
        )
        started: list[AgentRun] = []
        result = await self.runner.run(request, None, started)
        for agent in started:
            run.tokens, run.cost_usd = run.tokens + agent.tokens, run.cost_usd + agent.cost_usd
        self.runner.agents.changed()
        if result.is_error or not started:
            raise _Refused(str(result.content))
        self.journal.keep(key, started[0].report)
        return started[0].report


class _Refused(Exception):
    pass


class _Journal:
    """What each finished agent of a run reported, by what it was asked: a resumed run answers the
    same requests from here, in order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.touch()  # a run can be resumed even when no agent finished
        self.kept: dict[str, list[str]] = {}
        self.seen: dict[str, int] = {}
        with contextlib.suppress(OSError, ValueError):
            for line in path.read_text(encoding="utf-8").splitlines():
                entry = json.loads(line)
                self.kept.setdefault(entry["key"], []).append(entry["report"])

    def key(self, message: dict[str, Any]) -> str:
        asked = json.dumps([message.get(k) for k in ("prompt", "type", "name", "worktree")])
        nth = self.seen[asked] = self.seen.get(asked, 0) + 1  # the same request twice is two entries
        return hashlib.sha256(f"{asked}#{nth}".encode()).hexdigest()[:24]

    def take(self, key: str) -> str | None:
        kept = self.kept.get(key)
        return kept.pop(0) if kept else None

    def keep(self, key: str, report: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self.path.open("a", encoding="utf-8") as journal:
            journal.write(json.dumps({"key": key, "report": report}) + "\n")


def _interpreter() -> Path:
    """The interpreter itself, not a virtual environment's link to it: the script needs only the
    standard library, and a link under /tmp would point nowhere in the sandbox's own /tmp."""
    return Path(os.path.realpath(sys.executable))


async def _read_all(stream: asyncio.StreamReader | None) -> str:
    if stream is None:
        return ""
    return (await stream.read()).decode("utf-8", "replace")


def workflow_notification(run: WorkflowRun) -> str:
    """A run's end, for the main agent: Claude Code's `<task-notification>` block."""
    status = {"completed": "completed", "failed": "failed"}.get(run.state, "stopped")
    return "\n".join(
        [
            "[Automated notification, not a message from the user: a workflow you started has ended.]",
            "<task-notification>",
            f"<task-id>{run.id}</task-id>",
            f"<status>{status}</status>",
            f'<summary>Workflow "{run.workflow.name}" {run.state}</summary>',
            f"<result>{run.result}</result>",
            f"<usage><agents>{run.agents}</agents><tokens>{run.tokens}</tokens></usage>",
            "</task-notification>",
            f"To run it again from where it stopped, Workflow with resume '{run.id}'."
            if status != "completed"
            else "",
        ]
    ).strip()
