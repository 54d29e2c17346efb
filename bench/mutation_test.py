"""Mutation test of the deciding modules: which single-operator mutants does the suite miss?

Usage (from the repository root; CPU only)::

    python bench/mutation_test.py [--modules stats,paths,...] [--max-per-function N]
        [--sample N --seed S] [--check-survivors bench/mutation_survivors.json]
        [--write-survivors FILE] [--out bench/results/mutation_test.json]

What it does:
- For each deciding module (``RULES``: the functions that decide verdicts, severities, identity,
  noise, clocks, compat, confinement, the perf-log parser/sanitizer, shards and merges) it makes one
  mutant per site of these operators, in the named functions and in the module's UPPER_CASE
  constants: comparison flip (``<``↔``<=``, ``>``↔``>=``, ``==``↔``!=``, ``in``↔``not in``,
  ``is``↔``is not``), ``and``↔``or``, one operand of an ``and``/``or`` dropped, ``not x`` → ``x``, a
  boolean constant negated, a numeric constant changed (int ``c`` → ``c + 1``; float ``c`` → ``c *
  1.01``, so a 1.05 threshold becomes 1.0605, near its edge), ``+``↔``-``, ``*``↔``/``, ``any``↔``all``,
  one member dropped from a set/tuple/list literal that is tested against (``x in {…}``,
  ``frozenset({…})``, a constant), ``re.fullmatch``→``match``, ``match``→``search``,
  ``s.startswith(p)``/``s.endswith(p)`` → ``p in s``. Plus the hand mutants of issue 22 (``HAND``).
- A mutant is a copy of ``cutile_workbench/`` with the one mutated file (``ast.unparse``), first on
  ``PYTHONPATH``; the module's tests (``RULES[...].tests``) run with ``python -P -m pytest -x -q``, so
  the working tree is never modified. ``killed``: pytest failed; ``survived``: it passed;
  ``timeout``: no answer within ``--timeout`` (counted apart). The unmutated copy must pass first.
- A mutant's ``key`` is ``module|function|operator|source of the mutated node`` (no line number, so
  it survives unrelated edits). ``--check-survivors`` fails (exit 1) when a survivor's key is not in
  the committed list (that list may only shrink) and names listed keys that were killed (remove them).
- ``--keys FILE``: only the mutants whose key is a line of FILE (or in its ``"survivors"`` list when it
  is JSON): re-run a run's survivors after adding killers.
- ``--sample N --seed S``: a seeded sample of N mutants of all the selected modules (CI runs one); a
  mutant is picked by the hash of the seed and its own key, so unrelated edits keep the sample.
- Output: one JSON document (per mutant: module, function, line, operator, key, outcome, seconds)
  and a summary line per module on stdout.
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = "cutile_workbench"


@dataclass(frozen=True)
class Rule:
    path: str  # under cutile_workbench/
    functions: tuple[str, ...]
    tests: tuple[str, ...]
    constants: bool = True  # mutate the module's UPPER_CASE constants too


_U = "tests/unit/"
RULES: dict[str, Rule] = {
    "stats": Rule(
        "stages/e/stats.py",
        ("severity_for", "geomean", "_ordinary", "_bootstrap", "build_ratio_table"),
        (
            _U + "test_stats.py",
            _U + "test_edges_finite.py",
            _U + "test_edges_rules.py",
            _U + "test_rule_mutants.py",
        ),
    ),
    "regress": Rule(
        "history/regress.py",
        ("compare_results", "min_attainable_p", "mann_whitney_u"),
        (_U + "test_history_regress.py", _U + "test_rule_mutants.py"),
    ),
    "diagnosis": Rule(
        "stages/f/diagnosis.py",
        ("classify_pattern", "_verdict"),
        (
            _U + "test_diagnosis.py",
            _U + "test_f_rules.py",
            _U + "test_edges_rules.py",
            _U + "test_rule_mutants.py",
        ),
    ),
    "report_e": Rule(
        "stages/e/report.py",
        ("plan_e_report",),
        (_U + "test_report_e.py", _U + "test_rule_mutants.py"),
        False,
    ),
    "scaleout_plan": Rule(
        "run/scaleout/plan.py",
        ("balanced_cuts",),
        (_U + "test_scaleout_plan.py", _U + "test_rule_mutants.py"),
    ),
    "scaleout_merge": Rule("run/scaleout/merge.py", ("merge_plan",), (_U + "test_rule_mutants.py",), False),
    "selfcheck": Rule(
        "run/capture/selfcheck.py",
        ("judge", "check_count"),
        (_U + "test_capture_clock_selfcheck.py", _U + "test_rule_mutants.py"),
    ),
    "gap": Rule(
        "evidence/gap.py",
        ("interval_from_spread", "noise_band", "_decide_in_band"),
        (
            _U + "test_f_identity_gap.py",
            _U + "test_noise_floor.py",
            _U + "test_edges_rules.py",
            _U + "test_rule_mutants.py",
        ),
    ),
    "kselect": Rule(
        "checks/kselect.py",
        ("build_k_expressions",),
        ("tests/fuzz/test_checks_fuzz.py", _U + "test_checks_kselect.py"),
        False,
    ),
    "paths": Rule("infra/paths.py", ("under", "is_inside"), (_U + "test_edges_confinement.py",)),
    "confine": Rule(
        "artifacts/confine.py",
        ("check_kernel_name", "confine_read", "confine_write"),
        (_U + "test_edges_confinement.py",),
    ),
    "identity": Rule(
        "evidence/candidate_identity.py",
        ("symbol_family", "identify", "summary_line"),
        (_U + "test_edges_identity.py", _U + "test_trust_identity.py"),
        False,
    ),
    "noise": Rule(
        "history/noise.py",
        ("side_spread", "row_noise"),
        (_U + "test_noise_floor.py", _U + "test_edges_rules.py"),
    ),
    "compat": Rule(
        "history/compat.py",
        ("compare_provenance", "_compare_clocks", "_compare_harness"),
        (_U + "test_history_compat.py", _U + "test_edges_compat.py"),
    ),
    "clocks": Rule(
        "clock_exposure.py",
        ("compare_exposures",),
        (_U + "test_clock_exposure.py", _U + "test_edges_compat.py"),
    ),
    "parser": Rule(
        "artifacts/perflog/parser.py",
        ("in_physical_range", "_outcome", "_phase_stats"),
        (_U + "test_perflog_parser.py", _U + "test_edges_finite.py", _U + "test_edges_rules.py"),
    ),
    "sanitizer": Rule(
        "artifacts/perflog/sanitizer.py",
        ("sanitize", "judge"),
        (_U + "test_perflog_sanitizer.py", _U + "test_edges_sanitizer.py"),
        False,
    ),
}

#: issue 22's hand mutants: (module, description, old text, new text)
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
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BIN_SWAP: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
_CALL_SWAP = {"fullmatch": "match", "match": "search"}


@dataclass
class Mutant:
    module: str
    function: str
    line: int
    operator: str
    key: str = ""
    outcome: str = ""
    seconds: float = 0.0


def _new_const(v: int | float) -> int | float:
    return v + 1 if isinstance(v, int) else v * 1.01


def _is_member_set(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """A literal collection tested against: ``x in {..}``, ``frozenset({..})``/``set(..)``, a constant."""
    if not isinstance(node, ast.Set | ast.Tuple | ast.List) or len(node.elts) < 2:
        return False
    if isinstance(node, ast.Tuple | ast.List) and not all(isinstance(e, ast.Constant) for e in node.elts):
        return False
    parent = parents.get(id(node))
    if isinstance(parent, ast.Compare):
        return node in parent.comparators and any(isinstance(o, ast.In | ast.NotIn) for o in parent.ops)
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name):
        return parent.func.id in ("frozenset", "set")
    if isinstance(parent, ast.Assign):  # NAMES = (..): a constant, not an unpacking ``a, b = None, None``
        return len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name)
    return isinstance(node, ast.Set) or isinstance(parent, ast.AnnAssign)


def _node_sites(node: ast.AST, parents: dict[int, ast.AST]) -> Iterator[str]:
    """The operators that apply at ``node`` (one mutant each)."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _CMP_SWAP:
                yield f"cmp{i}:{type(op).__name__}->{_CMP_SWAP[type(op)].__name__}"
    elif isinstance(node, ast.BoolOp):
        yield f"boolop:{type(node.op).__name__}->{'Or' if isinstance(node.op, ast.And) else 'And'}"
        for i in range(len(node.values)):
            yield f"drop_operand:{i}"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "not:dropped"
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        yield f"const:{node.value}->{not node.value}"
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value not in (0, 1):
        yield f"const:{node.value!r}->{_new_const(node.value)!r}"
    elif isinstance(node, ast.BinOp) and type(node.op) in _BIN_SWAP:
        yield f"binop:{type(node.op).__name__}->{_BIN_SWAP[type(node.op)].__name__}"
    elif isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("any", "all"):
            yield f"call:{f.id}->{'all' if f.id == 'any' else 'any'}"
        elif isinstance(f, ast.Attribute) and f.attr in _CALL_SWAP:
            yield f"call:{f.attr}->{_CALL_SWAP[f.attr]}"
        elif isinstance(f, ast.Attribute) and f.attr in ("startswith", "endswith") and len(node.args) == 1:
            yield f"call:{f.attr}->in"
    if _is_member_set(node, parents):
        assert isinstance(node, ast.Set | ast.Tuple | ast.List)
        for i in range(len(node.elts)):
            yield f"drop_member:{i}"


