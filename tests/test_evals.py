"""`piton eval`: cases recorded once against the (fake) API, replayed without it, and told apart when
a skill change makes a run diverge or fail; live runs with pass rates. Real `piton`, git, bwrap."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from piton.testing.script import Reply, Text, ToolCall
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "evals"

SKILL = """---
name: shout
description: Write the argument in capitals to SHOUT.txt.
---
Write the words "$ARGUMENTS" in capitals to SHOUT.txt at the project root, then say done.
"""

CASE = """prompt = "/shout hello there"

[[expect]]
skill = "shout"

[[expect]]
tool_called = "Write"

[[expect]]
file = "SHOUT.txt"
equals = "HELLO THERE\\n"

[[expect]]
answer_contains = "done"
"""


def _shout_script(fake_api: FakeAnthropicAPI) -> None:
    def write(body: dict[str, object]) -> Reply:
        where = json.dumps(body["system"]).split("Working directory: ", 1)[1].split("\\n", 1)[0]
        return Reply([ToolCall("Write", {"file_path": f"{where}/SHOUT.txt", "content": "HELLO THERE\n"})])

    fake_api.add(write, Reply([Text("Done.")], input_tokens=900, output_tokens=4))


def test_the_shipped_suite_replays_and_passes(project: Path) -> None:
    done = piton_here("eval", str(EXAMPLES), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["mode"] == "replay"
    assert {c["case"]: c["pass_rate"] for c in report["cases"]} == {
        "commit-staged": 1.0,
        "init-writes-agents": 1.0,
        "review-finds-bug": 1.0,
    }
    commit = next(c for c in report["cases"] if c["case"] == "commit-staged")["runs"][0]
    assert (
        commit["tool_calls"] == ["Bash", "Bash", "Bash"] and commit["cost_usd"] > 0 and commit["tokens"] > 0
    )
    assert all(check["passed"] for check in commit["checks"]) and len(commit["checks"]) == 5


def test_record_replay_and_what_a_changed_skill_does(fake_api: FakeAnthropicAPI, project: Path) -> None:
    skill = project / ".claude" / "skills" / "shout" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL)
    case = project / "evals" / "shout" / "case.toml"
    case.parent.mkdir(parents=True)
    case.write_text(CASE)

    not_yet = piton_here("eval")
    assert not_yet.returncode == 1
    assert "shout: no recording yet: run it once with --record" in not_yet.stdout

    _shout_script(fake_api)
    recorded = piton_here("eval", "--record")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "1/1 passed (record)" in recorded.stdout
    recording = json.loads((case.parent / "recording.json").read_text())
    assert len(recording["requests"]) == 2
    assert "$PROJECT/SHOUT.txt" in json.dumps(recording)  # no run's temporary path is kept
    asked = len(fake_api.requests)

    replayed = piton_here("eval", "--json")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    run = json.loads(replayed.stdout)["cases"][0]["runs"][0]
    assert run["status"] == "pass" and run["diverged"] == [] and run["tokens"] > 0
    assert len(fake_api.requests) == asked  # a replay asks no model

    skill.write_text(SKILL.replace("in capitals", "in capitals, with an exclamation mark"))
    changed = piton_here("eval")
    assert changed.returncode == 1
    assert changed.stdout.splitlines()[1].split()[:2] == ["shout", "diverged"]
    assert "shout: request 1 differs from the recorded one" in changed.stdout

    (project / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Write"]}}))
    skill.write_text(SKILL)
    denied = piton_here("eval")
    assert denied.returncode == 1
    assert denied.stdout.splitlines()[1].split()[:3] == ["shout", "fail", "3/4"]  # the model did call Write
    assert "✗ SHOUT.txt exists (missing)" in denied.stdout
    assert "request 2 differs from the recorded one" in denied.stdout  # the model saw the refusal


def test_live_runs_give_pass_rates(fake_api: FakeAnthropicAPI, project: Path) -> None:
    suite = project / "cases"
    shutil.copytree(EXAMPLES / "review-finds-bug", suite / "review-finds-bug")
    (suite / "review-finds-bug" / "recording.json").unlink()
    for answer in ("It raises IndexError on every list.", "Looks fine to me."):
        fake_api.add(
            Reply([ToolCall("Bash", {"command": "git diff HEAD"})]),
            Reply([Text(answer)], input_tokens=1000, output_tokens=10),
        )
    done = piton_here("eval", "cases", "--live", "--runs", "2", "--json")
    assert done.returncode == 1, done.stderr
    (result,) = json.loads(done.stdout)["cases"]
    assert result["pass_rate"] == 0.5
    assert [r["status"] for r in result["runs"]] == ["pass", "fail"]
    assert result["cost_usd"] > 0 and result["tokens"] > 0 and result["seconds"] > 0
    assert not (suite / "review-finds-bug" / "recording.json").exists()  # --live keeps nothing
    table = piton_here("eval", "cases", "--live", "--case", "nothing-by-this-name")
    assert (
        table.returncode == 1 and table.stderr == "piton eval: no case named nothing-by-this-name in cases\n"
    )


def test_a_bad_case_is_one_line(project: Path) -> None:
    bad = project / "evals" / "broken" / "case.toml"
    bad.parent.mkdir(parents=True)
    bad.write_text('prompt = "hi"\n[options]\ncolour = "blue"\n')
    done = piton_here("eval")
    assert done.returncode == 1
    assert done.stderr == f"piton eval: {bad}: unknown options colour\n"
    bad.write_text("prompt = [unclosed\n")
    assert piton_here("eval").stderr.startswith(f"piton eval: {bad}: ")


def test_what_a_replay_must_not_miss(fake_api: FakeAnthropicAPI, project: Path) -> None:
    """A changed CLAUDE.md (the system prompt) diverges; a run that crashes is an error, not a
    pass; a check cannot read outside the copy; the user's state directory gets nothing."""
    case = project / "evals" / "hello" / "case.toml"
    case.parent.mkdir(parents=True)
    case.write_text('prompt = "say hello"\n[[expect]]\nanswer_contains = "hello"\n')
    (project / "CLAUDE.md").write_text("Be brief.\n")
    fake_api.add(Reply([Text("hello")]))
    assert piton_here("eval", "--record").returncode == 0
    assert piton_here("eval").returncode == 0
    (project / "CLAUDE.md").write_text("Never say hello.\n")
    changed = piton_here("eval")
    assert changed.returncode == 1
    assert "request 1: the system prompt or the tools differ from the recording's" in changed.stdout

    (project / "CLAUDE.md").write_text("Be brief.\n")
    case.write_text(
        'prompt = "say hello"\n[options]\nmax_turns = 0\n'
        '[[expect]]\nanswer_contains = "hello"\n[[expect]]\nfile = "../../../../etc/hostname"\n'
    )
    crashed = piton_here("eval", "--json")
    run = json.loads(crashed.stdout)["cases"][0]["runs"][0]
    assert crashed.returncode == 1 and run["status"] == "error", run
    outside = next(c for c in run["checks"] if c["check"].startswith("../"))
    assert not outside["passed"] and outside["detail"].startswith("outside the project")
    assert not list((Path.home() / ".state").rglob("*piton-eval*"))
    assert not list(Path.home().rglob("*.jsonl"))
