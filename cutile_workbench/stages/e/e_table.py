"""E's ratio table, assembled in ONE place and computed once per set of inputs.

Contract of :func:`load_e_table` (the single door: ``table``, ``report e``, ``report f``, the TUI):

- Inputs: the raw candidate log(s) (:func:`candidate_raw_logs`: the ``.full.txt``
  tee when present, the per-variant logs, or a supplied raw log text), the two baseline logs
  (``baseline_perf_cutile.txt``, ``baseline_perf_triton_tileir.txt``), analysis.json (the
  workspace's, or the one given), the bootstrap's ``seed`` and ``n_boot``. The table is
  :func:`cutile_workbench.stages.e.stats.build_ratio_table` of them — no other assembly exists.
- Cache: keyed on the SHA-256 of every input's bytes plus :data:`CACHE_VERSION`, the package
  version and the source of the modules that decide the table (stats, parser, analysis, model,
  report_e, and every module they import: :func:`cutile_workbench.infra.codekey.code_key`), so a
  changed log (or analysis.json, or code) is a miss, never a stale table. Kept in
  memory for the process and in ``<user cache>/e_tables/<key>.json`` (the plain, validated format
  of :mod:`cutile_workbench.artifacts.derive_cache`: no pickle; least recently used pruned) — never in
  the kernel dir: ``table``, ``--dry-run`` and the TUI promise to write nothing there, and the
  recorded sessions are read-only. A cache file that is unreadable, of another key, changed since
  it was written, or fails validation is a miss (recomputed), never trusted.
  A stored table with a non-finite number is recomputed too.
- Per row (issue 31): on a miss the table is built with the rows' bootstraps found in
  :mod:`cutile_workbench.stages.e.row_boots` (one file per kernel dir, seed, n_boot and code; each row
  keyed on its own key and samples), so after a re-run of one config that row alone is drawn again
  and the whole-table facts are combined from the stored rows (:func:`~cutile_workbench.stages.e.stats.build_ratio_table`).
- :class:`ETable` gives the table and, parsed on first use only, the candidate log, the parsed raw
  logs and the baseline logs (a cache hit parses nothing until a caller needs the records).
- ``Blocked`` without a candidate log; ``InputError`` (file, line) for a malformed one — raised on a
  miss exactly as the parser raises them; a hit needs no parse, so the inputs it was built from were
  already accepted.
"""

from __future__ import annotations

import copy
import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cutile_workbench.artifacts.derive_cache import (
    CacheMiss,
    cache_path,
    code_key_cached,
    load_value,
    store_value,
)
from cutile_workbench.errors import Blocked
from cutile_workbench.model import PerfLog, RatioTable

if TYPE_CHECKING:
    from cutile_workbench.artifacts.analysis import Analysis
    from cutile_workbench.artifacts.perflog.index import LogIndex
    from cutile_workbench.artifacts.workspace import Workspace

#: bump when the table's rules or its dataclasses change shape (old caches become misses)
CACHE_VERSION = 2  # 2: every row's bootstrap from its own stream (issue 31)
_MEMORY: dict[str, tuple[RatioTable, tuple[str, ...]]] = {}  # every caller gets its own (deep) copy
_BASELINES = ("cutile", "triton_tileir")


