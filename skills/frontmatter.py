"""Markdown files with YAML frontmatter (skills, commands, agents): the metadata and the body.

The format is the one Claude Code and the Agent Skills specification use: a first line `---`, YAML,
a line `---`, then Markdown. Values are read as people write them: a tool list may be a YAML list
or one string separated by commas or spaces.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 1_000_000  # a skill or agent file larger than this is a mistake, not instructions
_FENCE = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.DOTALL | re.MULTILINE)
_OPEN = re.compile(r"\A---[ \t]*\r?\n")
_TOOL_LIST = re.compile(r"[^,\s()]+(?:\([^)]*\))?")


class FrontmatterError(Exception):
    """A file that cannot be read as frontmatter and body; the message says what is wrong."""


def split(text: str) -> tuple[dict[str, Any], str]:
    """The frontmatter as a dict (empty without one) and the body."""
    text = text.removeprefix("\ufeff")
    if not _OPEN.match(text):
        return {}, text
    match = _FENCE.match(text)
    if match is None:
        raise FrontmatterError("the frontmatter has no closing '---' line")
    import yaml  # only when a file has frontmatter: start-up does not pay for it otherwise

    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise FrontmatterError(f"the frontmatter is not valid YAML{where}: {problem}") from e
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontmatterError("the frontmatter is not a mapping of keys to values")
    return data, text[match.end() :]


def read(path: Path) -> tuple[dict[str, Any], str]:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise FrontmatterError(f"the file is {size:,} bytes (at most {MAX_FILE_BYTES:,})")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise FrontmatterError("the file is not UTF-8 text") from e
    except OSError as e:
        raise FrontmatterError(f"cannot read it: {e.strerror or e}") from e
    return split(text)


def text_field(meta: dict[str, Any], *keys: str) -> str | None:
    """The first of `keys` that holds a value, as a one-line string."""
    for key in keys:
        value = meta.get(key)
        if value is None:
            continue
        if isinstance(value, (list, dict)):
            raise FrontmatterError(f"'{key}' should be text, not a {type(value).__name__}")
        text = " ".join(str(value).split())
        if text:
            return text
    return None


def list_field(meta: dict[str, Any], *keys: str) -> list[str] | None:
    """A list of names or rules, from a YAML list or a string such as `Read, Grep, Bash(git diff:*)`."""
    for key in keys:
        value = meta.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            return _TOOL_LIST.findall(value)
        if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
            return [str(v).strip() for v in value if str(v).strip()]
        raise FrontmatterError(f"'{key}' should be a list of names or a comma-separated string")
    return None


def bool_field(meta: dict[str, Any], key: str, default: bool) -> bool:
    value = meta.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes")
    raise FrontmatterError(f"'{key}' should be true or false")