def _replace(tree: ast.AST, target: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is target:
                setattr(parent, name, new)
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if item is target:
                        value[i] = new


def apply(tree: ast.AST, node: ast.AST, operator: str) -> None:
    """Apply ``operator`` at ``node`` of ``tree`` in place."""
    kind, _, arg = operator.partition(":")
    if kind.startswith("cmp"):
        assert isinstance(node, ast.Compare)
        i = int(kind[3:])
        node.ops[i] = _CMP_SWAP[type(node.ops[i])]()
    elif kind == "boolop":
        assert isinstance(node, ast.BoolOp)
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif kind == "drop_operand":
        assert isinstance(node, ast.BoolOp)
        del node.values[int(arg)]
        if len(node.values) == 1:
            _replace(tree, node, node.values[0])
    elif kind == "not":
        assert isinstance(node, ast.UnaryOp)
        _replace(tree, node, node.operand)
    elif kind == "binop":
        assert isinstance(node, ast.BinOp)
        node.op = _BIN_SWAP[type(node.op)]()
    elif kind == "const":
        assert isinstance(node, ast.Constant)
        node.value = (not node.value) if isinstance(node.value, bool) else _new_const(node.value)
    elif kind == "call":
        assert isinstance(node, ast.Call)
        _old, _, new = arg.partition("->")
        if isinstance(node.func, ast.Name):
            node.func.id = new
        elif new == "in":
            assert isinstance(node.func, ast.Attribute)
            _replace(
                tree, node, ast.Compare(left=node.args[0], ops=[ast.In()], comparators=[node.func.value])
            )
        else:
            assert isinstance(node.func, ast.Attribute)
            node.func.attr = new
    elif kind == "drop_member":
        assert isinstance(node, ast.Set | ast.Tuple | ast.List)
        del node.elts[int(arg)]
    else:  # pragma: no cover - a new operator without its apply
        raise ValueError(operator)


def _scopes(tree: ast.Module, rule: Rule) -> list[tuple[str, ast.AST]]:
    """(name, node) of each named function and, with ``rule.constants``, each UPPER_CASE constant."""
    out: list[tuple[str, ast.AST]] = []
    for fname in rule.functions:
        fns = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == fname
        ]
        if not fns:
            raise SystemExit(f"{rule.path}: no function {fname} (update RULES)")
        out.append((fname, fns[0]))
    if rule.constants:
        for stmt in tree.body:
            targets = (
                stmt.targets
                if isinstance(stmt, ast.Assign)
                else [stmt.target]
                if isinstance(stmt, ast.AnnAssign)
                else []
            )
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            value = getattr(stmt, "value", None)
            # a threshold (a number or bool) or a membership set; not a table of caps or a regex
            rule_like = isinstance(value, ast.Constant) and type(value.value) in (int, float, bool)
            rule_like = (
                rule_like
                or isinstance(value, ast.Set | ast.Tuple)
                or (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    and value.func.id in ("frozenset", "set")
                )
            )
            if names and names[0].isupper() and rule_like:
                out.append((names[0], stmt))
    return out


