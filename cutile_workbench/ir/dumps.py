"""Tile IR dumped during a real run: markers in the raw log, and their parser (pure).

Why: cutile-rs prints the Tile IR it generates to stderr at JIT time when ``CUTILE_DUMP=ir``
(cutile-compiler ``dump.rs``: ``=== CUTILE DUMP: ir (<module>) ===`` … ``=== END ir ===``), and
cuTile Python writes one ``*.tileir`` file per compile into ``CUDA_TILE_DUMP_TILEIR=<dir>``. Neither
says which test (config) or which autotune candidate the compile belonged to. With ``run
--dump-ir`` the runner sets ``WORKBENCH_IR_MARKERS=1`` and our plugin / autotuner twin write marker
lines straight to fd 2 — the same stream, so their order relative to the dumps is exact:

- ``=== workbench test: <nodeid> ===`` before each test (plugin, ``pytest_runtest_logstart``);
- ``=== workbench tileir files: <nodeid> :: a.tileir,b.tileir ===`` after it, naming the cuTile
  dump files that appeared in the dump dir during that test;
- ``=== workbench autotune config: <cfg> ===`` before the autotuner twin's warm-up of a config
  (where the JIT compile happens), and ``=== workbench autotune result: <cfg> median_ms=<x> ===``.

Contract: :func:`parse` turns a raw log into :class:`DumpedRun` (cutile-rs IR blocks with the test
and autotune config they were compiled in, autotune results, cuTile file names per test).
:func:`chosen_candidate_ir` picks, per test, the block of the autotune config with the lowest
median (what the autotuner ran), else the test's last block, else the latest earlier block of the
same module (a cached compile). Nothing here touches the file system.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

MARKER_ENV = "WORKBENCH_IR_MARKERS"
TEST_MARKER = "=== workbench test: {nodeid} ==="
FILES_MARKER = "=== workbench tileir files: {nodeid} :: {names} ==="
AUTOTUNE_MARKER = "=== workbench autotune config: {cfg} ==="
RESULT_MARKER = "=== workbench autotune result: {cfg} median_ms={ms} ==="

_TEST = re.compile(r"^=== workbench test: (?P<nodeid>.+) ===$")
_FILES = re.compile(r"^=== workbench tileir files: (?P<nodeid>.+) :: (?P<names>.*) ===$")
_AUTOTUNE = re.compile(r"^=== workbench autotune config: (?P<cfg>.*) ===$")
_RESULT = re.compile(r"^=== workbench autotune result: (?P<cfg>.*) median_ms=(?P<ms>\S+) ===$")
_BEGIN = re.compile(r"^=== CUTILE DUMP: (?P<label>\w+) \((?P<module>[^)]*)\) ===$")
_END = re.compile(r"^=== END (?P<label>\w+) ===$")


def markers_on() -> bool:
    return os.environ.get(MARKER_ENV) == "1"


def emit(line: str) -> None:
    """Write one marker line to fd 2 unbuffered (same stream as cutile-rs's dumps)."""
    if markers_on():
        os.write(2, f"\n{line}\n".encode("utf-8", "replace"))


@dataclass(frozen=True)
class IRBlock:
    """One ``=== CUTILE DUMP: ir (...) ===`` block."""

    module: str
    text: str
    line: int  # 1-based line of the header in the raw log
    nodeid: str | None  # the test it was compiled in
    autotune_cfg: str | None  # the autotune candidate being warmed up when it was compiled


@dataclass
class DumpedRun:
    blocks: list[IRBlock] = field(default_factory=list)
    #: nodeid -> [(cfg, median_ms)] in the order the autotuner measured them
    autotune: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    #: nodeid -> cuTile dump file names that appeared during that test
    tileir_files: dict[str, list[str]] = field(default_factory=dict)
    tests: list[str] = field(default_factory=list)
    unterminated: int = 0  # blocks cut off by the end of the log (not used)


def parse(text: str) -> DumpedRun:
    out = DumpedRun()
    nodeid: str | None = None
    cfg: str | None = None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\r")
        if m := _TEST.match(line):
            nodeid, cfg = m.group("nodeid"), None
            out.tests.append(nodeid)
        elif m := _FILES.match(line):
            names = [n for n in m.group("names").split(",") if n]
            out.tileir_files.setdefault(m.group("nodeid"), []).extend(names)
        elif m := _AUTOTUNE.match(line):
            cfg = m.group("cfg")
        elif m := _RESULT.match(line):
            try:
                ms = float(m.group("ms"))
            except ValueError:
                ms = float("inf")
            out.autotune.setdefault(nodeid or "", []).append((m.group("cfg"), ms))
        elif (m := _BEGIN.match(line)) and m.group("label") == "ir":
            start = i
            body: list[str] = []
            i += 1
            while i < len(lines) and not _END.match(lines[i].rstrip("\r")):
                body.append(lines[i].rstrip("\r"))
                i += 1
            if i >= len(lines):
                out.unterminated += 1
                break
            out.blocks.append(
                IRBlock(m.group("module"), "\n".join(body).strip("\n") + "\n", start + 1, nodeid, cfg)
            )
        i += 1
    return out


def chosen_candidate_ir(run: DumpedRun, nodeid: str) -> tuple[IRBlock | None, str]:
    """The IR that ran for ``nodeid`` and how it was chosen (a sentence for the UI)."""
    own = [b for b in run.blocks if b.nodeid == nodeid]
    pos = run.tests.index(nodeid) if nodeid in run.tests else -1
    earlier = [b for b in run.blocks if b.nodeid in run.tests and run.tests.index(b.nodeid) < pos]
    results = run.autotune.get(nodeid, [])
    if results:
        best_cfg, best_ms = min(results, key=lambda r: r[1])
        tail = f"the autotuner's best config {best_cfg} ({best_ms:.4f} ms of {len(results)} configs)"
        hits = [b for b in own if b.autotune_cfg == best_cfg]
        if hits:
            return hits[-1], f"compiled in this test for {tail}"
        hits = [b for b in earlier if b.autotune_cfg == best_cfg]
        if hits:
            return hits[-1], (
                f"compiled in an earlier test ({hits[-1].nodeid}) for the same autotune config: "
                f"a JIT cache hit here; {tail}"
            )
    if own:
        return own[-1], "compiled in this test (last Tile IR compiled there)"
    if earlier:
        b = earlier[-1]
        return b, f"not recompiled in this test: the latest earlier compile (in {b.nodeid}) is shown"
    return None, "no Tile IR was dumped for this test"
