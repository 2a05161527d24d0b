"""`piton eval`: a folder of cases (a prompt, the files it starts from, checks on the files, the
answer and the tool calls) run against a recorded model, so a change to a skill, a command, a tool or
the settings is tested without paying for a model, or live against the real one.

A case is `<suite>/<name>/case.toml`. Each run starts in a fresh copy: the case's files, plus the
project's own `.claude`, `.piton`, `AGENTS.md` and `CLAUDE.md` (what is being tested). `--record`
runs it live and keeps the model's replies in `recording.json` beside the case; a replay answers
each request with the recorded reply whose request matches it, and says where a request no longer
matches one (the run diverged: the model would now see something else).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

from piton.api import Agent, AgentOptions, AssistantMessage, ResultMessage
from piton.core.conversation.messages import ToolUseBlock
from piton.core.providers import Provider
from piton.core.records import record
from piton.eval_checks import CHECK_KEYS, Check, check
from piton.eval_replay import Recorder, Replayer

RECORDING = "recording.json"
PROJECT_FILES = (".claude", ".piton", "AGENTS.md", "CLAUDE.md")
_OPTION_KEYS = {
    "model", "permission_mode", "allowed_tools", "disallowed_tools", "max_turns", "builtin_tools",
    "append_system_prompt", "system_prompt", "max_budget_usd", "setting_sources", "thinking", "effort",
}  # fmt: skip


class CaseError(Exception):
    """A case file that cannot be read as a case; the message names the file."""


@record
class Case:
    name: str
    folder: Path
    prompt: str
    files: dict[str, str] = field(default_factory=dict)
    setup: list[str] = field(default_factory=list)  # shell commands run in the copy before the prompt
    git: bool = False  # a repository with the files committed
    project_files: bool = True  # copy the project's .claude, .piton, AGENTS.md, CLAUDE.md
    options: dict[str, Any] = field(default_factory=dict)
    expect: list[dict[str, Any]] = field(default_factory=list)

    @property
    def recording(self) -> Path:
        return self.folder / RECORDING


def load_cases(suite: Path, only: list[str] | None = None) -> list[Case]:
    """The cases of `suite` (folders holding a `case.toml`; `suite` itself may be one), by name."""
    files = [suite / "case.toml"] if (suite / "case.toml").is_file() else sorted(suite.glob("*/case.toml"))
    if not files:
        raise CaseError(f"{suite}: no case.toml here or in its folders")
    return [_case(path) for path in files if not only or path.parent.name in only]


def _case(path: Path) -> Case:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise CaseError(f"{path}: {e}") from e
    if not isinstance(data.get("prompt"), str) or not data["prompt"].strip():
        raise CaseError(f"{path}: a case needs a prompt")
    options = data.get("options", {})
    if unknown := set(options) - _OPTION_KEYS:
        raise CaseError(f"{path}: unknown options {', '.join(sorted(unknown))}")
    expect = data.get("expect", [])
    for entry in expect:
        if not isinstance(entry, dict) or not set(entry) & CHECK_KEYS:
            raise CaseError(f"{path}: each [[expect]] needs one of {', '.join(sorted(CHECK_KEYS))}")
    setup, files = data.get("setup", []), data.get("files", {})
    if not isinstance(setup, list) or not all(isinstance(c, str) for c in setup):
        raise CaseError(f"{path}: setup is a list of shell commands")
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise CaseError(f"{path}: [files] maps paths to their text")
    files = {str(k): v for k, v in files.items()}
    extra = path.parent / "files"
    if extra.is_dir():
        for file in sorted(p for p in extra.rglob("*") if p.is_file()):
            _inside(file, extra, path)
            files.setdefault(file.relative_to(extra).as_posix(), file.read_text(encoding="utf-8"))
    return Case(
        name=path.parent.name,
        folder=path.parent,
        prompt=data["prompt"],
        files=files,
        setup=list(setup),
        git=bool(data.get("git", False)),
        project_files=bool(data.get("project_files", True)),
        options=dict(options),
        expect=list(expect),
    )


# -- running a case --------------------------------------------------------------------------------


@record
class Outcome:
    case: str
    status: str  # pass | fail | diverged | error | unrecorded
    checks: list[Check] = field(default_factory=list)
    diverged: list[str] = field(default_factory=list)
    error: str = ""
    turns: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    answer: str = ""
    tool_calls: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "status": self.status,
            "checks": [{"check": c.what, "passed": c.passed, "detail": c.detail} for c in self.checks],
            "diverged": self.diverged,
            "error": self.error,
            "turns": self.turns,
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 6),
            "seconds": round(self.seconds, 2),
            "tool_calls": self.tool_calls,
        }


def _inside(path: Path, root: Path, case: Path) -> None:
    """A file copied into a case's project must be of the project: a link to `~/.ssh/id_rsa` would
    be copied as the key itself, where the model reads it (`CaseError` when it leads outside)."""
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(os.path.realpath(root)):
        raise CaseError(f"{case}: {path} leads outside {root} (to {real}); not copied into the case")


def _prepare(case: Case, folder: Path, source: Path) -> Path:
    """The case's starting project in `folder`, by the path its tools will report."""
    project = folder.resolve()
    if case.project_files:
        for name in PROJECT_FILES:
            origin = source / name
            if os.path.lexists(origin):
                _inside(origin, source, case.folder / "case.toml")
            if origin.is_dir():
                shutil.copytree(origin, project / name, symlinks=True, dirs_exist_ok=True)
            elif origin.is_file():
                shutil.copy2(origin, project / name)
    for relative, text in case.files.items():
        target = (project / relative).resolve()
        if not target.is_relative_to(project.resolve()):
            raise CaseError(f"{case.folder / 'case.toml'}: file {relative!r} is outside the project")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    if case.git:
        quiet = {"cwd": project, "check": True, "capture_output": True}
        subprocess.run(["git", "init", "-q", "-b", "main"], **quiet)  # type: ignore[call-overload]
        # an identity of the repository's own: commits made in the run work on any machine
        subprocess.run(["git", "config", "user.name", "piton eval"], **quiet)  # type: ignore[call-overload]
        subprocess.run(["git", "config", "user.email", "eval@piton.invalid"], **quiet)  # type: ignore[call-overload]
        subprocess.run(["git", "add", "-A"], **quiet)  # type: ignore[call-overload]
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "start"], **quiet)  # type: ignore[call-overload]
    for command in case.setup:
        done = subprocess.run(command, shell=True, cwd=project, capture_output=True, text=True)
        if done.returncode != 0:
            raise CaseError(f"setup `{command}` exited {done.returncode}: {done.stderr.strip()[:200]}")
    return project