def sites(source: str, rule: Rule) -> list[tuple[str, int, str, str]]:
    """(scope, node index in ``ast.walk`` of the module, operator, key source) of every mutant site."""
    tree = ast.parse(source)
    index = {id(n): i for i, n in enumerate(ast.walk(tree))}
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    found: list[tuple[str, int, str, str]] = []
    seen: set[int] = set()
    count: dict[tuple[str, str, str], int] = {}
    for scope, root in _scopes(tree, rule):
        for node in ast.walk(root):
            if id(node) in seen:
                continue
            seen.add(id(node))
            for operator in _node_sites(node, parents):
                text = (ast.get_source_segment(source, node) or ast.unparse(node)).replace("\n", " ")
                text = " ".join(text.split())[:160]
                n = count[(scope, operator, text)] = count.get((scope, operator, text), 0) + 1
                # the same text twice in one scope: its n-th occurrence (still no line number)
                found.append((scope, index[id(node)], operator, text if n == 1 else f"{text} #{n}"))
    return found


def keys(module: str, source: str | None = None) -> list[str]:
    """The keys of every mutant :func:`generate` makes for ``module`` (none is built)."""
    rule = RULES[module]
    source = source if source is not None else (ROOT / PKG / rule.path).read_text()
    out = [f"{module}|{scope}|{op}|{text}" for scope, _, op, text in sites(source, rule)]
    return out + [f"{module}|hand|{desc}|" for mod, desc, _, _ in HAND if mod == module]


