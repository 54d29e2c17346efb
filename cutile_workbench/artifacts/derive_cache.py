"""A cache of facts derived from files, kept in memory and in the user's cache dir (never in a kernel dir).

Contract:
- :func:`cached_derivation` runs ``compute()`` once per content of ``inputs`` plus an ``extra`` text and
  the source of the ``modules`` whose code decides the value and of every module they import
  (:func:`cutile_workbench.infra.codekey.code_key`: a changed rule is a miss, never a stale hit); the value is kept in memory (each caller's own copy: frozen parts shared, never deep-copied) and written to
  ``<user cache>/<kind>/<key>.json``. The key hashes the inputs' *bytes* (never size or mtime).
- A cache file is plain data, never code (no pickle): JSON of :data:`CACHE_SCHEMA`, holding the
  kind, the key (equal to the file name), the sha256 of the payload and the payload in a tagged
  form (:func:`encode`: this package's dataclasses by name, tuples, sets, non-string dict keys,
  paths, enums). :func:`decode` validates it on read: a class must be a dataclass of this package,
  its fields exactly the dataclass's, each value of its field's declared type (``int``/``float``/
  ``str``/``bool``/``None``, unions, ``tuple[...]``/``list``/``dict``/``set``, ``Literal``,
  nested dataclasses), every float finite (a non-finite float is never stored: such a value is
  recomputed each time). A file that is absent, a link, not a regular file, over
  :data:`MAX_FILE_BYTES`, of another schema/kind/key, whose digest does not match, or that fails
  validation is a **miss** (recomputed, then overwritten), never a number.
- Inputs are hashed as regular files only (:func:`_read`: a FIFO or device planted at an input must
  not hang or flood the key).
- The user cache dir is :mod:`cutile_workbench.artifacts.launch_store`'s (``$CUTILE_WORKBENCH_CACHE``, else
  ``$XDG_CACHE_HOME``/``~/.cache`` + ``cutile-workbench``); per kind at most :data:`KEEP_FILES` files and
  :data:`KEEP_BYTES` bytes, least recently used pruned first (a hit refreshes the file's mtime).
- :func:`load_value` / :func:`store_value` are the same storage for a caller that keys entries
  itself (E's table: :mod:`cutile_workbench.stages.e.e_table`).
Used by E's table, the ratios' conditions, trust and F's launch summaries.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import hashlib
import importlib
import importlib.util
import json
import math
import os
import stat
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path, PurePath
from typing import Any, TypeVar, cast

from cutile_workbench.infra.codekey import code_key

T = TypeVar("T")
#: bump when the stored shapes change (old caches become misses)
CACHE_VERSION = 2
#: the file format's schema (the envelope of every cache file)
CACHE_SCHEMA = "cutile-workbench.derive-cache/1"
#: this package's top-level name: the only module prefix a cache file may name
_PACKAGE = __name__.split(".", 1)[0]
#: the largest cache file read (a 1,000-config table is well under a MiB)
MAX_FILE_BYTES = 64 * 1024 * 1024
#: deepest nesting accepted in a payload (real values nest < 10 deep)
MAX_DEPTH = 64


class CacheMiss(Exception):
    """A cache file that is not a valid entry: recomputed (never surfaces to a user)."""


def _read(path: Path) -> bytes:
    """The bytes an input key hashes: regular files only (a FIFO or device planted at a baseline
    log must not hang or flood the key; the parser then refuses it with the located error)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return b"\0not a regular file"
        return path.read_bytes()
    except FileNotFoundError:
        return b""
    except OSError:
        return b"\0unreadable"  # the parser raises the located error on a miss


_ABSENT = hashlib.sha256(b"").hexdigest()  # as _read reads an absent input
_UNREADABLE = hashlib.sha256(b"\0unreadable").hexdigest()
_NOT_REGULAR = hashlib.sha256(b"\0not a regular file").hexdigest()
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _digest_regular(stat_it: Callable[[], os.stat_result], open_it: Callable[[], int]) -> str:
    """SHA-256 (hex) of one regular file, streamed: ``stat_it`` first, so a FIFO or device is never
    opened (opening one can block, rewind a tape, or be the /dev/zero a hostile link points at); then
    ``open_it``, and the opened file must be the one stat saw."""
    try:
        st = stat_it()
    except FileNotFoundError:
        return _ABSENT
    except OSError:
        return _UNREADABLE
    if not stat.S_ISREG(st.st_mode):
        return _NOT_REGULAR
    try:
        fd = open_it()
    except FileNotFoundError:
        return _ABSENT
    except OSError:
        return _UNREADABLE
    h = hashlib.sha256()
    try:
        st2 = os.fstat(fd)
        if not stat.S_ISREG(st2.st_mode) or (st2.st_dev, st2.st_ino) != (st.st_dev, st.st_ino):
            return _NOT_REGULAR
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
    except OSError:
        return _UNREADABLE
    finally:
        os.close(fd)
    return h.hexdigest()


