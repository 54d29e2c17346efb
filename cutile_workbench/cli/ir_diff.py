"""``diff <kernel> [--variant V | --slowest] [--cosmetic] [--color|--json]``: structural Tile IR diff + the diff_ir.sh-parity audit.

Contract: resolves the kernel dir like every command (``--out-root``/``$CUTILE_KERNEL_OUT_ROOT``/
recorded session) and asks :mod:`cutile_workbench.services.ir_diff` for the pair of ``--variant``, or every
pair when no variant is named (the variant slowest in E's table first; ``--slowest``: only that one). Per pair, the text output says the structural verdict
(``equivalent`` / ``different`` / ``not fully parsed``, with the unparsed lines, why, and the labelled
text diff of them: a truncated file is diffed, not refused), then the hunks in rank order (tile/CTA shape first; cosmetic hunks folded unless
``--cosmetic``), each with its category, the audit row it belongs to and its rows side by side at
the terminal width (numbers: source lines), the launch evidence of the config where captured, and
last the ``diff_ir.sh``-parity audit (labelled as such: byte-for-byte TileGym's script).
``--color`` highlights both sides with the MLIR lexer; ``--json`` prints the same as one document
(``{"pairs": [...]}`` when several pairs are shown). Exit 0 on success, 2 on bad input (missing
variant, unreadable IR: binary, empty, not Tile IR — the error names the file and line). A malformed
``reference/analysis.json`` is read on without, and named on stderr (``warning: ignored FILE:LINE: …``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from typing import Any

from cutile_workbench.cli.common import Command, add_kernel_args, path_arg
from cutile_workbench.services.ir_diff import (
    DiffRow,
    Fold,
    IRAudit,
    IRDiff,
    SideBySide,
    SRow,
    StructDiff,
    diff_pairs,
    highlight_terminal,
)
from cutile_workbench.services.session import ignored_inputs, open_session
from cutile_workbench.services.stand_ins import workspace_stand_ins

_MARK = {"equal": " ", "replace": "|", "delete": "<", "insert": ">"}


def _fit(s: str, width: int, spans: tuple[tuple[int, int], ...] = ()) -> str:
    """Cut to ``width``; when the first change lies past the cut, slide the window so it shows."""
    if spans and spans[0][1] > width - 1 and len(s) > width:
        start = max(1, spans[0][0] - width // 3)
        s = "…" + s[start:]
    s = s.replace("\t", "    ")
    return s if len(s) <= width else s[: max(width - 1, 0)] + "…"


def render_side_by_side(
    sbs: SideBySide,
    *,
    width: int = 160,
    context: int = 3,
    color: bool = False,
    left_src: tuple[int, ...] | None = None,
    right_src: tuple[int, ...] | None = None,
) -> list[str]:
    """Side-by-side lines for a terminal ``width`` columns wide (folded). Numbers are the original
    file lines when ``left_src``/``right_src`` (canonical → source maps) are given, so they match
    the audit's ``L`` numbers and an editor; else canonical line numbers."""
    num_w = max(4, len(str(max(len(sbs.rows), max(left_src or (0,)), max(right_src or (0,))))))
    cell = max(10, (width - 2 * (num_w + 1) - 3) // 2)
    hl = None
    if color:

        def hl(s: str) -> str:
            return highlight_terminal(s).rstrip("\n")

    out: list[str] = []
    index = {id(r): i for i, r in enumerate(sbs.rows)}
    for item in sbs.folded(context):
        if isinstance(item, Fold):
            out.append(f"{'':>{num_w}} ⋯ {item.count} unchanged line(s) ⋯")
            continue
        r: DiffRow = item
        lno = r.left_no if r.left_no is None or left_src is None else left_src[r.left_no - 1]
        rno = r.right_no if r.right_no is None or right_src is None else right_src[r.right_no - 1]
        ln = f"{lno:>{num_w}}" if lno is not None else " " * num_w
        rn = f"{rno:>{num_w}}" if rno is not None else " " * num_w
        lsp, rsp = sbs.spans(index[id(r)]) if r.kind == "replace" else ((), ())
        left, right = _fit(r.left, cell, lsp), _fit(r.right, cell, rsp)
        pad_l = left.ljust(cell)
        if hl is not None:
            pad_l = (hl(left) if left else "") + " " * (cell - len(left))
            right = hl(right) if right else ""
        mark = _MARK[r.kind]
        if color and mark != " ":
            mark = f"\x1b[1;33m{mark}\x1b[0m"
        out.append(f"{ln} {pad_l} {mark} {rn} {right}".rstrip())
    return out


def audit_summary(audit: IRAudit) -> list[str]:
    lines = [audit.verdict_line + f"  (diff_ir.sh parity, exit={audit.exit_code})"]
    for row in audit.rows:
        if row.severity in ("CRITICAL", "WARN"):
            where = ""
            if row.ref_lines or row.gen_lines:
                where = (
                    f"  [ref L{','.join(map(str, row.ref_lines[:6]))}"
                    f" gen L{','.join(map(str, row.gen_lines[:6]))}]"
                )
            lines.append(f"  {row.severity}: {row.message}{where}")
    return lines


_SHAPE_SPAN = re.compile(r"\d+x\d|num_cta")


def _shape_first(text: str, spans: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """``spans`` with the first one that changes a shape (``128x512``, ``num_cta``) moved to the front."""
    for k, (a, b) in enumerate(spans):
        if _SHAPE_SPAN.search(text[max(0, a - 16) : b]):
            return (spans[k], *spans[:k], *spans[k + 1 :])
    return spans


def _plain_rows(rows: list[SRow], width: int, color: bool) -> list[str]:
    """Side-by-side lines of rows that carry their own spans (the text-diff fallback)."""
    return _struct_rows(StructDiff(rows, [], []), range(len(rows)), width, color)


def _number_width(sd: StructDiff) -> int:
    """The line-number column's width: the widest line number of the whole diff (at least 4)."""
    widest = max((max(r.left_no or 0, r.right_no or 0) for r in sd.rows), default=0)
    return max(4, len(str(widest)))


def _struct_rows(sd: StructDiff, rows: range, width: int, color: bool, num_w: int | None = None) -> list[str]:
    """Side-by-side lines of ``rows``; ``num_w`` (from :func:`_number_width`, computed once per diff by
    a caller that renders many hunks: per hunk it was a scan of every row, quadratic in the IR's size)."""
    if num_w is None:
        num_w = _number_width(sd)
    cell = max(10, (width - 2 * (num_w + 1) - 3) // 2)
    hl = None
    if color:

        def hl(s: str) -> str:
            return highlight_terminal(s).rstrip("\n")

    out: list[str] = []
    for i in rows:
        r = sd.rows[i]
        ln = f"{r.left_no:>{num_w}}" if r.left_no is not None else " " * num_w
        rn = f"{r.right_no:>{num_w}}" if r.right_no is not None else " " * num_w
        lsp, rsp = sd.spans(i)
        if r.category is not None and r.category.rank == 0:
            # a tile/CTA hunk: show the changed shape, not an operand renamed before it
            lsp, rsp = _shape_first(r.left, lsp), _shape_first(r.right, rsp)
        left, right = _fit(r.left, cell, lsp), _fit(r.right, cell, rsp)
        pad_l = left.ljust(cell)
        if hl is not None:
            pad_l = (hl(left) if left else "") + " " * (cell - len(left))
            right = hl(right) if right else ""
        mark = _MARK[r.kind]
        if color and mark != " ":
            mark = f"\x1b[1;33m{mark}\x1b[0m"
        out.append(f"{ln} {pad_l} {mark} {rn} {right}".rstrip())
    return out


def render_structural(
    ir: IRDiff, *, width: int = 160, color: bool = False, cosmetic: bool = False, context: int = 1
) -> list[str]:
    """The structural verdict, then each hunk in rank order with up to ``context`` unchanged rows
    around it."""
    sd = ir.struct
    st = sd.stats()
    out = [
        f"structural diff: {sd.verdict}"
        + (
            ""
            if sd.equivalent
            else f" — {len(sd.hunks)} hunk(s) ({sum(h.cosmetic for h in sd.hunks)} cosmetic): "
            f"{st['replace']} changed, {st['delete']} only in reference, {st['insert']} only in generated"
        )
    ]
    out += [f"note: {n}" for n in sd.notes]
    if sd.fallback:
        out.append(
            "text diff of the lines not parsed (no structural claim is made about them; "
            f"reference L{sd.fallback_ranges('reference') or '—'}, generated L{sd.fallback_ranges('generated') or '—'}):"
        )
        for f in sd.fallback:
            out.append(f"  {f.side} L{f.line}: {f.reason}")
        out += _plain_rows(sd.fallback_rows(), width, color)
    folded = 0
    num_w = _number_width(sd)
    for k, h in enumerate(sd.hunks):
        if h.cosmetic and not cosmetic:
            folded += 1
            continue
        audit = ir.audit_row_of(h.audit_check)
        out.append(f"── hunk {k + 1}/{len(sd.hunks)} · {h.category.name} · audit row: {audit or '—'} ──")
        # context: unchanged rows only (a neighbouring changed row belongs to another hunk)
        lo = h.start
        while lo > 0 and h.start - lo < context and sd.rows[lo - 1].kind == "equal":
            lo -= 1
        hi = h.end
        while hi < len(sd.rows) and hi - h.end < context and sd.rows[hi].kind == "equal":
            hi += 1
        out += _struct_rows(sd, range(lo, hi), width, color, num_w)
        if h.category.rank <= 1 and ir.launch_evidence:
            out += [f"   launch: {e}" for e in ir.launch_evidence]
    if folded:
        out.append(
            f"⋯ {folded} cosmetic hunk(s) folded (constants, assume chains, dead ops): --cosmetic shows them"
        )
    return out


def _row_json(sd: StructDiff, i: int) -> dict[str, Any]:
    r = sd.rows[i]
    lsp, rsp = sd.spans(i)
    return {
        "kind": r.kind,
        "left_no": r.left_no,
        "right_no": r.right_no,
        "left": r.left,
        "right": r.right,
        "left_spans": [list(s) for s in lsp],
        "right_spans": [list(s) for s in rsp],
        "op": r.op,
        "category": r.category.name if r.category else None,
        "hunk": r.hunk,
    }


def to_json(ir: IRDiff) -> dict[str, Any]:
    """JSON document of one pair (line numbers: 1-based source lines of each file)."""
    pair, sd, audit = ir.pair, ir.struct, ir.audit
    return {
        "variant": pair.variant,
        # the IR one config ran (workbench/ir/index.json): its params; None for a variant's pair
        "config": ir.label.removeprefix("config ") if ir.label.startswith("config ") else None,
        "audit_verdict": ir.audit.verdict,
        "reference": str(pair.reference.path),
        "generated": str(pair.generated.path),
        "verdict": sd.verdict,
        "equivalent": sd.equivalent,
        "stats": sd.stats(),
        "notes": ir.notes + sd.notes,
        "fallback": [
            {"side": f.side, "line": f.line, "text": f.text, "reason": f.reason} for f in sd.fallback
        ],
        "fallback_diff": [
            {"kind": r.kind, "left_no": r.left_no, "right_no": r.right_no, "left": r.left, "right": r.right}
            for r in sd.fallback_rows()
        ],
        "hunks": [
            {
                "rank": k + 1,
                "category": h.category.name,
                "cosmetic": h.cosmetic,
                "start": h.start,
                "end": h.end,
                "audit_row": ir.audit_row_of(h.audit_check),
                "summary": h.summary,
            }
            for k, h in enumerate(sd.hunks)
        ],
        "launch_evidence": ir.launch_evidence,
        "rows": [_row_json(sd, i) for i in range(len(sd.rows))],
        "audit": {
            "label": "diff_ir.sh parity (byte-for-byte TileGym's script)",
            "verdict": audit.verdict,
            "exit_code": audit.exit_code,
            "critical": audit.critical_count,
            "workarounds": audit.workaround_count,
            "notes": audit.notes,
            "rows": [
                {
                    "check": r.check,
                    "severity": r.severity,
                    "message": r.message,
                    "ref": r.ref_value,
                    "gen": r.gen_value,
                    "ref_lines": list(r.ref_lines),
                    "gen_lines": list(r.gen_lines),
                }
                for r in audit.rows
            ],
        },
    }


class DiffCommand(Command):
    name = "diff"
    group = None
    help = "structural Tile IR diff + diff_ir.sh-parity audit"
    description = (
        "Pair reference/generated IR by variant (every pair without --variant), match ops by "
        "structure and dataflow, rank the differences, audit with diff_ir.sh parity."
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_kernel_args(parser)
        which = parser.add_mutually_exclusive_group()
        which.add_argument(
            "--variant",
            default=None,
            help="variant name (default: every pair, the slowest in E's table first)",
        )
        which.add_argument(
            "--config",
            default=None,
            metavar="CONFIG",
            help="the IR one config ran (run --dump-ir): its params, its TUI label or a node id",
        )
        which.add_argument(
            "--slowest",
            action="store_true",
            help="only the pair of the variant slowest in E's table (per-variant geomean)",
        )
        parser.add_argument(
            "--cosmetic", action="store_true", help="also show the cosmetic hunks (folded by default)"
        )
        g = parser.add_mutually_exclusive_group()
        g.add_argument("--color", action="store_true", help="syntax-highlight both sides")
        g.add_argument("--json", action="store_true", help="print verdict, hunks, rows + audit as JSON")

    def run(self, args: argparse.Namespace) -> int:
        ws = open_session(
            args.kernel,
            out_root=path_arg(args.out_root),
            tilegym=path_arg(args.tilegym),
            strict=False,
            require_dir=False,
        ).ws
        diffs = diff_pairs(ws, args.variant, slowest=args.slowest, config=args.config)
        for line in ignored_inputs(ws):  # stderr: stdout stays the diff or the document
            print(f"warning: {line}", file=sys.stderr)
        stand_ins = workspace_stand_ins(ws)  # issue 18 §5: a stand-in's "generated" IR is not cutile-rs's
        if args.json:
            doc = to_json(diffs[0]) if len(diffs) == 1 else {"pairs": [to_json(d) for d in diffs]}
            json.dump({**doc, "stand_ins": stand_ins.lines()}, sys.stdout, indent=1)
            sys.stdout.write("\n")
            return 0
        width = shutil.get_terminal_size((160, 40)).columns
        for line in stand_ins.lines():
            print(line)
        shared = diffs[0].notes if len(diffs) > 1 else []  # inventory notes and the order: said once
        for note in shared:
            print(f"note: {note}")
        for n, ir in enumerate(diffs):
            if n or shared:
                print()
            pair = ir.pair
            if len(diffs) > 1:
                print(f"══ {ir.label} ══")
            print(f"reference: {pair.reference.path}\ngenerated: {pair.generated.path}")
            for note in ir.notes:
                if note not in shared:
                    print(f"note: {note}")
            for line in render_structural(ir, width=width, color=args.color, cosmetic=args.cosmetic):
                print(line)
            print()
            print("diff_ir.sh-parity audit (TileGym's script, byte-for-byte):")
            for line in audit_summary(ir.audit):
                print(line)
        return 0


COMMANDS = (DiffCommand(),)
