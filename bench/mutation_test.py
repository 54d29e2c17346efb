"""Small mutation test of the rule modules: how many single-operator mutants does the suite miss?

Usage (from the repository root; CPU only)::

    python bench/mutation_test.py [--modules stats,regress,...] [--max-per-function N] \
        [--out bench/results/mutation_test.json]

What it does:
- For each rule module (``RULES`` below: the functions that decide verdicts, severities, shards,
  merges and capture checks) it walks the AST of the named functions and makes one mutant per
  site of these operators: comparison flip (``<``↔``<=``, ``>``↔``>=``, ``==``↔``!=``), ``and``↔``or``,
  ``not x`` → ``x``, a boolean constant negated, a numeric constant changed (``c`` → ``c + 1`` for
  ints, ``c * 0.5`` for floats), ``+``↔``-`` and ``*``↔``/``. Plus the hand mutants of issue 22
  (``HAND``), applied as text replacements.
- A mutant is a copy of ``workbench/`` with the one mutated file (``ast.unparse``), put first on
  ``PYTHONPATH``; the module's tests (``RULES[...].tests``) run with ``python -P -m pytest -x -q``,
  so the working tree is never modified. ``killed``: pytest failed; ``survived``: it passed;
  ``timeout``: no answer within ``--timeout`` (counted as killed, reported apart); an ``equivalent``
  mutant is not detected automatically: survivors are listed for a reader to judge.
- Output: one JSON document (per mutant: module, function, line, operator, outcome, seconds) and a
  summary line per module on stdout. The runtime is kept modest by the per-function cap and by
  running only each module's own test files.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Rule:
    path: str  # under workbench/
    functions: tuple[str, ...]
    tests: tuple[str, ...]


RULES: dict[str, Rule] = {
    "stats": Rule(
        "stats.py",
        ("round4", "severity_for", "geomean", "_valid", "build_ratio_table"),
        ("tests/unit/test_stats.py", "tests/unit/test_rule_mutants.py"),
    ),
    "regress": Rule(
        "history/regress.py",
        ("compare_results", "min_attainable_p", "mann_whitney_u"),
        ("tests/unit/test_history_regress.py", "tests/unit/test_rule_mutants.py"),
    ),
    "diagnosis": Rule(
        "diagnosis.py",
        ("_verdict",),
        ("tests/unit/test_diagnosis.py", "tests/unit/test_f_rules.py", "tests/unit/test_rule_mutants.py"),
    ),
    "report_e": Rule(
        "report_e.py", ("plan_e_report",), ("tests/unit/test_report_e.py", "tests/unit/test_rule_mutants.py")
    ),
    "scaleout_plan": Rule(
        "scaleout/plan.py",
        ("balanced_cuts",),
        ("tests/unit/test_scaleout_plan.py", "tests/unit/test_rule_mutants.py"),
    ),
    "scaleout_merge": Rule("scaleout/merge.py", ("merge_plan",), ("tests/unit/test_rule_mutants.py",)),
    "selfcheck": Rule(
        "capture/selfcheck.py",
        ("judge", "check_count"),
        ("tests/unit/test_capture_clock_selfcheck.py", "tests/unit/test_rule_mutants.py"),
    ),
    "gap": Rule(
        "f_evidence/gap.py",
        ("interval_from_spread", "_decide_in_band"),
        ("tests/unit/test_f_identity_gap.py", "tests/unit/test_rule_mutants.py"),
    ),
    "kselect": Rule(
        "tilegym_checks/kselect.py",
        ("build_k_expressions",),
        ("tests/fuzz/test_checks_fuzz.py", "tests/unit/test_checks_kselect.py"),
    ),
}

#: issue 22's surviving hand mutants: (module, description, old text, new text)
HAND: tuple[tuple[str, str, str, str], ...] = (
    ("regress", "significant = True", "significant = test.p_value < policy.alpha", "significant = True"),
    ("regress", "regression rule without ci[0] > 1", "ratio >= hi_band and ci[0] > 1", "ratio >= hi_band"),
    (
        "regress",
        "'same' rule without ci[1] <= hi_band",
        "lo_band <= ci[0] and ci[1] <= hi_band",
        "lo_band <= ci[0]",
    ),
    (
        "report_e",
        "DONE-with-missing check deleted",
        'if table.verdict == "DONE" and has_missing:',
        "if False:",
    ),
    (
        "scaleout_merge",
        "rc from failed only",
        "rc = 1 if parts.failed or parts.not_run or any(r not in (0, 5) for r in parts.rcs) else 0",
        "rc = 1 if parts.failed else 0",
    ),
    (
        "scaleout_plan",
        "no forced cut at the end",
        "acc * k >= part * total or left_items == left_parts",
        "acc * k >= part * total",
    ),
    (
        "gap",
        "CI 1.96 SE -> 0.5 SE",
        "ratio * math.exp(-1.96 * se), ratio * math.exp(1.96 * se)",
        "ratio * math.exp(-0.5 * se), ratio * math.exp(0.5 * se)",
    ),
    ("diagnosis", "ALIGNED always high", '"high" if capture and gap.ci is not None else "medium"', '"high"'),
    ("diagnosis", "FIXABLE picks the least confident", "best = max(fixable,", "best = min(fixable,"),
    (
        "kselect",
        "build_k_expressions always raises InputError",
        "    cand, base = id_token(candidate_token), id_token(baseline_token)\n    if cand == base:",
        "    raise InputError('mutant')\n    cand, base = id_token(candidate_token), id_token(baseline_token)\n"
        "    if cand == base:",
    ),
)

_CMP_SWAP: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}
_BIN_SWAP: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}


@dataclass
class Mutant:
    module: str
    function: str
    line: int
    operator: str
    outcome: str = ""
    seconds: float = 0.0


def _sites(fn: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    for node in ast.walk(fn):
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _CMP_SWAP:
                    yield node, f"cmp{i}:{type(op).__name__}->{_CMP_SWAP[type(op)].__name__}"
        elif isinstance(node, ast.BoolOp):
            yield node, f"boolop:{type(node.op).__name__}->{'Or' if isinstance(node.op, ast.And) else 'And'}"
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, "not:dropped"
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            yield node, f"const:{node.value}->{not node.value}"
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, (int, float))
            and node.value not in (0, 1)
        ):
            yield (
                node,
                f"const:{node.value}->"
                + (f"{node.value + 1}" if isinstance(node.value, int) else f"{node.value * 0.5:g}"),
            )
        elif isinstance(node, ast.BinOp) and type(node.op) in _BIN_SWAP:
            yield node, f"binop:{type(node.op).__name__}->{_BIN_SWAP[type(node.op)].__name__}"


def _apply(node: ast.AST, operator: str) -> None:
    kind = operator.partition(":")[0]
    if kind.startswith("cmp"):
        assert isinstance(node, ast.Compare)
        i = int(kind[3:])
        node.ops[i] = _CMP_SWAP[type(node.ops[i])]()
    elif kind == "boolop":
        assert isinstance(node, ast.BoolOp)
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif kind == "binop":
        assert isinstance(node, ast.BinOp)
        node.op = _BIN_SWAP[type(node.op)]()
    elif kind == "const":
        assert isinstance(node, ast.Constant)
        node.value = (
            (not node.value)
            if isinstance(node.value, bool)
            else (node.value + 1 if isinstance(node.value, int) else node.value * 0.5)
        )


def _replace_not(tree: ast.Module, target: ast.UnaryOp) -> None:
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, name, target.operand)
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if item is target:
                        value[i] = target.operand


def generate(module: str, cap: int, *, hand_only: bool = False) -> Iterator[tuple[Mutant, str]]:
    """(mutant, mutated source) for every operator site of the module's rule functions (≤ cap each)."""
    rule = RULES[module]
    source = (ROOT / "workbench" / rule.path).read_text()
    tree = ast.parse(source)
    for fname in () if hand_only else rule.functions:
        fns = [
            n
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == fname
        ]
        if not fns:
            raise SystemExit(f"{rule.path}: no function {fname} (update RULES)")
        for k, (site, operator) in enumerate(_sites(fns[0])):
            if k >= cap:
                break
            mutated = copy.deepcopy(tree)
            # find the same site in the copy by walk order
            twin_fn = next(
                n
                for n in ast.walk(mutated)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == fname
            )
            twin = next(s for i, (s, op) in enumerate(_sites(twin_fn)) if i == k)
            if operator == "not:dropped":
                assert isinstance(twin, ast.UnaryOp)
                _replace_not(mutated, twin)
            else:
                _apply(twin, operator)
            yield Mutant(module, fname, getattr(site, "lineno", 0), operator), ast.unparse(mutated)
    for mod, desc, old, new in HAND:
        if mod == module:
            if source.count(old) != 1:
                raise SystemExit(
                    f"{rule.path}: hand mutant {desc!r}: text not found exactly once (update HAND)"
                )
            line = source[: source.index(old)].count("\n") + 1
            yield Mutant(module, "hand", line, desc), source.replace(old, new)