def file_digest(path: Path) -> str:
    """SHA-256 (hex) of the bytes :func:`_read` gives for ``path``, streamed (a 170 MB log is not held):
    what :meth:`cutile_workbench.artifacts.workspace.Workspace.digest` keeps per input."""
    return _digest_regular(lambda: os.stat(path), lambda: os.open(path, _OPEN_FLAGS))


def file_digest_in(kernel_dir_real: str, relpath: str) -> str:
    """:func:`file_digest` of ``kernel_dir_real/relpath`` reached by descriptor, no link followed on the
    way or at the end (``relpath`` is of a resolved path, so a link there was planted after it was
    resolved): a swapped component keys as unreadable instead of being opened outside the kernel dir."""
    from cutile_workbench.errors import WorkbenchError
    from cutile_workbench.infra.paths import dir_at, split_relpath

    where = os.path.join(kernel_dir_real, relpath)
    try:
        parts = split_relpath(relpath, where=where)
        with dir_at(kernel_dir_real, parts[:-1]) as dir_fd:
            name = parts[-1]
            return _digest_regular(
                lambda: os.stat(name, dir_fd=dir_fd, follow_symlinks=False),
                lambda: os.open(name, _OPEN_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd),
            )
    except FileNotFoundError:
        return _ABSENT
    except (OSError, WorkbenchError):
        return _UNREADABLE


def module_source(name: str) -> bytes:
    """The source bytes of module ``name`` (b"" when it has none): part of a cache key."""
    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None else None
    return _read(Path(origin)) if origin else b""


# --------------------------------------------------------------------------- the plain format


def encode(value: object) -> object:
    """``value`` as JSON-able tagged data; ValueError for what the format does not hold."""
    return _enc(value, 0)


def _enc(v: object, depth: int) -> object:
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, enum.Enum):
        return {"$enum": _class_name(type(v)), "v": _enc(v.value, depth + 1)}
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError("a non-finite float is not stored")
        return v
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        fields = {f.name: _enc(getattr(v, f.name), depth + 1) for f in dataclasses.fields(v)}
        return {"$dc": _class_name(type(v)), "v": fields}
    if isinstance(v, tuple):
        return {"$tuple": [_enc(x, depth + 1) for x in v]}
    if isinstance(v, list):
        return [_enc(x, depth + 1) for x in v]
    if isinstance(v, (set, frozenset)):
        items = [_enc(x, depth + 1) for x in v]
        return {"$frozenset" if isinstance(v, frozenset) else "$set": sorted(items, key=json.dumps)}
    if isinstance(v, dict):
        return {"$dict": [[_enc(k, depth + 1), _enc(x, depth + 1)] for k, x in v.items()]}
    if isinstance(v, PurePath):
        return {"$path": str(v)}
    raise ValueError(f"{type(v).__name__} is not stored in the cache")


def _class_name(cls: type) -> str:
    if not cls.__module__.split(".", 1)[0] == _PACKAGE:
        raise ValueError(f"{cls.__module__}.{cls.__qualname__} is not a {_PACKAGE} type")
    return f"{cls.__module__}:{cls.__qualname__}"


_RESOLVED: dict[tuple[str, str], type] = {}


def _resolve(name: object, want: str) -> type:
    """The class a payload names: this package's dataclass (or enum), already imported; else CacheMiss.
    A class found is remembered (a loaded module's classes do not change; a name refused is asked
    again)."""
    if isinstance(name, str) and (name, want) in _RESOLVED:
        return _RESOLVED[(name, want)]
    found = _lookup(name, want)
    _RESOLVED[(cast(str, name), want)] = found
    return found