async def run_case(case: Case, *, mode: str, source: Path, provider: Provider | None = None) -> Outcome:
    """`mode`: replay (the recording), record (live, keeping the replies) or live."""
    started = time.monotonic()
    if mode == "replay" and not case.recording.is_file():
        return Outcome(case.name, "unrecorded", error="no recording yet: run it once with --record")
    with tempfile.TemporaryDirectory(prefix=f"piton-eval-{case.name}-") as folder:
        try:
            project = _prepare(case, Path(folder), source)
        except (CaseError, OSError, subprocess.CalledProcessError) as e:
            return Outcome(case.name, "error", error=f"setting up the case: {e}")
        replayer: Replayer | None = None
        recorder: Recorder | None = None
        if mode == "replay":
            try:
                entries = json.loads(case.recording.read_text(encoding="utf-8"))["requests"]
                if not isinstance(entries, list) or not all(
                    isinstance(e, dict) and "message" in e for e in entries
                ):
                    raise ValueError("not a recording")
            except (OSError, ValueError, KeyError, TypeError) as e:
                return Outcome(case.name, "error", error=f"{case.recording} cannot be read: {e}")
            replayer = Replayer(entries, project)
            provider = replayer
        elif mode == "record" or provider is not None:
            from piton.api.client import PitonError, default_provider

            try:
                inner = provider or default_provider(AgentOptions(cwd=project, **case.options).run_options())
            except PitonError as e:
                return Outcome(case.name, "error", error=str(e))
            recorder = Recorder(inner, project)
            provider = recorder
        defaults = {"permission_mode": "bypassPermissions", "setting_sources": ["project", "local"]}
        try:
            options = AgentOptions(
                cwd=project,
                provider=provider,
                trust_workspace=True,  # the project's own files are what is tested
                **{**defaults, **case.options},
            )
        except TypeError as e:
            return Outcome(case.name, "error", error=f"options: {e}")
        with _state_in(Path(folder) / ".state"):  # sessions and memories stay in the throwaway folder
            outcome = await _drive(case, options, project)
        outcome.seconds = time.monotonic() - started
        if replayer is not None:
            outcome.diverged = list(replayer.diverged)
            unused = len(replayer.entries) - len(replayer.used)
            if unused and not outcome.error:
                outcome.diverged.append(
                    f"{unused} recorded repl{'y' if unused == 1 else 'ies'} never asked for"
                )
        if recorder is not None and mode == "record" and not outcome.error:
            recording = {"version": 1, "case": case.name, "requests": recorder.entries}
            case.recording.write_text(
                json.dumps(recording, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
            )
        outcome.status = _status(outcome)
        return outcome


async def _drive(case: Case, options: AgentOptions, project: Path) -> Outcome:
    outcome = Outcome(case.name, "error")
    calls: list[ToolUseBlock] = []
    skills: list[str] = []
    results: list[ResultMessage] = []
    try:
        async with Agent(options) as agent:
            catalog = agent.runtime.catalog
            invoked = catalog.invocation(case.prompt) if catalog is not None else None
            if invoked is not None:
                skills.append(invoked.name)
            # the prompt's turn, then those of background agents' and workflows' reports, as `-p` has them
            for messages in (agent.query(case.prompt), agent.background()):
                async for message in messages:
                    if isinstance(message, AssistantMessage):
                        calls += [b for b in message.content if isinstance(b, ToolUseBlock)]
                    elif isinstance(message, ResultMessage):
                        results.append(message)
    except Exception as e:  # one case failing to run is that case's error, not the suite's end
        outcome.error = f"{type(e).__name__}: {e}"
        return outcome
    skills += [str(c.input.get("skill")) for c in calls if c.name == "Skill"]
    outcome.tool_calls = [c.name for c in calls]
    result = results[-1] if results else None
    if result is not None:
        outcome.answer = result.text
        for each in results:  # every turn's: the prompt's and those of background reports
            usage = each.result.usage
            outcome.turns += each.result.num_turns
            outcome.tokens += (
                usage.input_tokens + usage.output_tokens + usage.cache_read_input_tokens
                + usage.cache_creation_input_tokens
            )  # fmt: skip
            outcome.cost_usd += each.total_cost_usd
    subtype = result.subtype if result is not None else "none"
    if subtype != "success" and not any("result" in c for c in case.expect):  # unless a check expects it
        outcome.error = f"the run ended with {subtype}: {outcome.answer[:200]}"
    outcome.checks = [check(c, project, outcome.answer, subtype, calls, skills) for c in case.expect]
    return outcome


def _status(outcome: Outcome) -> str:
    if outcome.error:
        return "error"
    if not all(c.passed for c in outcome.checks):
        return "fail"
    return "diverged" if outcome.diverged else "pass"


@contextlib.contextmanager
def _state_in(folder: Path) -> Iterator[None]:
    """Piton's state directory (sessions, memories) in `folder` for the duration: a case's runs
    leave nothing in the user's."""
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = before


def run_suite(
    cases: list[Case], *, mode: str, source: Path, runs: int = 1, provider: Provider | None = None
) -> list[list[Outcome]]:
    """Each case `runs` times, one after the other (a live model's pass rate needs several)."""

    async def go() -> list[list[Outcome]]:
        return [
            [await run_case(case, mode=mode, source=source, provider=provider) for _ in range(runs)]
            for case in cases
        ]

    return asyncio.run(go())
