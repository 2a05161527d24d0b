"""Tool search: how big the first request is, and what loading a deferred tool mid-session does to
the prompt cache.

1. The first request of `piton -p hello`, a real process against the fake Messages API, with every
   tool sent (`ENABLE_TOOL_SEARCH=false`) and with the rarely needed ones deferred (what a session
   at api.anthropic.com does by default; the fake runs on 127.0.0.1, so it is asked for here).
2. A 26-request tool loop (each turn a short text and a call with a small result, as in bench_loop
   and bench_session) through the real agent, provider and HTTP against the fake API, which applies
   the API's caching rules. Twice in it the model loads a deferred tool with ToolSearch and calls it.
   The share of the prompt read from the cache is compared with every tool sent up front, and with
   a client that would add each loaded tool to the tools array itself (no `defer_loading`: the
   requests of the deferred run with the marks taken off and the references as text); cold, and
   after an earlier session in the project left its first request in the cache.

    python benchmarks/bench_tool_search.py
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from piton.testing.script import Reply, ToolCall, reply  # noqa: E402
from tests.fakes.cache import PromptCache  # noqa: E402
from tests.fakes.fake_api import FakeAnthropicAPI  # noqa: E402

MODEL = "claude-sonnet-5-5"
TURNS = 26
CELL = {"cell_type": "code", "id": "c1", "metadata": {}, "source": ["x = 1"], "outputs": []}
NOTEBOOK: dict[str, Any] = {"cells": [CELL], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


# -- 1. the first request --------------------------------------------------------------------------


def first_request(tool_search: str, home: Path) -> tuple[int, int, int]:
    """(body bytes, tools, tool definition bytes) of `piton -p hello`'s first request."""
    project = home / f"project-{tool_search}"
    project.mkdir()
    with FakeAnthropicAPI() as fake:
        fake.add(reply("Hello!"))
        env = {**os.environ, "ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key"}
        env.update(HOME=str(home), XDG_STATE_HOME=str(home / "state"), ENABLE_TOOL_SEARCH=tool_search)
        env.pop("IS_SANDBOX", None)
        piton = str(Path(sys.executable).with_name("piton"))
        subprocess.run([piton, "-p", "hello"], cwd=project, env=env, capture_output=True, check=True)
        [sent] = fake.requests
    tools = sent.body.get("tools", [])
    definitions = sum(len(json.dumps(t, ensure_ascii=False, separators=(",", ":")).encode()) for t in tools)
    return int(sent.headers["content-length"]), len(tools), definitions


def first_request_table() -> None:
    print("The first request of `piton -p hello`\n")
    row = "{:<44} {:>11} {:>6} {:>18}"
    print(row.format("", "body bytes", "tools", "definition bytes"))
    with tempfile.TemporaryDirectory() as tmp:
        for label, setting in (
            ("every tool (ENABLE_TOOL_SEARCH=false)", "false"),
            ("tool search (the default at Anthropic's API)", "true"),
        ):
            size, count, definitions = first_request(setting, Path(tmp))
            print(row.format(label, f"{size:,}", count, f"{definitions:,}"))


# -- 2. the loop -----------------------------------------------------------------------------------


def step(turn: int, notebook: str) -> Reply:
    """The model's reply at `turn`: a short text and a call with a small result (as in bench_loop and
    bench_session); twice a deferred tool loaded with ToolSearch and then called."""
    special = {
        3: [ToolCall("ToolSearch", {"query": "select:TodoWrite"})],
        4: [
            ToolCall(
                "TodoWrite",
                {"todos": [{"content": "Check", "status": "in_progress", "activeForm": "Checking"}]},
            )
        ],
        14: [
            ToolCall("ToolSearch", {"query": "jupyter notebook"}),
            ToolCall("Read", {"file_path": notebook}),
        ],
        15: [ToolCall("NotebookEdit", {"notebook_path": notebook, "cell_id": "c1", "new_source": "x = 2"})],
    }
    if turn == TURNS - 1:
        return reply("Done: every file checked and the notebook updated.", output_tokens=40)
    calls = special.get(turn) or [ToolCall("Read", {"file_path": f"src/file_{turn}.py"})]
    return reply(f"Step {turn}: checking the next file.", *calls, output_tokens=40)


