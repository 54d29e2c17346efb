"""Perf-attribute audit of a reference/generated Tile IR pair with ``diff_ir.sh`` parity.

Contract (contract §1.5.6; the real script is ``scripts/diff_ir.sh`` of the TileGym skill):
- :func:`audit_texts` computes exactly what ``diff_ir.sh <ref> <gen>`` computes, from the *raw*
  file texts (no canonicalization, like the script): the same per-line counts with the same
  regexes (fixed substrings, whole-word tokens, line-start ops, first ``occupancy = N`` /
  ``num_cta_in_cga = N``), the same classes (CRITICAL/ARITH/INFO/HINT), delta verdicts, further
  checks, final verdict (``PASS`` / ``PASS_WITH_NOTES`` / ``FAIL_FIXABLE``) and exit code (0/2/1).
- :func:`render_diff_ir_text` returns the script's stdout byte for byte (``LC_ALL=C`` sort order;
  under other locales only the order of the sorted sets printed may differ, never a verdict).
- Every :class:`AuditRow` carries the 1-based line numbers on both sides that produced it, so
  the TUI can jump from an audit row to its lines; :attr:`IRAudit.rows` sorts critical rows first.

grep semantics reproduced: a count is a number of *lines* (split on ``\\n``, a last line without
newline counts), ``[[:space:]]`` is the ASCII space class, ``.`` never crosses a line.
No Textual, no subprocess here: the script itself only runs in tests and ``bench/``.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

OpClass = Literal["CRITICAL", "ARITH", "INFO", "HINT"]
Severity = Literal["CRITICAL", "WARN", "INFO", "OK"]
IRVerdict = Literal["PASS", "PASS_WITH_NOTES", "FAIL_FIXABLE"]

_SP = r"[ \t\n\r\f\v]"  # grep's [[:space:]] (ASCII); Python's \s would also take Unicode spaces
_RULE = "=" * 64
_DASH = "-" * 64

CRITICAL_OPS: tuple[str, ...] = (
    "load_ptr_tko",
    "store_ptr_tko",
    "load_view_tko",
    "store_view_tko",
    "reduce",
    "exp",
    "exp2",
    "rsqrt",
    "fma",
    "mma",
    "for",
)
ARITH_OPS: tuple[str, ...] = ("addf", "subf", "mulf", "divf", "maxf", "minf")
INFO_OPS: tuple[str, ...] = ("select", "iota", "cmpi", "ftof", "itof", "exti")
HINT_OPS: tuple[str, ...] = ("occupancy", "num_cta")
FTZ_OPS: tuple[str, ...] = ("addf", "subf", "mulf", "divf", "exp", "exp2", "negf")


class _Pat:
    """A grep regex plus literal substrings every matching line must contain (a cheap prefilter:
    keeps the audit linear on 10k-line files and 200k-character lines)."""

    def __init__(
        self, regex: str, *need: str, any_of: tuple[str, ...] = (), one_line: str | None = None
    ) -> None:
        self.re = re.compile(regex)
        self.need = need
        self.any_of = any_of
        #: the same regex unable to match a newline (``[^)]`` → ``[^)\n]``; no anchors, no ``\s``),
        #: for one scan of a whole file in :meth:`_Side.findall`; its matches imply the literals
        self.one_line = re.compile(one_line) if one_line is not None else None

    def _ok(self, line: str) -> bool:
        return all(n in line for n in self.need) and (not self.any_of or any(a in line for a in self.any_of))

    def search(self, line: str) -> re.Match[str] | None:
        return self.re.search(line) if self._ok(line) else None

    def finditer(self, line: str) -> list[re.Match[str]]:
        return list(self.re.finditer(line)) if self._ok(line) else []

    def findall(self, line: str) -> list[str]:
        return [m.group(0) for m in self.finditer(line)]


def _word(op: str, literal: str | None = None) -> _Pat:
    return _Pat(rf"(?:^|{_SP}){op}(?:{_SP}|$)", literal or op)


def _line_start(op: str) -> _Pat:
    return _Pat(rf"^{_SP}*(?:%[A-Za-z0-9_]+ = )?{op}{_SP}", op)


# What count_ops() in diff_ir.sh greps, op by op: (kind, needle) with kind fixed|regex.
_OP_MATCHERS: dict[str, str | _Pat] = {
    "load_ptr_tko": "load_ptr_tko",
    "store_ptr_tko": "store_ptr_tko",
    "load_view_tko": "load_view_tko",
    "store_view_tko": "store_view_tko",
    "reduce": _line_start("reduce"),
    "exp": _word("exp"),
    "exp2": _word("exp2"),
    "rsqrt": _word("rsqrt"),
    "fma": _word("fma"),
    "mma": _word("mmaf?", "mma"),
    "addf": _word("addf"),
    "subf": _word("subf"),
    "mulf": _word("mulf"),
    "divf": _word("divf"),
    "maxf": _word("maxf"),
    "minf": _word("minf"),
    "for": _line_start("for"),
    "select": _word("select"),
    "iota": _word("iota"),
    "cmpi": _word("cmpi"),
    "ftof": _word("ftof"),
    "itof": _word("itof"),
    "exti": _word("exti"),
}
_HINT_RE = {
    "occupancy": _Pat(r"occupancy = ([0-9]+)", "occupancy = "),
    "num_cta": _Pat(r"num_cta_in_cga = ([0-9]+)", "num_cta_in_cga = "),
}
_TILE_SHAPE = _Pat(r"tile<[0-9]+x[A-Za-z0-9_]+>", "tile<", one_line=r"tile<[0-9]+x[A-Za-z0-9_]+>")
_IDENTITIES = _Pat(r"identities=\[[^]]+\]", "identities=[", one_line=r"identities=\[[^]\n]+\]")
_SWIZZLE = _Pat(r"divi.*blockId|remi.*blockId", "blockId", any_of=("divi", "remi"))
_DIVI = _word("divi")
_REMI = _word("remi")
_ASSUME_PTR = _Pat(r"assume div_by.*ptr", "assume div_by", "ptr")
_ASSUME_SCALAR = _Pat(r"assume div_by.*tile<i(32|64)>", "assume div_by", "tile<i")
_ATTR_LINES = _Pat(
    r"(addf|subf|mulf|divf|exp2?|negf).*flush_to_zero|rounding", any_of=("rounding", "flush_to_zero")
)
_OPT_HINTS = _Pat(r"optimization_hints.*=", "optimization_hints")
_TMA_TRUE = _Pat(r"allow_tma *= *true", "allow_tma", "true")
_TMA_FALSE = _Pat(r"allow_tma *= *false", "allow_tma", "false")
_LATENCY = _Pat(r"latency *=", "latency")
_MMA_LINE = _Pat(
    r"mmaf?.*tile<[0-9]+x[0-9]+x[A-Za-z0-9_]+>",
    "mma",
    "tile<",
    one_line=r"mmaf?.*tile<[0-9]+x[0-9]+x[A-Za-z0-9_]+>",
)
_MMA_ACC_WORD = re.compile(r"tile<[0-9]+x[0-9]+x[A-Za-z0-9_]+>$")
_PART_TILE = _Pat(r"tile=\([^)]+\)", "tile=(", one_line=r"tile=\([^)\n]+\)")
_LAYOUT = _Pat(
    r"strides=\[[^]]+\]|dim_map=\[[^]]+\]|tile=\([^)]+\)",
    any_of=("strides=[", "dim_map=[", "tile=("),
    one_line=r"strides=\[[^]\n]+\]|dim_map=\[[^]\n]+\]|tile=\([^)\n]+\)",
)


def grep_lines(text: str) -> list[str]:
    """Split like grep: on ``\\n`` only; a trailing newline does not make an extra empty line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _c_sorted(items: Sequence[str]) -> list[str]:
    # LC_ALL=C sort order is byte order; UTF-8 byte order equals code point order.
    return sorted(items)


