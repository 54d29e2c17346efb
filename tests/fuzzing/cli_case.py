"""One CLI fuzz case: a real recorded session copied to a temp out root, one input file mutated,
``cutile-workbench report e|f|table`` run in-process, and the tree compared before/after.

Contract of :func:`run_cli_case` (raises :class:`~fuzzing.targets.RuleViolation` otherwise):
- the exit status is 0, 1, 2 or 3, and stderr never says "internal error" (the CLI's catch-all for
  an untyped exception), unless the message matches a :data:`~fuzzing.targets.KNOWN_BUGS` entry;
- a non-zero exit wrote nothing (sha256 tree snapshot identical), except ``report f`` exit 1, which
  by contract writes a ``VERDICT: BLOCKED`` set;
- exit 2 names a file and a line or key (``path:line`` or ``key '…'``) or is a whole-file rejection;
- whatever was written lies under ``reports/`` or is one of E's perf logs, and passes the in-process
  validator twins (``validate_agent_e`` / ``validate_agent_f``); E's performance.md holds exactly one
  ``geomean_ratio=`` line, its VERDICT agrees with that geomean, and DONE never comes with a
  missing/failed config.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .mutator import mutate
from .targets import KNOWN_BUGS, REPO, WHOLE_FILE_REJECTIONS, RuleViolation

PRISTINE = REPO / "cutile_workbench/profiles/rms_norm/session/rms_norm"
KERNEL = "rms_norm"
# the files E and F read (launches.json.gz is left alone: 1.2 MB inflated, fuzzed directly elsewhere)
MUTABLE = (
    "baseline_perf_cutile.txt",
    "baseline_perf_triton_tileir.txt",
    "reports/agent_logs/perf_cutile_rs.full.txt",
    "reference/analysis.json",
    "reference/reference.mlir",
    "generated/generated_canon.mlir",
    "workbench/events.jsonl",
    "workbench/session.json",
)
COMMANDS = {
    "e": ["report", "e", KERNEL, "--yes", "--no-real-scripts"],
    "f": ["report", "f", KERNEL, "--yes", "--no-real-scripts"],
    "table": ["table", KERNEL, "--json"],
}
_E_PERF_LOG_RE = re.compile(r"^perf_cutile_rs(_[A-Za-z0-9_.-]+)?\.txt$")
_GEOMEAN_RE = re.compile(r"^geomean_ratio=([0-9.]+)$", re.M)


def snapshot(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@dataclass(frozen=True)
class CliResult:
    rc: int
    mutated: str
    changed: tuple[str, ...]
    stderr: str
    known_bug: str | None = None  # a KNOWN_BUGS ident when the CLI hit a tracked crash


def _known(stderr: str) -> str | None:
    for bug in KNOWN_BUGS:
        if f"{bug.exc_type}:" in stderr and bug.message.search(stderr):
            return bug.ident
    return None


def check_written_e(kernel_dir: Path, repro: str) -> None:
    from cutile_workbench.stages.e.validators import validate_agent_e

    res = validate_agent_e(kernel_dir)
    if res.exit_code != 0:
        raise RuleViolation(f"{repro}: written E set fails validate_agent_e:\n{res.output}")
    md = (kernel_dir / "reports/performance.md").read_text()
    found = _GEOMEAN_RE.findall(md)
    if len(found) != 1:
        raise RuleViolation(f"{repro}: performance.md has {len(found)} geomean_ratio= lines")
    check_verdict_agrees(md, float(found[0]), repro)


def check_verdict_agrees(md: str, geomean: float, repro: str) -> None:
    """First-line VERDICT vs the written geomean and the missing/failed count (§5.1).

    DONE iff geomean_ratio ≤ 1.05 and no config is missing or failed; otherwise INVESTIGATE.
    """
    first = md.split("\n", 1)[0]
    m = re.search(r"missing/failed: (\d+)", md)
    if m is None:
        raise RuleViolation(f"{repro}: performance.md does not state its missing/failed count")
    missing = int(m.group(1))
    expected = "DONE" if geomean <= 1.05 and missing == 0 else "INVESTIGATE"
    if first != f"VERDICT: {expected}":
        raise RuleViolation(
            f"{repro}: {first!r} disagrees with geomean_ratio={geomean:.4f} and missing/failed={missing}"
        )


def run_cli_case(stage: str, seed: int, workdir: Path) -> CliResult:
    from cutile_workbench.cli import main

    rng = random.Random(seed)
    out_root = workdir / f"case{seed}"
    if out_root.exists():
        shutil.rmtree(out_root)
    kernel_dir = out_root / KERNEL
    shutil.copytree(PRISTINE, kernel_dir, ignore=shutil.ignore_patterns("launches.json.gz"))
    rel = rng.choice(MUTABLE)
    target = kernel_dir / rel
    data, ops = mutate(target.read_bytes(), seed)
    target.write_bytes(data)
    repro = f"cli stage={stage} seed={seed} file={rel} ops={','.join(ops)}"
    before = snapshot(out_root)
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = main([*COMMANDS[stage], "--out-root", str(out_root)])
    after = snapshot(out_root)
    stderr = err.getvalue()
    changed = tuple(sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)))
    result = CliResult(rc, rel, changed, stderr)
    if "internal error" in stderr:
        ident = _known(stderr)
        if ident:
            if changed:
                raise RuleViolation(f"{repro}: known bug {ident} but the tree changed: {changed[:5]}")
            return CliResult(rc, rel, changed, stderr, ident)
        raise RuleViolation(
            f"{repro}: untyped exception reached the CLI (exit {rc}): {stderr.strip()[-600:]}"
        )
    if rc not in (0, 1, 2, 3):
        raise RuleViolation(f"{repro}: exit status {rc}")
    may_write = rc == 0 or (stage == "f" and rc == 1)
    if changed and not may_write:
        raise RuleViolation(f"{repro}: exit {rc} but the tree changed: {changed[:5]}")
    for c in changed:
        if not (c.startswith(f"{KERNEL}/reports/") or _E_PERF_LOG_RE.match(c.removeprefix(f"{KERNEL}/"))):
            raise RuleViolation(f"{repro}: wrote outside reports/ and E's perf logs: {c}")
        if c not in after:
            raise RuleViolation(f"{repro}: a file was deleted: {c}")
    if rc == 2:
        located = re.search(re.escape(str(out_root)) + r"[^\s:]*(:\d+|: key ')", stderr) or "key '" in stderr
        if not located and not WHOLE_FILE_REJECTIONS.search(stderr):
            raise RuleViolation(f"{repro}: exit 2 without file:line or key: {stderr.strip()[-400:]}")
    if changed and stage == "e":
        check_written_e(kernel_dir, repro)
    if changed and stage == "f":
        from cutile_workbench.stages.e.validators import validate_agent_f

        res = validate_agent_f(kernel_dir)
        if res.exit_code != 0:
            raise RuleViolation(f"{repro}: written F set fails validate_agent_f:\n{res.output}")
    return result
