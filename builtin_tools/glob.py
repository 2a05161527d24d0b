"""Glob: files whose paths match a pattern, newest first."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from piton.builtin_tools.files import PathTool, policy_of, readable, resolve
from piton.builtin_tools.ripgrep import RipgrepMissing, mtime, rg_path, run_rg, search_sandbox
from piton.core.safety.globs import compile_glob
from piton.core.safety.policy import PolicyError, real
from piton.core.tools import ToolContext, ToolResult

MAX_RESULTS = 100


class GlobInput(BaseModel):
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
        policy = policy_of(ctx)
        base_arg, pattern = split_pattern(args.pattern.strip(), args.path or ".")
        try:
            base = readable(ctx, base_arg)
        except PolicyError as e:
            return ToolResult.error(str(e))
        if not base.is_dir():
            return ToolResult.error(f"{base} is not a directory.")
        try:
            rg = rg_path(policy.roots)
            out = await run_rg(["--files"], cwd=base, rg=rg, sandbox=search_sandbox(policy, base, rg))
        except RipgrepMissing as e:
            return ToolResult.error(str(e))
        if out.code == 2 and not out.text:
            return ToolResult.error(f"Glob failed: {out.error}")
        return await asyncio.to_thread(self._matches, ctx, base, pattern, out.paths())

    def _matches(self, ctx: ToolContext, base: Path, pattern: str, listed: list[str]) -> ToolResult:
        matcher = compile_glob(pattern)
        allowed = policy_of(ctx).listing_filter(base)
        prefix = str(base).rstrip("/") + "/"
        relative = (rel.removeprefix("./") for rel in listed)
        found = [prefix + rel for rel in relative if matcher.match(rel) and allowed(prefix + rel)]
        if not found:
            return ToolResult("No files found", summary="no files")
        found.sort(key=mtime, reverse=True)
        text = "\n".join(found[:MAX_RESULTS])
        if len(found) > MAX_RESULTS:
            text += (
                f"\n\n(Showing the {MAX_RESULTS} most recently modified of {len(found):,} matches; "
                "narrow the pattern or the path to see the rest.)"
            )
        return ToolResult(text, summary=f"{len(found)} file{'s' * (len(found) != 1)}")
