"""Glob: files whose paths match a pattern, newest first."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field

from builtin_tools.files import policy_of, readable, resolve
from builtin_tools.ripgrep import RipgrepMissing, run_rg
from core.globs import compile_glob
from core.policy import PolicyError
from core.tools import Tool, ToolContext, ToolResult

MAX_RESULTS = 100


class GlobInput(BaseModel):
    pattern: str = Field(description='The glob to match, e.g. "**/*.py" or "src/**/*.{ts,tsx}".')
    path: str | None = Field(None, description="The directory to search (default: the working directory).")


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


class Glob(Tool):
    name = "Glob"
    description = (
        "Finds files by name pattern, fast, in any size of codebase. Returns absolute paths, most "
        f"recently modified first, at most {MAX_RESULTS}.\n"
        '- Patterns: "*" matches within a directory, "**" across directories, "{a,b}" either: '
        '"**/*.js", "src/**/test_*.py", "*.{yml,yaml}".\n'
        "- Files ignored by .gitignore are left out; hidden files are included.\n"
        "- To search file contents, use Grep."
    )
    input_model = GlobInput
    read_only = True
    kind = "read"

    def rule_content(self, args: GlobInput, ctx: ToolContext) -> str | None:
        return str(resolve(ctx, args.path or "."))

    async def run(self, args: GlobInput, ctx: ToolContext) -> ToolResult:
        pattern = args.pattern.strip()
        base_arg = args.path or "."
        if pattern.startswith("/"):  # an absolute pattern: search from its fixed leading directories
            fixed = []
            for part in Path(pattern).parts[1:]:
                if any(c in part for c in "*?[{"):
                    break
                fixed.append(part)
            base_arg = str(Path("/", *fixed))
            pattern = pattern[len(base_arg) :].lstrip("/") or "*"
        try:
            base = readable(ctx, base_arg)
        except PolicyError as e:
            return ToolResult.error(str(e))
        if not base.is_dir():
            return ToolResult.error(f"{base} is not a directory.")
        try:
            out = await run_rg(["--files"], cwd=base)
        except RipgrepMissing as e:
            return ToolResult.error(str(e))
        if out.code == 2 and not out.text:
            return ToolResult.error(f"Glob failed: {out.error}")
        matcher = compile_glob(pattern)
        allowed = policy_of(ctx).listing_filter(base)
        prefix = f"{base}/" if str(base) != "/" else "/"
        relative = (rel.removeprefix("./") for rel in out.paths())
        found = [Path(prefix + rel) for rel in relative if matcher.match(rel) and allowed(prefix + rel)]
        if not found:
            return ToolResult("No files found", summary="no files")
        found.sort(key=_mtime, reverse=True)
        shown = [os.fspath(p) for p in found[:MAX_RESULTS]]
        text = "\n".join(shown)
        if len(found) > MAX_RESULTS:
            text += (
                f"\n\n(Showing the {MAX_RESULTS} most recently modified of {len(found):,} matches; "
                "narrow the pattern or the path to see the rest.)"
            )
        return ToolResult(text, summary=f"{len(found)} files")
