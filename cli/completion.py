"""Completion at the prompt: slash commands by name, files and folders after `@`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

_MENTION = re.compile(r"(?:^|\s)@(\S*)$")
MAX_FILE_COMPLETIONS = 50


class PitonCompleter(Completer):
    def __init__(self, commands: Callable[[], list[tuple[str, str]]], files: Callable[[], list[str]]) -> None:
        self.commands = commands  # (name, summary) of each slash command
        self.files = files  # the project's files, relative

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        text = document.text_before_cursor
        if text.startswith("/") and " " not in text:
            for name, summary in self.commands():
                if name.startswith(text[1:]):
                    yield Completion(f"/{name}", start_position=-len(text), display_meta=summary)
            return
        mention = _MENTION.search(text)
        if mention is None:
            return
        fragment = mention.group(1)
        lowered = fragment.lower()
        files = self.files()
        starts = [f for f in files if f.lower().startswith(lowered)]
        contains = [f for f in files if lowered in f.lower() and f not in starts] if fragment else []
        for path in (starts + contains)[:MAX_FILE_COMPLETIONS]:
            yield Completion(path, start_position=-len(fragment))


def with_folders(files: list[str]) -> list[str]:
    """What `@` completes: the files, and the folders they are in (`src/`), each once."""
    folders = {f"{parent}/" for f in files for parent in _parents(f)}
    return files + sorted(folders)


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]
