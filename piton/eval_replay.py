"""Recording a case's model replies and replaying them (`piton eval`): each request is matched to
the recorded one the model was shown the same new content for, with what changes from one run or
machine to the next taken out; where none matches, the run has diverged from the recording."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import field
from pathlib import Path
from typing import Any

from piton.core.conversation.events import MessageDone, StreamEvent
from piton.core.conversation.messages import Message, TextBlock
from piton.core.conversation.usage import Usage
from piton.core.modes import is_reminder
from piton.core.providers import ModelRequest, Provider, ProviderError
from piton.core.records import record

PLACE = "$PROJECT"  # the copy's path, in recorded replies: each run has a copy of its own


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


@record
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


@record
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
