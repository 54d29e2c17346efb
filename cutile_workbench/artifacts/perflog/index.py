"""A perf log's byte-offset index: where each test's section lies, so a one-config question seeks (issue 31 item 2).

Why: a 1,000-config raw log is ~17 MB (10,000: ~170 MB); parsing it whole to answer for one config
(``timeline --config``) costs seconds and memory in proportion to every config. One streaming pass
(1 MiB chunks, no JSON decoded, no text kept) records the byte range of each test's section; the
question then reads and parses that config's sections alone.

Contract:
- :func:`log_index` ``(path, kernel_dir=None)``: the :class:`LogIndex` of the file's bytes (read through
  :func:`~cutile_workbench.artifacts.confine.iter_regular`: regular file, size cap, confinement), kept
  in memory for the process and in the user cache (derive_cache's plain format, kind ``perflog_index``)
  keyed on the SHA-256 of the bytes: a changed log is a new index, never a stale offset.
- A **section** starts at a pytest test line (``path.py::...[id]`` at the start of a line, ANSI colours
  allowed) and ends where the next one starts or at the first ``=====`` line after it (the summary,
  which is the **tail**: kept apart and read with every question, so a ``FAILED`` there is seen).
  ``sections[id]`` lists the ranges of every section of test id ``id`` (the bracket text).
- ``usable`` is False (with ``why``) when the layout cannot be cut safely: xdist's ``[gwN]`` lines
  (sections interleave), a record block whose ``nodeid:`` line names another test than its section's,
  or no test line at all. Callers then parse the whole log, as before.
- ``frameworks``: the record blocks' ``framework:`` lines (what E's candidate frameworks are, without a
  parse), None unless there is exactly one per record block.
- :func:`config_text` ``(index, params)``: the bytes of every section whose test id is ``params`` or
  ends with ``-params`` (the backend token before it), then the tail, read by seeking; None when no
  section names it. Callers parse that text and keep the records of ``params`` alone, and fall back to
  the whole log on any problem the parse reports (its line numbers are those of the cut text).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cutile_workbench.artifacts.perflog.printer import MARKER

_ANSI = rb"(?:\x1b\[[0-9;]*[A-Za-z])*"
_TEST_LINE = re.compile(_ANSI + rb"([^\s\[\]\x1b]+\.py::[^\s\[]+)\[")
_NODEID_LINE = re.compile(_ANSI + rb"nodeid: (\S.*?)\s*$")
_SUMMARY = re.compile(_ANSI + rb"={5,}")
_XDIST = re.compile(_ANSI + rb"\[gw\d+\]")
_MARKER = MARKER.encode()
#: bump when the index's shape or rules change (old cached indexes are ignored)
VERSION = 1


@dataclass(frozen=True)
class LogIndex:
    """Where each test's section of one perf log lies (see the module contract)."""

    path: str
    digest: str  # SHA-256 of the bytes indexed
    size: int
    sections: dict[str, tuple[tuple[int, int], ...]]  # test id -> (start, end) byte ranges
    tail: tuple[int, int]
    usable: bool
    why: str = ""
    #: the ``framework:`` lines of the record blocks, sorted; None unless every block has exactly one
    frameworks: tuple[str, ...] | None = None


_MEMO: dict[tuple[str, str], LogIndex] = {}


def _digest(path: Path, kernel_dir: Path | None) -> tuple[str, int]:
    from cutile_workbench.artifacts.confine import iter_regular

    h, size = hashlib.sha256(), 0
    for chunk in iter_regular(path, kind="perf log", kernel_dir=kernel_dir):
        h.update(chunk)
        size += len(chunk)
    return h.hexdigest(), size


def log_index(path: Path | str, *, kernel_dir: Path | str | None = None) -> LogIndex:
    """The index of ``path``'s bytes (module contract); InputError/UnsafePath as the confined reader."""
    from cutile_workbench.artifacts.derive_cache import CacheMiss, load_value, store_value

    p = Path(path)
    kdir = Path(kernel_dir) if kernel_dir is not None else None
    digest, size = _digest(p, kdir)
    key = hashlib.sha256(f"perflog-index v{VERSION}\0{p}\0{digest}".encode()).hexdigest()
    hit = _MEMO.get((str(p), key))
    if hit is not None:
        return hit
    try:
        got = load_value("perflog_index", key, LogIndex)
        index = got if isinstance(got, LogIndex) and (got.digest, got.size) == (digest, size) else None
    except CacheMiss:
        index = None
    if index is None:
        index = _build(p, kdir, digest)
        store_value("perflog_index", key, index)
    if len(_MEMO) >= 8:
        _MEMO.clear()
    _MEMO[(str(p), key)] = index
    return index


