"""Grep: search file contents with ripgrep (regexes, file filters, context lines, three output modes)."""

from __future__ import annotations

import asyncio
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from piton.builtin_tools.files import PathTool, policy_of, readable, require_regular
from piton.builtin_tools.ripgrep import (
    RgOutput,
    RipgrepMissing,
    newest_first,
    rg_path,
    run_rg,
    search_sandbox,
)
from piton.core.safety.policy import PolicyError
from piton.core.tools import ToolContext, ToolInput, ToolResult


class GrepInput(ToolInput):
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
            include = [args.glob] if args.glob else []
            out = await run_rg(
                self._argv(args, str(target)), cwd=base, rg=rg, sandbox=sandbox, include=include
            )
        except RipgrepMissing as e:
            return ToolResult.error(str(e))
        if out.code == 2 and not out.text:
            return ToolResult.error(f"Grep failed: {out.error}")
        if out.code == 1 or not out.text:
            return ToolResult("No matches found", summary="no matches")
        return await asyncio.to_thread(self._format, args, ctx, base, out)

    def _format(self, args: GrepInput, ctx: ToolContext, base: Path, out: RgOutput) -> ToolResult:
        allowed = policy_of(ctx).listing_filter(base)
        data: dict[str, Any] = {"mode": args.output_mode}  # Claude Code's `tool_use_result`
        if args.output_mode == "files_with_matches":
            files = newest_first(list(filter(allowed, out.paths())))
            text, summary = "\n".join(files), f"{len(files)} file{'s' * (len(files) != 1)}"
            shown = files[: args.head_limit] if args.head_limit is not None else files
            data |= {"filenames": shown, "numFiles": len(shown), "totalFiles": len(files)}
        else:
            # the model reads lines as Read shows them: without the \r of a CRLF ending
            kept = _kept(out.text.replace("\r\n", "\n"), allowed)
            found = kept.count("\0")  # one a line that names its file (a `--` between groups does not)
            text = kept.replace("\0", ":").removesuffix("\n")
            data |= {"numFiles": len(set(_PATH.findall(kept))), "filenames": [], "content": text}
            if args.output_mode == "count":
                total = sum(map(int, _COUNT.findall(kept)))
                summary = f"{total} match{'es' * (total != 1)} in {found} file{'s' * (found != 1)}"
                data["numMatches"] = total
            else:
                summary = f"{found} lines"
                data["numLines"] = text.count("\n") + 1 if text else 0
        if not text:
            return ToolResult("No matches found", summary="no matches", data=data)
        text, hidden = _head(text, args.head_limit)
        if "content" in data:  # the client is told what the model sees
            data |= {"content": text, **({"numLines": text.count("\n") + 1} if "numLines" in data else {})}
        if hidden:
            text += f"\n(... {hidden:,} more; raise head_limit or narrow the search)"
        if out.code == 2 and out.error:  # some files could not be searched; say which
            text += f"\n(Some files could not be searched: {out.error.splitlines()[0]})"
        return ToolResult(text, summary=summary, data=data)


# ripgrep's --null lines: the file's path, a NUL, then the rest (`12:text`, `12-text` or a count)
_PATH = re.compile(r"^([^\0\n]*)\0", re.MULTILINE)
_COUNT = re.compile(r"\0(\d+)$", re.MULTILINE)


def _kept(text: str, allowed: Callable[[str], bool]) -> str:
    """ripgrep's lines without those of files the policy hides: one verdict a file, not a line."""
    hidden = {path for path in set(_PATH.findall(text)) if not allowed(path)}
    if not hidden:
        return text
    return "\n".join(line for line in text.split("\n") if line.partition("\0")[0] not in hidden)


def _head(text: str, limit: int | None) -> tuple[str, int]:
    """The first `limit` lines of `text`, and how many lines were left out."""
    if limit is None:
        return text, 0
    lines = text.split("\n", limit)
    if len(lines) <= limit:
        return text, 0
    rest = lines.pop()
    return "\n".join(lines), rest.count("\n") + 1
