"""Completion at the prompt: slash commands by name, files after `@`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

if TYPE_CHECKING:
    from piton.cli.repl import Repl

_MENTION = re.compile(r"(?:^|\s)@(\S*)$")
MAX_FILE_COMPLETIONS = 50


class PitonCompleter(Completer):
    def __init__(self, repl: Repl) -> None:
        self.repl = repl

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        text = document.text_before_cursor
        if text.startswith("/") and " " not in text:
            commands = self.repl.commands.names() if self.repl.commands is not None else []
            for name, summary in commands:
                if name.startswith(text[1:]):
                    yield Completion(f"/{name}", start_position=-len(text), display_meta=summary)
            return
        mention = _MENTION.search(text)
        if mention is None:
            return
        fragment = mention.group(1)
        lowered = fragment.lower()
        starts = [f for f in self.repl.files if f.lower().startswith(lowered)]
        contains = (
            [f for f in self.repl.files if lowered in f.lower() and f not in starts] if fragment else []
        )
        for path in (starts + contains)[:MAX_FILE_COMPLETIONS]:
            yield Completion(path, start_position=-len(fragment))
