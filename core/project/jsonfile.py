"""Reading a JSON file that someone else may have written (settings, the trusted-folders store):
bounded in size and nesting, with every way it can fail told as one `JsonFileError`.

Python's parser recurses once per level, so a kilobyte of `[[[[…` ends in a RecursionError, and any
code that walks what it returned may recurse as deep. The nesting is counted on the text first, in
one pass that never recurses.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

MAX_BYTES = 1_000_000  # settings are a few kilobytes; a larger file is a mistake or an attack
MAX_DEPTH = 64  # real settings nest three or four levels
# a string (escapes included) is skipped whole; what is left that matters are the brackets
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


class JsonFileError(Exception):
    """Why a file cannot be used: one line for people, without the file's name (the caller names it)."""


def _depth_within(text: str, limit: int) -> bool:
    if text.count("[") + text.count("{") <= limit:  # most files: no need to look closer
        return True
    depth = 0
    for token in _TOKENS.finditer(text):
        bracket = token.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth > limit:
                return False
        elif bracket in ("]", "}"):
            depth -= 1
    return True


def parse(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """`text` as JSON; `JsonFileError` for text that is not, or that nests deeper than `max_depth`."""
    if not _depth_within(text, max_depth):
        raise JsonFileError(f"it nests deeper than {max_depth} levels")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise JsonFileError(f"not valid JSON: {e}") from e
    except (ValueError, RecursionError) as e:  # a number of 5,000 digits; the depth check is exact
        raise JsonFileError(f"not usable JSON: {(str(e).splitlines() or [''])[0][:120]}") from e


def read(path: Path, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value in `path`. FileNotFoundError when there is none (often not a problem); every
    other failure is a `JsonFileError`. Only a regular file is read (a FIFO would block)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as e:
        raise JsonFileError(f"cannot read it ({e.strerror or e})") from e
    # checked on the descriptor before Python's file object, which refuses a folder with its own error
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise JsonFileError("it is not a regular file")
    with open(fd, "rb") as f:
        try:
            data = f.read(max_bytes + 1)
        except OSError as e:
            raise JsonFileError(f"cannot read it ({e.strerror or e})") from e
    if len(data) > max_bytes:
        raise JsonFileError(f"it is larger than {max_bytes:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise JsonFileError("it is not UTF-8 text") from e
    return parse(text.removeprefix("\ufeff"), max_depth=max_depth)


def read_object(path: Path) -> dict[str, Any]:
    """A file holding a JSON object; `{}` when there is none. `JsonFileError` (naming no file) for one
    that cannot be used: a caller that writes it back must not overwrite what the user wrote."""
    try:
        data = read(path)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    if not isinstance(data, dict):
        raise JsonFileError("expected a JSON object")
    return data


def write_object(path: Path, data: dict[str, Any], *, private: bool = True) -> None:
    """`data` as the whole of `path`, through a temporary file (a crash never leaves half a file):
    readable by the user alone, or by everyone for a file shared like code (`private=False`).
    OSError when it cannot be written."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temp = tempfile.mkstemp(prefix=f".{path.stem}-", dir=path.parent)  # created 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
            out.write("\n")
        if not private:
            os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
