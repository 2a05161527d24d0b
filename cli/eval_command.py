"""`piton eval [SUITE] [--record | --live] [--runs N] [--case NAME] [--json]`: run a folder of cases
(`piton.evals`) and report each as a table, or as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

USAGE = "piton eval [SUITE] [--record | --live] [--runs N] [--case NAME]... [--json]"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="piton eval", usage=USAGE, add_help=True)
    parser.add_argument("suite", nargs="?", help="a folder of cases (default: evals, else .piton/evals)")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--record", action="store_true", help="run live and keep the model's replies")
    how.add_argument("--live", action="store_true", help="run against the model, keeping nothing")
    parser.add_argument("--runs", type=int, default=1, help="runs per case (live: the pass rate)")
    parser.add_argument("--case", action="append", default=[], help="only this case (repeatable)")
    parser.add_argument("--json", action="store_true", help="the results as JSON on stdout")
    return parser


def main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # --help, or a usage error argparse has printed
        return int(e.code or 0)
    cwd = Path.cwd()
    suite = (
        Path(args.suite)
        if args.suite
        else next((p for p in (cwd / "evals", cwd / ".piton" / "evals") if p.is_dir()), cwd / "evals")
    )
    if args.runs < 1:
        sys.stderr.write("piton eval: --runs takes a number of at least 1\n")
        return 2
    from piton.evals import CaseError, load_cases, run_suite

    try:
        cases = load_cases(suite, args.case or None)
    except CaseError as e:
        sys.stderr.write(f"piton eval: {e}\n")
        return 1
    if not cases:
        sys.stderr.write(f"piton eval: no case named {', '.join(args.case)} in {suite}\n")
        return 1
    mode = "record" if args.record else "live" if args.live else "replay"
    results = run_suite(cases, mode=mode, source=cwd, runs=args.runs)
    if args.json:
        out = [
            {"case": runs[0].case, "runs": [o.to_dict() for o in runs], **_rates(runs)} for runs in results
        ]
        sys.stdout.write(json.dumps({"mode": mode, "cases": out}, indent=2) + "\n")
    else:
        sys.stdout.write(table(results, mode))
    ok = all(o.status == "pass" for runs in results for o in runs)
    return 0 if ok else 1


def _rates(runs: list) -> dict[str, float]:  # type: ignore[type-arg]
    passed = sum(o.status == "pass" for o in runs)
    return {
        "pass_rate": passed / len(runs),
        "tokens": sum(o.tokens for o in runs) / len(runs),
        "cost_usd": round(sum(o.cost_usd for o in runs) / len(runs), 6),
        "seconds": round(sum(o.seconds for o in runs) / len(runs), 2),
    }


def table(results: list, mode: str) -> str:  # type: ignore[type-arg]
    """One line per case (means over its runs), then what went wrong under it."""
    rows = [("case", "status", "checks", "turns", "tokens", "cost", "time")]
    notes: list[str] = []
    for runs in results:
        first, rates = runs[0], _rates(runs)
        statuses = sorted({o.status for o in runs})
        status = statuses[0] if len(statuses) == 1 else f"{rates['pass_rate']:.0%} pass"
        checks = f"{sum(c.passed for c in first.checks)}/{len(first.checks)}"
        tokens, cost, took = (
            f"{rates['tokens']:,.0f}",
            f"${rates['cost_usd']:.4f}",
            f"{rates['seconds']:.1f}s",
        )
        rows.append((first.case, status, checks, str(first.turns), tokens, cost, took))
        for number, outcome in enumerate(runs, start=1):
            where = f"{outcome.case}" + (f" (run {number})" if len(runs) > 1 else "")
            if outcome.error:
                notes.append(f"  {where}: {outcome.error}")
            notes += [f"  {where}: {d}" for d in outcome.diverged]
            notes += [
                f"  {where}: ✗ {c.what}" + (f" ({c.detail})" if c.detail else "")
                for c in outcome.checks
                if not c.passed
            ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    total = [o for runs in results for o in runs]
    passed = sum(o.status == "pass" for o in total)
    lines.append(f"{passed}/{len(total)} passed ({mode})")
    return "\n".join([*lines, *notes]) + "\n"