def run_one(
    mutant: Mutant, mutated: str, overlay: Path, timeout: float, exclude: tuple[str, ...] = ()
) -> None:
    rule = RULES[mutant.module]
    tests = [t for t in rule.tests if t not in exclude]
    target = overlay / "workbench" / rule.path
    original = (ROOT / "workbench" / rule.path).read_text()
    target.write_text(mutated)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(overlay), str(ROOT / "tests")]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-P", "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        mutant.outcome = "survived" if proc.returncode == 0 else "killed"
        if proc.returncode not in (0, 1):  # 2+: collection/usage error: the mutant broke the import
            mutant.outcome = "killed"
    except subprocess.TimeoutExpired:
        mutant.outcome = "timeout"
    finally:
        target.write_text(original)
    mutant.seconds = round(time.monotonic() - t0, 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modules", default=",".join(RULES))
    ap.add_argument("--max-per-function", type=int, default=12)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument(
        "--exclude-test",
        action="append",
        default=[],
        help="leave this test file out (e.g. to see which mutants survived before it)",
    )
    ap.add_argument("--hand-only", action="store_true", help="only issue 22's hand mutants (HAND)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "mutation_test.json")
    args = ap.parse_args()
    modules = [m for m in args.modules.split(",") if m]
    unknown = [m for m in modules if m not in RULES]
    if unknown:
        print(f"unknown module(s): {', '.join(unknown)}; known: {', '.join(RULES)}", file=sys.stderr)
        return 2
    started = time.time()
    results: list[Mutant] = []
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        overlay = Path(tmp)
        shutil.copytree(
            ROOT / "workbench", overlay / "workbench", ignore=shutil.ignore_patterns("__pycache__")
        )
        exclude = tuple(args.exclude_test)
        for module in modules:
            # the unmutated overlay must pass, or every "killed" below would mean nothing
            baseline = Mutant(module, "baseline", 0, "none")
            run_one(
                baseline,
                (ROOT / "workbench" / RULES[module].path).read_text(),
                overlay,
                args.timeout,
                exclude,
            )
            if baseline.outcome != "survived":
                print(
                    f"{module}: the unmutated tests do not pass ({baseline.outcome}); fix that first",
                    file=sys.stderr,
                )
                return 1
            for mutant, mutated in generate(module, args.max_per_function, hand_only=args.hand_only):
                run_one(mutant, mutated, overlay, args.timeout, exclude)
                results.append(mutant)
                print(
                    f"{mutant.outcome:8} {mutant.seconds:6.1f}s {module}:{mutant.function}:{mutant.line} "
                    f"{mutant.operator}",
                    flush=True,
                )
    summary = {}
    for module in modules:
        mine = [m for m in results if m.module == module]
        summary[module] = {
            k: sum(1 for m in mine if m.outcome == k) for k in ("killed", "timeout", "survived")
        }
        summary[module]["total"] = len(mine)
        print(f"{module}: {summary[module]}")
    total = {k: sum(s[k] for s in summary.values()) for k in ("killed", "timeout", "survived", "total")}
    print(f"TOTAL: {total} in {time.time() - started:.0f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
                "wall_s": round(time.time() - started, 1),
                "max_per_function": args.max_per_function,
                "hand_only": args.hand_only,
                "modules": modules,
                "excluded_tests": list(args.exclude_test),
                "python": sys.version.split()[0],
                "summary": summary,
                "total": total,
                "mutants": [asdict(m) for m in results],
            },
            indent=1,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
