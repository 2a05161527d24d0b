"""Client CPU per step of a long session: Piton against the bare HTTP it cannot do without.

A 1,000-step session (each step a model turn that calls a tool with a small result, the agent with
its session log, the real AnthropicProvider and its HTTP client) runs against the fake Messages API,
which serves from a process of its own, so its CPU is not counted. Each client runs in a fresh
process and takes the process's CPU time around each step. The same request bodies are then sent
again by:

- the `anthropic` SDK alone, with the body already encoded (`AsyncAnthropic.post`, typed stream
  events), for comparison: Piton sent through it before it spoke HTTP itself;
- a bare `httpx2` client that encodes each body with `json.dumps` and decodes the SSE lines with
  `json.loads` (the floor the goal compares with);
- the same bare client with the body already encoded (HTTP and SSE only).

Piton's own part is measured directly: the agent loop with its session log, run with the same replies
from the scripted provider (no SDK, no HTTP), plus the request body, built by replaying the session's
requests through the provider's body encoder.

    python benchmarks/bench_session.py [steps]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from piton.testing.script import Reply

EPHEMERAL = {"type": "ephemeral"}
SYSTEM = "You are a coding assistant working in a test project. " + "Follow the project's conventions. " * 120
MODEL = "claude-sonnet-5-5"
WINDOWS = ((1, 100), (-100, None))  # steps 1-100 and the last 100


# -- the server process ----------------------------------------------------------------------------


def digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def answer_for(step: int, final: bool) -> Reply:
    """The model's reply at `step`: a short text and one tool call, or the final answer."""
    from piton.testing.script import ToolCall, reply

    if final:
        return reply("Done: every step checked.")
    return reply(f"Step {step}: checking the next file.", ToolCall("Echo", {"text": f"src/file_{step}.py"}))


def serve() -> None:
    """The fake API in this process; commands on stdin: `script N`, `dump PATH`."""
    from tests.fakes import fake_api

    fake = fake_api.FakeAnthropicAPI()
    seen: list[dict[str, Any]] = []
    last: dict[str, Any] = {}
    shapes: list[dict[str, Any]] = []

    def step(i: int, final: bool) -> Callable[[dict[str, Any]], Reply]:
        def answer(body: dict[str, Any]) -> Reply:
            marks = [
                [e, b]
                for e, entry in enumerate(body["messages"])
                for b, block in enumerate(entry["content"])
                if "cache_control" in block
            ]
            # what a request holds besides its messages changes rarely (thinking is left off once a
            # tool loop has begun without it): each distinct set is kept once
            rest = {k: v for k, v in body.items() if k != "messages"}
            if rest not in shapes:
                shapes.append(rest)
            shape = shapes.index(rest)
            seen.append(
                {"entries": len(body["messages"]), "marks": marks, "digest": digest(body), "shape": shape}
            )
            last.clear()
            last.update(body)
            fake.requests.clear()  # a thousand growing bodies would not fit in memory
            return answer_for(i, final)

        return answer

    with fake:
        print(fake.base_url, flush=True)
        for line in sys.stdin:
            command, _, argument = line.strip().partition(" ")
            if command == "script":
                steps = int(argument)
                seen.clear()
                fake.add(*(step(i, i == steps - 1) for i in range(steps)))
            elif command == "dump":
                Path(argument).write_text(json.dumps({"requests": seen, "last": last, "shapes": shapes}))
            print("ok", flush=True)


class Server:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()

    def command(self, text: str) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()
        if self.process.stdout.readline().strip() != "ok":
            raise RuntimeError(f"the fake server failed on {text!r}")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


# -- the clients (each in a fresh process) ---------------------------------------------------------


async def piton_client(url: str, steps: int, workdir: Path) -> list[float]:
    from piton.core.conversation.events import MessageDone, Result
    from piton.core.conversation.session import SessionStore
    from piton.core.providers.anthropic import AnthropicProvider
    from tests.fakes.tools import Probe, make_agent

    provider = AnthropicProvider(api_key="test-key", base_url=url)
    agent = make_agent(provider, Probe("Echo", read_only=True), system_prompt=SYSTEM, cwd=workdir)
    agent.transcript = SessionStore(workdir / "sessions").create(workdir, MODEL)
    gc.freeze()  # as `piton -p` and the REPL do once the session is open
    stamps = [time.process_time()]
    result = None
    try:
        async for event in agent.run("Check every file under src/, one at a time."):
            if isinstance(event, MessageDone):
                stamps.append(time.process_time())
            result = event
    finally:
        await provider.aclose()
    if not isinstance(result, Result) or result.num_turns != steps or result.is_error:
        raise RuntimeError(f"the session did not run its {steps} steps: {result}")
    return [b - a for a, b in itertools.pairwise(stamps)]


