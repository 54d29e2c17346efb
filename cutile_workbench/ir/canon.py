"""Canonicalize Tile IR text for a line diff (contract §6.4, the tool-less normalizer).

Contract: :func:`canonicalize` never changes what an op does or which attributes it carries; it
only removes spelling noise that differs between the C++ printer (``tileirdisasm``,
``cuda-tile-opt``) and the Rust printer, or between two compilations of one kernel:
- SSA values are renamed ``%v0, %v1, …`` in order of first *definition* (op results, entry and
  block arguments, ``for`` induction variables, ``iter_values`` arguments); a value that is used
  but never defined gets a number after all defined ones, in order of first use;
- each ``entry @<mangled>`` symbol (and every reference to it) becomes ``@ENTRY`` (``@ENTRY_2``…);
- ``loc(...)`` and ``#loc… = loc(...)`` alias lines are dropped; blank lines too;
- the ``cuda_tile.module @… {`` wrapper and its closing brace are dropped (raw ``tileirdisasm``
  dumps have none), and lines are re-indented two spaces per brace depth;
- ``#cuda_tile.optimization_hints<…>`` is written ``<…>``, ``optimization_hints=<`` as
  ``optimization_hints = <``, and the hint target key (``sm_90``, ``sm_100``, ``default``) as
  ``sm_*`` (the same kernel dumped for two GPUs must not differ on every hint line); an empty
  entry hint (``optimization_hints = <sm_* = {}>``, how tileirdisasm spells "no hints") is dropped,
  since the Rust printer writes nothing there (seen on the real H200 pair of silu_and_mul);
- ``constant`` ops whose result is never used are dropped (dead macro-expansion constants, §6.3).
Attributes (latency, allow_tma, tile shapes, strides, identities, rounding, FTZ) are KEPT.
``source_lines[i]`` is the 1-based original line of canonical line ``i`` (for jump-to).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_VALUE = re.compile(r"%[A-Za-z0-9_$.]+")
_VALUE_SPLIT = re.compile(r"(%[A-Za-z0-9_$.]+)")  # the same values, kept by re.split
_RESULTS = re.compile(r"^((?:%[A-Za-z0-9_$.]+(?::\d+)?\s*,\s*)*%[A-Za-z0-9_$.]+(?::\d+)?)\s*=\s")
_ARG_DEF = re.compile(r"(%[A-Za-z0-9_$.]+)\s*:")
_FOR_DEF = re.compile(r"\bfor\s+(%[A-Za-z0-9_$.]+)\s+in\b")
_ITER_DEF = re.compile(r"(%[A-Za-z0-9_$.]+)\s*=\s*%")
_ENTRY = re.compile(r"\bentry\s+@([^\s(),:<>{}]+)")
_LOC_ALIAS = re.compile(r"^#loc[A-Za-z0-9_]*\s*=\s*loc\(")
_MODULE = re.compile(r"^(?:cuda_tile\.)?module\b[^{]*\{$")
_HINT_PREFIX = re.compile(r"#cuda_tile\.optimization_hints<")
_HINT_EQ = re.compile(r"optimization_hints\s*=\s*<")
_HINT_KEY = re.compile(r"(?<=[<,] )(sm_\d+[a-z]?|default)(?= = \{)|(?<=<)(sm_\d+[a-z]?|default)(?= = \{)")
_DEAD_CONST = re.compile(r"^(%[A-Za-z0-9_$.]+)\s*=\s*constant\b")
_EMPTY_HINT = re.compile(r"\s*optimization_hints = <sm_\* = \{\}>")


@dataclass(frozen=True)
class CanonIR:
    """Canonical lines and, per line, the original 1-based line number it came from."""

    lines: tuple[str, ...]
    source_lines: tuple[int, ...]
    entries: tuple[str, ...]  # original entry symbols, in order (``@ENTRY`` is entries[0])
    value_names: dict[str, str]  # original SSA name → canonical name

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + ("\n" if self.lines else "")

    def canonical_line_of(self, source_line: int) -> int | None:
        """0-based canonical index of an original line (None if that line was dropped)."""
        for i, src in enumerate(self.source_lines):
            if src == source_line:
                return i
            if src > source_line:
                return None
        return None


def strip_loc(line: str) -> str:
    """Remove every ``loc(...)`` (balanced parentheses, strings respected) and the space before it."""
    if "loc(" not in line:
        return line
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        j = line.find("loc(", i)
        if j < 0 or (j > 0 and (line[j - 1].isalnum() or line[j - 1] == "_")):
            if j < 0:
                out.append(line[i:])
                break
            out.append(line[i : j + 4])
            i = j + 4
            continue
        out.append(line[i:j].rstrip(" "))
        k = scan_brackets(line, j + 3, "(", ")", stop_at_zero=True)[1]
        i = k + 1
    return "".join(out)


def scan_brackets(
    line: str, start: int, open_c: str, close_c: str, *, stop_at_zero: bool = False
) -> tuple[int, int]:
    """Walk ``line`` from ``start`` counting ``open_c``/``close_c`` outside ``"…"`` literals (backslash
    escapes respected): ``(depth, index)``. With ``stop_at_zero``, ``index`` is the closer that brings
    the depth back to 0 (``len(line)`` when none does); otherwise the whole line is walked."""
    depth, in_str, k, n = 0, False, start, len(line)
    while k < n:
        c = line[k]
        if in_str:
            if c == "\\":
                k += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if stop_at_zero and depth == 0:
                return depth, k
        k += 1
    return depth, n


def _brace_delta(line: str) -> int:
    # Braces inside string literals (e.g. a "{" in a name) must not move the depth.
    if '"' not in line:
        return line.count("{") - line.count("}")
    return scan_brackets(line, 0, "{", "}")[0]


def _definitions(line: str) -> list[str]:
    # each regex below is tried only on lines with the text it needs (10k-line files: ~4x faster)
    defs: list[str] = []
    m = _RESULTS.match(line) if line.startswith("%") else None
    if m:
        defs += _VALUE.findall(m.group(1))
    if line.startswith(("entry ", "func ", "^", "(%")) or " entry @" in line:
        # entry args, ^bb labels and region arguments "(%lhs: tile<f32>, %rhs: tile<f32>) {"
        head = line.split(")", 1)[0] if line.startswith(("^", "(%")) else line
        defs += _ARG_DEF.findall(head)
    fm = _FOR_DEF.search(line) if "for" in line else None
    if fm:
        defs.append(fm.group(1))
    k = line.find("iter_values(")
    if k >= 0:
        defs += _ITER_DEF.findall(line[k:])
    return defs


def canonicalize(text: str, *, unify_target: bool = True, drop_dead_constants: bool = True) -> CanonIR:
    """Canonical form of one IR text (see module docstring). Pure; never raises on odd text."""
    raw = text.split("\n")
    kept: list[tuple[int, str]] = []
    for no, line in enumerate(raw, 1):
        s = line.strip()
        if not s or (s.startswith("#loc") and _LOC_ALIAS.match(s)):
            continue
        s = strip_loc(s).rstrip()
        if s:
            kept.append((no, s))

    # entry symbols, in order
    entries: list[str] = []
    for _, s in kept:
        for name in _ENTRY.findall(s) if "entry" in s else ():
            if name not in entries:
                entries.append(name)
    entry_map = {e: ("@ENTRY" if i == 0 else f"@ENTRY_{i + 1}") for i, e in enumerate(entries)}
    entry_re = (
        re.compile(
            "@("
            + "|".join(re.escape(e) for e in sorted(entries, key=len, reverse=True))
            + r")(?![^\s(),:<>{}])"
        )
        if entries
        else None
    )

    # every line split once around its SSA values: parts[1::2] are the values, in order
    split = [_VALUE_SPLIT.split(s) for _, s in kept]

    # dead constants go before numbering, so both sides number the surviving values alike
    uses: dict[str, int] = {}
    for parts in split:
        for v in parts[1::2]:
            uses[v] = uses.get(v, 0) + 1
    if drop_dead_constants:
        live = [
            k
            for k, (_, s) in enumerate(kept)
            if not ("constant" in s and (dm := _DEAD_CONST.match(s)) and uses.get(dm.group(1), 0) <= 1)
        ]
        if len(live) != len(kept):
            kept = [kept[k] for k in live]
            split = [split[k] for k in live]

    # SSA numbering: definitions in order, then used-but-undefined values in order of use
    order: dict[str, int] = {}
    for _, s in kept:
        for d in _definitions(s):
            order.setdefault(d, len(order))
    for parts in split:
        for v in parts[1::2]:
            if v not in order:
                order[v] = -1  # placeholder, numbered below
    nxt = sum(1 for v in order.values() if v >= 0)
    for v, idx in order.items():
        if idx < 0:
            order[v] = nxt
            nxt += 1
    names = {v: f"%v{i}" for v, i in order.items()}

    lines: list[str] = []
    sources: list[int] = []
    depth = 0
    module_depths: list[int] = []
    for (no, s), parts in zip(kept, split, strict=True):
        if "module" in s and _MODULE.match(s):
            module_depths.append(depth)
            continue
        if s == "}" and module_depths and depth == module_depths[-1]:
            module_depths.pop()
            continue
        delta = _brace_delta(s)
        indent = depth - (1 if s.startswith("}") else 0)
        depth += delta
        if len(parts) > 1:  # rename in place of each value (every value of a kept line is numbered)
            parts = parts.copy()
            parts[1::2] = [names[v] for v in parts[1::2]]
            s = "".join(parts)
        if entry_re is not None and "@" in s:
            s = entry_re.sub(lambda m: entry_map[m.group(1)], s)
        if "optimization_hints" in s:  # every hint rewrite below needs it in the line
            s = _HINT_PREFIX.sub("<", s)
            s = _HINT_EQ.sub("optimization_hints = <", s)
            if unify_target:
                s = _HINT_KEY.sub("sm_*", s)
                s = _EMPTY_HINT.sub("", s)
        lines.append("  " * max(indent, 0) + s)
        sources.append(no)
    return CanonIR(tuple(lines), tuple(sources), tuple(entries), {v: names[v] for v in order})
