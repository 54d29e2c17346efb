"""Per-config capture store: ``launches.json.gz`` as one gzip member per launch set, plus an index.

Why: a one-config question (``timeline --config``, the Timeline screen, one F row) must cost memory
in proportion to that config, not to the session (a 10,000-config file parsed whole needs GiBs).

Layout (still exactly the v1 document ``{"version": 1, "sets": [...]}`` of :mod:`cutile_workbench.artifacts.launches_io`
when decompressed whole, so every reader of the old format keeps working):

- ``launches.json.gz``: gzip members concatenated: a head ``{"version":1,"sets":[``, one member per
  launch set (``,``-prefixed after the first), a tail ``]}``.
- ``launches.idx.json`` beside it: ``{"version": 2, "data_size", "data_mtime_ns", "data_sha256",
  "entries": [[nodeid, backend, params, source, calls, offset, length], ...]}`` — byte range of each
  set's member, and the sha256 of the data file it describes; since issue 31 also ``"columns"``:
  ``{"version", "size", "sha256"}`` of the columns file (old readers ignore the key).
- ``launches.cols.npz`` beside it (issue 31, written by the same writer, before the index): per set,
  the fields a summary and the candidate's identity read, column-wise (:class:`SetColumns`: launches
  per call, each launch's kind, name, duration and resource tuple, the set's attribution), so a fresh
  session's trust reads numbers instead of decoding every member's JSON into one object per launch.
  Derived from the sets it was written from (validated objects, or the columns of a member copied
  from another store); a set without columns (a member copied from a store that had none) is decoded.

Contract:

- :func:`write_store` writes sets (or raw members kept from an existing store: a merge copies bytes,
  it parses nothing) atomically: data first, index last; the index names the data file's size and
  mtime *and content digest*, so a data file replaced or edited by any other writer (even keeping
  its size and mtime) makes the index stale, never wrong.
- :func:`open_store` gives a :class:`LaunchStore` for a launches file. With a current index it reads
  only the index; a file without one (today's recorded sessions: a single gzip member) is converted
  once, streaming (one set in memory at a time), into the user cache dir
  (``$CUTILE_WORKBENCH_CACHE``, else ``$XDG_CACHE_HOME/cutile-workbench``, else
  ``~/.cache/cutile-workbench``), keyed on the file's *content* (sha256) — never into the kernel dir
  (recorded sessions are read-only); at most :data:`KEEP_CONVERSIONS` conversions are kept, least
  recently used pruned; with no writable cache dir the conversion is kept in memory. The
  conversion validates every set, so a malformed file is refused when it is opened.
- Every read is guarded like every other input (:func:`cutile_workbench.artifacts.confine.read_regular`):
  an index that is a FIFO, a device, a link out, over its cap, not JSON, nested too deeply, or
  whose entries are not strictly increasing, non-overlapping byte ranges of the data file is
  ignored (the file is converted instead), never followed. The streaming splitter accepts any
  valid JSON spacing; the whole-file fallback decompresses in chunks (no preallocation) up to
  :data:`~cutile_workbench.artifacts.launches_io.MAX_DECOMPRESSED_BYTES`.
- :class:`LaunchStore` is a ``Sequence[LaunchSet]`` whose items are decoded on access;
  :meth:`LaunchStore.for_params` / :meth:`for_nodeid` decode only that config's members. Every set is
  validated on decode exactly as :func:`cutile_workbench.artifacts.launches_io.load_launch_sets` does (the error names
  the original file and ``sets[i]...``); a malformed file raises ``InputError``, never a traceback.
  :meth:`LaunchStore.member_digests` hashes each config's stored members (compressed bytes, no
  decoding; once per store): the key of that config's derived facts (issue 31).
- :meth:`LaunchStore.columns` gives a set's :class:`SetColumns` without decoding its member, only when
  the columns file is the one the current index names (size and sha256), declares at most
  :data:`MAX_COLUMNS_EXPANDED` bytes once inflated (checked before inflating) and every column checks
  out (shapes, index ranges, types); anything else is ``None`` (the caller decodes the member), never
  a crash and never a column of another data file.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import hashlib
import io
import json
import os
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np

from cutile_workbench.artifacts.launches_io import (
    VERSION,
    _Reader,
    attributed_to_dict,
    load_launch_sets,
    set_to_dict,
)
from cutile_workbench.errors import InputError
from cutile_workbench.infra.atomicio import atomic_write_bytes
from cutile_workbench.model import AttributedLaunch, LaunchSet

INDEX_VERSION = 2
#: the largest index read (real ones: a few KiB per config)
MAX_INDEX_BYTES = 16 * 1024 * 1024
#: the largest set element the streaming splitter buffers before handing over to the strict reader
MAX_ELEMENT_CHARS = 64 * 1024 * 1024
#: converted launches files kept in the user cache (least recently used pruned)
KEEP_CONVERSIONS = 64
HEAD = b'{"version":%d,"sets":[' % VERSION
TAIL = b"]}"
_CHUNK = 1 << 20
_DECODED_CACHE = 64  # decoded sets kept per store (a screen shows a handful of configs)


#: the columns file's own format (a change makes old files ignored, never misread)
COLUMNS_VERSION = 1
#: the largest columns file read (real ones: ~20 bytes a launch, compressed to ~1/100)
MAX_COLUMNS_BYTES = 256 * 1024 * 1024
#: the most its arrays may expand to (a 10,000-config session: ~150 MB)
MAX_COLUMNS_EXPANDED = 1 << 30
KINDS = ("kernel", "memcpy", "memset")


def index_path_for(data: Path) -> Path:
    """``launches.json.gz`` → ``launches.idx.json`` (any other name: ``<name>.idx.json``)."""
    name = data.name
    stem = name[: -len(".json.gz")] if name.endswith(".json.gz") else name
    return data.with_name(f"{stem}.idx.json")


def columns_path_for(data: Path) -> Path:
    """``launches.json.gz`` → ``launches.cols.npz`` (any other name: ``<name>.cols.npz``)."""
    name = data.name
    stem = name[: -len(".json.gz")] if name.endswith(".json.gz") else name
    return data.with_name(f"{stem}.cols.npz")


#: a launch's resources as a summary reads them: (demangled, registers_per_thread, static_smem,
#: dynamic_smem, grid, block, cluster)
Resources = tuple[
    str | None,
    int | None,
    int | None,
    int | None,
    tuple[int, int, int] | None,
    tuple[int, int, int] | None,
    tuple[int, int, int] | None,
]


@dataclass(frozen=True, eq=False)
class SetColumns:
    """One set's launches column-wise: what its summary and the candidate's identity read (issue 31).

    ``call_counts[c]`` launches in call ``c``; launch ``j`` (calls in order, launches in order) has kind
    ``KINDS[kinds[j]]``, name ``name_table[names[j]]``, duration ``durations[j]`` ns and resources
    ``resource_table[resources[j]]``."""

    call_counts: np.ndarray  # int64, one per call
    kinds: np.ndarray  # int8
    names: np.ndarray  # int64
    durations: np.ndarray  # int64
    resources: np.ndarray  # int64
    name_table: tuple[str, ...]
    resource_table: tuple[Resources, ...]
    attribution: tuple[AttributedLaunch, ...] = ()

    @property
    def n_calls(self) -> int:
        return int(self.call_counts.shape[0])

    def kernel_names(self) -> tuple[str, ...]:
        """Every kernel symbol the set launched (first-seen order)."""
        picked = self.names[self.kinds == 0]
        if not picked.size:
            return ()
        _, first = np.unique(picked, return_index=True)
        return tuple(self.name_table[int(picked[i])] for i in sorted(first.tolist()))


#: the largest total of a set's |durations| kept in int64 columns: any sum or difference of them fits
_MAX_COLUMN_TOTAL = 1 << 62


def columns_of(s: LaunchSet) -> SetColumns | None:
    """A (validated) set's columns; None when its durations do not fit int64 arithmetic (a valid JSON
    integer can be any size): that set is decoded, as one from an older writer."""
    names: dict[str, int] = {}
    res: dict[Resources, int] = {}
    counts: list[int] = []
    kinds: list[int] = []
    name_ids: list[int] = []
    durs: list[int] = []
    res_ids: list[int] = []
    kind_id = {k: i for i, k in enumerate(KINDS)}
    for c in s.calls:
        counts.append(len(c.launches))
        for x in c.launches:
            kinds.append(kind_id[x.kind])
            name_ids.append(names.setdefault(x.name, len(names)))
            durs.append(x.end_ns - x.start_ns)
            r: Resources = (
                x.demangled,
                x.registers_per_thread,
                x.static_smem,
                x.dynamic_smem,
                x.grid,
                x.block,
                x.cluster,
            )
            res_ids.append(res.setdefault(r, len(res)))
    if sum(abs(d) for d in durs) > _MAX_COLUMN_TOTAL:
        return None  # the object path's Python ints are exact at any size; int64 columns are not
    return SetColumns(
        np.array(counts, dtype=np.int64),
        np.array(kinds, dtype=np.int8),
        np.array(name_ids, dtype=np.int64),
        np.array(durs, dtype=np.int64),
        np.array(res_ids, dtype=np.int64),
        tuple(names),
        tuple(res),
        tuple(s.attribution),
    )


def _encode_columns(cols: Sequence[tuple[int, SetColumns]]) -> bytes:
    """The columns file of ``(store position, columns)`` pairs (module contract)."""
    meta = {
        "version": COLUMNS_VERSION,
        "sets": [
            [
                pos,
                list(c.name_table),
                [
                    [None if v is None else list(v) if isinstance(v, tuple) else v for v in r]
                    for r in c.resource_table
                ],
                [attributed_to_dict(a) for a in c.attribution],
            ]
            for pos, c in cols
        ],
    }

    def cat(arrays: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype=dtype)

    out = io.BytesIO()
    np.savez_compressed(
        out,
        meta=np.frombuffer(json.dumps(meta, separators=(",", ":")).encode(), dtype=np.uint8),
        ncalls=np.array([c.n_calls for _, c in cols], dtype=np.int64),
        calls=cat([c.call_counts for _, c in cols], np.int64),
        kinds=cat([c.kinds for _, c in cols], np.int8),
        names=cat([c.names for _, c in cols], np.int64),
        durations=cat([c.durations for _, c in cols], np.int64),
        resources=cat([c.resources for _, c in cols], np.int64),
    )
    return out.getvalue()


class _BadColumns(Exception):
    """The columns file does not check out: it is ignored (the members are decoded)."""


def _dims(v: Any) -> tuple[int, int, int] | None:
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != 3 or not all(type(x) is int and x >= 0 for x in v):
        raise _BadColumns
    return (v[0], v[1], v[2])


def _opt(v: Any, typ: type) -> Any:
    if v is not None and type(v) is not typ:
        raise _BadColumns
    return v


def _decode_columns(raw: bytes, source: str, n_sets: int) -> dict[int, SetColumns]:
    """``{store position: columns}`` of a columns file; :class:`_BadColumns` on any doubt."""
    try:
        import zipfile

        with zipfile.ZipFile(io.BytesIO(raw)) as zf:  # a member reads at most its declared size
            if sum(i.file_size for i in zf.infolist()) > MAX_COLUMNS_EXPANDED:
                raise _BadColumns  # a zip bomb is refused before anything is inflated
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            arrays = {
                k: z[k] for k in ("meta", "ncalls", "calls", "kinds", "names", "durations", "resources")
            }
        meta = json.loads(arrays["meta"].tobytes())
    except Exception as exc:  # any malformed zip/npy/JSON: ignored, the members are decoded
        raise _BadColumns from exc
    if (
        not isinstance(meta, dict)
        or meta.get("version") != COLUMNS_VERSION
        or not isinstance(meta.get("sets"), list)
    ):
        raise _BadColumns
    ncalls, calls = arrays["ncalls"], arrays["calls"]
    kinds, names, durs, res = arrays["kinds"], arrays["names"], arrays["durations"], arrays["resources"]
    n = len(meta["sets"])
    launches = kinds.shape[0]
    if (
        any(a.ndim != 1 for a in (ncalls, calls, kinds, names, durs, res))
        or ncalls.shape[0] != n
        or ncalls.dtype != np.int64
        or calls.dtype != np.int64
        or kinds.dtype != np.int8
        or names.dtype != np.int64
        or durs.dtype != np.int64
        or res.dtype != np.int64
        or (ncalls < 0).any()
        or int(ncalls.sum()) != calls.shape[0]
        or (calls < 0).any()
        or int(calls.sum()) != launches
        or names.shape[0] != launches
        or durs.shape[0] != launches
        or res.shape[0] != launches
        or (launches and (int(kinds.min()) < 0 or int(kinds.max()) >= len(KINDS) or int(durs.min()) < 0))
    ):
        raise _BadColumns
    reader = _Reader(source)
    out: dict[int, SetColumns] = {}
    call_at = launch_at = 0
    for k, item in enumerate(meta["sets"]):
        if not isinstance(item, list) or len(item) != 4:
            raise _BadColumns
        pos, name_table, res_table, attributed = item
        if type(pos) is not int or not 0 <= pos < n_sets or pos in out:
            raise _BadColumns
        if not isinstance(name_table, list) or not all(isinstance(x, str) for x in name_table):
            raise _BadColumns
        if not isinstance(res_table, list) or not isinstance(attributed, list):
            raise _BadColumns
        resources: list[Resources] = []
        for r in res_table:
            if not isinstance(r, list) or len(r) != 7:
                raise _BadColumns
            resources.append(
                (
                    _opt(r[0], str),
                    _opt(r[1], int),
                    _opt(r[2], int),
                    _opt(r[3], int),
                    _dims(r[4]),
                    _dims(r[5]),
                    _dims(r[6]),
                )
            )
        try:
            attribution = tuple(
                reader.attributed(a, f"sets[{pos}].attribution[{i}]") for i, a in enumerate(attributed)
            )
        except InputError as exc:
            raise _BadColumns from exc
        nc = int(ncalls[k])
        cc = calls[call_at : call_at + nc]
        nl = int(cc.sum())
        sl = slice(launch_at, launch_at + nl)
        call_at, launch_at = call_at + nc, launch_at + nl
        nm, rs = names[sl], res[sl]
        if nl and (
            int(nm.min()) < 0
            or int(nm.max()) >= len(name_table)
            or int(rs.min()) < 0
            or int(rs.max()) >= len(resources)
        ):
            raise _BadColumns
        out[pos] = SetColumns(
            cc, kinds[sl], nm, durs[sl], rs, tuple(name_table), tuple(resources), attribution
        )
    return out


@dataclass(frozen=True)
class Entry:
    """One launch set's place in the data file (and what a listing needs without decoding it)."""

    nodeid: str
    backend: str
    params: str
    source: str
    calls: int
    offset: int
    length: int


