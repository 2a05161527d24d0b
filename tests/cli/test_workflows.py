"""Workflows in `piton -p` against the fake API, with the real sandbox: a script with a parallel phase
and a pipeline runs in the background and its result reaches the model; starting one is asked about
with its budget; a run stopped by its budget is resumed, the agents that had finished answering from
its journal; Claude Code's JavaScript workflows are named as not run."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from piton.testing.script import Reply, ToolCall, reply
from tests.cli.test_background_agents import notifications, texts
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton_here

pytestmark = pytest.mark.sandbox

REVIEW = '''"""Review two parts, then summarise."""
BUDGET = {"agents": %d, "tokens": 1_000_000, "usd": 5}


async def main(ctx):
    ctx.phase("review")
    api, core = await ctx.parallel(ctx.agent("WF-A review api"), ctx.agent("WF-B review core"))
    ctx.phase("summary")
    return await ctx.pipeline(["WF-C merge: {input}", "WF-D shorten: {input}"], api + " | " + core)
'''


def workflow(project: Path, agents: int = 4) -> None:
    folder = project / ".piton" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "review.py").write_text(REVIEW % agents)


class Agents:
    """Answers the workflow's agents by their task, and the parent by `parent`."""

    def __init__(self, parent: Callable[[dict[str, Any]], Reply]) -> None:
        self.parent = parent
        self.asked: list[str] = []
        self.parent_bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        first = json.dumps(body["messages"][0])
        for key, answer in (("WF-A", "api ok"), ("WF-B", "core ok"), ("WF-D", "short: all ok")):
            if key in first:
                self.asked.append(key)
                return reply(answer)
        if "WF-C" in first:
            self.asked.append("WF-C")
            return reply("merged " + first.split("merge: ", 1)[1].split('"', 1)[0])
        self.parent_bodies.append(body)
        return self.parent(body)


def test_a_workflow_runs_its_phases_in_the_background_and_reports(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    workflow(project)

    def parent(body: dict[str, Any]) -> Reply:
        if len(agents.parent_bodies) == 1:
            return reply(ToolCall("Workflow", {"name": "review"}))
        heard = notifications(body)
        return reply(f"workflow: {heard[-1]}" if heard else "started")

    agents = Agents(parent)
    fake_api.add(*[agents] * 10)
    done = piton_here("-p", "run the review", "--allowedTools", "Workflow(review)")
    assert (done.returncode, done.stdout) == (0, "workflow: short: all ok\n"), done.stderr
    assert sorted(agents.asked[:2]) == ["WF-A", "WF-B"] and agents.asked[2:] == ["WF-C", "WF-D"]
    tools = {t["name"]: t for t in agents.parent_bodies[0]["tools"]}
    assert "review: Review two parts, then summarise. [at most 4 agents" in tools["Workflow"]["description"]
    assert "started in the background as wf-" in texts(agents.parent_bodies[1])


def test_starting_a_workflow_is_asked_about_with_its_budget(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    workflow(project)
    fake_api.add(reply(ToolCall("Workflow", {"name": "review"})), reply("not allowed"))
    done = piton_here("-p", "run the review")
    assert done.stdout == "not allowed\n"
    said = texts(fake_api.bodies[-1])
    assert "nobody can approve it" in said and 'allowedTools \\"Workflow(review' in said


def test_a_run_stopped_by_its_budget_resumes_from_its_journal(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    workflow(project, agents=1)
    resume: list[str] = []  # set for the second run: the run to go on with

    def parent(body: dict[str, Any]) -> Reply:
        heard = notifications(body)
        if len(body["messages"]) == 1:
            given = {"name": "review", **({"resume": resume[0]} if resume else {})}
            return reply(ToolCall("Workflow", given))
        if not heard:
            return reply("waiting")
        return reply(f"resumed: {heard[-1]}" if resume else "stopped")

    agents = Agents(parent)
    fake_api.add(*[agents] * 16)
    first = piton_here("-p", "run the review", "--allowedTools", "Workflow(review)")
    assert first.stdout == "stopped\n", first.stderr
    told = texts(agents.parent_bodies[-1])
    assert "budget is spent (at most 1 agents" in told and "<status>failed</status>" in told
    resume.append(re.findall(r"Workflow with resume '(wf-[0-9a-f]{8})'", told)[-1])
    assert len(agents.asked) == 1, "one agent ran: the other was refused"

    workflow(project, agents=3)  # the user raises the budget; the finished agent is not asked again
    second = piton_here("-p", "go on", "--allowedTools", "Workflow(review)")
    assert second.stdout == "resumed: short: all ok\n", second.stderr
    assert sorted(agents.asked) == ["WF-A", "WF-B", "WF-C", "WF-D"], "each agent ran once in all"
    assert f"<task-id>{resume[0]}</task-id>" in texts(agents.parent_bodies[-1])


def test_claude_codes_javascript_workflows_are_named_as_not_run(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    folder = project / ".claude" / "workflows"
    folder.mkdir(parents=True)
    (folder / "deploy.js").write_text("export default async () => {}\n")
    fake_api.add(reply("ok"))
    done = piton_here("-p", "hi", "--verbose")
    assert "deploy.js: a Claude Code JavaScript workflow, which Piton does not run" in done.stderr
    assert "Workflow" not in [t["name"] for t in fake_api.bodies[0]["tools"]], "no workflow: no tool"


def test_a_workflow_case_is_recorded_once_and_replayed_offline(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    case = project / "evals" / "review" / "case.toml"
    case.parent.mkdir(parents=True)
    case.write_text(
        'prompt = "run the review"\n\n[options]\nallowed_tools = ["Workflow(review)"]\n\n'
        f"[files]\n{json.dumps('.piton/workflows/review.py')} = {json.dumps(REVIEW % 4)}\n\n"
        '[[expect]]\ntool_called = "Workflow"\n\n[[expect]]\nanswer_contains = "short: all ok"\n'
    )

    def parent(body: dict[str, Any]) -> Reply:
        if len(body["messages"]) == 1:
            return reply(ToolCall("Workflow", {"name": "review"}))
        heard = notifications(body)
        return reply(f"workflow: {heard[-1]}" if heard else "started")

    fake_api.add(*[Agents(parent)] * 10)
    recorded = piton_here("eval", "--record")
    assert recorded.returncode == 0 and "1/1 passed (record)" in recorded.stdout, (
        recorded.stdout + recorded.stderr
    )
    asked = len(fake_api.requests)
    replayed = piton_here("eval", "--json")
    run = json.loads(replayed.stdout)["cases"][0]["runs"][0]
    assert (run["status"], run["diverged"]) == ("pass", []), replayed.stdout
    assert len(fake_api.requests) == asked, "the replay, workflow agents included, asked no model"