@dataclass
class ETable:
    """E's table of one workspace and (lazily) the logs it was built from."""

    table: RatioTable
    key: str  # hash of the inputs
    from_cache: bool
    raw_logs: list[RawLog]
    notes: list[str]
    _ws: Workspace = field(repr=False)
    _frameworks: tuple[str, ...] | None = field(default=None, repr=False)
    _parsed: list[tuple[RawLog, PerfLog]] | None = field(default=None, repr=False)
    _candidate: PerfLog | None = field(default=None, repr=False)

    def _parse(self) -> None:
        if self._parsed is None:
            from cutile_workbench.artifacts.perflog.parser import parse_perf_log

            self._parsed = [(r, parse_perf_log(r.path, text=r.text, strict=True)) for r in self.raw_logs]
            self._candidate = merge_logs(str(self._parsed[0][0].path), [p for _, p in self._parsed])
            self._candidate.notes.extend(self.notes)

    @property
    def candidate_frameworks(self) -> tuple[str, ...]:
        """The frameworks of the candidate's records (kept with the cached table: no parse on a hit)."""
        if self._frameworks is None:
            self._frameworks = tuple(sorted({r.framework for r in self.candidate.records}))
        return self._frameworks

    @property
    def candidate(self) -> PerfLog:
        """The merged candidate log (parsed strictly on first use)."""
        self._parse()
        assert self._candidate is not None
        return self._candidate

    @property
    def parsed(self) -> list[tuple[RawLog, PerfLog]]:
        self._parse()
        assert self._parsed is not None
        return self._parsed

    def loaded_logs(self) -> dict[str, PerfLog]:
        """Each raw candidate log parsed so far, by path string ({} before the first parse; nothing is
        parsed here): what a caller reading the same files (the history import) need not parse again."""
        if self._parsed is None:
            return {}
        return {str(raw.path): log for raw, log in self._parsed if raw.text is not None}

    @property
    def baselines(self) -> dict[str, PerfLog]:
        """The baseline logs present (``cutile``, ``triton_tileir``), parsed strictly on first use
        (the workspace keeps them parsed)."""
        return {k: v for k, v in self._ws.baseline_logs().items() if not k.startswith("cutile_rs")}


# --------------------------------------------------------------------------- the candidate's raw logs

PERF_LOG = "perf_cutile_rs.txt"
_SAFE_VARIANT = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class RawLog:
    """One raw candidate log E sanitizes: the main one, or one variant's (multi-variant kernels)."""

    variant: str | None
    out_relpath: str  # perf_cutile_rs.txt | perf_cutile_rs_<variant>.txt
    full_relpath: str  # reports/agent_logs/perf_cutile_rs[_<variant>].full.txt
    path: Path  # where the text came from (messages)
    source: str  # human description for agent_e.md
    text: str
    full_exists: bool
    #: ``text`` is the file ``path``'s bytes (not supplied by a caller): its digest is the file's
    from_file: bool = False


def _read_text(path: Path, kernel_dir: Path) -> str:
    """A raw log of the kernel dir: a regular file, capped, resolving inside the kernel dir (issue 25)."""
    from cutile_workbench.artifacts.confine import read_regular

    return read_regular(path, kind="perf log", kernel_dir=kernel_dir).decode("utf-8", "surrogateescape")


def candidate_raw_logs(
    ws: Workspace, *, raw_log_text: str | None = None, raw_log_path: Path | None = None
) -> tuple[list[RawLog], list[str]]:
    """The raw candidate logs to sanitize (main first, then variants) and notes on skipped ones."""
    paths = ws.paths
    out: list[RawLog] = []
    notes: list[str] = []

    def rel(p: Path) -> str:
        return os.path.relpath(p, paths.root).replace(os.sep, "/")

    full_rel = rel(paths.perf_full_log)
    if raw_log_text is not None:
        out.append(
            RawLog(
                None,
                PERF_LOG,
                full_rel,
                raw_log_path or paths.perf_full_log,
                str(raw_log_path) if raw_log_path else "supplied raw log text",
                raw_log_text,
                paths.perf_full_log.is_file(),
            )
        )
    else:
        found = ws.raw_log_path()
        if found is not None:
            out.append(
                RawLog(
                    None,
                    PERF_LOG,
                    full_rel,
                    found,
                    rel(found),
                    _read_text(found, paths.root),
                    paths.perf_full_log.is_file(),
                    from_file=True,
                )
            )
    for v in ws.variant_names():
        if not _SAFE_VARIANT.match(v):
            notes.append(f"variant {v!r}: name is not file-name safe; its per-variant log is ignored")
            continue
        full, sanitized = paths.perf_full_log_variant(v), paths.perf_cutile_rs_variant(v)
        src = full if full.is_file() else sanitized if sanitized.is_file() else None
        if src is not None:
            out.append(
                RawLog(
                    v,
                    rel(sanitized),
                    rel(full),
                    src,
                    rel(src),
                    _read_text(src, paths.root),
                    full.is_file(),
                    from_file=True,
                )
            )
    return out, notes