@dataclass(frozen=True)
class AuditRow:
    """One audit line for the TUI/JSON: an op count or a further check, with lines on both sides."""

    check: str  # op name ("mma") or check id ("tile_shapes", "assume_ptr", "ftz:exp", ...)
    severity: Severity
    message: str
    ref_value: str = ""
    gen_value: str = ""
    ref_lines: tuple[int, ...] = ()
    gen_lines: tuple[int, ...] = ()


@dataclass(frozen=True)
class OpCount:
    """One row of the script's "IR Op Comparison" table."""

    op: str
    op_class: OpClass
    ref: int
    gen: int
    verdict: str  # MATCH | CRITICAL_DIFF | MISSING_HINT | OK | WORKAROUND(d) | INFO(d)
    ref_lines: tuple[int, ...] = ()
    gen_lines: tuple[int, ...] = ()

    @property
    def delta(self) -> int:
        return self.gen - self.ref


@dataclass
class IRAudit:
    """Everything ``diff_ir.sh`` decides for one pair, plus line numbers for jump-to."""

    ref_name: str
    gen_name: str
    op_counts: list[OpCount]
    notes: list[str]  # "CRITICAL: …" / "WARN: …", in the script's order
    critical_count: int
    workaround_count: int
    verdict: IRVerdict
    exit_code: int
    stdout: str
    checks: list[AuditRow] = field(default_factory=list)  # further checks (not the op table)

    @property
    def note_count(self) -> int:
        return len(self.notes)

    @property
    def verdict_line(self) -> str:
        return next((ln for ln in self.stdout.splitlines() if ln.startswith("VERDICT: ")), "")

    @property
    def rows(self) -> list[AuditRow]:
        """Op rows and check rows, critical first, then warn, info, ok (stable within a class)."""
        out: list[AuditRow] = []
        for oc in self.op_counts:
            sev: Severity
            if oc.verdict == "CRITICAL_DIFF":
                sev = "CRITICAL"
            elif oc.verdict == "MISSING_HINT" or oc.verdict.startswith("WORKAROUND"):
                sev = "WARN"
            elif oc.verdict.startswith("INFO"):
                sev = "INFO"
            else:
                sev = "OK"
            out.append(
                AuditRow(
                    oc.op,
                    sev,
                    f"{oc.op} ref={oc.ref} gen={oc.gen} {oc.verdict}",
                    str(oc.ref),
                    str(oc.gen),
                    oc.ref_lines,
                    oc.gen_lines,
                )
            )
        out.extend(self.checks)
        rank = {"CRITICAL": 0, "WARN": 1, "INFO": 2, "OK": 3}
        return sorted(out, key=lambda r: rank[r.severity])

    def key_lines(self) -> list[str]:
        """The lines F quotes in reports: the op rows that differ, then verdict and notes."""
        table = [
            ln
            for ln in self.stdout.splitlines()
            if ln.split(" ", 1)[0] in _ALL_OPS and not ln.rstrip().endswith("MATCH")
        ]
        tail = self.stdout[self.stdout.rfind("VERDICT: ") :].splitlines()
        return table + [t for t in tail if t]


