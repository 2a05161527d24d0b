"""Grep: search file contents with ripgrep (regexes, file filters, context lines, three output modes)."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from piton.builtin_tools.files import PathTool, policy_of, readable, require_regular
from piton.builtin_tools.ripgrep import RgOutput, RipgrepMissing, mtime, rg_path, run_rg, search_sandbox
from piton.core.safety.policy import PolicyError
from piton.core.tools import ToolContext, ToolResult


class GrepInput(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    pattern: str = Field(description="The regular expression to search for (ripgrep syntax).")
    path: str | None = Field(
        None, description="A file or directory to search (default: the working directory)."
    )
    glob: str | None = Field(
        None, description='Only search files matching this glob, e.g. "*.py" or "*.{ts,tsx}".'
    )
    type: str | None = Field(None, description='Only search files of this type, e.g. "py", "js", "rust".')
    output_mode: Literal["content", "files_with_matches", "count"] = Field(
        "files_with_matches",
        description='"files_with_matches" (default): paths; "content": matching lines; "count": per file.',
    )
    case_insensitive: bool | None = Field(None, alias="-i", description="Ignore case.")
    line_numbers: bool | None = Field(
        None, alias="-n", description='Show line numbers ("content" mode; default on).'
    )
    after: int | None = Field(
        None, alias="-A", ge=0, description='Lines to show after each match ("content" mode).'
    )
    before: int | None = Field(
        None, alias="-B", ge=0, description='Lines to show before each match ("content" mode).'
    )
    context: int | None = Field(
        None, alias="-C", ge=0, description='Lines around each match ("content" mode).'
    )
    head_limit: int | None = Field(None, ge=1, description="Return only the first N lines or entries.")
    multiline: bool | None = Field(None, description="Let the pattern span lines (. matches newlines).")


class Grep(PathTool[GrepInput]):
    name = "Grep"
    description = (
        "Searches file contents with ripgrep. Use it instead of running grep or rg in Bash.\n"
        '- Full regex syntax ("log.*Error", "function\\\\s+\\\\w+"); braces and other special characters '
        'need escaping ("interface\\\\{\\\\}").\n'
        '- Narrow the files with glob ("*.js") or type ("py").\n'
        '- output_mode "files_with_matches" (default) lists files, newest first; "content" shows matching '
        'lines (with -A/-B/-C context and -n line numbers); "count" counts matches per file.\n'
        "- Files ignored by .gitignore are skipped; hidden files are searched.\n"
        "- Set multiline to match across lines."
    )
    input_model = GrepInput
    read_only = True

    def _argv(self, args: GrepInput, target: str) -> list[str]:
        argv = ["--max-columns=500", "--max-columns-preview", "--with-filename"]
        if args.output_mode == "files_with_matches":
            argv.append("--files-with-matches")
        elif args.output_mode == "count":
            argv.append("--count")
        else:
            argv.append("--no-heading")
            if args.line_numbers is not False:
                argv.append("--line-number")
            for flag, value in (("-A", args.after), ("-B", args.before), ("-C", args.context)):
                if value is not None:
                    argv += [flag, str(value)]
        if args.case_insensitive:
            argv.append("--ignore-case")
        if args.multiline:
            argv += ["--multiline", "--multiline-dotall"]
        if args.glob:
            argv += ["--glob", args.glob]
        if args.type:
            argv += ["--type", args.type]
        return [*argv, "--regexp", args.pattern, "--", target]

    async def run(self, args: GrepInput, ctx: ToolContext) -> ToolResult:
        async with ctx.lock.shared():
            return await self._search(args, ctx)

    async def _search(self, args: GrepInput, ctx: ToolContext) -> ToolResult:
        policy = policy_of(ctx)
        try:
            target = readable(ctx, args.path or ".")
            st = os.stat(target)
            if not stat.S_ISDIR(st.st_mode):
                require_regular(target, st)
        except FileNotFoundError:
            return ToolResult.error(f"Path does not exist: {args.path or '.'}")
        except (PolicyError, OSError) as e:
            return ToolResult.error(str(e))
        base = target if stat.S_ISDIR(st.st_mode) else target.parent
        try:
            rg = rg_path(policy.roots)
            sandbox = search_sandbox(policy, base, rg)
            out = await run_rg(self._argv(args, str(target)), cwd=base, rg=rg, sandbox=sandbox)
        except RipgrepMissing as e:
            return ToolResult.error(str(e))
        if out.code == 2 and not out.text:
            return ToolResult.error(f"Grep failed: {out.error}")
        if out.code == 1 or not out.text:
            return ToolResult("No matches found", summary="no matches")
        return await asyncio.to_thread(self._format, args, ctx, base, out)

    def _format(self, args: GrepInput, ctx: ToolContext, base: Path, out: RgOutput) -> ToolResult:
        allowed = policy_of(ctx).listing_filter(base)
        if args.output_mode == "files_with_matches":
            entries = sorted((p for p in out.paths() if allowed(p)), key=mtime, reverse=True)
            summary = f"{len(entries)} file{'s' * (len(entries) != 1)}"
        else:
            records = [(p, rest.removesuffix("\r")) for p, rest in out.records() if not p or allowed(p)]
            entries = [f"{p}:{rest}" if p else rest for p, rest in records]
            if args.output_mode == "count":
                total = sum(int(rest) for p, rest in records if rest.isdigit())
                summary = (
                    f"{total} match{'es' * (total != 1)} in {len(records)} file{'s' * (len(records) != 1)}"
                )
            else:
                summary = f"{sum(1 for p, _ in records if p)} lines"
        if not entries:
            return ToolResult("No matches found", summary="no matches")
        if args.head_limit is not None and len(entries) > args.head_limit:
            hidden = len(entries) - args.head_limit
            entries = [
                *entries[: args.head_limit],
                f"(... {hidden:,} more; raise head_limit or narrow the search)",
            ]
        if out.code == 2 and out.error:  # some files could not be searched; say which
            entries.append(f"(Some files could not be searched: {out.error.splitlines()[0]})")
        return ToolResult("\n".join(entries), summary=summary)