def merge_logs(path: str, logs: list[PerfLog]) -> PerfLog:
    """One candidate PerfLog from several (first record of a config wins; later duplicates noted)."""
    merged = PerfLog(path=path)
    seen: set[tuple[str, str]] = set()
    for log in logs:
        merged.notes.extend(log.notes)
        merged.truncated = merged.truncated or log.truncated
        for rec in log.records:
            if rec.row_key in seen:
                merged.notes.append(f"{log.path}: {rec.nodeid} also appears in an earlier log; first kept")
                continue
            seen.add(rec.row_key)
            merged.records.append(rec)
        merged.outcomes.extend(log.outcomes)
    return merged


def load_candidate(
    ws: Workspace, *, raw_log_text: str | None = None, raw_log_path: Path | None = None
) -> tuple[PerfLog, list[tuple[RawLog, PerfLog]], list[str]]:
    """Parse (strictly) every raw candidate log and merge them; Blocked when there is none."""
    from cutile_workbench.artifacts.perflog.parser import parse_perf_log

    raws, notes = candidate_raw_logs(ws, raw_log_text=raw_log_text, raw_log_path=raw_log_path)
    if not raws:
        raise Blocked(
            "no candidate perf log: neither reports/agent_logs/perf_cutile_rs.full.txt nor "
            "perf_cutile_rs.txt (nor a per-variant log) exists",
            path=str(ws.paths.perf_cutile_rs),
        )
    parsed = [(r, parse_perf_log(r.path, text=r.text, strict=True)) for r in raws]
    merged = merge_logs(str(parsed[0][0].path), [p for _, p in parsed])
    merged.notes.extend(notes)
    return merged, parsed, notes


# --------------------------------------------------------------------------- the cache


_CODE: list[str] = []


def _code_fingerprint() -> str:
    """Hash of the modules that decide the table's content: an edited rule is a miss, not a stale hit.
    These roots and their whole import closure (:mod:`cutile_workbench.infra.codekey`): the bootstrap,
    the test ids and the printer count as much as the stats."""
    if not _CODE:
        _CODE.append(
            code_key_cached(
                (
                    "cutile_workbench.artifacts.analysis",
                    "cutile_workbench.model",
                    "cutile_workbench.artifacts.perflog.parser",
                    "cutile_workbench.stages.e.report",
                    "cutile_workbench.stages.e.stats",
                    "cutile_workbench.stages.e.e_table",
                    "cutile_workbench.clock_exposure",
                )
            )
        )
    return _CODE[0]


def inputs_key(
    ws: Workspace, raws: list[RawLog], analysis: Analysis | None, *, seed: int, n_boot: int
) -> str:
    """SHA-256 over every input of the table (see module contract)."""
    h = _head(ws, seed, n_boot)
    candidates = []
    for r in raws:
        digest = hashlib.sha256(r.text.encode("utf-8", "surrogateescape")).hexdigest()
        if r.from_file:
            ws.remember_digest(r.path, digest)  # the same bytes: every other key of this file reuses it
        candidates.append((r.variant, digest))
    baselines = [(key, ws.digest(getattr(ws.paths, f"baseline_{key}"))) for key in _BASELINES]
    return _key(h, candidates, baselines, analysis, ws)


def _head(ws: Workspace, seed: int, n_boot: int) -> hashlib._Hash:
    from cutile_workbench import __version__

    return hashlib.sha256(
        f"e-table v{CACHE_VERSION} workbench {__version__} code {_code_fingerprint()} "
        f"seed={seed} n_boot={n_boot} kernel={ws.kernel}\0".encode()  # the table names its kernel
    )


