"""Listings the model reads of what it may start (skills, commands, subagent types): kept within a
share of the context window, with a line saying how many more there are and how to find them, and
the search that finds them."""

from __future__ import annotations

import re

LISTING_BUDGET = 8_000  # characters of names and descriptions the model sees up front, at least
DESCRIPTION_CHARS = 1_500  # of each description in a listing (Claude Code's bound)
SEARCH_TOOL = "SearchSkills"


def listing_budget(context_window: int) -> int:
    """Characters for a listing: about 2% of the window (as Claude Code gives), never less than
    `LISTING_BUDGET`."""
    return max(LISTING_BUDGET, int(context_window * 0.02 * 4))  # ~4 characters a token


def fitted(entries: list[tuple[str, str]], budget: int, *, tail: bool = True) -> list[str]:
    """`- name: description` lines within `budget` characters (descriptions cut at
    `DESCRIPTION_CHARS`), and a last line saying how many more there are and how to find them."""
    lines: list[str] = []
    used = 0
    for number, (name, description) in enumerate(entries):
        if len(description) > DESCRIPTION_CHARS:
            description = description[: DESCRIPTION_CHARS - 1] + "…"
        line = f"- {name}: {description}"
        if used + len(line) > budget:
            if tail:
                lines.append(
                    f"- … and {len(entries) - number} more, not listed for length: use {SEARCH_TOOL}"
                )
            break
        lines.append(line)
        used += len(line) + 1
    return lines


def ranked(query: str, entries: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """`entries` (kind, name, description) that hold any of the query's words, by how many (a word
    in the name counts twice)."""
    words = [w for w in re.split(r"[^\w]+", query.lower()) if w]
    scored = []
    for entry in entries:
        name, text = entry[1].lower(), f"{entry[1]} {entry[2]}".lower()
        score = sum(2 * (w in name) + (w in text) for w in words)
        if score:
            scored.append((-score, entry[1], entry))
    return [entry for *_, entry in sorted(scored)]
