from __future__ import annotations

import pytest

from piton.core.safety.shellsplit import scan, split_command


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


@pytest.mark.parametrize(
    "command",
    [
        'git status "${_@P}"',  # any `$` inside double quotes
        'echo "$HOME"',
        'echo "a$"',
        'echo "`id`"',
        "echo $HOME",  # and any expansion outside them
        "echo ${HOME}",
        "echo $[1+1]",
        'echo $"x"',
        "((x = 1))",
        "cat <<<x",
    ],
)
def test_a_line_with_any_expansion_is_not_exact(command: str) -> None:
    assert not scan(command).exact and split_command(command) is None


@pytest.mark.parametrize("command", ["echo '$HOME'", "echo \\$HOME", 'echo "\\$HOME"', "echo $ a"])
def test_a_literal_dollar_is_exact(command: str) -> None:
    assert scan(command).exact


def words(command: str) -> list[list[str]]:
    return [[w.text + ("*" if w.live else "") for w in p.words] for p in scan(command).parts if p.words]


def test_commands_inside_substitutions_are_parts_of_their_own() -> None:
    assert words('echo "a $(rm "x y") b" c') == [["rm", "x y"], ["echo", "a  b*", "c"]]
    assert words("diff <(ls a) `ls b`") == [["ls", "a"], ["ls", "b"], ["diff", "*", "*"]]
    assert words("cat $f; x=$(id)") == [["cat", "$f*"], ["id"], ["x=*"]]


def test_redirections_are_not_words_of_the_command() -> None:
    assert words("2>/dev/null rm x") == [["rm", "x"]]
    assert words("rm>/dev/null x 2>&1 <in") == [["rm", "x"]]
    assert words("echo 2 > 3") == [["echo", "2"]]


def test_here_document_bodies_are_data_and_lines_after_them_commands() -> None:
    assert words("cat <<'EOF' | bash\nrm x\nEOF\nls") == [["cat"], ["bash"], ["ls"]]
    assert words("cat <<-EOF\n\trm x\n\tEOF\nls") == [["cat"], ["ls"]]
    assert scan("cat <<'EOF'\n$(rm x)\nEOF").complete
    assert not scan("cat <<EOF\n$(rm x)\nEOF").complete


def test_arithmetic_and_brace_operators_are_not_complete() -> None:
    for command in ("((_))", "echo $[_]", "echo $((_))", "echo ${x@P}", "echo ${a[_]}"):
        assert not scan(command).complete, command
    assert scan("echo ${HOME} $x").complete
