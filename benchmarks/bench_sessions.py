"""What a long session costs its log: the bytes written over many compactions, and the time and
memory a fresh process takes to resume it. A run with large tool inputs (each step writes a file of
`--input-kb`) compacts every `--every` steps, keeping the last `--keep` steps. Baselines from the
same run: the bytes of what was new (each message once), and resuming a log that holds only the
final history. The log is written twice, once recording each compaction as the whole new history in
one line (the older format, still read) and once as Piton records it now.

    python benchmarks/bench_sessions.py [--compactions 34] [--every 10] [--keep 20] [--input-kb 256]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from piton.core.conversation.messages import (  # noqa: E402
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from piton.core.conversation.session import SessionLog  # noqa: E402

# run in a fresh process, so one measurement's memory is not another's
_RESUME = """
import sys, time
from pathlib import Path
from piton.core.conversation.session import load_session

def peak_kb():
    # this process's own high-water mark: ru_maxrss would carry the parent's over from the fork
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM:")).split()[1])

before = peak_kb()
started = time.perf_counter()
loaded = load_session(Path(sys.argv[1]), "bench")
seconds = time.perf_counter() - started
print(seconds, before, peak_kb(), len(loaded.messages), len(loaded.warnings))
"""


def step(n: int, size: int) -> list[Message]:
    body = "".join(f"line {n}.{i}: {'x' * 60}\n" for i in range(size // 72 + 1))[:size]
    call = ToolUseBlock(id=f"toolu_{n}", name="Write", input={"file_path": f"src/f{n}.py", "content": body})
    return [
        Message(role="assistant", content=[TextBlock(text=f"Writing file {n}."), call]),
        Message(role="user", content=[ToolResultBlock(tool_use_id=f"toolu_{n}", content="File written.")]),
    ]


def summary(n: int) -> Message:
    return Message.user(f"Summary of the conversation so far (compaction {n}). " + "Notes. " * 300)


def new_bytes(message: Message) -> int:
    return len(json.dumps(message.model_dump(mode="json", exclude_none=True), ensure_ascii=False).encode())


def write_log(path: Path, args: argparse.Namespace, *, whole: bool) -> tuple[int, list[Message]]:
    """Drive a log as the agent does; returns the bytes of what was new, and the final history."""
    log = SessionLog(path, "bench")
    history = [Message.user("Write the project, file by file.")]
    log.append_message(history[0])
    fresh = new_bytes(history[0])
    n = 0
    for compaction in range(args.compactions):
        for _ in range(args.every):
            n += 1
            for message in step(n, args.input_kb * 1024):
                history.append(message)
                log.append_message(message)
                fresh += new_bytes(message)
        history = [summary(compaction), *history[-2 * args.keep :]]
        fresh += new_bytes(history[0])
        if whole:
            dumped = [m.model_dump(mode="json", exclude_none=True) for m in history]
            log.record("compact_boundary", messages=dumped, trigger="auto", pre_tokens=150_000)
        else:
            log.compacted(history, trigger="auto", pre_tokens=150_000)
    log.close()
    return fresh, history


def resume(path: Path) -> tuple[float, float, float]:
    """Seconds to load, the process's peak RSS (interpreter and imports included) and how much
    loading added to it (MB)."""
    done = subprocess.run(
        [sys.executable, "-c", _RESUME, str(path)], capture_output=True, text=True, check=True, cwd=ROOT
    )
    seconds, before, peak, _, warnings = done.stdout.split()
    assert warnings == "0", f"{path} loaded with warnings"
    return float(seconds), int(peak) / 1024, (int(peak) - int(before)) / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compactions", type=int, default=34)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--keep", type=int, default=20)
    parser.add_argument("--input-kb", type=int, default=256)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="bench-sessions-"))
    try:
        measure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(args: argparse.Namespace, work: Path) -> None:
    whole_path, ours_path, final_path = work / "whole.jsonl", work / "ours.jsonl", work / "final.jsonl"
    fresh, final = write_log(whole_path, args, whole=True)
    write_log(ours_path, args, whole=False)
    log = SessionLog(final_path, "bench")
    for message in final:
        log.append_message(message)
    log.close()

    mb = 1024 * 1024
    print(
        f"Session log after {args.compactions} compactions ({args.every} steps each, "
        f"{args.input_kb} KB tool input per step, {args.keep} steps kept)\n"
    )
    print(f"{'log':<46} {'MB':>9} {'x new data':>11}")
    print(f"{'new data (each message once): baseline':<46} {fresh / mb:>9.1f} {1:>11.2f}")
    for label, path in [("whole history per compaction", whole_path), ("as Piton writes it", ours_path)]:
        size = path.stat().st_size
        print(f"{label:<46} {size / mb:>9.1f} {size / fresh:>11.2f}")

    print(f"\nResuming it in a fresh process ({len(final)} messages in the final history)\n")
    print(f"{'log':<46} {'MB':>7} {'s':>7} {'x':>6} {'peak MB':>8} {'x':>6} {'loading +MB':>11}")
    base = resume(final_path)
    base_s, base_mb = base[0], base[1]
    for label, path in [
        ("final history alone: baseline", final_path),
        ("whole history per compaction", whole_path),
        ("as Piton writes it", ours_path),
    ]:
        seconds, peak, added = base if path is final_path else resume(path)
        print(
            f"{label:<46} {path.stat().st_size / mb:>7.1f} {seconds:>7.3f} {seconds / base_s:>6.2f} "
            f"{peak:>8.1f} {peak / base_mb:>6.2f} {added:>11.1f}"
        )


if __name__ == "__main__":
    main()