def tool_loop(project: Path, tool_search: str) -> list[dict[str, Any]]:
    """The request bodies of the loop, run through `build_runtime` (the real tools, system prompt
    and provider; thinking off, as in bench_session)."""
    from piton.core.options import RunOptions
    from piton.core.providers.anthropic import AnthropicProvider
    from piton.runtime import build_runtime

    os.environ["ENABLE_TOOL_SEARCH"] = tool_search
    notebook = project / "analysis.ipynb"
    notebook.write_text(json.dumps(NOTEBOOK))
    with FakeAnthropicAPI(cache=PromptCache()) as fake:
        fake.add(*(step(turn, str(notebook)) for turn in range(TURNS)))
        provider = AnthropicProvider(base_url=fake.base_url, api_key="test-key", backoff_s=0.01)
        options = RunOptions(cwd=project, model=MODEL, permission_mode="acceptEdits", thinking=False)
        runtime = build_runtime(options, provider)

        async def go() -> None:
            try:
                _ = [e async for e in runtime.agent.run("Check every file in src/ and update the notebook")]
            finally:
                await provider.aclose()

        asyncio.run(go())
        fake.assert_complete()
        assert not fake.rejections, fake.rejections
        return fake.bodies


def eager(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The deferred run's requests as a client would send them that adds each loaded tool to the
    tools array itself: no `defer_loading`, and each reference a line of text."""
    out = copy.deepcopy(bodies)
    for body in out:
        for tool in body.get("tools", []):
            tool.pop("defer_loading", None)
        for message in body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                parts = block.get("content") if isinstance(block.get("content"), list) else []
                for i, part in enumerate(parts):
                    if part.get("type") == "tool_reference":
                        parts[i] = {"type": "text", "text": f"Loaded {part['tool_name']}."}
    return out


def share(bodies: list[dict[str, Any]], warm: bool) -> float:
    """The share of the loop's prompt tokens read from the cache, by the API's rules. `warm`: an
    earlier session in the same project (another prompt) left its first request in the cache."""
    cache = PromptCache()
    if warm:
        earlier = copy.deepcopy(bodies[0])
        earlier["messages"] = [{"role": "user", "content": [{"type": "text", "text": "An earlier task."}]}]
        cache.apply(earlier)
    usages = [cache.apply(body) for body in bodies]
    return sum(u.cache_read_input_tokens for u in usages) / sum(u.prompt_tokens for u in usages)


def loop_table(root: Path) -> None:
    runs = {}
    for setting in ("false", "true"):
        project = root / f"loop-{setting}"
        (project / "src").mkdir(parents=True)
        for turn in range(TURNS):
            (project / "src" / f"file_{turn}.py").write_text(
                f"def handler_{turn}(request):\n    return {turn}\n"
            )
        runs[setting] = tool_loop(project, setting)
    print(f"\nThe prompt cache over a {TURNS}-request tool loop that loads two deferred tools\n")
    row = "{:<46} {:>10} {:>14} {:>11} {:>22}"
    print(row.format("", "1st tools", "prompt tokens", "read share", "after another session"))
    for label, bodies in (
        ("every tool up front", runs["false"]),
        ("tool search (defer_loading + tool_reference)", runs["true"]),
        ("loaded tools added to the tools array", eager(runs["true"])),
    ):
        total = sum(PromptCache().apply(body).prompt_tokens for body in bodies)
        cells = (
            len(bodies[0]["tools"]),
            f"{total:,}",
            f"{share(bodies, False):.3f}",
            f"{share(bodies, True):.3f}",
        )
        print(row.format(label, *cells))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "state")  # sessions of this run stay here
        os.environ.pop("ANTHROPIC_BASE_URL", None)
        first_request_table()
        loop_table(Path(tmp))


if __name__ == "__main__":
    main()