def _member(payload: bytes) -> bytes:
    return gzip.compress(payload, compresslevel=6, mtime=0)


def _set_payload(s: LaunchSet) -> bytes:
    return json.dumps(set_to_dict(s), separators=(",", ":")).encode()


@dataclass(frozen=True)
class RawMember:
    """A set's member bytes as stored (its payload without the separating comma), to copy on merge
    (with its columns when the store it came from had them)."""

    entry: Entry
    payload: bytes
    columns: SetColumns | None = None


def _user_cache_dir() -> Path:
    env = os.environ.get("CUTILE_WORKBENCH_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "cutile-workbench"


def _encode(
    items: Iterable[LaunchSet | RawMember], columns: list[tuple[int, SetColumns]] | None = None
) -> tuple[bytes, list[Entry]]:
    """The data file of ``items`` and its entries; with ``columns``, each item's columns are added to
    it (a raw member's own, else none; a set's derived)."""
    out = io.BytesIO()
    out.write(_member(HEAD))
    entries: list[Entry] = []
    for i, item in enumerate(items):
        if isinstance(item, RawMember):
            payload = item.payload
            nodeid, backend, params = item.entry.nodeid, item.entry.backend, item.entry.params
            source, calls = item.entry.source, item.entry.calls
            if columns is not None and item.columns is not None:
                columns.append((i, item.columns))
        else:
            if columns is not None and (set_columns := columns_of(item)) is not None:
                columns.append((i, set_columns))
            payload = _set_payload(item)
            nodeid, backend, params, source, calls = (
                item.nodeid,
                item.backend,
                item.params,
                item.source,
                len(item.calls),
            )
        member = _member((b"," if i else b"") + payload)
        entries.append(Entry(nodeid, backend, params, source, calls, out.tell(), len(member)))
        out.write(member)
    out.write(_member(TAIL))
    return out.getvalue(), entries


def _index_doc(
    entries: Sequence[Entry], size: int, mtime_ns: int, sha256: str, columns: bytes | None = None
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "version": INDEX_VERSION,
        "data_size": size,
        "data_mtime_ns": mtime_ns,
        "data_sha256": sha256,
        "entries": [[e.nodeid, e.backend, e.params, e.source, e.calls, e.offset, e.length] for e in entries],
    }
    if columns is not None:
        doc["columns"] = {
            "version": COLUMNS_VERSION,
            "size": len(columns),
            "sha256": hashlib.sha256(columns).hexdigest(),
        }
    return doc


def _write_atomic(path: Path, data: bytes, root: Path | None = None) -> os.stat_result:
    """:func:`~cutile_workbench.infra.atomicio.atomic_write_bytes`, then the new file's stat (a rename
    keeps size and mtime: the index names what readers will see)."""
    atomic_write_bytes(path, data, root)
    return os.lstat(path)


def write_store(path: Path, items: Iterable[LaunchSet | RawMember], root: Path | None = None) -> Path:
    """Write ``items`` as a per-set store at ``path`` (+ its index); returns the index path.

    With ``root`` (the kernel dir) both writes are confined to it by descriptor
    (:func:`~cutile_workbench.infra.atomicio.atomic_write_bytes`); the results filing passes it."""
    path = Path(path)
    if root is None:
        path.parent.mkdir(parents=True, exist_ok=True)
    columns: list[tuple[int, SetColumns]] = []
    data, entries = _encode(items, columns)
    return _write_files(path, data, entries, _encode_columns(columns), root)


def _write_files(
    path: Path, data: bytes, entries: list[Entry], columns: bytes, root: Path | None = None
) -> Path:
    """Data, columns, then the index naming both (a reader never pairs an index with other files)."""
    st = _write_atomic(path, data, root)
    _write_atomic(columns_path_for(path), columns, root)
    index = index_path_for(path)
    digest = hashlib.sha256(data).hexdigest()
    _write_atomic(
        index,
        json.dumps(
            _index_doc(entries, st.st_size, st.st_mtime_ns, digest, columns), separators=(",", ":")
        ).encode(),
        root,
    )
    return index


# --------------------------------------------------------------------------- reading


def _file_sha256(path: Path) -> str | None:
    """sha256 of a regular file's bytes, read by descriptor without following a link (None: unreadable)."""
    import stat as stat_mod

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
            return None
        h = hashlib.sha256()
        while chunk := os.read(fd, _CHUNK):
            h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def _load_index(
    index: Path,
    data_stat: os.stat_result,
    data_path: Path | None = None,
    columns_out: list[dict[str, Any]] | None = None,
) -> list[Entry] | None:
    """The index's entries when it is current for the data file (size, mtime and content), else None.
    Guarded like any input (module contract): a bad index is ignored, never followed or trusted.
    ``columns_out`` receives the index's record of its columns file when it has a well-formed one."""
    from cutile_workbench.artifacts.confine import read_regular
    from cutile_workbench.errors import WorkbenchError

    if index.is_symlink():
        return None
    try:
        doc = json.loads(read_regular(index, kind="launch index", cap=MAX_INDEX_BYTES))
    except (WorkbenchError, ValueError, RecursionError):
        return None
    if (
        not isinstance(doc, dict)
        or doc.get("version") != INDEX_VERSION
        or doc.get("data_size") != data_stat.st_size
        or doc.get("data_mtime_ns") != data_stat.st_mtime_ns
        or not isinstance(doc.get("data_sha256"), str)
        or not isinstance(doc.get("entries"), list)
    ):
        return None
    entries = []
    end = 0
    for item in doc["entries"]:
        if not isinstance(item, list) or len(item) != 7:
            return None
        n, b, p, src, c, o, ln = item
        if not all(isinstance(x, str) for x in (n, b, p, src)) or not all(type(x) is int for x in (c, o, ln)):
            return None
        if o < end or ln <= 0 or c < 0 or o + ln > data_stat.st_size:  # ranges strictly in order, disjoint
            return None
        end = o + ln
        entries.append(Entry(n, b, p, src, c, o, ln))
    if data_path is not None and _file_sha256(data_path) != doc["data_sha256"]:
        return None  # the data file was edited since (size and mtime kept): the index is stale
    cols = doc.get("columns")
    if (
        columns_out is not None
        and isinstance(cols, dict)
        and cols.get("version") == COLUMNS_VERSION
        and type(cols.get("size")) is int
        and isinstance(cols.get("sha256"), str)
    ):
        columns_out.append(cols)
    return entries


def _stream_text(path: Path) -> Iterator[str]:
    """Decompressed text of a (multi-member) gzip file, chunk by chunk; plain JSON passes through."""
    text = codecs.getincrementaldecoder("utf-8")()
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
        fh.seek(0)
        dec = zlib.decompressobj(wbits=31) if gz else None
        while chunk := fh.read(_CHUNK):
            if dec is None:
                yield text.decode(chunk)
                continue
            while chunk:
                yield text.decode(dec.decompress(chunk))
                chunk = b""
                if dec.eof:  # the next gzip member starts in what is left
                    chunk = dec.unused_data
                    dec = zlib.decompressobj(wbits=31)
        if dec is not None:
            yield text.decode(dec.flush())
    yield text.decode(b"", final=True)


class _Malformed(Exception):
    """The streaming splitter could not follow the document: the whole-file reader takes over."""


class _Splitter:
    """The elements of a document's ``sets`` array, one decoded at a time (bounded memory)."""

    def __init__(self, chunks: Iterator[str]) -> None:
        self.chunks, self.buf, self.pos = chunks, "", 0
        self.decoder = json.JSONDecoder()

    def more(self) -> bool:
        for piece in self.chunks:
            if piece:
                self.buf = self.buf[self.pos :] + piece
                self.pos = 0
                return True
        return False

    def peek(self) -> str:
        """The next non-blank character ("" at the end of the input)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def value(self) -> tuple[Any, str]:
        self.peek()  # any JSON spacing before a value
        while True:
            if len(self.buf) - self.pos > MAX_ELEMENT_CHARS:
                raise _Malformed  # one element this large: the strict reader decides (and names it)
            try:
                obj, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError:
                if not self.more():
                    raise _Malformed from None
                continue
            except (
                ValueError,
                RecursionError,
            ):  # a 5,000-digit number, a nesting bomb: the strict reader names it
                raise _Malformed from None
            text = self.buf[self.pos : end]
            self.pos = end
            return obj, text

    def sets(self) -> Iterator[tuple[dict[str, Any], str]]:
        # the layout every writer produces: {"version": 1, "sets": [ ... ]}
        for expected in ("{", '"version"', ":"):
            if self.peek() != expected[0]:
                raise _Malformed
            if expected == '"version"':
                key, _ = self.value()
                if key != "version":
                    raise _Malformed
            else:
                self.pos += 1
        version, _ = self.value()
        if version != VERSION:
            raise _Malformed
        for expected in (",", '"sets"', ":", "["):
            if self.peek() != expected[0]:
                raise _Malformed
            if expected == '"sets"':
                key, _ = self.value()
                if key != "sets":
                    raise _Malformed
            else:
                self.pos += 1
        first = True
        while True:
            ch = self.peek()
            if ch == "]":
                return
            if not first:
                if ch != ",":
                    raise _Malformed
                self.pos += 1
            obj, text = self.value()
            if not isinstance(obj, dict):
                raise _Malformed
            yield obj, text
            first = False


def _convert(path: Path) -> tuple[bytes, list[Entry], bytes]:
    """Re-encode any launches file as a per-set store (and its columns): streaming for the layout every
    writer produces, else (or on any doubt) through the strict whole-file reader, whose error names
    file and key."""
    reader = _Reader(str(path))

    def members() -> Iterator[RawMember]:
        for i, (obj, text) in enumerate(_Splitter(_stream_text(path)).sets()):
            key = f"sets[{i}]"
            s = reader.launch_set(obj, key)  # validated once here: a bad file is refused at open
            yield RawMember(
                Entry(s.nodeid, s.backend, s.params, s.source, len(s.calls), 0, 0),
                text.encode(),
                columns_of(s),
            )

    columns: list[tuple[int, SetColumns]] = []
    try:
        data, entries = _encode(members(), columns)
    except (_Malformed, OSError, EOFError, zlib.error, UnicodeDecodeError, InputError):
        columns = []
        data, entries = _encode(load_launch_sets(path), columns)  # the precise InputError when malformed
    return data, entries, _encode_columns(columns)


class LaunchStore(Sequence[LaunchSet]):
    """The launch sets of one launches file, decoded on access (see module contract)."""

    def __init__(
        self,
        source: Path,
        entries: list[Entry],
        *,
        data_path: Path | None = None,
        data: bytes | None = None,
        columns_path: Path | None = None,
        columns_record: dict[str, Any] | None = None,
        columns_data: bytes | None = None,
    ) -> None:
        self.source = source  # the launches file named in errors and reports
        self.entries = entries
        self._data_path = data_path
        self._data = data
        self._columns_path = columns_path
        self._columns_record = columns_record
        self._columns_data = columns_data
        self._columns: dict[int, SetColumns] | None = None
        self._by_params: dict[str, list[int]] = {}
        self._by_nodeid: dict[str, list[int]] = {}
        for i, e in enumerate(entries):
            self._by_params.setdefault(e.params, []).append(i)
            self._by_nodeid.setdefault(e.nodeid, []).append(i)
        self._decoded: OrderedDict[int, LaunchSet] = OrderedDict()
        self._lock = threading.Lock()
        self.memo: dict[str, Any] = {}  # facts derived from the whole store (e.g. F's launch summaries)

    @property
    def data_path(self) -> Path | None:
        """The file the members are read from (None: a conversion kept in memory)."""
        return self._data_path

    def indices_for_params(self, params: str) -> list[int]:
        """Positions of one config's sets (no decoding)."""
        return list(self._by_params.get(params, ()))

    def __len__(self) -> int:
        return len(self.entries)

    @overload
    def __getitem__(self, i: int) -> LaunchSet: ...
    @overload
    def __getitem__(self, i: slice) -> list[LaunchSet]: ...
    def __getitem__(self, i: int | slice) -> LaunchSet | list[LaunchSet]:
        if isinstance(i, slice):
            return [self._decode(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._decode(i)

    def __iter__(self) -> Iterator[LaunchSet]:
        for i in range(len(self)):
            yield self._decode(i)

    def params(self) -> list[str]:
        """Every config's params string, in first-seen order (no decoding)."""
        return list(self._by_params)

    def for_params(self, params: str) -> list[LaunchSet]:
        return [self._decode(i) for i in self._by_params.get(params, ())]

    def for_nodeid(self, nodeid: str) -> list[LaunchSet]:
        return [self._decode(i) for i in self._by_nodeid.get(nodeid, ())]

    def member_digests(self) -> dict[str, str]:
        """``{params: digest}`` of each config's stored members (their compressed bytes and index
        entries; nothing decompressed or decoded, one sequential read): a per-config cache key.
        Computed once per store."""
        done: dict[str, str] | None = self.memo.get("member_digests")
        if done is not None:
            return done
        by: dict[str, hashlib._Hash] = {}
        order = sorted(range(len(self.entries)), key=lambda i: self.entries[i].offset)
        fh = None
        try:
            if self._data is None:
                assert self._data_path is not None
                fh = open(self._data_path, "rb")
            for i in order:
                e = self.entries[i]
                if fh is None:
                    assert self._data is not None
                    raw = self._data[e.offset : e.offset + e.length]
                else:
                    fh.seek(e.offset)
                    raw = fh.read(e.length)
                h = by.setdefault(e.params, hashlib.sha256())
                h.update(f"{i}\0{e.nodeid}\0{e.backend}\0{e.source}\0{e.calls}\0{len(raw)}\0".encode())
                h.update(raw)
        except OSError as exc:
            raise InputError(
                f"cannot read launches file: {exc.strerror or exc}", path=str(self.source)
            ) from None
        finally:
            if fh is not None:
                fh.close()
        done = {p: h.hexdigest() for p, h in by.items()}
        self.memo["member_digests"] = done
        return done

    def raw_members(self, keep: Iterable[int] | None = None) -> Iterator[RawMember]:
        """The stored members (payload bytes, no JSON parsing; their columns where the store has them)
        of ``keep`` (default: all), for a merge."""
        for i in range(len(self)) if keep is None else keep:
            payload = self._payload(i)
            yield RawMember(self.entries[i], payload[1:] if payload[:1] == b"," else payload, self.columns(i))

    def columns(self, i: int) -> SetColumns | None:
        """Set ``i``'s columns without decoding its member (module contract); None: decode it."""
        with self._lock:
            if self._columns is None:
                self._columns = self._load_columns()
            return self._columns.get(i)

    def _load_columns(self) -> dict[int, SetColumns]:
        from cutile_workbench.artifacts.confine import read_regular
        from cutile_workbench.errors import WorkbenchError

        raw = self._columns_data
        rec = self._columns_record
        if raw is None:
            if rec is None or self._columns_path is None or self._columns_path.is_symlink():
                return {}
            try:
                raw = read_regular(self._columns_path, kind="launch columns", cap=MAX_COLUMNS_BYTES)
            except WorkbenchError:
                return {}
            if len(raw) != rec["size"] or hashlib.sha256(raw).hexdigest() != rec["sha256"]:
                return {}  # not the columns file this index was written with
        try:
            return _decode_columns(raw, str(self.source), len(self.entries))
        except _BadColumns:
            return {}

    def _payload(self, i: int) -> bytes:
        e = self.entries[i]
        if self._data is not None:
            raw = self._data[e.offset : e.offset + e.length]
        else:
            assert self._data_path is not None
            try:
                with open(self._data_path, "rb") as fh:
                    fh.seek(e.offset)
                    raw = fh.read(e.length)
            except OSError as exc:
                raise InputError(
                    f"cannot read launches file: {exc.strerror or exc}", path=str(self.source)
                ) from None
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"corrupt gzip member of sets[{i}]: {exc}", path=str(self.source)) from None

    def _decode(self, i: int) -> LaunchSet:
        with self._lock:
            hit = self._decoded.get(i)
            if hit is not None:
                self._decoded.move_to_end(i)
                return hit
        payload = self._payload(i)
        key = f"sets[{i}]"
        try:
            obj = json.loads(payload[1:] if payload[:1] == b"," else payload)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise InputError(f"malformed JSON in {key}: {exc}", path=str(self.source)) from None
        s = _Reader(str(self.source)).launch_set(obj, key)
        with self._lock:
            self._decoded[i] = s
            while len(self._decoded) > _DECODED_CACHE:
                self._decoded.popitem(last=False)
        return s


def _cache_key(path: Path, st: os.stat_result) -> str:
    """The conversion's key: the file's content (never its path, size or mtime)."""
    digest = _file_sha256(path)
    if digest is None:
        raise InputError("cannot read launches file", path=str(path))
    return f"{digest[:32]}-{INDEX_VERSION}"


def _prune_conversions(root: Path) -> None:
    try:
        dirs = sorted(
            (d for d in root.iterdir() if d.is_dir() and not d.is_symlink()),
            key=lambda d: d.stat().st_mtime_ns,
            reverse=True,
        )
    except OSError:
        return
    import shutil

    for d in dirs[KEEP_CONVERSIONS:]:
        shutil.rmtree(d, ignore_errors=True)


def open_store(path: Path, *, kernel_dir: Path | None = None) -> LaunchStore:
    """The store of a launches file (see module contract); ``InputError`` when it cannot be read. With
    ``kernel_dir``, a file resolving outside it is refused (``UnsafePath``, issue 25); a FIFO, device
    or directory is refused before anything is opened."""
    import stat as stat_mod

    path = Path(path)
    if kernel_dir is not None:
        from cutile_workbench.artifacts.confine import confine_read

        confine_read(kernel_dir, path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"cannot read launches file: {exc.strerror or exc}", path=str(path)) from None
    if not stat_mod.S_ISREG(st.st_mode):
        raise InputError("launches file is not a regular file: refused", path=str(path))
    cols: list[dict[str, Any]] = []

    def indexed(data: Path, data_stat: os.stat_result) -> LaunchStore | None:
        """The store read through ``data``'s own index (and its columns file), or None without one."""
        entries = _load_index(index_path_for(data), data_stat, data, cols)
        if entries is None:
            return None
        return LaunchStore(
            path,
            entries,
            data_path=data,
            columns_path=columns_path_for(data),
            columns_record=cols[0] if cols else None,
        )

    if (store := indexed(path, st)) is not None:
        return store
    cache = _user_cache_dir() / "launches" / _cache_key(path, st)
    cached_data = cache / "launches.json.gz"
    if cached_data.is_file() and not cached_data.is_symlink():
        if (store := indexed(cached_data, os.stat(cached_data))) is not None:
            with contextlib.suppress(OSError):
                os.utime(cache)  # least recently used is pruned first
            return store
    data, entries, columns = _convert(path)
    try:
        cache.mkdir(parents=True, exist_ok=True)
        _write_files(cached_data, data, entries, columns)
        _prune_conversions(cache.parent)
    except OSError:  # no writable cache dir: keep the conversion in memory for this process
        return LaunchStore(path, entries, data=data, columns_data=columns)
    return LaunchStore(
        path,
        entries,
        data_path=cached_data,
        columns_path=columns_path_for(cached_data),
        columns_record={"sha256": hashlib.sha256(columns).hexdigest(), "size": len(columns)},
    )
