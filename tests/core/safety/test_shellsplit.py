from __future__ import annotations

import pytest

from piton.core.safety.shellsplit import split_command


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("npm test", ["npm test"]),
        ("npm test && rm -rf build", ["npm test", "rm -rf build"]),
        ("a || b; c | d & e", ["a", "b", "c", "d", "e"]),
        ("first\nsecond", ["first", "second"]),
        ("(cd sub && make) || true", ["cd sub", "make", "true"]),
        ('git commit -m "fix: a && b; c"', ["git commit -m fix: a && b; c"]),
        ("echo '$(not run)'", ["echo $(not run)"]),
        ("npm test 2>&1 | tail -5", ["npm test 2>&1", "tail -5"]),
        ("make &> build.log", ["make &> build.log"]),
        ("ls   -la    src", ["ls -la src"]),
        ("ls # and then; rm -rf /", ["ls"]),
        ("echo a\\;b", ["echo a;b"]),
    ],
)
def test_commands_split_into_their_simple_commands(command: str, parts: list[str]) -> None:
    assert split_command(command) == parts


@pytest.mark.parametrize(
    "command",
    [
        "echo $(whoami)",
        'echo "$(id)"',
        "echo `id`",
        "diff <(ls a) <(ls b)",
        "cat <<EOF\nx\nEOF",
        'echo "open',
    ],
)
def test_what_depends_on_expansion_cannot_be_split(command: str) -> None:
    assert split_command(command) is None


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("npm \\\ntest", ["npm test"]),  # a line continuation is removed, as bash does
        ("echo \\ #not-a-comment; ls", ["echo  #not-a-comment", "ls"]),
        ("echo a#b", ["echo a#b"]),
        ("echo '#' x", ["echo # x"]),
    ],
)
def test_comments_and_continuations_follow_bash(command: str, parts: list[str]) -> None:
    assert split_command(command) == parts


def test_ansi_c_quoting_cannot_be_split() -> None:
    assert split_command("echo $'a\\'b' ; ls") is None
