"""Find, guard-read and pair reference / generated Tile IR files of one kernel dir.

Contract:
- :func:`discover_ir` lists ``reference/reference*.mlir`` (top level only: ``supplements/`` are
  dtype evidence, never variants) and ``generated/generated*_canon.mlir`` (falling back to
  ``generated*.mlir`` when no canonical file exists for a variant, with a note), and pairs them by
  variant: ``reference_<v>.mlir`` ↔ ``generated_<v>_canon.mlir``, ``reference.mlir`` ↔
  ``generated_canon.mlir``; when each side has exactly one file the two are paired even if the
  names differ (noted). Unpaired files are listed, not dropped. It reads no file contents.
- :func:`read_ir_text` is the only way IR bytes become text: missing file, over-size file
  (> :data:`MAX_IR_BYTES`), NUL bytes (binary, e.g. a ``.tileirbc``), invalid UTF-8, an over-long
  line (> :data:`MAX_LINE_CHARS`), empty/blank text, or text with no ``entry @`` raise
  :class:`~cutile_workbench.errors.InputError` naming the file (and line where there is one).
- :func:`load_ir` additionally rejects truncated text (unclosed or stray braces), naming the line,
  and, for the IR diff (``max_lines``), a file longer than :data:`MAX_DIFF_LINES` lines;
  :func:`load_pair` with ``damaged_ok`` keeps such a file (``IRFile.damage``) so the pair can still be
  diffed (the IR diff does; stage F does not).
Accepted inputs: raw ``tileirdisasm`` dumps (start at ``entry @…``, no module wrapper),
``cuda-tile-opt`` output (``cuda_tile.module @kernels { … }``), Rust-printer dumps, Triton-TileIR.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.errors import InputError
from cutile_workbench.ir.canon import CanonIR, _brace_delta, canonicalize

#: Larger than any real kernel dump (a 10k-line IR is ~1.5 MB); bigger is refused unread.
MAX_IR_BYTES = 32 * 1024 * 1024
#: Real IR lines are < 10 kB; a megabyte line is a minified/binary blob, not something to diff.
MAX_LINE_CHARS = 1_000_000
#: The IR diff (canonical + structural diff, audit, rendering) costs CPU in proportion to the lines
#: (bench/ir_structdiff_scale.py: real matmul dumps scaled; the pair of 19k/23.7k lines added 2.4 s
#: CPU to the diff command on the loaded CPU box, about 1.0 s per 10k lines of the longer side,
#: bench/results/ir_structdiff_scale-2026-12-02.json): a side longer than this is refused with the
#: reason, so the whole command stays within about 3 s. Real kernel dumps are 100-1,000 lines.
MAX_DIFF_LINES = 20_000
DIFF_CPU_S_PER_10K_LINES = 1.0

Role = Literal["reference", "generated"]

_REF_NAME = re.compile(r"^reference(?:_(?P<v>.+))?\.mlir$")
_GEN_CANON = re.compile(r"^generated(?:_(?P<v>.+))?_canon\.mlir$")
_GEN_PLAIN = re.compile(r"^generated(?:_(?P<v>.+))?\.mlir$")


def _line_of_offset(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def read_ir_text(path: Path | str) -> str:
    """Read one IR file as text with all size/encoding guards (see module docstring)."""
    p = Path(path)
    try:
        size = p.stat().st_size
    except FileNotFoundError:
        raise InputError("IR file not found", path=p) from None
    except OSError as exc:
        raise InputError(f"cannot stat IR file: {exc.strerror or exc}", path=p) from None
    if not p.is_file():
        raise InputError("not a regular file", path=p)
    if size > MAX_IR_BYTES:
        raise InputError(
            f"IR file is {size / 2**20:.1f} MiB, over the {MAX_IR_BYTES // 2**20} MiB limit "
            "(not a kernel dump?)",
            path=p,
        )
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read IR file: {exc.strerror or exc}", path=p) from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputError(
            "binary data (NUL byte): expected Tile IR text, not bytecode (.tileirbc)",
            path=p,
            line=_line_of_offset(data, nul),
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"invalid UTF-8 at byte {exc.start}", path=p, line=_line_of_offset(data, exc.start)
        ) from None
    if not text.strip():
        raise InputError("IR file is empty", path=p)
    start = 0
    no = 1
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if end - start > MAX_LINE_CHARS:
            raise InputError(
                f"line is {end - start:,} characters long (limit {MAX_LINE_CHARS:,}): not diffable IR",
                path=p,
                line=no,
            )
        start, no = end + 1, no + 1
    if "entry @" not in text and "tt.func" not in text:
        raise InputError("no 'entry @…' found: not a Tile IR kernel", path=p)
    return text


def balance_problem(text: str, path: Path | str) -> InputError | None:
    """The InputError :func:`check_balanced` raises (None when braces balance)."""
    open_lines: list[int] = []
    for no, line in enumerate(text.split("\n"), 1):
        d = _brace_delta(line)
        if d > 0:
            open_lines.extend([no] * d)
        elif d < 0:
            for _ in range(-d):
                if not open_lines:
                    return InputError("unbalanced '}' (more closing than opening braces)", path=path, line=no)
                open_lines.pop()
    if open_lines:
        last = len(text.rstrip("\n").split("\n"))
        return InputError(
            f"truncated IR: {len(open_lines)} '{{' never closed (innermost opened at line {open_lines[-1]})",
            path=path,
            line=last,
        )
    return None


def check_balanced(text: str, path: Path | str) -> None:
    """Raise InputError when braces do not balance: the usual sign of a truncated dump."""
    problem = balance_problem(text, path)
    if problem is not None:
        raise problem


@dataclass(frozen=True)
class IRFile:
    """One loaded IR file: raw text (what diff_ir.sh reads) and its canonical form (what we diff)."""

    path: Path
    role: Role
    variant: str | None
    text: str
    canon: CanonIR
    #: unbalanced braces (a truncated dump), when loaded with ``damaged_ok``: the file is still
    #: diffed, the structural diff text-diffs what it cannot parse, and callers report this
    damage: InputError | None = None

    @property
    def raw_lines(self) -> list[str]:
        return self.text.split("\n")


def load_ir(
    path: Path | str,
    role: Role = "reference",
    variant: str | None = None,
    *,
    damaged_ok: bool = False,
    max_lines: int | None = None,
) -> IRFile:
    """Guard-read, check balance and canonicalize one file. Unbalanced braces raise, or with
    ``damaged_ok`` are kept in :attr:`IRFile.damage` (the file still loads). ``max_lines`` (the
    diff's :data:`MAX_DIFF_LINES`): a longer file is refused before any parsing, with the reason."""
    p = Path(path)
    text = read_ir_text(p)
    if max_lines is not None:
        n = text.count("\n") + (0 if text.endswith("\n") else 1)
        if n > max_lines:
            raise InputError(
                f"IR file has {n:,} lines, over the {max_lines:,}-line limit of the IR diff: its cost "
                f"grows with the lines (about {DIFF_CPU_S_PER_10K_LINES:g} s of CPU per 10,000 lines "
                "measured, BENCHMARKS §2c); diff one kernel's dump instead",
                path=p,
            )
    damage = balance_problem(text, p)
    if damage is not None and not damaged_ok:
        raise damage
    return IRFile(p, role, variant, text, canonicalize(text), damage)


@dataclass(frozen=True)
class IRPairPaths:
    """A reference/generated pair for one variant (``None`` = single-variant kernel)."""

    variant: str | None
    reference: Path
    generated: Path

    @property
    def label(self) -> str:
        return self.variant or "single"


@dataclass
class IRInventory:
    pairs: list[IRPairPaths]
    unpaired_reference: list[Path] = field(default_factory=list)
    unpaired_generated: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def pair(self, variant: str | None) -> IRPairPaths | None:
        """The pair for a variant name; ``None``/"single" selects the single pair or the only pair."""
        if variant in (None, "", "single"):
            single = [p for p in self.pairs if p.variant is None]
            if single:
                return single[0]
            return self.pairs[0] if len(self.pairs) == 1 else None
        return next((p for p in self.pairs if p.variant == variant), None)


def _scan(folder: Path, pattern: re.Pattern[str]) -> dict[str | None, Path]:
    found: dict[str | None, Path] = {}
    if not folder.is_dir():
        return found
    for f in sorted(folder.iterdir()):
        m = pattern.match(f.name)
        if m and f.is_file():
            found[m.group("v")] = f
    return found


def discover_ir(paths: KernelPaths) -> IRInventory:
    """List and pair the kernel's IR files by name (reads no contents); a file (or dir) that resolves outside
    the kernel dir is refused (``UnsafePath``, :func:`cutile_workbench.artifacts.confine.confine_read`)."""
    from cutile_workbench.artifacts.confine import confine_read

    notes: list[str] = []
    refs = _scan(paths.reference_dir, _REF_NAME)
    gens = _scan(paths.generated_dir, _GEN_CANON)
    for f in [*refs.values(), *gens.values(), *_scan(paths.generated_dir, _GEN_PLAIN).values()]:
        confine_read(paths.root, f)
    for v, f in _scan(paths.generated_dir, _GEN_PLAIN).items():
        if (v is not None and v.endswith("_canon")) or v == "canon":
            continue
        if v not in gens:
            gens[v] = f
            notes.append(f"{f.name}: no canonical (cuda-tile-opt) file for this variant; using the raw one")
    pairs: list[IRPairPaths] = []
    for v in sorted(set(refs) & set(gens), key=lambda x: x or ""):
        pairs.append(IRPairPaths(v, refs[v], gens[v]))
    ur = [refs[v] for v in refs if v not in gens]
    ug = [gens[v] for v in gens if v not in refs]
    if not pairs and len(refs) == 1 and len(gens) == 1:
        (rv, rp), (gv, gp) = next(iter(refs.items())), next(iter(gens.items()))
        pairs.append(IRPairPaths(rv if rv is not None else gv, rp, gp))
        notes.append(f"paired {rp.name} with {gp.name}: the only file on each side (names differ)")
        ur, ug = [], []
    return IRInventory(pairs, ur, ug, notes)


@dataclass(frozen=True)
class IRPair:
    variant: str | None
    reference: IRFile
    generated: IRFile


def load_pair(pair: IRPairPaths, *, damaged_ok: bool = False, max_lines: int | None = None) -> IRPair:
    """Load both sides of a pair (InputError on either bad file, naming it). With ``damaged_ok`` a
    truncated file loads, with its :attr:`IRFile.damage`, so a diff can show what is there; stage F,
    which draws conclusions from the pair, keeps the default and refuses it. ``max_lines``: see
    :func:`load_ir` (the IR diff passes :data:`MAX_DIFF_LINES`)."""
    return IRPair(
        pair.variant,
        load_ir(pair.reference, "reference", pair.variant, damaged_ok=damaged_ok, max_lines=max_lines),
        load_ir(pair.generated, "generated", pair.variant, damaged_ok=damaged_ok, max_lines=max_lines),
    )
