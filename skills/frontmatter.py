"""Markdown files with YAML frontmatter (skills, commands, agents): the metadata and the body.

The format is the one Claude Code and the Agent Skills specification use: a first line `---`, YAML,
a line `---`, then Markdown. Values are read as people write them: a tool list may be a YAML list
or one string separated by commas or spaces.

These files come with a project's code, so they are read as hostile: only regular files, of bounded
size, with frontmatter of bounded size and nesting, and never more values than a bound even when
YAML aliases repeat one part many times (a "billion laughs"); whatever the YAML library raises beyond
a syntax error is a reason to skip the file, never to stop. A syntax error is not: real files say
`description: Use when: …` or `argument-hint: [file] [message]` unquoted, and Claude Code loads
them, so such frontmatter is read line by line instead (`lenient`).
"""

from __future__ import annotations

import functools
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

MAX_FILE_BYTES = 1_000_000  # a skill or agent file larger than this is a mistake, not instructions
MAX_FRONTMATTER_CHARS = 32_000  # real ones are a few hundred; YAML parsing costs ~6 ms per kB
MAX_DEPTH = 32  # of nested lists and mappings; real frontmatter uses two or three
MAX_VALUES = 20_000  # values reached walking the frontmatter, an alias counted each time it is reached
_FENCE = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.DOTALL | re.MULTILINE)
_OPEN = re.compile(r"\A---[ \t]*\r?\n")
_NAME_RUN = re.compile(r"[^,\s()]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_KEY = re.compile(r"^([a-z][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+(.*))?$")  # `key: value`, unindented
# `key: text` lines whose text YAML reads as that very string: a plain scalar that starts with a
# letter (so no number, no indicator) and holds no `: ` or ` #`, or a double-quoted one without
# escapes; or `true`/`false`. Other words YAML 1.1 reads as booleans or null go to the YAML library.
_PLAIN_LINE = re.compile(r'([A-Za-z][A-Za-z0-9_-]*):[ ]+(?:"([^"\\]*)"|([A-Za-z](?:(?!: | #).)*?))[ ]*')
_BOOLEANS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_YAML_WORDS = frozenset(["y", "n", "yes", "no", "true", "false", "on", "off", "null"])


class FrontmatterError(Exception):
    """A file that cannot be read as frontmatter and body; the message says what is wrong."""


def printable(text: str) -> str:
    """`text` for a one-line message: control characters (in a hostile file name, say) are escaped,
    so they can neither break the line nor reach the terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def shown(path: Path) -> str:
    return printable(str(path))


def entries(folder: Path) -> list[Path]:
    """What `folder` holds, sorted; empty when it does not exist. OSError when it cannot be listed
    (a file in its place too: a mistake worth a word)."""
    try:
        with os.scandir(folder) as found:
            return sorted(Path(e.path) for e in found)
    except FileNotFoundError:
        return []


@functools.cache
def _loader() -> type[yaml.SafeLoader]:
    """YAML's safe loader with a bound on nesting: its composer recurses once per level, so a
    kilobyte of `[[[[…` would otherwise end in a RecursionError (and no catch can make that cheap)."""
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
            self.depth += 1
            try:
                if self.depth > MAX_DEPTH:
                    where = f" (line {parent.start_mark.line + 2})" if parent is not None else ""
                    raise FrontmatterError(f"the frontmatter nests deeper than {MAX_DEPTH} levels{where}")
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    return BoundedLoader


def _bounded(data: object) -> None:
    """Refuse frontmatter that holds more than MAX_VALUES values when walked. Aliases make shared
    objects, cheap to build and explosive to walk (or to print); a self-referring one never ends."""
    budget = MAX_VALUES
    pending = [data]
    while pending:
        value = pending.pop()
        budget -= 1
        if budget < 0:
            raise FrontmatterError(
                f"the frontmatter holds more than {MAX_VALUES:,} values (YAML aliases that repeat or "
                "refer to themselves?)"
            )
        if isinstance(value, dict):
            pending += value.keys()
            pending += value.values()
        elif isinstance(value, (list, tuple, set, frozenset)):
            pending += value


def _plain(block: str) -> dict[str, Any] | None:
    """The frontmatter when every line is a plain `key: text` (see `_PLAIN_LINE`); None otherwise."""
    data: dict[str, Any] = {}
    for line in block.splitlines():
        match = _PLAIN_LINE.fullmatch(line)
        if match is None or not line.isprintable():
            return None
        key, quoted, plain = match.groups()
        if key.lower() in _YAML_WORDS:
            return None
        if quoted is not None:
            data[key] = quoted
        elif plain in _BOOLEANS:
            data[key] = _BOOLEANS[plain]
        elif plain.lower() in _YAML_WORDS or plain.endswith(":"):
            return None
        else:
            data[key] = plain
    return data


def split(text: str, warnings: list[str] | None = None) -> tuple[dict[str, Any], str]:
    """The frontmatter as a dict (empty without one) and the body. Frontmatter that is not valid
    YAML is read line by line as Claude Code reads it (`lenient`); `warnings` hears that it was."""
    text = text.removeprefix("\ufeff")
    if not _OPEN.match(text):
        return {}, text
    match = _FENCE.match(text)
    if match is None:
        raise FrontmatterError("the frontmatter has no closing '---' line")
    block = match.group(1)
    if len(block) > MAX_FRONTMATTER_CHARS:
        raise FrontmatterError(
            f"the frontmatter is {len(block):,} characters (at most {MAX_FRONTMATTER_CHARS:,})"
        )
    data = _plain(block)
    if data is not None:  # most files: what YAML would read, without importing it (20 ms)
        return data, text[match.end() :]
    import yaml  # only for frontmatter beyond plain `key: text` lines

    try:
        data = yaml.load(block, Loader=_loader())  # a SafeLoader, with a bound on nesting
    except FrontmatterError:
        raise
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        data = lenient(block)  # what Claude Code loads goes unremarked; only lost metadata is said
        if data is None and warnings is not None:
            warnings.append(f"the frontmatter is not valid YAML{where}: {problem}; its metadata is ignored")
        return data or {}, text[match.end() :]
    except Exception as e:  # an int of 5,000 digits, a 13th month: the library's own errors
        problem = (str(e).splitlines() or [""])[0][:120]
        raise FrontmatterError(f"the frontmatter cannot be read: {type(e).__name__}: {problem}") from e
    _bounded(data)
    if data is None:
        data = {}
    if not isinstance(data, dict):  # a lone string or list: lines YAML read otherwise than meant
        data = lenient(block)
        if data is None and warnings is not None:
            warnings.append("the frontmatter is not a mapping of keys to values; its metadata is ignored")
    return data or {}, text[match.end() :]


def _unquoted(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def lenient(block: str) -> dict[str, Any] | None:
    """Frontmatter that YAML refuses, read as people write it: `key: value` split at the first
    `: ` (so `description: Use when: …` keeps its colons), indented lines continuing the value,
    `- item` lines making a list, quotes taken off. A line that fits none of these continues the
    value before it (an agent's `<example>` text); None when no key is found before one."""
    data: dict[str, Any] = {}
    key: str | None = None
    for raw in block.expandtabs(2).splitlines():
        line = raw.strip()
        if not line or (line.startswith("#") and key is None):
            continue
        match = _KEY.match(raw)
        inside = key is not None and _open_example(data[key])
        if match is not None and not inside:
            key = match.group(1)
            value = _unquoted(match.group(2) or "")
            data[key] = "" if value in ("|", ">", "|-", ">-") else value
        elif key is None:
            return None
        elif line.startswith("- ") and isinstance(data[key], list | str) and not data[key]:
            data[key] = [_unquoted(line[2:])]
        elif line.startswith("- ") and isinstance(data[key], list):
            data[key].append(_unquoted(line[2:]))
        elif isinstance(data[key], str):
            data[key] = f"{data[key]}\n{line}" if data[key] else line
    return data or None


def _open_example(value: object) -> bool:
    """Inside an `<example>` block of an agent's description, `user: …` lines are text, not keys."""
    return isinstance(value, str) and value.count("<example>") > value.count("</example>")


def _read_text(path: Path) -> str:
    # Non-blocking, so a FIFO planted under a skill's name cannot hang the start-up; checked after
    # opening, so what is read is what was checked.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with open(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise FrontmatterError("it is not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise FrontmatterError(f"the file is {info.st_size:,} bytes (at most {MAX_FILE_BYTES:,})")
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise FrontmatterError(f"the file is over {MAX_FILE_BYTES:,} bytes")
    # as Path.read_text reads it: universal newlines
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def read(path: Path, warnings: list[str] | None = None) -> tuple[dict[str, Any], str]:
    try:
        text = _read_text(path)
    except UnicodeDecodeError as e:
        raise FrontmatterError("the file is not UTF-8 text") from e
    except OSError as e:
        raise FrontmatterError(f"cannot read it: {e.strerror or e}") from e
    return split(text, warnings)


def text_field(meta: dict[str, Any], *keys: str) -> str | None:
    """The first of `keys` that holds a value, as a one-line string without control characters."""
    for key in keys:
        value = meta.get(key)
        if value is None:
            continue
        if isinstance(value, (list, dict, set)):
            raise FrontmatterError(f"'{key}' should be text, not a {type(value).__name__}")
        text = " ".join(_CONTROL.sub(" ", str(value)).split())
        if text:
            return text
    return None


def _tool_list(text: str) -> list[str]:
    """`Read, Grep Bash(git diff:*)` as names and rules: a rule runs to the first ')' after its '('.
    One pass: a regular expression for this backtracks quadratically on `a(a(a(…` without a ')'."""
    found: list[str] = []
    last_close = text.rfind(")")
    at = 0
    while at < len(text):
        name = _NAME_RUN.match(text, at)
        if name is None:
            at += 1
            continue
        end = name.end()
        if end < last_close and text[end] == "(":
            close = text.index(")", end)
            found.append(text[at : close + 1])
            at = close + 1
        else:
            found.append(name.group())
            at = end
    return found


def list_field(meta: dict[str, Any], *keys: str) -> list[str] | None:
    """A list of names or rules, from a YAML list or a string such as `Read, Grep, Bash(git diff:*)`."""
    for key in keys:
        value = meta.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            inner = value.strip()
            if inner.startswith("[") and inner.endswith("]"):  # a flow list read line by line
                inner = inner[1:-1]
            return _tool_list(inner)
        if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
            return [str(v).strip() for v in value if str(v).strip()]
        raise FrontmatterError(f"'{key}' should be a list of names or a comma-separated string")
    return None


def hint_field(meta: dict[str, Any], *keys: str) -> str | None:
    """An argument hint: unquoted `[file] [message]` reaches us as a YAML list, which was meant as
    the text `[file] [message]`."""
    for key in keys:
        value = meta.get(key)
        if isinstance(value, list) and all(not isinstance(v, (list, dict)) for v in value):
            return " ".join(f"[{v}]" for v in value) or None
    return text_field(meta, *keys)


def bool_field(meta: dict[str, Any], key: str, default: bool) -> bool:
    value = meta.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes")
    raise FrontmatterError(f"'{key}' should be true or false")


def leaves_project(path: Path, config_dir: Path) -> str | None:
    """Why a file of a project's `.claude`/`.piton` folder is not loaded: it leads outside the
    project (a link to `~/.ssh/id_rsa` a command planted would be read outside the sandbox and go
    into the prompt). None when it stays inside."""
    real = Path(os.path.realpath(path))
    if real.is_relative_to(os.path.realpath(config_dir.parent)):
        return None
    return f"{shown(path)}: not loaded: it leads outside the project (to {real})"


def markdown_files(top: Path, warnings: list[str]) -> list[Path]:
    """The `*.md` files anywhere under `top` but READMEs (links to folders not followed); a folder
    that cannot be listed is named in `warnings` (a glob would say nothing) and its siblings are
    still read."""

    def unlisted(e: OSError) -> None:
        where = Path(e.filename or top)
        if not (where == top and isinstance(e, FileNotFoundError)):
            warnings.append(f"{shown(where)}: cannot list it ({e.strerror or e}); skipped")

    return sorted(
        Path(folder, name)
        for folder, _dirs, names in os.walk(top, onerror=unlisted)
        for name in names
        if name.endswith(".md") and name.lower() != "readme.md"
    )