def _close_bracket(line: bytes, start: int) -> int:
    """The index of the ``]`` closing the ``[`` at ``start - 1`` (ids may hold brackets), or -1."""
    depth = 1
    for i in range(start, len(line)):
        c = line[i]
        if c == 0x5B:  # [
            depth += 1
        elif c == 0x5D:  # ]
            depth -= 1
            if depth == 0:
                return i
    return -1


def _build(path: Path, kernel_dir: Path | None, digest: str) -> LogIndex:
    from cutile_workbench.artifacts.confine import iter_regular

    sections: dict[str, list[tuple[int, int]]] = {}
    current: tuple[str, str, int] | None = None  # (test id, nodeid, start)
    pos, tail_start = 0, -1
    why = ""
    rest = b""
    markers = 0
    frameworks: list[str] = []

    def lines() -> Iterator[bytes]:
        nonlocal rest
        for chunk in iter_regular(path, kind="perf log", kernel_dir=kernel_dir):
            data = rest + chunk
            cut = data.rfind(b"\n") + 1
            rest = data[cut:]
            yield from data[:cut].splitlines(keepends=True)
        if rest:
            yield rest

    for line in lines():
        start, pos = pos, pos + len(line)
        if tail_start >= 0:
            continue
        m = _TEST_LINE.match(line)
        if m is not None:
            close = _close_bracket(line, m.end())
            if close > 0:
                if current is not None:
                    sections.setdefault(current[0], []).append((current[2], start))
                test_id = line[m.end() : close].decode("utf-8", "surrogateescape")
                nodeid = line[m.start(1) : close + 1].decode("utf-8", "surrogateescape")
                current = (test_id, nodeid, start)
                continue
        if current is not None and _SUMMARY.match(line):
            sections.setdefault(current[0], []).append((current[2], start))
            current, tail_start = None, start
            continue
        if _MARKER in line:
            markers += 1
        elif line.startswith(b"framework: "):
            frameworks.append(line[11:].strip().decode("utf-8", "surrogateescape"))
        if not why and _XDIST.match(line):
            why = "xdist worker lines: test sections interleave"
        if not why and current is not None and line.startswith(b"nodeid: "):
            n = _NODEID_LINE.match(line)
            named = n.group(1).decode("utf-8", "surrogateescape") if n else ""
            if named != current[1]:
                why = f"a record block names {named!r} inside the section of {current[1]!r}"
        if not why and current is None and tail_start < 0 and _MARKER in line:
            why = "a record block before the first test line"
    if current is not None:
        sections.setdefault(current[0], []).append((current[2], pos))
    if tail_start < 0:
        tail_start = pos
    if not sections and not why:
        why = "no test line"
    return LogIndex(
        path=str(path),
        digest=digest,
        size=pos,
        sections={k: tuple(v) for k, v in sections.items()},
        tail=(tail_start, pos),
        usable=not why,
        why=why,
        frameworks=tuple(sorted(set(frameworks))) if len(frameworks) == markers else None,
    )


def config_text(index: LogIndex, params: str) -> bytes | None:
    """The sections naming ``params`` and the tail, read by seeking (module contract); None if none."""
    ranges = sorted(
        r
        for test_id, rs in index.sections.items()
        if test_id == params or test_id.endswith("-" + params)
        for r in rs
    )
    if not ranges:
        return None
    out = []
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(index.path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size != index.size:
            return None  # replaced since it was indexed: the caller parses the whole log
        for a, b in [*ranges, index.tail]:
            fh.seek(a)
            out.append(fh.read(b - a))
    return b"".join(out)


def forget() -> None:
    """Drop the in-memory indexes (tests: what a new process starts with)."""
    _MEMO.clear()
