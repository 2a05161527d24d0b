"""Frontmatter read as hostile input: nesting, aliases, sizes, numbers and file types that once ended
Piton's start-up are each one reason to skip the file, found fast."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from piton.skills.agents import discover_agent_types
from piton.skills.frontmatter import (
    MAX_DEPTH,
    FrontmatterError,
    list_field,
    printable,
    read,
    split,
    text_field,
)

FLOW_DEEP = "tools: " + "[" * 600 + "]" * 600  # 1.2 kB: a RecursionError in YAML's composer, once
BLOCK_DEEP = "tools:\n" + "".join(f"{' ' * i}- \n" for i in range(60))
MAPPING_DEEP = "".join(f"{' ' * i}k{i}:\n" for i in range(60)) + " " * 60 + "v"
LAUGHS = "\n".join(
    [
        'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
        *(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]"
            for i in range(8)  # 9**9 strings when walked
        ),
        "description: x",
    ]
)


def doc(frontmatter: str, body: str = "Body.") -> str:
    return f"---\n{frontmatter}\n---\n{body}\n"


@pytest.mark.parametrize(
    "frontmatter", [FLOW_DEEP, BLOCK_DEEP, MAPPING_DEEP], ids=["flow", "block", "mapping"]
)
def test_deep_nesting_is_refused_with_its_line(frontmatter: str) -> None:
    with pytest.raises(FrontmatterError, match=rf"nests deeper than {MAX_DEPTH} levels \(line \d+\)"):
        split(doc("description: x\n" + frontmatter))


def test_nesting_within_the_bound_reads() -> None:
    meta, body = split(doc("description: x\nmetadata: " + "[" * 20 + "1" + "]" * 20))
    assert meta["description"] == "x" and body == "Body.\n"


@pytest.mark.parametrize(
    "frontmatter",
    [LAUGHS, "description: x\nloop: &l [*l, *l]"],
    ids=["billion-laughs", "self-reference"],
)
def test_aliases_that_explode_when_walked_are_refused_at_once(frontmatter: str) -> None:
    started = time.thread_time()  # this thread's CPU time: the work's cost, however busy the machine
    with pytest.raises(FrontmatterError, match="more than 20,000 values"):
        split(doc(frontmatter))
    assert time.thread_time() - started < 2


def test_a_few_aliases_are_fine() -> None:
    meta, _ = split(doc("description: x\nbase: &b [Read, Grep]\nallowed-tools: *b"))
    assert list_field(meta, "allowed-tools") == ["Read", "Grep"]


@pytest.mark.parametrize(
    ("frontmatter", "problem"),
    [
        ("description: " + "1" * 5000, "cannot be read: ValueError: Exceeds the limit (4300 digits)"),
        ("description: x\nwhen: 2024-13-45", "cannot be read: ValueError: month must be in 1..12"),
        ("description: x\n" + "k: v\n" * 8_000, "the frontmatter is 40,016 characters (at most 32,000)"),
    ],
    ids=["huge-int", "bad-date", "huge-frontmatter"],
)
def test_what_the_yaml_library_raises_is_a_reason_to_skip(frontmatter: str, problem: str) -> None:
    with pytest.raises(FrontmatterError) as raised:
        split(doc(frontmatter))
    assert problem in str(raised.value) and "\n" not in str(raised.value)


def test_a_tool_list_without_closing_parentheses_parses_in_linear_time() -> None:
    started = time.thread_time()  # this thread's CPU time: the work's cost, however busy the machine
    tools = list_field({"allowed-tools": "a(" * 200_000}, "allowed-tools")
    assert tools == ["a"] * 200_000
    assert time.thread_time() - started < 2, "a regular expression took minutes on this"
    assert list_field({"t": "Read, Bash(git diff:*) Edit(src/**) x("}, "t") == [
        "Read",
        "Bash(git diff:*)",
        "Edit(src/**)",
        "x",
    ]


def test_control_characters_never_reach_a_one_line_field_or_a_message() -> None:
    meta, _ = split(doc('description: "red \\e[31m alert\\a\\r\\ngone"'))
    assert text_field(meta, "description") == "red [31m alert gone"
    assert printable("a\x1b]0;pwned\x07b\nc") == "a\\x1b]0;pwned\\x07b\\x0ac"


def test_a_fifo_or_a_folder_in_a_files_place_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "SKILL.md"
    os.mkfifo(fifo)
    with pytest.raises(FrontmatterError, match="not a regular file"):
        read(fifo)  # opening a FIFO for reading blocks until a writer comes: it never would
    (tmp_path / "dir.md").mkdir()
    with pytest.raises(FrontmatterError, match="cannot read it: Is a directory"):
        read(tmp_path / "dir.md")


def test_a_bad_agent_file_or_folder_is_skipped_alone(project: Path) -> None:
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "deep.md").write_text(doc("description: deep\n" + FLOW_DEEP))
    (agents / "laughs.md").write_text(doc(LAUGHS))
    os.mkfifo(agents / "fifo.md")
    (agents / "good.md").write_text(doc("description: A reviewer."))
    (project / ".piton").mkdir()
    (project / ".piton" / "agents").symlink_to("agents")  # a link to itself: it cannot be listed
    types, warnings = discover_agent_types(project)
    assert types["good"].description == "A reviewer." and "general-purpose" in types
    assert sorted(w.split(": ", 1)[0] for w in warnings) == sorted(
        [str(agents / n) for n in ("deep.md", "fifo.md", "laughs.md")] + [str(project / ".piton" / "agents")]
    )
    [looping] = [w for w in warnings if w.startswith(str(project / ".piton"))]
    assert looping.endswith("cannot list it (Too many levels of symbolic links); skipped")


_TRICKY = "truefalsTRUEFALSaYnNo:#'\"\\ \t-[]{},&*!|>%@`~\u2028\x85é1.0"


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(st.text(_TRICKY, min_size=1, max_size=6), st.text(_TRICKY, max_size=12)), max_size=4)
)
def test_frontmatter_read_without_the_yaml_library_is_what_yaml_reads(pairs: list[tuple[str, str]]) -> None:
    """Plain `key: text` frontmatter is read without importing the YAML library; whenever that
    shortcut answers, YAML must read the same block the same way."""
    block = "".join(f"{key}: {value}\n" for key, value in pairs)
    text = f"---\n{block}---\nbody\n"
    meta, body = split(text)
    assert body == "body\n"
    try:
        expected = yaml.load(block, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return  # read leniently instead: what `lenient` gives is tested above
    if isinstance(expected, dict):
        assert meta == expected


def test_the_bundled_skills_are_read_without_the_yaml_library() -> None:
    """The bundled skills' frontmatter is plain, so a run that lists them never imports YAML."""
    code = (
        "import sys; from pathlib import Path; from piton.skills.frontmatter import read\n"
        "import piton.skills\n"
        "for p in sorted((Path(piton.skills.__file__).parent / 'bundled').glob('*/SKILL.md')):\n"
        "    assert read(p)[0]['name'], p\n"
        "print('yaml' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