def _key(
    h: hashlib._Hash,
    candidates: list[tuple[str | None, str]],
    baselines: list[tuple[str, str]],
    analysis: Analysis | None,
    ws: Workspace,
) -> str:
    """The inputs' part of :func:`inputs_key`: each log by the SHA-256 of its bytes (the text read with
    surrogateescape encodes back to exactly those bytes), so a streaming reader that hashed the file
    (:mod:`cutile_workbench.artifacts.perflog.index`) gets the same key without holding the text."""
    for variant, digest in candidates:
        h.update(f"candidate {variant} {digest}\0".encode())
    for key, digest in baselines:
        h.update(f"\0baseline {key} {digest}\0".encode())
    if analysis is not None:
        path = Path(analysis.path)
        digest = ws.digest(path) if path.is_file() else hashlib.sha256(repr(analysis).encode()).hexdigest()
        h.update(f"\0analysis {digest}\0".encode())
    return h.hexdigest()


def _cache_file(key: str) -> Path:
    return cache_path("e_tables", key)


def _load_cached(path: Path, key: str) -> tuple[RatioTable, tuple[str, ...]] | None:
    try:
        doc = load_value("e_tables", key, tuple[RatioTable, tuple[str, ...]])
    except CacheMiss:  # absent, a link, changed, foreign or invalid: recompute
        return None
    return (doc[0], doc[1]) if _finite_table(doc[0]) else None


def _finite_table(t: RatioTable) -> bool:
    """Every number of a stored table is a finite float (the stats never make another): else recompute."""
    nums: list[object] = [t.geomean, *(t.geomean_ci or ()), *t.variant_geomeans.values()]
    for r in t.rows:
        nums += [r.ratio, r.ci_low, r.ci_high, r.baseline_ms, r.candidate_ms]
    return all(n is None or (isinstance(n, float | int) and math.isfinite(n)) for n in nums)


def load_e_table(
    ws: Workspace,
    *,
    raw_log_text: str | None = None,
    raw_log_path: Path | None = None,
    analysis: Analysis | None = None,
    seed: int = 0,
    n_boot: int = 2000,
    use_cache: bool = True,
) -> ETable:
    """E's table for ``ws`` (see module contract)."""
    analysis = analysis if analysis is not None else ws.analysis
    raws, notes = candidate_raw_logs(ws, raw_log_text=raw_log_text, raw_log_path=raw_log_path)
    if not raws:
        raise Blocked(
            "no candidate perf log: neither reports/agent_logs/perf_cutile_rs.full.txt nor "
            "perf_cutile_rs.txt (nor a per-variant log) exists",
            path=str(ws.paths.perf_cutile_rs),
        )
    key = inputs_key(ws, raws, analysis, seed=seed, n_boot=n_boot)
    hit: tuple[RatioTable, tuple[str, ...]] | None = None
    if use_cache and key in _MEMORY:
        hit = copy.deepcopy(_MEMORY[key])
    path = _cache_file(key)
    if hit is None and use_cache:
        hit = _load_cached(path, key)
    if hit is not None:
        return ETable(
            table=hit[0], key=key, from_cache=True, raw_logs=raws, notes=notes, _ws=ws, _frameworks=hit[1]
        )
    from cutile_workbench.stages.e.row_boots import RowBootFile
    from cutile_workbench.stages.e.stats import build_ratio_table

    result = ETable(table=None, key=key, from_cache=False, raw_logs=raws, notes=notes, _ws=ws)  # type: ignore[arg-type]
    boots = (
        RowBootFile.open(ws.paths.root, seed=seed, n_boot=n_boot, code=_code_fingerprint())
        if use_cache and n_boot > 0
        else None
    )
    result.table = build_ratio_table(
        ws.kernel, result.candidate, result.baselines, analysis, n_boot=n_boot, seed=seed, row_boots=boots
    )
    if boots is not None:
        boots.flush()
    if use_cache:
        store_value("e_tables", key, (result.table, result.candidate_frameworks))
        if len(_MEMORY) >= 8:  # a process looks at a few kernels; keep it bounded
            _MEMORY.clear()
        _MEMORY[key] = copy.deepcopy((result.table, result.candidate_frameworks))
    return result


