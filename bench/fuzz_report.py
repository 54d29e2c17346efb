"""Run the fuzz profile and print the Reliability numbers (issue 6 item 1).

Usage: ``python bench/fuzz_report.py [--cases 10000] [--cli-cases 300] [--targets a,b] [--hostile]
[--json OUT]``

For every parser target of ``tests/fuzzing/targets.py`` it runs ``--cases`` seeded mutations of the
real recorded files (seeds 0..N-1, so a run is reproducible), then ``--cli-cases`` CLI cases per
command (``report e``, ``report f``, ``table``) on a mutated copy of the recorded rms_norm session.
It prints one markdown row per target: cases, accepted, rejections by error type (and how many of
them are whole-file rejections), known-bug crashes (tracked by strict xfail tests), new rule
violations (tracebacks or unlocated errors), and wall time. ``--hostile`` adds every hostile
placement of ``tests/fuzzing/hostile.py`` (a symlink out, FIFO, /dev/zero, dir or dangling link at
each path the app touches × 6 commands; one row per plant), run under a 4 GiB address-space limit.
Exit 1 when a new violation is found.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fuzzing.cli_case import COMMANDS, run_cli_case  # noqa: E402
from fuzzing.targets import TARGETS, RuleViolation, run_mutation_case  # noqa: E402


def _row(
    name: str, counts: collections.Counter[str], whole: int, violations: list[str], secs: float, cases: int
) -> dict[str, object]:
    rejections = {k: v for k, v in counts.items() if k not in ("ok",) and not k.startswith("KNOWN_BUG")}
    known = {k.removeprefix("KNOWN_BUG:"): v for k, v in counts.items() if k.startswith("KNOWN_BUG")}
    return {
        "target": name,
        "cases": cases,
        "accepted": counts.get("ok", 0),
        "rejections": rejections,
        "whole_file_rejections": whole,
        "known_bug_crashes": known,
        "new_violations": len(violations),
        "violation_examples": violations[:5],
        "wall_s": round(secs, 1),
    }


def fuzz_parsers(names: list[str], cases: int, work: Path) -> list[dict[str, object]]:
    rows = []
    for name in names:
        target = TARGETS[name]
        counts: collections.Counter[str] = collections.Counter()
        whole = 0
        violations: list[str] = []
        t0 = time.perf_counter()
        for seed in range(cases):
            try:
                res = run_mutation_case(target, seed, work)
            except RuleViolation as exc:
                violations.append(str(exc).split("\n")[0][:400])
                continue
            counts[res.outcome] += 1
            whole += res.whole_file
        rows.append(_row(name, counts, whole, violations, time.perf_counter() - t0, cases))
        print(f"  {name}: done in {rows[-1]['wall_s']}s", file=sys.stderr, flush=True)
    return rows


def fuzz_cli(cases: int, work: Path) -> list[dict[str, object]]:
    rows = []
    for stage in sorted(COMMANDS):
        counts: collections.Counter[str] = collections.Counter()
        violations: list[str] = []
        t0 = time.perf_counter()
        for seed in range(cases):
            try:
                res = run_cli_case(stage, seed, work)
                if res.known_bug:
                    counts[f"KNOWN_BUG:{res.known_bug}"] += 1
                else:
                    counts[f"exit {res.rc}" + (" (wrote)" if res.changed else "")] += 1
            except RuleViolation as exc:
                violations.append(str(exc)[:400])
            shutil.rmtree(work / f"case{seed}", ignore_errors=True)
        row = _row(f"cli {stage}", counts, 0, violations, time.perf_counter() - t0, cases)
        row["accepted"] = sum(v for k, v in counts.items() if k.startswith("exit 0"))
        row["rejections"] = {
            k: v for k, v in counts.items() if k.startswith("exit") and not k.startswith("exit 0")
        }
        rows.append(row)
        print(f"  cli {stage}: done in {row['wall_s']}s", file=sys.stderr, flush=True)
    return rows


def fuzz_hostile(work: Path) -> list[dict[str, object]]:
    from fuzzing.hostile import PLANTS, all_cases, limit_memory, run_cases

    limit_memory()  # a regression that reads /dev/zero whole fails its case with MemoryError
    rows = []
    for how in PLANTS:
        t0 = time.perf_counter()
        cases = [c for c in all_cases() if c[1] == how]
        counts, violations = run_cases(cases, work)
        counter: collections.Counter[str] = collections.Counter(counts)
        row = _row(f"hostile {how}", counter, 0, violations, time.perf_counter() - t0, len(cases))
        row["accepted"] = sum(v for k, v in counts.items() if k.startswith("exit 0"))
        row["rejections"] = {
            k: v for k, v in counts.items() if k.startswith("exit") and not k.startswith("exit 0")
        }
        rows.append(row)
        print(f"  hostile {how}: done in {row['wall_s']}s", file=sys.stderr, flush=True)
    return rows


def render(rows: list[dict[str, object]], total_s: float) -> str:
    out = [
        "| target | cases | accepted | rejected (typed, located) by type | whole-file | known-bug crashes "
        "| new violations | wall s |",
        "|---|---:|---:|---|---:|---|---:|---:|",
    ]
    for r in rows:
        rej = ", ".join(f"{k} {v}" for k, v in sorted(r["rejections"].items())) or "-"  # type: ignore[attr-defined]
        known = ", ".join(f"{k} {v}" for k, v in sorted(r["known_bug_crashes"].items())) or "0"  # type: ignore[attr-defined]
        out.append(
            f"| {r['target']} | {r['cases']} | {r['accepted']} | {rej} | {r['whole_file_rejections']} "
            f"| {known} | {r['new_violations']} | {r['wall_s']} |"
        )
    cases = sum(int(r["cases"]) for r in rows)  # type: ignore[call-overload]
    out.append(
        f"\nTotal: {cases} cases in {total_s:.0f} s on {platform.machine()} "
        f"({os.cpu_count()} CPUs visible), Python {platform.python_version()}."
    )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=10_000, help="mutations per parser target (default 10000)")
    ap.add_argument(
        "--cli-cases", type=int, default=300, help="CLI cases per command (default 300; 0 = skip)"
    )
    ap.add_argument("--targets", default="", help="comma-separated subset of: " + ", ".join(TARGETS))
    ap.add_argument(
        "--hostile", action="store_true", help="also run every hostile placement (links, FIFOs, devices)"
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = ap.parse_args(argv)
    names = [n for n in args.targets.split(",") if n] or list(TARGETS)
    if args.targets == "none":
        names = []
    unknown = set(names) - set(TARGETS)
    if unknown:
        ap.error(f"unknown target(s): {', '.join(sorted(unknown))}")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-report-") as d:
        rows = fuzz_parsers(names, args.cases, Path(d))
        if args.cli_cases:
            rows += fuzz_cli(args.cli_cases, Path(d))
        if args.hostile:
            rows += fuzz_hostile(Path(d))
    total = time.perf_counter() - t0
    print(render(rows, total))
    for r in rows:
        for v in r["violation_examples"]:  # type: ignore[attr-defined]
            print(f"VIOLATION {r['target']}: {v}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "argv": sys.argv[1:],
                    "rows": rows,
                    "total_s": round(total, 1),
                    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                },
                indent=1,
            )
        )
    return 1 if any(r["new_violations"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