async def loop_client(steps: int, workdir: Path) -> list[float]:
    """The agent with its session log and the same replies, from the scripted provider: no request
    body, no SDK, no HTTP."""
    from piton.core.conversation.events import MessageDone
    from piton.core.conversation.session import SessionStore
    from piton.testing.scripted import ScriptedProvider
    from tests.fakes.tools import Probe, make_agent

    provider = ScriptedProvider(*(answer_for(i, i == steps - 1) for i in range(steps)), record=False)
    agent = make_agent(provider, Probe("Echo", read_only=True), system_prompt=SYSTEM, cwd=workdir)
    agent.transcript = SessionStore(workdir / "sessions").create(workdir, MODEL)
    gc.freeze()  # as `piton -p` and the REPL do once the session is open
    stamps = [time.process_time()]
    async for event in agent.run("Check every file under src/, one at a time."):
        if isinstance(event, MessageDone):
            stamps.append(time.process_time())
    return [b - a for a, b in itertools.pairwise(stamps)]


def bodies(dump: dict[str, Any]) -> list[dict[str, Any]]:
    """Every request body of the recorded session, rebuilt from the last one (the history only grows)."""
    last = dump["last"]
    clean = [
        {
            "role": m["role"],
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in last["messages"]
    ]
    out = []
    for seen in dump["requests"]:
        messages = clean[: seen["entries"]]
        for e, b in seen["marks"]:
            content = list(messages[e]["content"])
            content[b] = {**content[b], "cache_control": EPHEMERAL}
            messages[e] = {"role": messages[e]["role"], "content": content}
        out.append({**dump["shapes"][seen["shape"]], "messages": messages})
    for i in range(0, len(out), 97):  # rebuilt exactly as sent
        if digest(out[i]) != dump["requests"][i]["digest"]:
            raise RuntimeError(f"body {i + 1} was not rebuilt exactly")
    return out


def encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


async def sdk_client(url: str, dump: dict[str, Any]) -> list[float]:
    import anthropic
    from anthropic.types import RawMessageStreamEvent

    encoded = [encode(b) for b in bodies(dump)]
    client = anthropic.AsyncAnthropic(api_key="test-key", base_url=url)
    gc.freeze()  # as Piton does after the import; the bodies prepared in advance are no step's garbage
    cpu = []
    try:
        for content in encoded:
            started = time.process_time()
            stream = await client.post(
                "/v1/messages",
                cast_to=anthropic.types.Message,
                content=content,
                stream=True,
                stream_cls=anthropic.AsyncStream[RawMessageStreamEvent],
            )
            async for _event in stream:
                pass
            cpu.append(time.process_time() - started)
    finally:
        await client.close()
    return cpu


async def bare_client(url: str, dump: dict[str, Any], pre_encoded: bool) -> list[float]:
    import httpx2

    todo = bodies(dump)
    ready = [encode(b) for b in todo] if pre_encoded else []
    gc.freeze()  # the bodies prepared in advance are no step's garbage
    headers = {
        "authorization": "Bearer test-key",
        "anthropic-version": "2026-10-21",
        "content-type": "application/json",
    }
    cpu = []
    async with httpx2.AsyncClient(base_url=url, timeout=60) as client:
        for i, body in enumerate(todo):
            started = time.process_time()
            content = ready[i] if pre_encoded else encode(body)
            async with client.stream("POST", "/v1/messages", content=content, headers=headers) as response:
                response.raise_for_status()
                async for line in response.aiter_lines():
                    if line.startswith("data: "):
                        json.loads(line[6:])
            cpu.append(time.process_time() - started)
    return cpu


def build_replay(dump: dict[str, Any]) -> list[float]:
    """Seconds the provider spends building each request body, replaying the session's requests."""
    from piton.core.conversation.messages import Message
    from piton.core.providers import ModelRequest
    from piton.core.providers.body import BodyEncoder

    history = [Message.model_validate(m) for m in _unmerged(dump["last"]["messages"])]
    tools = [{k: v for k, v in t.items() if k != "cache_control"} for t in dump["last"]["tools"]]
    encoder = BodyEncoder()
    out = []
    sent = 0
    messages: list[Message] = []
    for i, seen in enumerate(dump["requests"]):
        count = 2 * i + 1
        assert seen["entries"] == count
        messages.extend(history[len(messages) : count])
        request = ModelRequest(model=MODEL, system=SYSTEM, messages=messages, tools=tools, cached_upto=sent)
        started = time.perf_counter()
        encoder.encode(request)
        out.append(time.perf_counter() - started)
        sent = count
    return out


def _unmerged(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "role": m["role"],
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in messages
    ]


def client_main(kind: str, url: str, steps: int, dump_path: str | None) -> None:
    dump = json.loads(Path(dump_path).read_text()) if dump_path else {}
    if kind == "piton":
        with tempfile.TemporaryDirectory() as tmp:
            cpu = asyncio.run(piton_client(url, steps, Path(tmp)))
    elif kind == "sdk":
        cpu = asyncio.run(sdk_client(url, dump))
    elif kind == "build":
        cpu = build_replay(dump)
    elif kind == "loop":
        with tempfile.TemporaryDirectory() as tmp:
            cpu = asyncio.run(loop_client(steps, Path(tmp)))
    else:
        cpu = asyncio.run(bare_client(url, dump, pre_encoded=kind == "bare-encoded"))
    print(json.dumps(cpu))


def run_client(kind: str, url: str, steps: int, dump: Path | None = None) -> list[float]:
    argv = [sys.executable, __file__, "--client", kind, "--url", url, "--steps", str(steps)]
    if dump is not None:
        argv += ["--dump", str(dump)]
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    out = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"the {kind} client failed:\n{out.stderr}")
    return [float(x) for x in json.loads(out.stdout)]