def cheap_table(ws: Workspace) -> RatioTable:
    """Every row's medians and ratio without the bootstrap (issue 31 §3: what a face paints first).

    The floor's work: the logs parsed (once per process, :func:`~cutile_workbench.artifacts.perflog.parser.parse_perf_log`)
    and matched by :func:`cutile_workbench.stages.e.stats.build_ratio_table` with ``n_boot=0`` — the one
    assembly, so rows, statuses, medians, ratios, geomean and severity are :func:`load_e_table`'s; the
    CIs are None (pending, not "none"); the verdict does not read them, ``inconclusive`` does (False
    here: unknown until the full table). Nothing is cached, no capture is read. ``Blocked`` without a
    candidate log, ``InputError`` for a malformed one (as :func:`load_e_table`)."""
    from cutile_workbench.stages.e.stats import build_ratio_table

    raws, notes = candidate_raw_logs(ws)
    if not raws:
        raise Blocked(
            "no candidate perf log: neither reports/agent_logs/perf_cutile_rs.full.txt nor "
            "perf_cutile_rs.txt (nor a per-variant log) exists",
            path=str(ws.paths.perf_cutile_rs),
        )
    logs = ETable(table=None, key="", from_cache=False, raw_logs=raws, notes=notes, _ws=ws)  # type: ignore[arg-type]
    return build_ratio_table(ws.kernel, logs.candidate, logs.baselines, ws.analysis, n_boot=0)


# --------------------------------------------------------------------------- one config's rows


def load_config_table(ws: Workspace, params: str, *, seed: int = 0, n_boot: int = 2000) -> RatioTable:
    """E's table reduced to the rows of config ``params`` (issue 31 item 2: a one-config question seeks).

    The rows are :func:`load_e_table`'s for that config, to the last CI digit (every row's bootstrap is
    its own stream): taken from the whole table when it is in memory or in the cache (its key computed
    from streamed digests, no log text held), else built by
    :func:`~cutile_workbench.stages.e.stats.build_ratio_table` from that config's sections alone —
    found by each log's byte-offset index (:mod:`cutile_workbench.artifacts.perflog.index`), read by
    seeking and parsed strictly. The whole table is built instead (as before) when the cut is not
    safe: variant logs, an index that is not ``usable``, a section whose parse reports anything (its
    line numbers would be the cut text's), a candidate section without a record, a baseline section
    without a record of its own backend, or no row of ``params``. The geomean, severity and verdict
    of the result are that config's, not the kernel's. Errors as :func:`load_e_table`."""
    import dataclasses

    from cutile_workbench.artifacts.perflog.index import config_text
    from cutile_workbench.artifacts.perflog.parser import parse_perf_log
    from cutile_workbench.errors import WorkbenchError
    from cutile_workbench.stages.e.stats import _LOG_FRAMEWORK, build_ratio_table

    def whole() -> RatioTable:
        table = load_e_table(ws, seed=seed, n_boot=n_boot).table
        return dataclasses.replace(table, rows=[r for r in table.rows if r.params == params])

    indexed = _indexed_logs(ws)
    if indexed is None:  # variant logs, no log, or an index error: the whole path's rule (located)
        return whole()
    found, cand_idx, base_idx = indexed
    analysis = ws.analysis
    hit = _cached_whole(ws, cand_idx, base_idx, seed=seed, n_boot=n_boot)
    if hit is not None:
        # its own copy (the _MEMORY contract): the rows are frozen, the table's lists are not
        return copy.deepcopy(dataclasses.replace(hit[0], rows=[r for r in hit[0].rows if r.params == params]))
    if not cand_idx.usable or not all(i.usable for i in base_idx.values()):
        return whole()
    cut = config_text(cand_idx, params)
    if cut is None:
        return whole()
    try:
        candidate = parse_perf_log(
            found, text=cut.decode("utf-8", "surrogateescape"), strict=True, memo=False
        )
        baselines: dict[str, PerfLog] = {}
        for name, idx in base_idx.items():
            text = config_text(idx, params)
            log = (
                PerfLog(path=idx.path)
                if text is None
                else parse_perf_log(
                    idx.path, text=text.decode("utf-8", "surrogateescape"), strict=True, memo=False
                )
            )
            own = [r for r in log.records if r.framework == _LOG_FRAMEWORK[name]]
            if log.notes or (log.records and not own):
                return whole()
            baselines[name] = log
    except WorkbenchError:
        return whole()
    if candidate.notes or not candidate.records:
        return whole()
    table = build_ratio_table(ws.kernel, candidate, baselines, analysis, n_boot=n_boot, seed=seed)
    rows = [r for r in table.rows if r.params == params]
    if not rows:
        return whole()
    return dataclasses.replace(table, rows=rows, notes=[])


