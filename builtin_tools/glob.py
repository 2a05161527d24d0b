"""Glob: files whose paths match a pattern, newest first."""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from piton.builtin_tools.files import PathTool, policy_of, readable, resolve
from piton.builtin_tools.ripgrep import (
    RgOutput,
    RipgrepMissing,
    rg_path,
    run_rg,
    search_sandbox,
)
from piton.core.safety.globs import compile_glob
from piton.core.safety.policy import PolicyError, real
from piton.core.tools import ToolContext, ToolInput, ToolResult

MAX_RESULTS = 100


class GlobInput(ToolInput):
    pattern: str = Field(description='The glob to match, e.g. "**/*.py" or "src/**/*.{ts,tsx}".')
    path: str | None = Field(None, description="The directory to search (default: the project directory).")


def split_pattern(pattern: str, base: str) -> tuple[str, str]:
    """Move the pattern's leading fixed directories (`/abs`, `./`, `../x`) into the base directory."""
    parts = pattern.split("/")
    fixed = []
    if pattern.startswith("/"):
        base, parts = "/", parts[1:]
    for part in parts[:-1]:
        if any(c in part for c in "*?[{"):
            break
        fixed.append(part)
    rest = "/".join(parts[len(fixed) :]) or "*"
    return os.path.join(base, *fixed) if fixed else base, rest


# ripgrep's globs mean what ours do where a name is plain text, `*`, `?`, simple classes and flat
# `{a,b}` groups (gitignore's syntax reads escapes, `!`, `#` and negated classes otherwise)
_CLASS = re.compile(r"\[(?:[\w.]-[\w.]|[\w.])+\]")
_GROUP = re.compile(r"\{[^{}]*\}")
_TYPE = "pitonglob"


def _plain_name(name: str) -> bool:
    if not name or name[0] in "!#" or name[-1].isspace() or "**" in name:
        return False
    if any(c in name for c in "/\\:\0\n\r"):  # `:` would end the name of a ripgrep file type
        return False
    return not any(c in _GROUP.sub("", _CLASS.sub("", name)) for c in "[]{}")


def rg_selection(pattern: str) -> list[str] | None:
    """ripgrep arguments that list just the files `pattern` matches under the folder searched, or
    None when only matching here says. A pattern on file names (`*.py`, `**/test_*.py`) becomes a
    file type of ripgrep's: unlike its --glob, which overrides .gitignore, a type only narrows
    what .gitignore lets through."""
    if pattern in ("**", "**/*"):
        return []
    deep = pattern.startswith("**/")
    name = pattern.removeprefix("**/")
    if not _plain_name(name):
        return None
    depth = [] if deep else ["--max-depth=1"]
    return depth if name == "*" else [*depth, f"--type-add={_TYPE}:{name}", f"--type={_TYPE}"]


class Glob(PathTool[GlobInput]):
    name = "Glob"
    description = (
        "Finds files by name pattern, fast, in any size of codebase. Returns absolute paths, most "
        f"recently modified first, at most {MAX_RESULTS}.\n"
        '- Patterns: "*" matches within a directory, "**" across directories, "{a,b}" either: '
        '"**/*.js", "src/**/test_*.py", "*.{yml,yaml}".\n'
        "- Files ignored by .gitignore are left out; hidden files are included; symlinked directories "
        "are not followed.\n"
        "- To search file contents, use Grep."
    )
    input_model = GlobInput
    read_only = True

    def rule_content(self, args: Any, ctx: ToolContext) -> str | None:
        base, _ = split_pattern(args.pattern.strip(), args.path or ".")
        return str(real(resolve(ctx, base)))

    async def run(self, args: GlobInput, ctx: ToolContext) -> ToolResult:
        async with ctx.lock.shared():
            return await self._search(args, ctx)

    async def _search(self, args: GlobInput, ctx: ToolContext) -> ToolResult:
        started = time.monotonic()
        policy = policy_of(ctx)
        base_arg, pattern = split_pattern(args.pattern.strip(), args.path or ".")
        try:
            base = readable(ctx, base_arg)
        except PolicyError as e:
            return ToolResult.error(str(e))
        if not base.is_dir():
            return ToolResult.error(f"{base} is not a directory.")
        selection = rg_selection(pattern)
        try:
            matcher = None if selection is not None else compile_glob(pattern)
        except re.error as e:
            return ToolResult.error(f"The pattern {pattern!r} is not a valid glob: {e}")
        try:
            rg = rg_path(policy.roots)
            sandbox = search_sandbox(policy, base, rg)
            # newest first by ripgrep's own stat of each file: a lstat a file from Python costs
            # more CPU than ripgrep's whole sorted walk, though that walk runs on one thread
            argv = ["--files", "--sortr=modified", *(selection or ())]
            out = await run_rg(argv, cwd=base, rg=rg, sandbox=sandbox)
        except RipgrepMissing as e:
            return ToolResult.error(str(e))
        if out.code == 2 and not out.text:
            return ToolResult.error(f"Glob failed: {out.error}")
        return await asyncio.to_thread(self._matches, ctx, base, matcher, out, started)

    def _matches(
        self, ctx: ToolContext, base: Path, matcher: re.Pattern[str] | None, out: RgOutput, started: float
    ) -> ToolResult:
        """The files ripgrep listed under `base` that `matcher` matches (all of them when ripgrep
        selected them already) and policy lets the model see, newest first."""
        prefix = str(base).rstrip("/") + "/"
        if matcher is None:
            listed = out.paths(prefix)
        else:  # fullmatch: a pattern with {a,b} compiles to alternatives that match() takes as prefixes
            listed = [prefix + rel for rel in out.paths() if matcher.fullmatch(rel)]
        found = list(filter(policy_of(ctx).listing_filter(base), listed))
        shown = found[:MAX_RESULTS]
        data = {  # Claude Code's `tool_use_result`
            "filenames": shown,
            "durationMs": int((time.monotonic() - started) * 1000),
            "numFiles": len(shown),
            "truncated": len(found) > MAX_RESULTS,
            "totalMatches": len(found),
            "countIsComplete": True,
        }
        if not found:
            return ToolResult("No files found", summary="no files", data=data)
        text = "\n".join(shown)  # newest first, as ripgrep sorted them
        if len(found) > MAX_RESULTS:
            text += (
                f"\n\n(Showing the {MAX_RESULTS} most recently modified of {len(found):,} matches; "
                "narrow the pattern or the path to see the rest.)"
            )
        return ToolResult(text, summary=f"{len(found)} file{'s' * (len(found) != 1)}", data=data)
