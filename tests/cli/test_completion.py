from __future__ import annotations

from types import SimpleNamespace

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from piton.cli.completion import PitonCompleter


def completions(text: str, files: list[str] | None = None) -> list[str]:
    commands = SimpleNamespace(names=lambda: [("help", "list"), ("clear", "new"), ("compact", "summarise")])
    repl = SimpleNamespace(commands=commands, files=files or [])
    found = PitonCompleter(repl).get_completions(Document(text), CompleteEvent())  # type: ignore[arg-type]
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