def _lookup(name: object, want: str) -> type:
    if not isinstance(name, str) or ":" not in name:
        raise CacheMiss(f"bad class name {name!r:.80}")
    module, _, qual = name.partition(":")
    if module.split(".", 1)[0] != _PACKAGE:
        raise CacheMiss(f"{module} is not a {_PACKAGE} module")
    import sys

    mod = sys.modules.get(module)  # never imports: a cache file cannot make code run
    if mod is None:
        raise CacheMiss(f"{module} is not loaded")
    obj: Any = mod
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    ok = isinstance(obj, type) and (
        dataclasses.is_dataclass(obj) if want == "dataclass" else issubclass(obj, enum.Enum)
    )
    if not ok:
        raise CacheMiss(f"{name} is not a {_PACKAGE} {want}")
    return cast(type, obj)


_HINTS: dict[type, dict[str, Any]] = {}
_DECLARED: dict[type, dict[str, dataclasses.Field[Any]]] = {}


def _declared(cls: type) -> dict[str, dataclasses.Field[Any]]:
    """A dataclass's fields by name, worked out once per class."""
    if cls not in _DECLARED:
        _DECLARED[cls] = {f.name: f for f in dataclasses.fields(cls)}
    return _DECLARED[cls]


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        try:
            _HINTS[cls] = typing.get_type_hints(cls)
        except Exception:  # an annotation only importable under TYPE_CHECKING: checked as Any
            _HINTS[cls] = {}
    return _HINTS[cls]


def decode(doc: object, hint: Any = Any) -> Any:
    """The value :func:`encode` made, validated against ``hint`` (module contract); CacheMiss if not."""
    try:
        return _dec(doc, hint, 0)
    except RecursionError:
        raise CacheMiss("nested too deeply") from None