_ALL_OPS = CRITICAL_OPS + ARITH_OPS + INFO_OPS + HINT_OPS


class _Side:
    """One file's lines; a pattern is only tried on lines that contain its literal (found with one
    C-level ``str.find`` scan of the whole text per literal, cached)."""

    def __init__(self, text: str) -> None:
        self.lines = grep_lines(text)
        self.text = "\n".join(self.lines)
        self.starts: list[int] = []
        pos = 0
        for ln in self.lines:
            self.starts.append(pos)
            pos += len(ln) + 1
        self._cand: dict[str, list[int]] = {}
        self._hits: dict[int, tuple[_Pat, dict[int, list[str]]]] = {}

    def lines_with(self, literal: str) -> list[int]:
        """1-based numbers of the lines containing ``literal`` (ascending)."""
        if literal not in self._cand:
            found: list[int] = []
            k = self.text.find(literal)
            while k >= 0:
                no = bisect.bisect_right(self.starts, k)
                found.append(no)
                # continue after this line: one hit per line is enough
                k = self.text.find(literal, self.starts[no] if no < len(self.starts) else len(self.text))
            self._cand[literal] = found
        return self._cand[literal]

    def _candidates(self, pat: _Pat) -> list[int] | None:
        if pat.need:
            return min((self.lines_with(n) for n in pat.need), key=len)
        if pat.any_of:
            return sorted({i for a in pat.any_of for i in self.lines_with(a)})
        return None

    def match(self, pat: str | _Pat) -> tuple[int, ...]:
        if isinstance(pat, str):
            return tuple(self.lines_with(pat))
        cand = self._candidates(pat)
        if cand is None:
            return tuple(i for i in range(1, len(self.lines) + 1) if pat.search(self.lines[i - 1]))
        if len(pat.need) <= 1:  # the candidates already contain the (only) literal
            rx = pat.re
            return tuple(i for i in cand if rx.search(self.lines[i - 1]))
        return tuple(i for i in cand if pat.search(self.lines[i - 1]))

    def first(self, pat: _Pat) -> tuple[int, tuple[int, ...]]:
        for i in self.match(pat):
            m = pat.search(self.lines[i - 1])
            if m:
                return int(m.group(1)), (i,)
        return 0, ()

    def hits(self, pat: _Pat) -> dict[int, list[str]]:
        """Line number → the matches of ``pat`` on that line (lines without one left out), cached."""
        key = id(pat)
        if key not in self._hits:
            by_line: dict[int, list[str]] = {}
            if pat.one_line is not None:  # one C-level scan of the file instead of one regex call per line
                starts = self.starts
                for m in pat.one_line.finditer(self.text):
                    by_line.setdefault(bisect.bisect_right(starts, m.start()), []).append(m.group(0))
            else:
                for i in self.match(pat):
                    found = [m.group(0) for m in pat.re.finditer(self.lines[i - 1])]
                    if found:
                        by_line[i] = found
            self._hits[key] = (pat, by_line)  # the pattern kept alive so its id stays its own
        return self._hits[key][1]

    def findall(self, pat: _Pat) -> tuple[list[str], tuple[int, ...]]:
        by_line = self.hits(pat)
        return [h for found in by_line.values() for h in found], tuple(by_line)

    def numbered(self, pat: str | _Pat, *, without: str = "") -> tuple[list[str], tuple[int, ...]]:
        """``grep -n`` of ``pat`` (lines containing ``without`` dropped), on the prefiltered candidates."""
        where = tuple(i for i in self.match(pat) if not (without and without in self.lines[i - 1]))
        return [f"{i}:{self.lines[i - 1]}" for i in where], where


