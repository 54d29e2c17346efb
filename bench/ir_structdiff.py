"""Benchmark of the structural Tile IR diff: build time and changed-row counts, before/after.

Run: ``.venv/bin/python bench/ir_structdiff.py [--repeat N] [--out FILE.json]``.

Per case it measures, side by side in one process:
- ``struct``: :func:`cutile_workbench.ir.structdiff.structural_diff` (parse both sides into op graphs,
  match, render the rows, rank the hunks) — what ``diff``, the service and the IR screen build;
- ``canon+lines``: the engine before it (canonicalize both sides + :func:`diff_lines`);
- ``plain difflib``: ``SequenceMatcher(autojunk=False)`` over the raw lines (in a child process,
  killed at ``--plain-budget`` seconds);
- wall seconds (best of ``--repeat``) and, for ``struct`` and ``plain difflib``, process CPU seconds
  (best of ``--repeat``; the child's own for difflib): on a loaded shared box the wall time also
  counts other processes' turns on the cores, so both are kept, with the 1-minute load average;
and the changed rows each engine reports: ``before`` (canonical line diff: replace+insert+delete
rows), ``after`` (structural: changed rows, and those outside cosmetic hunks).
Cases: the recorded real pairs (cutile_workbench/profiles/*/session; the rms_norm/softmax "generated" sides are
cuTile stand-ins, labelled), alpha-equivalent copies of every real file (synthetic: every SSA value
renamed, the operand-free ops of the entry body moved; target 0 changed rows), and 10k-line pairs
(synthetic, from ``bench/ir_diff.py``, and one with every op in one region: target ≤ 0.3 s). ``--out`` writes every number as JSON.
``--before REV`` also times ``structural_diff`` as committed at git REV in the same run (and says on
stderr where its rows differ from today's).
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing as mp
import os
import platform
import re
import sys
import time
from collections.abc import Callable
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ir_diff import best_of, edit, make_ir

from cutile_workbench.ir.canon import canonicalize
from cutile_workbench.ir.diffmodel import diff_lines
from cutile_workbench.ir.structdiff import structural_diff

ROOT = Path(__file__).resolve().parents[1]
MATMUL = ROOT / "cutile_workbench/profiles/tilegym/session/matmul"
SILU = ROOT / "cutile_workbench/profiles/tilegym/session/silu_and_mul"


def alpha_copy(text: str) -> str:
    """Synthetic: the same program, every SSA value renamed, the operand-free ops (``constant``,
    ``make_token``) of the entry body moved, in reverse order, to the top of that body."""
    names: dict[str, str] = {}
    lines = text.split("\n")
    entry = next(i for i, ln in enumerate(lines) if "entry @" in ln)
    indent = len(lines[entry + 1]) - len(lines[entry + 1].lstrip())
    moved_idx = [
        i
        for i, ln in enumerate(lines)
        if i > entry
        and re.match(r"^\s*%\S+ = (constant|make_token)\b", ln)
        and len(ln) - len(ln.lstrip()) == indent
    ]
    moved = [lines[i] for i in reversed(moved_idx)]
    keep = set(moved_idx)
    rest = [ln for i, ln in enumerate(lines) if i not in keep]
    k = next(i for i, ln in enumerate(rest) if "entry @" in ln) + 1
    out = "\n".join(rest[:k] + moved + rest[k:])
    return re.sub(r"%[A-Za-z0-9_$.]+", lambda m: names.setdefault(m.group(0), f"%n{len(names)}_x"), out)


def real_pairs() -> list[tuple[str, str, str]]:
    out = [
        (
            "real matmul static_persistent (cuTile vs cutile-rs)",
            (MATMUL / "reference/reference_static_persistent.mlir").read_text(),
            (MATMUL / "generated/generated_static_persistent.mlir").read_text(),
        ),
        (
            "real matmul non_persistent (cuTile vs cutile-rs)",
            (MATMUL / "reference/reference_non_persistent.mlir").read_text(),
            (MATMUL / "generated/generated_non_persistent.mlir").read_text(),
        ),
    ]
    for kdir, label in ((MATMUL, "matmul"), (SILU, "silu_and_mul")):
        index = json.loads((kdir / "workbench/ir/index.json").read_text())["configs"]
        for params, sides in sorted(index.items()):
            if "reference" in sides and "candidate" in sides:
                out.append(
                    (
                        f"real {label} config {params[:28]}… (cuTile vs cutile-rs)",
                        (kdir / sides["reference"]["file"]).read_text(),
                        (kdir / sides["candidate"]["file"]).read_text(),
                    )
                )
    for name in ("rms_norm", "rms_norm_hotpath"):
        d = ROOT / "cutile_workbench/profiles/rms_norm/session" / name
        out.append(
            (
                f"real {name} (stand-in: cuTile vs cuTile)",
                (d / "reference/reference.mlir").read_text(),
                (d / "generated/generated_canon.mlir").read_text(),
            )
        )
    d = ROOT / "cutile_workbench/profiles/softmax/session/softmax"
    out.append(
        (
            "real softmax (stand-in: cuTile row vs persistent)",
            (d / "reference/reference.mlir").read_text(),
            (d / "generated/generated_canon.mlir").read_text(),
        )
    )
    return out


def flat_ir(n_lines: int, tm: int, tn: int) -> str:
    """Synthetic: :func:`make_ir`'s ops with the loops removed, all in the entry body (one region of
    ~8k ops: the case where matching that scans candidates turns quadratic)."""
    keep = [
        ln
        for ln in make_ir(n_lines, tm, tn).split("\n")
        if not ln.strip().startswith(("for ", "}")) and ln.strip() not in ("return", "")
    ]
    return "\n".join([*keep, "  return", "}"]) + "\n"


def cases() -> list[tuple[str, str, str, str]]:
    """(group, name, reference text, generated text)."""
    out = [("real", n, a, b) for n, a, b in real_pairs()]
    seen: set[str] = set()
    for n, a, b in real_pairs()[:2] + real_pairs()[-3:]:
        for side, t in (("reference", a), ("generated", b)):
            if t not in seen:
                seen.add(t)
                out.append(("equal", f"alpha copy of {n.split(' (')[0]} {side}", t, alpha_copy(t)))
    base = make_ir(10_000, 16, 1024)
    out += [
        ("10k", "10k realistic, 1% edits", base, edit(base, 0.01, 1)),
        ("10k", "10k realistic, tile 16x1024 vs 4x8192", base, make_ir(10_000, 4, 8192)),
        ("10k", "10k identical", base, base),
        ("10k", "10k realistic, 10% edits", base, edit(base, 0.10, 2)),
        ("equal", "10k alpha copy", base, alpha_copy(base)),
        (
            "10k",
            "10k flat (one region of ~8k ops), tile 16x1024 vs 4x8192",
            flat_ir(10_000, 16, 1024),
            flat_ir(10_000, 4, 8192),
        ),
    ]
    return out


def best_cpu_of(fn: Callable[[], object], repeat: int) -> float:
    """Least process CPU seconds of ``repeat`` calls: on a loaded shared box the wall time also
    counts the time other processes held the cores; CPU time does not (the two are reported)."""
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def _plain(a: list[str], b: list[str], q: mp.Queue) -> None:
    w, c = time.perf_counter(), time.process_time()
    SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    q.put((time.perf_counter() - w, time.process_time() - c))


def plain_difflib(a: list[str], b: list[str], budget_s: float) -> tuple[float, float] | None:
    """(wall, CPU) seconds of plain difflib in a child process; None when it exceeded ``budget_s``."""
    q: mp.Queue = mp.Queue()
    p = mp.Process(target=_plain, args=(a, b, q))
    p.start()
    p.join(budget_s)
    if p.is_alive():
        p.kill()
        p.join()
        return None
    wall, cpu = q.get()
    return float(wall), float(cpu)


def load_before(rev: str) -> Callable[[str, str], Any]:
    """``structural_diff`` as committed at git ``rev`` (its ``cutile_workbench/ir/graph.py``,
    ``structmatch.py`` and ``structrender.py`` where present, and ``structdiff.py``, loaded under
    private module names beside today's), so before and after are
    timed in one process, case by case, on the same inputs."""
    import importlib.util
    import subprocess
    import types

    def source(path: str) -> str:
        return subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:{path}"], check=True, capture_output=True, text=True
        ).stdout

    def exists(path: str) -> bool:
        return (
            subprocess.run(
                ["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}:{path}"], capture_output=True
            ).returncode
            == 0
        )

    mods: dict[str, types.ModuleType] = {}
    # in import order; structmatch/structrender exist from issue 30's split on (absent at older revs)
    for short in ("graph", "structmatch", "structrender", "structdiff"):
        path = f"cutile_workbench/ir/{short}.py"
        if short in ("structmatch", "structrender") and not exists(path):
            continue
        name = f"_before_{rev[:12]}_{short}"
        text = source(path)
        for dep, mod_ in mods.items():
            text = text.replace(f"from cutile_workbench.ir.{dep} import", f"from {mod_.__name__} import")
        spec = importlib.util.spec_from_loader(name, loader=None)
        assert spec is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        exec(compile(text, f"{rev[:12]}:{path}", "exec"), mod.__dict__)
        mods[short] = mod
    fn: Callable[[str, str], Any] = mods["structdiff"].structural_diff
    return fn


def _canon_lines(a: str, b: str) -> object:
    return diff_lines(canonicalize(a).lines, canonicalize(b).lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--plain-budget", type=float, default=5.0, help="seconds allowed for plain difflib")
    ap.add_argument("--out", type=Path, default=None, help="write the raw numbers here (JSON)")
    ap.add_argument(
        "--before",
        default=None,
        metavar="REV",
        help="also time structural_diff as committed at git REV (same run, same inputs)",
    )
    args = ap.parse_args()
    before_fn = load_before(args.before) if args.before else None
    rows: list[dict[str, Any]] = []
    print(
        f"{'case':<62} {'lines':>11} {'struct (s)':>10} {'struct cpu':>10} {'canon+lines (s)':>15} "
        f"{'plain difflib (s)':>17} {'difflib cpu':>11} "
        f"{'changed before':>14} {'after (non-cosmetic)':>20} {'verdict':>16} {'load':>5}"
    )
    for group, name, a, b in cases():
        al, bl = a.split("\n"), b.split("\n")
        d = structural_diff(a, b)
        before = diff_lines(canonicalize(a).lines, canonicalize(b).lines).stats()
        t_struct = best_of(functools.partial(structural_diff, a, b), args.repeat)
        c_struct = best_cpu_of(functools.partial(structural_diff, a, b), args.repeat)
        t_canon = best_of(functools.partial(_canon_lines, a, b), args.repeat)
        t_prev = c_prev = None
        if before_fn is not None:
            t_prev = best_of(functools.partial(before_fn, a, b), args.repeat)
            c_prev = best_cpu_of(functools.partial(before_fn, a, b), args.repeat)
            prev = before_fn(a, b)
            if [(r.kind, r.left, r.right) for r in prev.rows] != [(r.kind, r.left, r.right) for r in d.rows]:
                print(f"  note: {name}: rows differ from {args.before}'s", file=sys.stderr)
        both = plain_difflib(al, bl, args.plain_budget) if group != "real" else None
        plain, plain_cpu = both if both is not None else (None, None)
        load = os.getloadavg()[0]
        after = d.changed_rows
        after_nc = sum(
            1 for r in d.rows if r.kind != "equal" and r.category is not None and not r.category.cosmetic
        )
        changed_before = before["replace"] + before["insert"] + before["delete"]
        plain_s = (
            "—"
            if group == "real"
            else f">{args.plain_budget:.0f} (killed)"
            if plain is None
            else f"{plain:.3f}"
        )
        plain_c = "—" if plain_cpu is None else f"{plain_cpu:.3f}"
        if t_prev is not None:
            print(f"{'  before (' + str(args.before) + ')':<62} {'':>11} {t_prev:>10.3f} {c_prev:>10.3f}")
        print(
            f"{name[:62]:<62} {len(al):>5}/{len(bl):<5} {t_struct:>10.3f} {c_struct:>10.3f} {t_canon:>15.3f} "
            f"{plain_s:>17} {plain_c:>11} {changed_before:>14} {after:>9} ({after_nc:>5}) {d.verdict:>16} {load:>5.1f}"
        )
        rows.append(
            {
                "group": group,
                "case": name,
                "lines": [len(al), len(bl)],
                "struct_s": t_struct,
                "struct_cpu_s": c_struct,
                "load_avg_1min": load,
                "before_rev": args.before,
                "before_struct_s": t_prev,
                "before_struct_cpu_s": c_prev,
                "canon_lines_s": t_canon,
                "plain_difflib_s": plain,
                "plain_difflib_cpu_s": plain_cpu,
                "plain_killed": group != "real" and plain is None,
                "changed_before": changed_before,
                "changed_after": after,
                "changed_after_non_cosmetic": after_nc,
                "hunks": len(d.hunks),
                "cosmetic_hunks": sum(h.cosmetic for h in d.hunks),
                "verdict": d.verdict,
                "first_hunk": d.hunks[0].summary if d.hunks else None,
            }
        )
    print(f"(times: best of {args.repeat}; python {sys.version.split()[0]}; {platform.node()})")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "script": "bench/ir_structdiff.py",
            "repeat": args.repeat,
            "python": sys.version.split()[0],
            "host": platform.node(),
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "rows": rows,
        }
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
