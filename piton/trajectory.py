"""A run's trajectory in ATIF (the Agent Trajectory Interchange Format that Harbor stores), built
from the Claude Code-format transcripts Piton writes under `$CLAUDE_CONFIG_DIR`.

Each user prompt is a `user` step; each assistant message an `agent` step with its text, its
thinking, its tool calls and, as the observation, the results those calls got; its token counts
come from the message's `usage`, its cost from Piton's price table. A subagent's lines (under
`<session>/subagents/`) are steps of their own, marked as a sidechain, in time order with the
rest. The run's total cost is the `total_cost_usd` of the stream-json `result` lines when there is
a log of them (it counts the compaction and subagent requests too), else the steps' sum.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from piton import __version__
from piton.core.conversation.usage import Usage

SCHEMA_VERSION = "ATIF-v1.7"


def transcripts(sessions_dir: Path) -> list[Path]:
    """The transcripts under `<sessions_dir>/projects/`: the sessions', then their subagents'."""
    projects = sessions_dir / "projects"
    main = sorted(p for p in projects.glob("*/*.jsonl"))
    return main + sorted(projects.glob("*/*/subagents/*.jsonl"))


def _lines(paths: list[Path]) -> list[dict[str, Any]]:
    """Every message line once (by uuid), in time order."""
    seen: set[str] = set()
    lines: list[dict[str, Any]] = []
    for path in paths:
        with contextlib.suppress(OSError), path.open(encoding="utf-8", errors="replace") as f:
            for text in f:
                try:
                    line = json.loads(text)
                except ValueError:
                    continue
                if not isinstance(line, dict) or line.get("type") not in ("user", "assistant"):
                    continue
                if not isinstance(line.get("message"), dict) or line.get("uuid") in seen:
                    continue
                seen.add(str(line.get("uuid")))
                lines.append(line)
    lines.sort(key=lambda line: str(line.get("timestamp", "")))
    return lines


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _metrics(model: str, raw: dict[str, Any]) -> dict[str, Any]:
    usage = Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_creation_input_tokens=int(raw.get("cache_creation_input_tokens") or 0),
        cache_read_input_tokens=int(raw.get("cache_read_input_tokens") or 0),
    )
    return {
        "prompt_tokens": usage.input_tokens
        + usage.cache_read_input_tokens
        + usage.cache_creation_input_tokens,
        "completion_tokens": usage.output_tokens,
        "cached_tokens": usage.cache_read_input_tokens,
        "cost_usd": round(usage.cost_usd(model), 8),
        "extra": {
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
        },
    }


def _agent_step(line: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
    thoughts = [b.get("thinking", "") for b in blocks if b.get("type") == "thinking"]
    calls = [
        {
            "tool_call_id": b.get("id", ""),
            "function_name": b.get("name", ""),
            "arguments": b["input"] if isinstance(b.get("input"), dict) else {"input": b.get("input")},
        }
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    model = str(message.get("model") or "")
    step: dict[str, Any] = {
        "timestamp": line.get("timestamp"),
        "source": "agent",
        "model_name": model or None,
        "message": "\n\n".join(t for t in texts if t),
        "reasoning_content": "\n\n".join(t for t in thoughts if t) or None,
        "tool_calls": calls or None,
        "metrics": _metrics(model, message.get("usage") or {}),
        "llm_call_count": 1,
        "extra": {"is_sidechain": bool(line.get("isSidechain")), "cwd": line.get("cwd")},
    }
    return step


def _results(message: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """`(tool_use_id, text, is_error)` of each tool result a user message holds."""
    content = message.get("content")
    if not isinstance(content, list):
        return []
    found = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            inner = block.get("content")
            text = inner if isinstance(inner, str) else _text(inner)
            found.append((str(block.get("tool_use_id", "")), text, bool(block.get("is_error"))))
    return found


def total_cost(stream_log: Path) -> float | None:
    """The sum of `total_cost_usd` over the stream-json `result` lines of a run's log (one a
    process); None when the log has none."""
    total: float | None = None
    with contextlib.suppress(OSError), stream_log.open(encoding="utf-8", errors="replace") as f:
        for text in f:
            if '"result"' not in text:
                continue
            with contextlib.suppress(ValueError, AttributeError):
                line = json.loads(text)
                if line.get("type") == "result" and isinstance(line.get("total_cost_usd"), int | float):
                    total = (total or 0.0) + float(line["total_cost_usd"])
    return total


def build(
    sessions_dir: Path, stream_log: Path | None = None, model_name: str | None = None
) -> dict[str, Any] | None:
    """The ATIF trajectory of the transcripts under `sessions_dir`; None when there are none."""
    lines = _lines(transcripts(sessions_dir))
    if not lines:
        return None
    steps: list[dict[str, Any]] = []
    issued: dict[str, dict[str, Any]] = {}  # tool_use id -> the agent step that made the call
    for line in lines:
        message = line["message"]
        if line["type"] == "assistant":
            step = _agent_step(line, message)
            for call in step["tool_calls"] or []:
                issued[call["tool_call_id"]] = step
            steps.append(step)
            continue
        results = _results(message)
        for call_id, text, is_error in results:
            caller = issued.get(call_id)
            if caller is None:
                continue
            observation = caller.setdefault("observation", {"results": []})
            content = f"{text}\n[error] tool reported failure" if is_error else text
            observation["results"].append({"source_call_id": call_id, "content": content})
        if not results and (text := _text(message.get("content"))):
            steps.append({"timestamp": line.get("timestamp"), "source": "user", "message": text})
    agents = [s for s in steps if s["source"] == "agent"]
    main_models = [s["model_name"] for s in agents if not s["extra"]["is_sidechain"] and s["model_name"]]
    summed = sum(s["metrics"]["cost_usd"] for s in agents)
    cost = total_cost(stream_log) if stream_log is not None else None
    return {
        "schema_version": SCHEMA_VERSION,
        "session_id": next((str(line["sessionId"]) for line in lines if line.get("sessionId")), ""),
        "agent": {
            "name": "piton",
            "version": next((str(line["version"]) for line in lines if line.get("version")), __version__),
            "model_name": (main_models[0] if main_models else model_name),
        },
        "steps": [{"step_id": n, **_without_none(s)} for n, s in enumerate(steps, 1)],
        "final_metrics": {
            "total_prompt_tokens": sum(s["metrics"]["prompt_tokens"] for s in agents),
            "total_completion_tokens": sum(s["metrics"]["completion_tokens"] for s in agents),
            "total_cached_tokens": sum(s["metrics"]["cached_tokens"] for s in agents),
            "total_cost_usd": round(cost if cost is not None else summed, 8),
            "total_steps": len(steps),
        },
    }


def _without_none(step: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in step.items() if v is not None}


def context_totals(trajectory: dict[str, Any]) -> dict[str, Any]:
    """What a harness's run context records: tokens in (cache reads included), cache reads, tokens
    out, and the cost."""
    final = trajectory["final_metrics"]
    return {
        "n_input_tokens": final["total_prompt_tokens"],
        "n_cache_tokens": final["total_cached_tokens"],
        "n_output_tokens": final["total_completion_tokens"],
        "cost_usd": final["total_cost_usd"],
    }
