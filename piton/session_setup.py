"""The session a run continues or starts: its log, resumed history, model and tools' records, and
the copy in Claude Code's format that a harness asks for."""

from __future__ import annotations

import os
import uuid
from dataclasses import field
from pathlib import Path
from typing import Any

from piton.core.conversation.claude_transcript import ClaudeTranscript, transcript_path
from piton.core.conversation.messages import Message
from piton.core.conversation.session import SessionError, SessionLog, SessionStore
from piton.core.conversation.session_load import LoadedSession
from piton.core.models import DEFAULT_MODEL, resolve_alias
from piton.core.options import RunOptions
from piton.core.project.claude_home import named_config_dir
from piton.core.project.settings import Settings
from piton.core.records import record
from piton.setup_errors import SetupError


@record
class OpenedSession:
    log: SessionLog
    history: list[Message]
    model: str
    records: dict[str, dict[str, Any]]  # what tools recorded in the log, for them to restore
    # stored tool results the history points at in another session's folder (this one forked from it)
    earlier_results: list[Path] = field(default_factory=list)


def open_session(
    options: RunOptions, settings: Settings, store: SessionStore, notices: list[str]
) -> OpenedSession:
    """The session to continue (resumed history, model, tools' records) or a new one."""
    if options.session_id is not None:
        _check_new_id(options.session_id, store, options.cwd)
    session_id = _continued(options, store, notices)
    loaded, log, earlier = _load(options, store, session_id)
    history, records = (loaded.messages, dict(loaded.records)) if loaded is not None else ([], {})
    notices.extend(loaded.warnings if loaded is not None else [])
    model = _model(options, settings, loaded.model if loaded is not None else None)
    if log is None:
        log = _new_log(options, store, model, forked_from=session_id if options.fork_session else None)
        for message in history:  # a fork: the new session starts with the history it came from
            log.append_message(message)
        for kind, entry in records.items():
            log.record(kind, **{k: v for k, v in entry.items() if k not in _LINE_FIELDS})
    return OpenedSession(log, history, model, records, earlier)


def _model(options: RunOptions, settings: Settings, resumed: str | None) -> str:
    """`--model`, the environment's, the settings', the resumed session's, or Piton's default."""
    chosen = options.model or os.environ.get("ANTHROPIC_MODEL") or settings.model or resumed
    return resolve_alias(chosen or DEFAULT_MODEL)


_LINE_FIELDS = ("schema_version", "type", "timestamp")  # a record's line, not what the tool recorded


def _continued(options: RunOptions, store: SessionStore, notices: list[str]) -> str | None:
    """The session `--resume` names, or `--continue`'s latest one here."""
    if options.resume is not None or not options.continue_latest:
        return options.resume
    latest = store.latest(options.cwd)
    if latest is None:
        notices.append("no earlier session in this directory; starting a new one")
    return latest


def _load(
    options: RunOptions, store: SessionStore, session_id: str | None
) -> tuple[LoadedSession | None, SessionLog | None, list[Path]]:
    """The earlier session, the log to go on writing (None: a new one is made), and the folders of
    stored tool results its history points at elsewhere (it was forked from another)."""
    if session_id is None:
        return None, None, []
    if options.fork_session:
        loaded = store.load(session_id, options.cwd)
        return loaded, None, [loaded.path.with_suffix("") / "tool-results"]
    # a session another piton is writing goes on in a new one: nothing is lost, nobody waits
    loaded, log = store.open(session_id, options.cwd, if_busy=options.if_busy)
    forked = log.session_id != loaded.session_id
    return loaded, log, [loaded.path.with_suffix("") / "tool-results"] if forked else []


def claude_transcript(cwd: Path, log: SessionLog, history: list[Message]) -> ClaudeTranscript | None:
    """A copy of the session in Claude Code's format, where `$CLAUDE_CONFIG_DIR` names (harnesses
    read it there); None when it is not set."""
    config_dir = named_config_dir()
    if config_dir is None:
        return None
    path = transcript_path(config_dir, cwd, log.session_id)
    mirror = ClaudeTranscript(path, session_id=log.session_id, cwd=cwd, say=log.warn)
    mirror.start_from(history)
    return mirror


def _check_new_id(session_id: str, store: SessionStore, cwd: Path) -> None:
    """`--session-id` names a new session: a UUID, as Claude Code requires, that no session has."""
    try:
        uuid.UUID(session_id)
    except ValueError:
        raise SetupError(f"--session-id {session_id!r}: not a UUID") from None
    try:
        store.find(session_id, cwd)
    except SessionError:
        return
    raise SetupError(f"--session-id {session_id}: a session with this id exists (--resume continues it)")


def _new_log(options: RunOptions, store: SessionStore, model: str, forked_from: str | None) -> SessionLog:
    extra = {} if forked_from is None else {"forked_from": forked_from}
    if options.session_id is None:
        return store.create(options.cwd, model, **extra)
    log = store.new_log(options.cwd, options.session_id)
    log.start(cwd=options.cwd, model=model, **extra)
    return log
