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
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import tomllib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from piton.api import Agent, AgentOptions, AssistantMessage, ResultMessage
from piton.core.context.usage import Usage
from piton.core.conversation.events import MessageDone, StreamEvent
from piton.core.conversation.messages import Message, TextBlock, ToolUseBlock
from piton.core.modes import is_reminder
from piton.core.providers import ModelRequest, Provider, ProviderError

RECORDING = "recording.json"
PLACE = "$PROJECT"  # the copy's path, in recorded replies: each run has a copy of its own
PROJECT_FILES = (".claude", ".piton", "AGENTS.md", "CLAUDE.md")
_OPTION_KEYS = {
    "model", "permission_mode", "allowed_tools", "disallowed_tools", "max_turns", "builtin_tools",
    "append_system_prompt", "system_prompt", "max_budget_usd", "setting_sources", "thinking", "effort",
}  # fmt: skip
_CHECK_KEYS = {
    "answer_contains", "answer_not_contains", "result", "file", "tool_called", "tool_not_called", "skill",
    "command",
}  # fmt: skip


class CaseError(Exception):
    """A case file that cannot be read as a case; the message names the file."""


@dataclass(slots=True)
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
    for check in expect:
        if not isinstance(check, dict) or not set(check) & _CHECK_KEYS:
            raise CaseError(f"{path}: each [[expect]] needs one of {', '.join(sorted(_CHECK_KEYS))}")
    setup, files = data.get("setup", []), data.get("files", {})
    if not isinstance(setup, list) or not all(isinstance(c, str) for c in setup):
        raise CaseError(f"{path}: setup is a list of shell commands")
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise CaseError(f"{path}: [files] maps paths to their text")
    files = {str(k): v for k, v in files.items()}
    extra = path.parent / "files"
    if extra.is_dir():
        for file in sorted(p for p in extra.rglob("*") if p.is_file()):
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


# -- what a request looked like, to match a replayed request to a recorded one --------------------


def _places() -> list[tuple[str, str]]:
    """Paths that differ from one machine to the next: where Piton is installed (its bundled
    skills' folders are named to the model), and the home folder."""
    import piton.skills

    bundled = Path(piton.skills.__file__).parent
    found = [
        (str(bundled.resolve()), "$PITON_SKILLS"),
        (str(bundled), "$PITON_SKILLS"),
        (str(Path.home()), "$HOME"),
    ]
    return sorted(set(found), key=lambda pair: -len(pair[0]))  # the longest first: one may hold another


def _normal(text: str, project: Path) -> str:
    """Text with what changes from one run or machine to the next taken out: the copy's path,
    Piton's and the home folder's, hashes, numbers."""
    text = text.replace(str(project), "$PROJECT")
    for path, name in _places():
        text = text.replace(path, name)
    text = re.sub(r"\b[0-9a-f]{7,40}\b", "<hex>", text)
    return re.sub(r"\d+", "0", text)


def fingerprint(request: ModelRequest, project: Path) -> str:
    """What the model is shown new in `request`: the last message, reminders left out."""
    last = request.messages[-1] if request.messages else Message.user("")
    parts = []
    for block in last.content:
        data = block.model_dump(mode="json", exclude_none=True)
        if isinstance(block, TextBlock) and is_reminder(block.text):
            continue
        data.pop("tool_use_id", None)
        parts.append(json.dumps(data, sort_keys=True, ensure_ascii=False))
    return hashlib.sha256(_normal("\n".join(parts), project).encode()).hexdigest()[:16]


def _placed(data: Any, old: str, new: str) -> Any:
    """`data` (a reply as JSON) with one path put for another, in every string of it."""
    if isinstance(data, str):
        return data.replace(old, new)
    if isinstance(data, list):
        return [_placed(v, old, new) for v in data]
    if isinstance(data, dict):
        return {k: _placed(v, old, new) for k, v in data.items() if v is not None}
    return data