# -- the table ---------------------------------------------------------------------------------------


def windows(cpu: list[float]) -> tuple[float, float, float, float, float]:
    """The first step (one-off costs: connecting, a client building its transport), then
    mean and median ms of steps 2-100 and of the last 100."""
    early, late = cpu[1:100], cpu[-100:]
    return (
        cpu[0] * 1e3,
        statistics.fmean(early) * 1e3,
        statistics.median(early) * 1e3,
        statistics.fmean(late) * 1e3,
        statistics.median(late) * 1e3,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("steps", nargs="?", type=int, default=1000)
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("--client")
    parser.add_argument("--url")
    parser.add_argument("--steps", dest="client_steps", type=int)
    parser.add_argument("--dump")
    args = parser.parse_args()
    if args.serve:
        return serve()
    if args.client:
        return client_main(args.client, args.url, args.client_steps, args.dump)
    steps = args.steps
    server = Server()
    results: dict[str, list[float]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            dump = Path(tmp) / "session.json"
            server.command(f"script {steps}")
            results["piton"] = run_client("piton", server.url, steps)
            server.command(f"dump {dump}")
            for kind in ("sdk", "bare", "bare-encoded"):
                server.command(f"script {steps}")
                results[kind] = run_client(kind, server.url, steps, dump)
            results["build"] = run_client("build", server.url, steps, dump)
            results["loop"] = run_client("loop", server.url, steps)
    finally:
        server.close()
    own = [loop + build for loop, build in zip(results["loop"], results["build"], strict=True)]
    floor = windows(results["bare"])
    rows = [
        ("bare httpx2: json.dumps + POST + SSE json.loads (floor)", results["bare"]),
        ("bare httpx2, body pre-encoded", results["bare-encoded"]),
        ("SDK alone, body pre-encoded (AsyncAnthropic.post)", results["sdk"]),
        ("Piton: agent + session log + provider + HTTP", results["piton"]),
        ("Piton's own part: the two below", own),
        ("  agent loop + session log (scripted provider)", results["loop"]),
        ("  building the request body (replayed)", results["build"]),
    ]
    last = f"{steps - 99}-{steps}"
    print(f"Client CPU per step over a {steps:,}-step session (ms; fake API in its own process)\n")
    header = ("client", "step 1", "2-100 mean", "median", f"{last} mean", "median", "late/early", "x floor")
    print("{:<58} {:>7} {:>10} {:>7} {:>13} {:>7} {:>10} {:>13}".format(*header))
    for name, cpu in rows:
        first, early_mean, early_median, late_mean, late_median = windows(cpu)
        print(
            f"{name:<58} {first:>7.2f} {early_mean:>10.2f} {early_median:>7.2f} {late_mean:>13.2f} "
            f"{late_median:>7.2f} {late_mean / early_mean:>10.2f} "
            f"{early_mean / floor[1]:>6.2f} {late_mean / floor[3]:>6.2f}"
        )
    print("\nx floor: early and late means over the bare client's (json.dumps + POST + SSE json.loads)")
    piton_total = sum(results["piton"])
    print(f"\nwhole session: Piton {piton_total:.2f} s CPU, floor {sum(results['bare']):.2f} s CPU")


if __name__ == "__main__":
    main()