def generate(
    module: str, cap: int | None = None, *, hand_only: bool = False, source: str | None = None
) -> Iterator[tuple[Mutant, str]]:
    """(mutant, mutated source) for every site of the module's rules (at most ``cap`` per scope)."""
    rule = RULES[module]
    source = source if source is not None else (ROOT / PKG / rule.path).read_text()
    tree = ast.parse(source)
    per_scope: dict[str, int] = {}
    for scope, idx, operator, text in () if hand_only else sites(source, rule):
        per_scope[scope] = per_scope.get(scope, 0) + 1
        if cap is not None and per_scope[scope] > cap:
            continue
        mutated = copy.deepcopy(tree)
        node = list(ast.walk(mutated))[idx]
        line = getattr(node, "lineno", 0)
        apply(mutated, node, operator)
        key = f"{module}|{scope}|{operator}|{text}"
        yield Mutant(module, scope, line, operator, key), ast.unparse(mutated)
    for mod, desc, old, new in HAND:
        if mod == module:
            if source.count(old) != 1:
                raise SystemExit(
                    f"{rule.path}: hand mutant {desc!r}: text not found exactly once (update HAND)"
                )
            line = source[: source.index(old)].count("\n") + 1
            yield Mutant(module, "hand", line, desc, f"{module}|hand|{desc}|"), source.replace(old, new)


def run_one(
    mutant: Mutant, mutated: str, overlay: Path, timeout: float, exclude: tuple[str, ...] = ()
) -> None:
    rule = RULES[mutant.module]
    tests = [t for t in rule.tests if t not in exclude]
    target = overlay / PKG / rule.path
    original = (ROOT / PKG / rule.path).read_text()
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
    except subprocess.TimeoutExpired:
        mutant.outcome = "timeout"
    finally:
        target.write_text(original)
    mutant.seconds = round(time.monotonic() - t0, 1)


def sample(todo: list[tuple[Mutant, str]], n: int, seed: int) -> list[tuple[Mutant, str]]:
    """The ``n`` mutants whose ``sha256(seed|key)`` is smallest: a seeded sample in which a mutant's
    being picked depends on its own key only, so editing one module leaves the others' picks alone."""
    rank = sorted(todo, key=lambda t: hashlib.sha256(f"{seed}|{t[0].key}".encode()).hexdigest())
    return sorted(rank[:n], key=lambda t: (t[0].module, t[0].line))


