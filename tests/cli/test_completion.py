from __future__ import annotations

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from piton.cli.completion import PitonCompleter


def completions(text: str, files: list[str] | None = None) -> list[str]:
    commands = [("help", "list"), ("clear", "new"), ("compact", "summarise")]
    completer = PitonCompleter(lambda: commands, lambda: files or [])
    found = completer.get_completions(Document(text), CompleteEvent())
    return [c.text for c in found]


def test_slash_completes_command_names() -> None:
    assert completions("/c") == ["/clear", "/compact"]
    assert completions("/") == ["/help", "/clear", "/compact"]
    assert completions("/clear now") == []


def test_at_completes_project_paths_prefix_first_then_anywhere() -> None:
    files = ["src/app.py", "src/util.py", "tests/test_app.py", "README.md"]
    assert completions("look at @src/a", files) == ["src/app.py"]
    assert completions("@app", files) == ["src/app.py", "tests/test_app.py"]
    assert completions("email me@", files) == []  # an @ inside a word is not a mention
    assert completions("plain text", files) == []
