"""Benchmark of the structural Tile IR diff: build time and changed-row counts, before/after.

Run: ``.venv/bin/python bench/ir_structdiff.py [--repeat N] [--out FILE.json]``.

Per case it measures, side by side in one process:
- ``struct``: :func:`workbench.ir.structdiff.structural_diff` (parse both sides into op graphs,
  match, render the rows, rank the hunks) — what ``diff``, the service and the IR screen build;
- ``canon+lines``: the engine before it (canonicalize both sides + :func:`diff_lines`);
- ``plain difflib``: ``SequenceMatcher(autojunk=False)`` over the raw lines (in a child process,
  killed at ``--plain-budget`` seconds);
and the changed rows each engine reports: ``before`` (canonical line diff: replace+insert+delete
rows), ``after`` (structural: changed rows, and those outside cosmetic hunks).
Cases: the recorded real pairs (profiles/*/session; the rms_norm/softmax "generated" sides are
cuTile stand-ins, labelled), alpha-equivalent copies of every real file (synthetic: every SSA value
renamed, the operand-free ops of the entry body moved; target 0 changed rows), and 10k-line pairs
(synthetic, from ``bench/ir_diff.py``: target ≤ 0.3 s). ``--out`` writes every number as JSON.
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ir_diff import best_of, edit, make_ir, plain_difflib

from workbench.ir.canon import canonicalize
from workbench.ir.diffmodel import diff_lines
from workbench.ir.structdiff import structural_diff

ROOT = Path(__file__).resolve().parents[1]
MATMUL = ROOT / "profiles/tilegym/session/matmul"
SILU = ROOT / "profiles/tilegym/session/silu_and_mul"


def alpha_copy(text: str) -> str:
    """Synthetic: the same program, every SSA value renamed, the operand-free ops (``constant``,
    ``make_token``) of the entry body moved, in reverse order, to the top of that body."""
    names: dict[str, str] = {}
    lines = text.split("\n")
    entry = next(i for i, ln in enumerate(lines) if "entry @" in ln)
    indent = len(lines[entry + 1]) - len(lines[entry + 1].lstrip())
    moved_idx = [i for i, ln in enumerate(lines) if i > entry and re.match(r"^\s*%\S+ = (constant|make_token)\b", ln)
                 and len(ln) - len(ln.lstrip()) == indent]
    moved = [lines[i] for i in reversed(moved_idx)]
    keep = set(moved_idx)
    rest = [ln for i, ln in enumerate(lines) if i not in keep]
    k = next(i for i, ln in enumerate(rest) if "entry @" in ln) + 1
    out = "\n".join(rest[:k] + moved + rest[k:])
    return re.sub(r"%[A-Za-z0-9_$.]+", lambda m: names.setdefault(m.group(0), f"%n{len(names)}_x"), out)


def real_pairs() -> list[tuple[str, str, str]]:
    out = [
        ("real matmul static_persistent (cuTile vs cutile-rs)",
         (MATMUL / "reference/reference_static_persistent.mlir").read_text(),
         (MATMUL / "generated/generated_static_persistent.mlir").read_text()),
        ("real matmul non_persistent (cuTile vs cutile-rs)",
         (MATMUL / "reference/reference_non_persistent.mlir").read_text(),
         (MATMUL / "generated/generated_non_persistent.mlir").read_text()),
    ]
    for kdir, label in ((MATMUL, "matmul"), (SILU, "silu_and_mul")):
        index = json.loads((kdir / "workbench/ir/index.json").read_text())["configs"]
        for params, sides in sorted(index.items()):
            if "reference" in sides and "candidate" in sides:
                out.append((f"real {label} config {params[:28]}… (cuTile vs cutile-rs)",
                            (kdir / sides["reference"]["file"]).read_text(),
                            (kdir / sides["candidate"]["file"]).read_text()))
    for name in ("rms_norm", "rms_norm_hotpath"):
        d = ROOT / "profiles/rms_norm/session" / name
        out.append((f"real {name} (stand-in: cuTile vs cuTile)", (d / "reference/reference.mlir").read_text(),
                    (d / "generated/generated_canon.mlir").read_text()))
    d = ROOT / "profiles/softmax/session/softmax"
    out.append(("real softmax (stand-in: cuTile row vs persistent)", (d / "reference/reference.mlir").read_text(),
                (d / "generated/generated_canon.mlir").read_text()))
    return out


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
    ]
    return out


def _canon_lines(a: str, b: str) -> object:
    return diff_lines(canonicalize(a).lines, canonicalize(b).lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--plain-budget", type=float, default=5.0, help="seconds allowed for plain difflib")
    ap.add_argument("--out", type=Path, default=None, help="write the raw numbers here (JSON)")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    print(f"{'case':<62} {'lines':>11} {'struct (s)':>10} {'canon+lines (s)':>15} {'plain difflib (s)':>17} "
          f"{'changed before':>14} {'after (non-cosmetic)':>20} {'verdict':>16}")
    for group, name, a, b in cases():
        al, bl = a.split("\n"), b.split("\n")
        d = structural_diff(a, b)
        before = diff_lines(canonicalize(a).lines, canonicalize(b).lines).stats()
        t_struct = best_of(functools.partial(structural_diff, a, b), args.repeat)
        t_canon = best_of(functools.partial(_canon_lines, a, b), args.repeat)
        plain = plain_difflib(al, bl, args.plain_budget) if group != "real" else None
        after = d.changed_rows
        after_nc = sum(1 for r in d.rows if r.kind != "equal" and r.category is not None and not r.category.cosmetic)
        changed_before = before["replace"] + before["insert"] + before["delete"]
        plain_s = ("—" if group == "real" else f">{args.plain_budget:.0f} (killed)" if plain is None else f"{plain:.3f}")
        print(f"{name[:62]:<62} {len(al):>5}/{len(bl):<5} {t_struct:>10.3f} {t_canon:>15.3f} {plain_s:>17} "
              f"{changed_before:>14} {after:>9} ({after_nc:>5}) {d.verdict:>16}")
        rows.append({"group": group, "case": name, "lines": [len(al), len(bl)], "struct_s": t_struct,
                     "canon_lines_s": t_canon, "plain_difflib_s": plain,
                     "plain_killed": group != "real" and plain is None,
                     "changed_before": changed_before, "changed_after": after, "changed_after_non_cosmetic": after_nc,
                     "hunks": len(d.hunks), "cosmetic_hunks": sum(h.cosmetic for h in d.hunks),
                     "verdict": d.verdict, "first_hunk": d.hunks[0].summary if d.hunks else None})
    print(f"(times: best of {args.repeat}; python {sys.version.split()[0]}; {platform.node()})")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        doc = {"script": "bench/ir_structdiff.py", "repeat": args.repeat, "python": sys.version.split()[0],
               "host": platform.node(), "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows}
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