def context_print(request: ModelRequest, project: Path) -> str:
    """What the model is told before any message: the system prompt (the platform line left out:
    it names this machine's kernel) and the tools' names, descriptions and schemas."""
    system = "\n".join(line for line in request.system.splitlines() if not line.startswith("- Platform: "))
    tools = json.dumps(list(request.tools), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(_normal(system + "\n" + tools, project).encode()).hexdigest()[:16]


@dataclass(slots=True)
class Recorder:
    """The live provider, with each reply kept beside the request it answered."""

    inner: Provider
    project: Path
    entries: list[dict[str, Any]] = field(default_factory=list)

    def check(self) -> None:
        self.inner.check()

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        async for event in self.inner.stream(request):
            if isinstance(event, MessageDone):
                self.entries.append(
                    {
                        "seen": fingerprint(request, self.project),
                        "context": context_print(request, self.project),
                        "model": event.model,
                        "message": _placed(event.message.model_dump(mode="json"), str(self.project), PLACE),
                        "stop_reason": event.stop_reason,
                        "usage": event.usage.to_dict(),
                        "api_seconds": round(event.api_seconds, 3),
                    }
                )
            yield event


@dataclass(slots=True)
class Replayer:
    """Answers each request with the recorded reply to the same request, else the next one unused."""

    entries: list[dict[str, Any]]
    project: Path
    used: set[int] = field(default_factory=set)
    diverged: list[str] = field(default_factory=list)  # where requests no longer match

    def check(self) -> None:
        pass

    async def aclose(self) -> None:
        pass

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        seen, number = fingerprint(request, self.project), len(self.used) + 1
        free = [i for i in range(len(self.entries)) if i not in self.used]
        match = next((i for i in free if self.entries[i]["seen"] == seen), None)
        if match is None:
            if not free:
                self.diverged.append(f"request {number} has no recorded reply")
                raise ProviderError(f"the recording has no reply for request {number}", kind="config")
            match = free[0]
            self.diverged.append(f"request {number} differs from the recorded one")
        self.used.add(match)
        entry = self.entries[match]
        recorded = entry.get("context")
        if recorded is not None and recorded != context_print(request, self.project):
            self.diverged.append(
                f"request {number}: the system prompt or the tools differ from the recording's"
            )
        usage = entry.get("usage", {})
        yield MessageDone(
            message=Message.model_validate(_placed(entry["message"], PLACE, str(self.project))),
            usage=Usage(
                usage.get("input_tokens", 0),
                usage.get("output_tokens", 0),
                usage.get("cache_creation_input_tokens", 0),
                usage.get("cache_read_input_tokens", 0),
            ),
            stop_reason=entry.get("stop_reason"),
            model=entry.get("model", ""),
            message_id=f"msg_replay_{match}",
        )


# -- running a case --------------------------------------------------------------------------------


@dataclass(slots=True)
class Check:
    what: str
    passed: bool
    detail: str = ""


@dataclass(slots=True)
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
    subtype: str = "none"  # how the run ended (`success`, `error_max_turns`…; none: no result)
    judged_result: bool = False  # a `result =` check says which ending is expected

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


def _prepare(case: Case, folder: Path, source: Path) -> Path:
    """The case's starting project in `folder`, by the path its tools will report."""
    project = folder.resolve()
    if case.project_files:
        for name in PROJECT_FILES:
            origin = source / name
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
    result: ResultMessage | None = None
    try:
        async with Agent(options) as agent:
            catalog = agent.runtime.catalog
            invoked = catalog.invocation(case.prompt) if catalog is not None else None
            if invoked is not None:
                skills.append(invoked.name)
            async for message in agent.query(case.prompt):
                if isinstance(message, AssistantMessage):
                    calls += [b for b in message.content if isinstance(b, ToolUseBlock)]
                elif isinstance(message, ResultMessage):
                    result = message
    except Exception as e:  # one case failing to run is that case's error, not the suite's end
        outcome.error = f"{type(e).__name__}: {e}"
        return outcome
    skills += [str(c.input.get("skill")) for c in calls if c.name == "Skill"]
    outcome.tool_calls = [c.name for c in calls]
    if result is not None:
        outcome.answer = result.text
        outcome.turns = result.result.num_turns
        usage = result.result.usage
        outcome.tokens = (
            usage.input_tokens + usage.output_tokens + usage.cache_read_input_tokens
            + usage.cache_creation_input_tokens
        )  # fmt: skip
        outcome.cost_usd = result.total_cost_usd
    subtype = outcome.subtype = result.subtype if result is not None else "none"
    outcome.judged_result = any("result" in c for c in case.expect)
    outcome.checks = [_check(c, project, outcome.answer, subtype, calls, skills) for c in case.expect]
    return outcome


def _status(outcome: Outcome) -> str:
    if outcome.error:
        return "error"
    if outcome.subtype != "success" and not outcome.judged_result:
        outcome.error = f"the run ended with {outcome.subtype}: {outcome.answer[:200]}"
        return "error"
    if not all(c.passed for c in outcome.checks):
        return "fail"
    return "diverged" if outcome.diverged else "pass"


def _check(
    expect: dict[str, Any],
    project: Path,
    answer: str,
    subtype: str,
    calls: list[ToolUseBlock],
    skills: list[str],
) -> Check:
    if "answer_contains" in expect:
        wanted = str(expect["answer_contains"])
        return Check(f"answer contains {wanted!r}", wanted.lower() in answer.lower(), answer[:120])
    if "answer_not_contains" in expect:
        unwanted = str(expect["answer_not_contains"])
        return Check(f"answer lacks {unwanted!r}", unwanted.lower() not in answer.lower(), answer[:120])
    if "result" in expect:
        return Check(f"result is {expect['result']}", subtype == expect["result"], subtype)
    if "skill" in expect:
        name = str(expect["skill"])
        return Check(f"skill {name} triggered", name in skills, ", ".join(skills) or "no skill")
    if "tool_called" in expect or "tool_not_called" in expect:
        name = str(expect.get("tool_called") or expect.get("tool_not_called"))
        needle = str(expect.get("input_contains", ""))
        hits = [c for c in calls if c.name == name and needle in json.dumps(c.input, ensure_ascii=False)]
        what = f"{name}" + (f" with {needle!r}" if needle else "")
        made = ", ".join(c.name for c in calls) or "none"
        if "tool_called" in expect:
            return Check(f"{what} called", bool(hits), f"calls: {made}")
        return Check(f"{what} not called", not hits, f"calls: {made}")
    if "command" in expect:
        return _command_check(expect, project)
    return _file_check(expect, project)


def _command_check(expect: dict[str, Any], project: Path) -> Check:
    """A command run in the project after the run (`git log -1 --format=%s`), its output checked."""
    command = str(expect["command"])
    done = subprocess.run(command, shell=True, cwd=project, capture_output=True, text=True, timeout=60)
    output = done.stdout + done.stderr
    if "output_contains" in expect:
        wanted = str(expect["output_contains"])
        return Check(f"`{command}` prints {wanted!r}", wanted in output, output.strip()[:120])
    return Check(f"`{command}` succeeds", done.returncode == 0, output.strip()[:120])


def _file_check(expect: dict[str, Any], project: Path) -> Check:
    relative = str(expect["file"])
    path = project / relative
    if not path.resolve().is_relative_to(project):
        return Check(f"{relative}", False, "outside the project: a case checks its own files only")
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    if expect.get("exists") is False:
        return Check(f"{relative} does not exist", text is None and not path.exists())
    if text is None:
        return Check(f"{relative} exists", False, "missing")
    if "equals" in expect:
        return Check(f"{relative} equals the expected text", text == expect["equals"], text[:120])
    if "contains" in expect:
        return Check(
            f"{relative} contains {expect['contains']!r}", str(expect["contains"]) in text, text[:120]
        )
    if "not_contains" in expect:
        unwanted = str(expect["not_contains"])
        return Check(f"{relative} lacks {unwanted!r}", unwanted not in text, text[:120])
    return Check(f"{relative} exists", True)


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