def cheap_frameworks(ws: Workspace, *, seed: int = 0, n_boot: int = 2000) -> tuple[str, ...] | None:
    """The candidate records' frameworks without parsing the log (issue 31 item 2): those kept with the
    cached whole table when it is there, else the ``framework:`` lines the log's index counted (one
    per record block); None when neither holds (variant logs, an unusable index): parse instead."""
    indexed = _indexed_logs(ws)
    if indexed is None:
        return None
    _found, idx, base_idx = indexed
    hit = _cached_whole(ws, idx, base_idx, seed=seed, n_boot=n_boot)
    if hit is not None:
        return hit[1]
    return idx.frameworks if idx.usable else None


def _indexed_logs(ws: Workspace) -> tuple[Path, LogIndex, dict[str, LogIndex]] | None:
    """The candidate log and the byte-offset indexes of it and of each baseline log present, for the
    one-config paths above; None when they do not apply: no candidate log, variant logs (several
    candidate logs merge: the whole table's rule), or an index that could not be built (the whole
    path reports it, located)."""
    if "indexed_logs" not in ws._cache:  # once per workspace: each log streamed once for its index
        ws._cache["indexed_logs"] = _index_logs(ws)
    found: tuple[Path, LogIndex, dict[str, LogIndex]] | None = ws._cache["indexed_logs"]
    return found


def _index_logs(ws: Workspace) -> tuple[Path, LogIndex, dict[str, LogIndex]] | None:
    from cutile_workbench.artifacts.perflog.index import log_index
    from cutile_workbench.errors import WorkbenchError

    paths = ws.paths
    found = ws.raw_log_path()
    if found is None or any(
        paths.perf_full_log_variant(v).is_file() or paths.perf_cutile_rs_variant(v).is_file()
        for v in ws.variant_names()
    ):
        return None
    try:
        cand_idx = log_index(found, kernel_dir=paths.root)
        base_idx = {
            key: log_index(getattr(paths, f"baseline_{key}"), kernel_dir=paths.root)
            for key in _BASELINES
            if getattr(paths, f"baseline_{key}").is_file()
        }
    except WorkbenchError:
        return None
    for idx in (cand_idx, *base_idx.values()):  # the index hashed the bytes: every other key reuses it
        ws.remember_digest(Path(idx.path), idx.digest)
    return found, cand_idx, base_idx


def _cached_whole(
    ws: Workspace, cand_idx: LogIndex, base_idx: dict[str, LogIndex], *, seed: int, n_boot: int
) -> tuple[RatioTable, tuple[str, ...]] | None:
    """The whole table (and its candidate frameworks) in memory or in the cache, found by the key
    :func:`inputs_key` gives, computed from the indexes' streamed digests (no log text held; a
    missing baseline hashes as empty bytes, as :func:`_read` reads it)."""
    empty = hashlib.sha256(b"").hexdigest()
    key = _key(
        _head(ws, seed, n_boot),
        [(None, cand_idx.digest)],
        [(k, base_idx[k].digest if k in base_idx else empty) for k in _BASELINES],
        ws.analysis,
        ws,
    )
    return _MEMORY.get(key) or _load_cached(_cache_file(key), key)