def _dec(d: object, hint: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise CacheMiss("nested too deeply")
    t = type(d)
    if t in _SCALARS:  # the bulk of a payload: a number or a name, checked without a call per kind
        if t is float and not math.isfinite(cast(float, d)):
            raise CacheMiss("a non-finite float")
        simple = _scalar_types(hint)
        if simple is not None:
            if t not in simple:
                raise CacheMiss(f"{t.__name__} {d!r:.60} is not {hint}")
            return d
    v = _dec_raw(d, depth)
    if hint is not Any:
        _check(v, hint)
    return v


#: the JSON scalars a payload holds as themselves
_SCALARS = frozenset({type(None), bool, int, float, str})
#: a hint a scalar is checked against by its exact type alone -> the types it admits (``str`` is not:
#: a str-valued enum member is a str)
_SIMPLE: dict[Any, tuple[type, ...]] = {
    float: (int, float),
    int: (int,),
    bool: (bool,),
    type(None): (type(None),),
    None: (type(None),),
}


_SCALAR_HINTS: dict[Any, tuple[type, ...] | None] = {}


def _scalar_types(hint: Any) -> tuple[type, ...] | None:
    """The exact types a scalar of ``hint`` may have, when its check is by type alone: a simple hint
    (:data:`_SIMPLE`) or a union of them (``float | None``); else None (checked by :func:`_check`).
    Worked out once per hint."""
    try:
        if hint in _SCALAR_HINTS:
            return _SCALAR_HINTS[hint]
    except TypeError:  # an unhashable hint
        return None
    found: tuple[type, ...] | None = None
    if isinstance(hint, type) or hint is None:
        found = _SIMPLE.get(hint)
    elif typing.get_origin(hint) in (typing.Union, types.UnionType):
        parts = [_scalar_types(a) for a in typing.get_args(hint)]
        if all(p is not None for p in parts):
            found = tuple(t for p in parts for t in cast("tuple[type, ...]", p))
    _SCALAR_HINTS[hint] = found
    return found


def _scalars(items: list[Any]) -> bool:
    """Every item a JSON scalar (floats finite): such a list decodes as itself, in one pass."""
    for x in items:
        t = type(x)
        if t is float:
            if not math.isfinite(x):
                raise CacheMiss("a non-finite float")
        elif t not in _SCALARS:
            return False
    return True


def _dec_raw(d: object, depth: int) -> Any:
    if d is None or isinstance(d, (bool, str, int)):
        return d
    if isinstance(d, float):
        if not math.isfinite(d):
            raise CacheMiss("a non-finite float")
        return d
    if isinstance(d, list):
        if _scalars(d):
            return list(d)
        return [_dec(x, Any, depth + 1) for x in d]
    if not isinstance(d, dict) or len(d) not in (1, 2):
        raise CacheMiss(f"unexpected {type(d).__name__}")
    if "$dc" in d:
        cls = _resolve(d["$dc"], "dataclass")
        fields = d.get("v")
        declared = _declared(cls)
        if not isinstance(fields, dict) or set(fields) != set(declared):
            raise CacheMiss(f"{d['$dc']}: fields differ from the dataclass")
        hints = _hints(cls)
        values = {k: _dec(x, hints.get(k, Any), depth + 1) for k, x in fields.items()}
        init = {k: x for k, x in values.items() if declared[k].init}
        try:
            obj = cls(**init)
        except Exception as exc:  # a __post_init__ that refuses the values
            raise CacheMiss(f"{d['$dc']}: {exc}") from None
        for k, x in values.items():
            if not declared[k].init:
                object.__setattr__(obj, k, x)
        return obj
    if "$enum" in d:
        ecls = _resolve(d["$enum"], "enum")
        try:
            return ecls(_dec(d.get("v"), Any, depth + 1))
        except ValueError:
            raise CacheMiss(f"{d['$enum']}: not a member") from None
    (tag, body), *_ = d.items()
    if tag == "$path" and isinstance(body, str):
        return Path(body)
    if tag in ("$tuple", "$set", "$frozenset") and isinstance(body, list):
        items = list(body) if _scalars(body) else [_dec(x, Any, depth + 1) for x in body]
        try:
            return tuple(items) if tag == "$tuple" else set(items) if tag == "$set" else frozenset(items)
        except TypeError:
            raise CacheMiss("unhashable set member") from None
    if tag == "$dict" and isinstance(body, list):
        out = {}
        for pair in body:
            if not isinstance(pair, list) or len(pair) != 2:
                raise CacheMiss("bad dict item")
            try:
                out[_dec(pair[0], Any, depth + 1)] = _dec(pair[1], Any, depth + 1)
            except TypeError:
                raise CacheMiss("unhashable dict key") from None
        return out
    raise CacheMiss(f"unknown tag {tag!r:.40}")


def _check(v: Any, hint: Any) -> None:
    """``v`` is of type ``hint`` (the subset of typing the package's dataclasses use); CacheMiss if not."""
    if not _conforms(v, hint):
        raise CacheMiss(f"{type(v).__name__} {v!r:.60} is not {hint}")


def _conforms(v: Any, hint: Any) -> bool:
    """``v`` is of type ``hint``, by the checker compiled once per hint (:func:`_checker`)."""
    return _checker(hint)(v)


Checker = Callable[[Any], bool]
#: hint -> its compiled checker: the typing introspection (get_origin/get_args) done once per hint,
#: not once per stored value
_CHECKERS: dict[Any, Checker] = {}


def _checker(hint: Any) -> Checker:
    try:
        found = _CHECKERS.get(hint)
    except TypeError:  # an unhashable hint: compiled each time
        return _compile(hint)
    if found is None:
        found = _CHECKERS[hint] = _compile(hint)
    return found


def _yes(v: Any) -> bool:
    return True


def _compile(hint: Any) -> Checker:
    """The checker of ``hint``: the subset of typing the package's dataclasses use (module contract)."""
    if hint is Any or isinstance(hint, (str, TypeVar)):
        return _yes
    simple = _scalar_types(hint)
    if simple is not None:
        return lambda v: type(v) in simple
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        parts = [_checker(a) for a in args]
        return lambda v: any(c(v) for c in parts)
    if origin is typing.Literal:
        return lambda v: any(v == a and type(v) is type(a) for a in args)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            each = _each(args[0])
            return lambda v: isinstance(v, tuple) and each(v)
        if not args:
            return lambda v: isinstance(v, tuple)
        parts = [_checker(a) for a in args]
        return lambda v: (
            isinstance(v, tuple) and len(v) == len(parts) and all(c(x) for c, x in zip(parts, v, strict=True))
        )
    if origin in (list, typing.Sequence) or hint is list:
        seq: type | tuple[type, ...] = list if origin is list or hint is list else (list, tuple)
        if not args:
            return lambda v: isinstance(v, seq)
        each = _each(args[0])
        return lambda v: isinstance(v, seq) and each(v)
    if origin in (dict, typing.Mapping) or hint is dict:
        if not args:
            return lambda v: isinstance(v, dict)
        key, val = _checker(args[0]), _checker(args[1])
        return lambda v: isinstance(v, dict) and all(key(k) and val(x) for k, x in v.items())
    if origin in (set, frozenset):
        each = _each(args[0]) if args else _yes
        return lambda v: isinstance(v, origin) and each(v)
    if origin is not None:  # another generic (Callable, ClassVar…): not in stored values; structure only
        return _yes
    if isinstance(hint, type):
        if hint is Path or hint is PurePath:
            return lambda v: isinstance(v, PurePath)
        return lambda v: isinstance(v, hint)
    return _yes


def _each(hint: Any) -> Checker:
    """Every item of a collection is of type ``hint`` (a scalar hint: by type, without a call per item)."""
    simple = _scalar_types(hint)
    if simple is not None:
        return lambda items: all(type(x) in simple for x in items)
    one = _checker(hint)
    return lambda items: all(one(x) for x in items)


# --------------------------------------------------------------------------- the files


def _user_cache_dir() -> Path:
    from cutile_workbench.artifacts.launch_store import _user_cache_dir as user_cache

    return user_cache()


#: per kind: cache files kept in the user cache dir, and their total bytes (least recently used pruned)
KEEP_FILES = 256
KEEP_BYTES = 256 * 1024 * 1024


def code_key_cached(roots: Iterable[str]) -> str:
    """:func:`cutile_workbench.infra.codekey.code_key` of ``roots`` (memoized per process; each module's
    imports found by one regex scan of its bytes, no parse: cheap enough that no store is kept)."""
    return code_key(roots)


def cache_path(kind: str, key: str) -> Path:
    return _user_cache_dir() / kind / f"{key}.json"


def _read_file(path: Path) -> bytes:
    """A cache file's bytes: a regular file (no link followed), at most MAX_FILE_BYTES; else CacheMiss."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise CacheMiss(str(exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            raise CacheMiss("not a regular file within the size limit")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                raise CacheMiss("grew past the size limit")
        return b"".join(chunks)
    except OSError as exc:
        raise CacheMiss(str(exc)) from None
    finally:
        os.close(fd)


def _no_constant(name: str) -> object:
    raise CacheMiss(f"{name} is not a number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999
        raise CacheMiss(f"{text:.40} is not finite")
    return value


def load_value(kind: str, key: str, hint: Any = Any) -> Any:
    """The stored value of ``kind``/``key`` validated against ``hint``; raises CacheMiss otherwise."""
    path = cache_path(kind, key)
    data = _read_file(path)
    try:
        # no parse_float callback (one Python call per number): a 1e999 that parses to inf fails the
        # digest's allow_nan=False dump below, and decode checks every float it returns
        doc = json.loads(data, parse_constant=_no_constant)
    except (ValueError, RecursionError, CacheMiss):
        raise CacheMiss("not JSON of finite numbers") from None
    if not isinstance(doc, dict) or set(doc) != {"schema", "kind", "key", "sha256", "value"}:
        raise CacheMiss("not a cache entry")
    if doc["schema"] != CACHE_SCHEMA or doc["kind"] != kind or doc["key"] != key:
        raise CacheMiss("another schema, kind or key")
    try:
        payload = json.dumps(doc["value"], sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (ValueError, RecursionError):
        raise CacheMiss("not JSON of finite numbers") from None
    if hashlib.sha256(payload.encode()).hexdigest() != doc["sha256"]:
        raise CacheMiss("digest mismatch (the entry was changed)")
    value = decode(doc["value"], hint)
    try:
        os.utime(path)  # least recently used is pruned first
    except OSError:
        pass
    return value


def store_value(kind: str, key: str, value: object) -> bool:
    """Write ``value`` as ``kind``/``key`` (module contract); False when it cannot be stored."""
    from cutile_workbench.infra.atomicio import atomic_write_bytes

    try:
        body = encode(value)
        payload = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (ValueError, TypeError, RecursionError):  # non-finite or foreign: recomputed each time
        return False
    doc = {
        "schema": CACHE_SCHEMA,
        "kind": kind,
        "key": key,
        "sha256": hashlib.sha256(payload.encode()).hexdigest(),
        "value": body,
    }
    path = cache_path(kind, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(
            path, json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False).encode(), None
        )
        _prune(path.parent)
    except OSError:  # a cache that cannot be written is only a slower next run
        return False
    return True


def _prune(directory: Path) -> None:
    entries = []
    for p in directory.iterdir():
        if p.suffix in (".json", ".pickle"):
            try:
                st = p.lstat()
            except OSError:
                continue
            entries.append((st.st_mtime_ns, st.st_size, p))
    entries.sort(reverse=True)  # newest (most recently used) first
    total = 0
    for i, (_m, size, p) in enumerate(entries):
        total += size
        if i >= KEEP_FILES or total > KEEP_BYTES or p.suffix == ".pickle":  # old pickles: never read
            p.unlink(missing_ok=True)


_DERIVED: dict[str, object] = {}


def cached_derivation(
    kind: str,
    inputs: list[Path],
    extra: str,
    modules: list[str],
    compute: Callable[[], T],
    *,
    remember: bool = True,
    digest: Callable[[Path], str] | None = None,
) -> T:
    """``compute()`` once per content of ``inputs`` (+ ``extra`` text + the source of ``modules``):
    kept in memory and in ``<user cache>/<kind>/<key>.json`` (module contract: plain validated data;
    a bad file is recomputed). For facts derived from E's inputs, e.g. the ratios' measurement
    conditions, that every command would otherwise re-parse the logs for. ``remember=False``: not kept
    in this module's memory (a caller that keeps the value itself: the kernel session), so a large
    value is neither copied in nor out. ``digest``: each input's SHA-256 as the caller already has it
    (:meth:`~cutile_workbench.artifacts.workspace.Workspace.digest`: every input read once per
    command, whatever keys it enters), else each input is read here."""
    h = hashlib.sha256(f"{kind} v{CACHE_VERSION}\0{extra}\0".encode())
    h.update(code_key_cached(modules).encode())  # the modules and their whole import closure
    for path in inputs:
        # by digest: the same key whether this reads the file or the workspace read it once
        h.update(f"{path} {digest(path) if digest is not None else file_digest(path)}\0".encode())
    key = h.hexdigest()
    if key in _DERIVED:
        return cast(T, _own(_DERIVED[key]))
    try:
        value = load_value(kind, key)
    except CacheMiss:  # absent, changed or not ours: compute it
        value = compute()
        store_value(kind, key, value)
    if remember:
        _remember(key, value)
    return cast(T, value)


def _remember(key: str, value: object) -> None:
    if len(_DERIVED) >= 16:
        _DERIVED.clear()
    _DERIVED[key] = _own(value)


_ATOMS = (type(None), bool, int, float, complex, str, bytes, PurePath, enum.Enum)


def _frozen(v: object, depth: int = 0) -> bool:
    """``v`` cannot be changed in place: atoms, tuples and frozensets of such, frozen dataclasses whose
    fields are such (a frozen dataclass holding a list is not)."""
    if isinstance(v, _ATOMS):
        return True
    if depth > MAX_DEPTH:
        return False
    if type(v) in (tuple, frozenset):
        items = cast("tuple[object, ...]", v)
        return all(type(x) in _SCALARS for x in items) or all(_frozen(x, depth + 1) for x in items)
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        params = getattr(type(v), "__dataclass_params__", None)
        return bool(params and params.frozen) and all(
            _frozen(getattr(v, f.name), depth + 1) for f in dataclasses.fields(v)
        )
    return False


def _own(value: T) -> T:
    """A caller's own copy of ``value``: what cannot change in place is shared (never deep-copied),
    each list, dict and set is new; a type this module does not know is deep-copied whole."""
    if _frozen(value):
        return value
    v: Any = value
    if type(v) is list:
        return cast(T, [_own(x) for x in v])
    if type(v) is dict:
        return cast(T, {k: _own(x) for k, x in v.items()})
    if type(v) is set:
        return cast(T, set(v))  # members are hashable: a set of frozen values
    if type(v) is tuple:
        return cast(T, tuple(_own(x) for x in v))
    if dataclasses.is_dataclass(v) and not isinstance(v, type) and not hasattr(v, "__slots__"):
        out = copy.copy(v)
        for f in dataclasses.fields(v):
            object.__setattr__(out, f.name, _own(getattr(v, f.name)))
        return cast(T, out)
    return copy.deepcopy(value)