def _count_ops(side: _Side) -> dict[str, tuple[int, tuple[int, ...]]]:
    out: dict[str, tuple[int, tuple[int, ...]]] = {}
    for op, pat in _OP_MATCHERS.items():
        where = side.match(pat)
        out[op] = (len(where), where)
    for op, hpat in _HINT_RE.items():
        out[op] = side.first(hpat)
    return out


def _block(label_lines: list[str], indent: str) -> list[str]:
    return [indent + ln for ln in label_lines] if label_lines else [indent + "(none)"]


def _uniq_c(items: list[str]) -> list[str]:
    # ``sort | uniq -c``: GNU uniq prints the count right-aligned in 7 columns, then a space.
    counts = Counter(items)
    return [f"{counts[k]:7d} {k}" for k in _c_sorted(list(counts))]


def audit_texts(
    ref_text: str, gen_text: str, *, ref_name: str = "reference.mlir", gen_name: str = "generated_canon.mlir"
) -> IRAudit:
    """Run diff_ir.sh's logic on two IR texts (see module docstring)."""
    ref, gen = _Side(ref_text), _Side(gen_text)
    rops, gops = _count_ops(ref), _count_ops(gen)
    notes: list[str] = []
    checks: list[AuditRow] = []
    critical = 0
    workaround = 0

    def crit(
        msg: str, check: str, rl: tuple[int, ...] = (), gl: tuple[int, ...] = (), rv: str = "", gv: str = ""
    ) -> None:
        nonlocal critical
        critical += 1
        notes.append(f"CRITICAL: {msg}")
        checks.append(AuditRow(check, "CRITICAL", msg, rv, gv, rl, gl))

    def warn(
        msg: str, check: str, rl: tuple[int, ...] = (), gl: tuple[int, ...] = (), rv: str = "", gv: str = ""
    ) -> None:
        notes.append(f"WARN: {msg}")
        checks.append(AuditRow(check, "WARN", msg, rv, gv, rl, gl))

    out: list[str] = [
        _RULE,
        "IR Op Comparison",
        _RULE,
        f"{'Op':<20} {'Ref':>8} {'Gen':>8} {'Delta':>8} Verdict",
        _DASH,
    ]
    op_counts: list[OpCount] = []
    for op in _ALL_OPS:
        (r, rl), (g, gl) = rops[op], gops[op]
        delta = g - r
        verdict = "MATCH"
        cls: OpClass = (
            "CRITICAL"
            if op in CRITICAL_OPS
            else "ARITH"
            if op in ARITH_OPS
            else "INFO"
            if op in INFO_OPS
            else "HINT"
        )
        if delta != 0:
            if cls == "CRITICAL":
                verdict = "CRITICAL_DIFF"
                critical += 1
                notes.append(f"CRITICAL: {op} ref={r} gen={g} delta={delta}")
            elif cls == "HINT":
                if r != 0 and g != 0 and r != g:
                    verdict = "CRITICAL_DIFF"
                    critical += 1
                    notes.append(f"CRITICAL: {op} hint mismatch ref={r} gen={g}")
                elif r != 0 and g == 0:
                    verdict = "MISSING_HINT"
                    notes.append(f"WARN: {op} hint missing in generated")
                else:
                    verdict = "OK"
            elif cls == "ARITH":
                if abs(delta) <= 2:
                    verdict = f"WORKAROUND({delta})"
                    workaround += abs(delta)
                else:
                    verdict = "CRITICAL_DIFF"
                    critical += 1
                    notes.append(f"CRITICAL: {op} ref={r} gen={g} delta={delta} exceeds workaround allowance")
            else:
                verdict = f"INFO({delta})"
        op_counts.append(OpCount(op, cls, r, g, verdict, rl, gl))
        out.append(f"{op:<20} {r:8d} {g:8d} {delta:+8d} {verdict}")

    # --- tile shapes
    rs_all, rs_lines = ref.findall(_TILE_SHAPE)
    gs_all, gs_lines = gen.findall(_TILE_SHAPE)
    ref_shapes = "".join(s + " " for s in _c_sorted(list(set(rs_all))))
    gen_shapes = "".join(s + " " for s in _c_sorted(list(set(gs_all))))
    out += ["", "Tile shapes:", f"  Ref: {ref_shapes or 'none'}", f"  Gen: {gen_shapes or 'none'}"]
    if ref_shapes and gen_shapes and ref_shapes != gen_shapes:
        # jump targets: only the lines whose shapes are not on the other side
        rset, gset = set(rs_all), set(gs_all)
        rhit, ghit = ref.hits(_TILE_SHAPE), gen.hits(_TILE_SHAPE)
        rl = tuple(i for i in rs_lines if set(rhit[i]) - gset)
        gl = tuple(i for i in gs_lines if set(ghit[i]) - rset)
        # partition_view ``tile=(AxB)`` lines carry the same config: jump targets too
        rpart, gpart = ref.hits(_PART_TILE), gen.hits(_PART_TILE)
        rpt = {t for found in rpart.values() for t in found}
        gpt = {t for found in gpart.values() for t in found}
        rl = tuple(sorted(set(rl) | {i for i, found in rpart.items() if set(found) - gpt}))
        gl = tuple(sorted(set(gl) | {i for i, found in gpart.items() if set(found) - rpt}))
        crit("tile shape set differs", "tile_shapes", rl, gl, ref_shapes.strip(), gen_shapes.strip())

    # --- reduce identities
    ri_all, ri_lines = ref.findall(_IDENTITIES)
    gi_all, gi_lines = gen.findall(_IDENTITIES)
    ref_ids = "\n".join(_c_sorted(list(set(ri_all))))
    gen_ids = "\n".join(_c_sorted(list(set(gi_all))))
    out += ["", "Reduce identities:"]
    out += [f"  Ref: {x}" for x in ref_ids.split("\n")] if ref_ids else ["  Ref: none"]
    out += [f"  Gen: {x}" for x in gen_ids.split("\n")] if gen_ids else ["  Gen: none"]
    if ref_ids != gen_ids:
        crit("reduce identities differ", "identities", ri_lines, gi_lines, ref_ids, gen_ids)

    # --- rounding_mode
    rr, gr = ref.match("rounding_mode"), gen.match("rounding_mode")
    out += ["", f"rounding_mode: ref={len(rr)} gen={len(gr)}"]
    if len(gr) > len(rr):
        warn("generated has extra rounding_mode attrs", "rounding_mode", rr, gr, str(len(rr)), str(len(gr)))

    # --- block swizzle
    rsw, gsw = ref.match(_SWIZZLE), gen.match(_SWIZZLE)
    rdv, gdv, rrm, grm = ref.match(_DIVI), gen.match(_DIVI), ref.match(_REMI), gen.match(_REMI)
    out += [
        "",
        "Block mapping pattern:",
        f"  Ref: swizzle={'true' if rsw else 'false'} divi={len(rdv)} remi={len(rrm)}",
        f"  Gen: swizzle={'true' if gsw else 'false'} divi={len(gdv)} remi={len(grm)}",
    ]
    if rsw and not gsw:
        warn("missing block swizzle; possible L2 locality regression", "swizzle", rsw, (), "true", "false")

    # --- assume div_by
    out += ["", _RULE, "Op Attribute Comparison", _RULE, "", "assume_div_by<N>:", "  Reference:"]
    ra_txt, _ = ref.numbered("assume div_by")
    ga_txt, _ = gen.numbered("assume div_by")
    out += _block(ra_txt, "    ")
    out.append("  Generated:")
    out += _block(ga_txt, "    ")
    rap, gap = ref.match(_ASSUME_PTR), gen.match(_ASSUME_PTR)
    ras, gas = ref.match(_ASSUME_SCALAR), gen.match(_ASSUME_SCALAR)
    gen_raw_ptr = gops["load_ptr_tko"][0] + gops["store_ptr_tko"][0]
    out.append(f"  Summary: Ref ptr={len(rap)} scalar={len(ras)} | Gen ptr={len(gap)} scalar={len(gas)}")
    if len(rap) > len(gap):
        if gen_raw_ptr > 0:
            out.append("  >> PERF_CRITICAL: generated raw-pointer path is missing pointer assume_div_by.")
            crit(
                f"missing pointer assume_div_by coverage on raw-pointer generated path ref={len(rap)} gen={len(gap)}",
                "assume_ptr",
                rap,
                gap,
                str(len(rap)),
                str(len(gap)),
            )
        else:
            out.append("  >> PERF_WARN: generated view/TMA path has fewer pointer assume_div_by ops.")
            out.append("     Policy: this is non-blocking unless a measured perf regression points here.")
            warn(
                f"missing pointer assume_div_by coverage ref={len(rap)} gen={len(gap)}; "
                "generated has no raw pointer load/store ops",
                "assume_ptr",
                rap,
                gap,
                str(len(rap)),
                str(len(gap)),
            )
    if gas:
        out.append(
            "  >> CRITICAL: generated scalar assume_div_by is deprecated and can corrupt irregular shapes."
        )
        crit(
            "generated scalar assume_div_by present; remove scalar assume hints",
            "assume_scalar",
            ras,
            gas,
            str(len(ras)),
            str(len(gas)),
        )

    # --- FTZ / approx per op
    out += ["", "Per-op attributes (flush_to_zero, rounding):", "  Reference ops with attributes:"]
    rat, _ = ref.numbered(_ATTR_LINES)
    gat, _ = gen.numbered(_ATTR_LINES)
    out += _block(rat, "    ")
    out.append("  Generated ops with attributes:")
    out += _block(gat, "    ")
    for op in FTZ_OPS:
        ftz, approx = (
            _Pat(f"{op}.*flush_to_zero", op, "flush_to_zero"),
            _Pat(f"{op}.*rounding<approx>", op, "rounding<approx>"),
        )
        rf, gf = ref.match(ftz), gen.match(ftz)
        rp, gp = ref.match(approx), gen.match(approx)
        if len(rf) != len(gf) or len(rp) != len(gp):
            out.append(f"  {op}: FTZ ref={len(rf)} gen={len(gf)} | approx ref={len(rp)} gen={len(gp)}")
            if len(rf) > len(gf):
                crit(
                    f"{op} missing flush_to_zero ref={len(rf)} gen={len(gf)}",
                    f"ftz:{op}",
                    rf,
                    gf,
                    str(len(rf)),
                    str(len(gf)),
                )
            if len(rp) > len(gp):
                crit(
                    f"{op} missing rounding<approx> ref={len(rp)} gen={len(gp)}",
                    f"approx:{op}",
                    rp,
                    gp,
                    str(len(rp)),
                    str(len(gp)),
                )

    # --- load/store hints
    out += ["", "Load/store optimization hints:", "  Reference:"]
    rh, _ = ref.numbered(_OPT_HINTS, without="entry @")
    gh, _ = gen.numbered(_OPT_HINTS, without="entry @")
    out += _block(rh, "    ")
    out.append("  Generated:")
    out += _block(gh, "    ")
    rtt, gtt = ref.match(_TMA_TRUE), gen.match(_TMA_TRUE)
    rtf, gtf = ref.match(_TMA_FALSE), gen.match(_TMA_FALSE)
    rlat, glat = ref.match(_LATENCY), gen.match(_LATENCY)
    out.append(
        f"  Summary: Ref allow_tma_true={len(rtt)} allow_tma_false={len(rtf)} latency={len(rlat)} | "
        f"Gen allow_tma_true={len(gtt)} allow_tma_false={len(gtf)} latency={len(glat)}"
    )
    if len(rtt) > len(gtt):
        crit(
            f"allow_tma=true count mismatch ref={len(rtt)} gen={len(gtt)}",
            "allow_tma_true",
            rtt,
            gtt,
            str(len(rtt)),
            str(len(gtt)),
        )
    if len(rtf) != len(gtf):
        warn(
            f"allow_tma=false count mismatch ref={len(rtf)} gen={len(gtf)}",
            "allow_tma_false",
            rtf,
            gtf,
            str(len(rtf)),
            str(len(gtf)),
        )
    if len(rlat) > len(glat):
        warn(
            f"latency hint count mismatch ref={len(rlat)} gen={len(glat)}",
            "latency",
            rlat,
            glat,
            str(len(rlat)),
            str(len(glat)),
        )
    elif len(glat) > len(rlat):
        warn(
            f"generated extra latency hints ref={len(rlat)} gen={len(glat)}",
            "latency",
            rlat,
            glat,
            str(len(rlat)),
            str(len(glat)),
        )

    # --- MMA accumulators: last tile<AxBxT> word of each matched "mma…tile<…>" span
    def mma_acc(side: _Side) -> tuple[str, tuple[int, ...]]:
        spans, where = side.findall(_MMA_LINE)
        words = {w for s in set(spans) for w in s.split(" ") if _MMA_ACC_WORD.search(w)}
        return "".join(w + " " for w in _c_sorted(list(words))), where

    ref_acc, racc_l = mma_acc(ref)
    gen_acc, gacc_l = mma_acc(gen)
    out += ["", "MMA accumulator types:", f"  Ref: {ref_acc or 'none'}", f"  Gen: {gen_acc or 'none'}"]
    if ref_acc and gen_acc and ref_acc != gen_acc:
        crit(
            f"MMA accumulator ref={ref_acc} gen={gen_acc}",
            "mma_acc",
            racc_l,
            gacc_l,
            ref_acc.strip(),
            gen_acc.strip(),
        )

    # --- dtypes
    rb, gb, rf16, gf16 = ref.match("bf16"), gen.match("bf16"), ref.match("f16"), gen.match("f16")
    out += ["", f"dtype usage: ref(f16={len(rf16)}, bf16={len(rb)}) gen(f16={len(gf16)}, bf16={len(gb)})"]
    if rb and not gb:
        warn("reference uses bf16 but generated does not", "bf16", rb, (), str(len(rb)), "0")

    # --- layout multiset
    rlay, rlay_l = ref.findall(_LAYOUT)
    glay, glay_l = gen.findall(_LAYOUT)
    rlay_c, glay_c = _uniq_c(rlay), _uniq_c(glay)
    out += ["", "Tensor view layout attributes:", "  Reference:"]
    out += _block(rlay_c, "    ")
    out.append("  Generated:")
    out += _block(glay_c, "    ")
    if rlay_c != glay_c:
        rcnt, gcnt = Counter(rlay), Counter(glay)
        rl = tuple(i for i in rlay_l if any(rcnt[x] != gcnt[x] for x in _LAYOUT.findall(ref.lines[i - 1])))
        gl = tuple(i for i in glay_l if any(rcnt[x] != gcnt[x] for x in _LAYOUT.findall(gen.lines[i - 1])))
        warn(
            "layout attribute multiset differs; inspect dim_map/strides/tile shapes",
            "layout",
            rl,
            gl,
            " ".join(_c_sorted(list(set(rlay)))),
            " ".join(_c_sorted(list(set(glay)))),
        )

    out += ["", _RULE]
    final: IRVerdict
    if critical > 0:
        final, code = "FAIL_FIXABLE", 1
        out.append(f"VERDICT: FAIL_FIXABLE ({critical} critical diff(s))")
    elif workaround > 0 or notes:
        final, code = "PASS_WITH_NOTES", 2
        out.append(f"VERDICT: PASS_WITH_NOTES ({workaround} workaround op(s), {len(notes)} note(s))")
    else:
        final, code = "PASS", 0
        out.append("VERDICT: PASS")
    if code != 0 and notes:
        out.append("")  # printf "%b\n" "$notes": notes start with "\n"
        out += notes
    return IRAudit(
        ref_name, gen_name, op_counts, notes, critical, workaround, final, code, "\n".join(out) + "\n", checks
    )


def render_diff_ir_text(audit: IRAudit) -> str:
    """The exact stdout ``diff_ir.sh`` prints for the same pair (``LC_ALL=C``)."""
    return audit.stdout


def audit_files(ref_path: Path | str, gen_path: Path | str) -> IRAudit:
    """Load both files with the IR loader's guards (bad input → InputError) and audit them."""
    from cutile_workbench.ir.loader import read_ir_text  # local: loader imports nothing from here

    ref_p, gen_p = Path(ref_path), Path(gen_path)
    return audit_texts(read_ir_text(ref_p), read_ir_text(gen_p), ref_name=str(ref_p), gen_name=str(gen_p))