def check_survivors(results: list[Mutant], listed: set[str]) -> tuple[list[str], list[str]]:
    """(new survivors: not in the list, listed keys that this run killed). The list may only shrink."""
    new = sorted(m.key for m in results if m.outcome == "survived" and m.key not in listed)
    gone = sorted(m.key for m in results if m.outcome in ("killed", "timeout") and m.key in listed)
    return new, gone


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--modules", default=",".join(RULES))
    ap.add_argument("--max-per-function", type=int, default=None)
    ap.add_argument("--sample", type=int, default=None, help="a seeded sample of N mutants of all modules")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--jobs", type=int, default=1, help="mutants run at once (one overlay copy each)")
    ap.add_argument("--exclude-test", action="append", default=[], help="leave this test file out")
    ap.add_argument("--hand-only", action="store_true", help="only issue 22's hand mutants (HAND)")
    ap.add_argument("--list", action="store_true", help="list the mutants (keys) and run nothing")
    ap.add_argument("--keys", type=Path, default=None, help="only these keys (lines, or a survivors JSON)")
    ap.add_argument("--check-survivors", type=Path, default=None)
    ap.add_argument("--write-survivors", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "mutation_test.json")
    args = ap.parse_args(argv)
    modules = [m for m in args.modules.split(",") if m]
    unknown = [m for m in modules if m not in RULES]
    if unknown:
        print(f"unknown module(s): {', '.join(unknown)}; known: {', '.join(RULES)}", file=sys.stderr)
        return 2
    todo = [mm for m in modules for mm in generate(m, args.max_per_function, hand_only=args.hand_only)]
    if args.keys is not None:
        text = args.keys.read_text()
        wanted = (
            set(json.loads(text)["survivors"]) if text.lstrip().startswith("{") else set(text.splitlines())
        )
        todo = [t for t in todo if t[0].key in wanted]
    if args.sample is not None:
        todo = sample(todo, args.sample, args.seed)
    if args.list:
        for m, _ in todo:
            print(m.key)
        print(f"{len(todo)} mutants", file=sys.stderr)
        return 0
    started = time.time()
    results: list[Mutant] = []
    exclude = tuple(args.exclude_test)
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        overlays: queue.Queue[Path] = queue.Queue()
        for j in range(max(1, args.jobs)):  # one overlay copy per worker: a mutant never sees another
            shutil.copytree(
                ROOT / PKG, Path(tmp) / str(j) / PKG, ignore=shutil.ignore_patterns("__pycache__")
            )
            overlays.put(Path(tmp) / str(j))

        def one(mutant: Mutant, mutated: str) -> Mutant:
            overlay = overlays.get()
            try:
                run_one(mutant, mutated, overlay, args.timeout, exclude)
            finally:
                overlays.put(overlay)
            return mutant

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            # the unmutated overlay must pass, or every "killed" below would mean nothing
            base = [
                Mutant(module, "baseline", 0, "none", f"{module}|baseline")
                for module in sorted({m.module for m, _ in todo})
            ]
            for b in pool.map(lambda m: one(m, (ROOT / PKG / RULES[m.module].path).read_text()), base):
                if b.outcome != "survived":
                    print(
                        f"{b.module}: the unmutated tests do not pass ({b.outcome}); fix that first",
                        file=sys.stderr,
                    )
                    return 1
            for mutant in pool.map(lambda t: one(*t), todo):
                results.append(mutant)
                print(f"{mutant.outcome:8} {mutant.seconds:6.1f}s {mutant.key}", flush=True)
    summary: dict[str, dict[str, int]] = {}
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
                "sample": args.sample,
                "seed": args.seed,
                "hand_only": args.hand_only,
                "keys": str(args.keys) if args.keys is not None else None,
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
    if args.write_survivors is not None:
        keys = sorted(m.key for m in results if m.outcome == "survived")
        args.write_survivors.write_text(json.dumps({"survivors": keys}, indent=1) + "\n")
    if args.check_survivors is not None:
        listed = set(json.loads(args.check_survivors.read_text())["survivors"])
        new, gone = check_survivors(results, listed)
        for key in gone:
            print(f"killed now, remove from {args.check_survivors}: {key}")
        for key in new:
            print(f"NEW SURVIVOR (not in {args.check_survivors}): {key}", file=sys.stderr)
        if new:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
