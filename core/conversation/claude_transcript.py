"""A session's transcript in Claude Code's own line format, for the tools that read those.

Harnesses (Harbor's trajectory converter) and transcript viewers read
`$CLAUDE_CONFIG_DIR/projects/<cwd-slug>/<session>.jsonl`, and a subagent's lines from
`<session>/subagents/agent-<id>.jsonl` beside it. Each line is one message: `type` (`user` or
`assistant`), `uuid`, `parentUuid` (the line before), `sessionId`, `cwd`, `version`, `timestamp`
(ISO 8601 in UTC, never earlier than the line before, since readers order lines by it),
`isSidechain`, and `message` as the Messages API has it, with `id`, `model` and `usage` on an
assistant's. A prompt the user typed is a plain string, as Claude Code writes it. A compaction is
a `system` line with subtype `compact_boundary`, followed by the messages the history starts over
with. Piton's own session log stays the record `--resume` reads: this copy only mirrors it, and a
failure to write it is said once and stops nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from piton.core.conversation.messages import Message, TextBlock
from piton.core.conversation.session_log import SessionLog
from piton.core.conversation.usage import Usage
from piton.core.version import __version__

_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
_TAIL = 1 << 16  # bytes read back from an existing transcript to find its last line


def project_slug(cwd: Path) -> str:
    """The folder name Claude Code gives a project under `projects/`: its absolute path with every
    character other than a letter or digit made `-` (`/app` is `-app`)."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def transcript_path(config_dir: Path, cwd: Path, session_id: str) -> Path:
    return config_dir / "projects" / project_slug(cwd) / f"{session_id}.jsonl"


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _last_uuid(path: Path) -> str | None:
    """The `uuid` of a transcript's last whole line, so that lines appended later chain to it."""
    with contextlib.suppress(OSError), path.open("rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - _TAIL))
        for line in reversed(f.read().splitlines()):
            with contextlib.suppress(ValueError, AttributeError):
                found = json.loads(line).get("uuid")
                if isinstance(found, str):
                    return found
    return None


class ClaudeTranscript:
    """Appends a conversation's messages to a transcript in Claude Code's format."""

    def __init__(
        self,
        path: Path,
        *,
        session_id: str,
        cwd: Path,
        agent_id: str | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.session_id = session_id
        self.cwd = str(cwd)
        self.agent_id = agent_id  # a subagent's transcript: its lines are the session's sidechain
        self._say = say
        self._failed = False
        self._parent: str | None = None
        self._last_stamp = ""
        self._written: set[int] = set()  # id() of the messages written, which the history keeps alive
        self._line_of: dict[int, str] = {}  # the uuid of each written message's line, by id()
        self._kept: list[Message] = []

    @property
    def exists(self) -> bool:
        return self.path.exists()

    def subagent(self, agent_id: str) -> ClaudeTranscript:
        """The transcript of one of this session's subagents, in the folder Claude Code uses."""
        path = self.path.with_suffix("") / "subagents" / f"{agent_id}.jsonl"
        return ClaudeTranscript(
            path, session_id=self.session_id, cwd=Path(self.cwd), agent_id=agent_id, say=self._say
        )

    # -- what the agent logs (the same calls as the session log's) ---------------------------------
    def append_message(
        self,
        message: Message,
        *,
        usage: Usage | None = None,
        model: str | None = None,
        line_id: str | None = None,
    ) -> None:
        line = self._message_line(message, usage, model, line_id)
        self._remember(message, line["uuid"])
        self._write(line)

    def record(self, kind: str, **data: object) -> None:
        """Piton's own records (task lists, stored results) have no line in this format."""
        del kind, data

    def compacted(
        self, messages: Sequence[Message], *, stubs: dict[str, str] | None = None, **info: object
    ) -> None:
        # the old messages stay alive (in `kept`) until the new ones are told apart from them by id()
        written, kept = self._written, self._kept
        self._written, self._kept = set(), []
        if stubs:  # old tool results shortened in place: the same conversation, no new line
            for message in messages:
                self._remember(message)
            return
        if info.get("trigger") == "rewind":  # back to an earlier prefix: later lines branch from there
            self._line_of = {id(m): self._line_of[id(m)] for m in messages if id(m) in self._line_of}
            for message in messages:
                self._remember(message)
            self._parent = self._line_of.get(id(messages[-1])) if messages else None
            del kept
            return
        pre_tokens = info.get("pre_tokens")
        boundary = {
            **self._common("system"),
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "level": "info",
            "compactMetadata": {"trigger": str(info.get("trigger", "auto")), "preTokens": pre_tokens},
        }
        lines = [boundary]
        first = True
        for message in messages:
            self._remember(message)
            if id(message) in written:
                continue
            line = self._message_line(message, None, None)
            if first and message.role == "user":
                line["isCompactSummary"] = True
            first = False
            lines.append(line)
        for line in lines:
            self._write(line)
        del kept

    def start_from(self, history: Sequence[Message]) -> None:
        """A resumed session: go on after the lines already there, or, in a transcript that does not
        exist yet, write the history first, so that the file holds the whole conversation."""
        if self.exists:
            self._parent = _last_uuid(self.path)
            for message in history:
                self._remember(message)
            return
        for message in history:
            self.append_message(message)

    # -- lines -------------------------------------------------------------------------------------
    def _remember(self, message: Message, line_id: str | None = None) -> None:
        if line_id is not None:
            self._line_of[id(message)] = line_id
        self._written.add(id(message))
        self._kept.append(message)  # keeps the id() unique while the set refers to it

    def _common(self, kind: str, line_id: str | None = None) -> dict[str, Any]:
        line_id = line_id or str(uuid.uuid4())
        stamp = max(_stamp(datetime.now(UTC)), self._last_stamp)
        self._last_stamp = stamp
        line: dict[str, Any] = {
            "parentUuid": self._parent,
            "isSidechain": self.agent_id is not None,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": __version__,
            "type": kind,
            "uuid": line_id,
            "timestamp": stamp,
        }
        if self.agent_id is not None:
            line["agentId"] = self.agent_id
        self._parent = line_id
        return line

    def _message_line(
        self, message: Message, usage: Usage | None, model: str | None, line_id: str | None = None
    ) -> dict[str, Any]:
        line = self._common(message.role, line_id)
        wire: dict[str, Any] = {"role": message.role, "content": message.to_wire()["content"]}
        if message.role == "user" and len(message.content) == 1 and isinstance(message.content[0], TextBlock):
            wire["content"] = message.content[0].text  # a typed prompt: Claude Code writes the string
        if message.role == "assistant":
            wire = {
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "type": "message",
                "model": model,
                **wire,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": (usage or Usage()).to_dict(),
            }
        line["message"] = wire
        return line

    # -- writing -----------------------------------------------------------------------------------
    def _write(self, line: dict[str, Any]) -> None:
        if self._failed:
            return
        data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")
        try:  # opened for each line: a subagent's transcript holds no descriptor once it is over
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, _OPEN_FLAGS, 0o600)
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    if not written:
                        raise OSError(f"wrote nothing to {self.path}")
                    view = view[written:]
            finally:
                os.close(fd)
        except OSError as e:
            self._failed = True
            if self._say is not None:
                self._say(f"cannot write the Claude Code transcript {self.path}: {e.strerror or e}; not kept")


class Mirrored:
    """A session log with a copy in Claude Code's format: every call goes to both."""

    def __init__(self, log: SessionLog, mirror: ClaudeTranscript) -> None:
        self.log = log
        self.mirror = mirror

    def append_message(
        self,
        message: Message,
        *,
        usage: Usage | None = None,
        model: str | None = None,
        line_id: str | None = None,
    ) -> None:
        self.log.append_message(message, usage=usage, model=model, line_id=line_id)
        self.mirror.append_message(message, usage=usage, model=model, line_id=line_id)

    def record(self, kind: str, **data: object) -> None:
        self.log.record(kind, **data)

    def compacted(
        self, messages: Sequence[Message], *, stubs: dict[str, str] | None = None, **info: object
    ) -> None:
        self.log.compacted(messages, stubs=stubs, **info)
        self.mirror.compacted(messages, stubs=stubs, **info)
