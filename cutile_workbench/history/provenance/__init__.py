"""Provenance of one measured run: GPU, clocks before/after, harness, TileGym commit, library hash, host.

Contract:
- :class:`Provenance` is immutable and JSON round-trips (:meth:`Provenance.to_dict` /
  :func:`provenance_from_dict`; a malformed dict raises ``InputError`` naming the key). Every field
  is either a fact or ``None`` with the reason in ``unknown[field]`` ("unavailable: NVML init
  failed (...)", "not recorded in session.json", ...): nothing is guessed. Imported values say
  where they came from in ``origin[field]``.
- :func:`emit_provenance` is what the pytest plugin calls in the child at session start and
  finish: it emits one ``provenance`` event (``phase``: ``start`` | ``finish``, ``provenance``: the
  dict) through :func:`cutile_workbench.artifacts.events.emit` and **never raises** (a provenance failure must not
  fail a benchmark run; it becomes an ``unknown`` entry). Static facts (TileGym commit, library
  sha256, versions) are computed once per process; the finish event adds the clock snapshot after
  the last test, torch's versions and the UUID of the CUDA device torch really used.
- :func:`provenance_from_events` merges a run's events: static facts and the ``before`` snapshot
  from the first start, ``after`` from the last finish (a resumed run has several of each).
- ``toolchain`` (issue 36): the tileiras and ptxas versions, the cutile-rs crate version and commit,
  cuda-tile and cupti-python, computed once per process with the static facts
  (:mod:`.toolchain`); a missing one is ``unknown["toolchain.<key>"]``.
- The TileGym commit is read from ``.git`` (HEAD, loose refs, packed-refs, worktree ``gitdir:``
  files) without running git; the working tree's cleanliness is not checked.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import socket
import sys
import time
import types
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Literal

import cutile_workbench
from cutile_workbench.errors import InputError
from cutile_workbench.history.provenance.gpu import ClockSnapshot, GpuIdentity, GpuReading, read_gpu

PROVENANCE_VERSION = 1

#: harness knobs recorded verbatim when set: TileGym's env names and the workbench harness's
HARNESS_ENV_KEYS: tuple[str, ...] = (
    "CUPTI",
    "WARMUP",
    "REP",
    "MIN_REP",
    "INITIAL_REP",
    "MAX_REP",
    "MODE",
    "CUDAGRAPH",
    "DUMP_CUPTI_EVENTS",
    "WORKBENCH_CAPTURE",
    "WORKBENCH_SETTLE_US",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "WORKBENCH_CLOCKS",
    "WORKBENCH_DISCARD_THROTTLED",
)
HARNESS_ENV_PREFIXES: tuple[str, ...] = ("WORKBENCH_CUPTI_",)
#: where TileGym's cutile-rs build puts the kernel library (relative to the TileGym checkout)
CUTILE_RS_LIB = Path("src/tilegym/ops/cutile_rs/cutile_kernels/target/release/libcutile_kernels.so")

HarnessName = Literal["workbench", "tilegym", "unknown"]


@dataclass(frozen=True)
class HarnessInfo:
    """Who timed the samples and with which knobs (env names → values as set; absent = default)."""

    name: HarnessName
    settings: Mapping[str, str] = field(default_factory=dict)
    detail: str = ""


@dataclass(frozen=True)
class Provenance:
    """The conditions of one run (see module doc). Times are Unix seconds."""

    source: Literal["live", "imported"]
    gpu: GpuIdentity | None = None
    before: ClockSnapshot | None = None
    after: ClockSnapshot | None = None
    harness: HarnessInfo | None = None
    tilegym_dir: str | None = None
    tilegym_commit: str | None = None
    tilegym_version: str | None = None  # the installed ``tilegym`` distribution, if any
    cutile_rs_lib_sha256: str | None = None
    workbench_version: str | None = None
    workbench_commit: str | None = None
    host: str | None = None
    python: str | None = None
    torch: str | None = None
    torch_cuda: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    #: tileiras, ptxas, cutile_rs, cutile_rs_commit, cuda_tile, cupti (``toolchain.toolchain_facts``);
    #: a key without a value says why in ``unknown["toolchain.<key>"]``
    toolchain: Mapping[str, str] = field(default_factory=dict)
    unknown: Mapping[str, str] = field(default_factory=dict)
    origin: Mapping[str, str] = field(default_factory=dict)
    version: int = PROVENANCE_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def gpu_name(self) -> str | None:
        return self.gpu.name if self.gpu else None

    def throttling(self) -> tuple[str, ...] | None:
        """Throttle evidence seen during the run, or None when no snapshot says anything.

        Instantaneous reasons at either snapshot (``sw_power_cap@end`` …) plus growth of NVML's
        cumulative power/thermal violation counters between the two snapshots.
        """
        snaps = [
            (s, at)
            for s, at in ((self.before, "start"), (self.after, "end"))
            if s is not None and s.clock_event_reasons is not None
        ]
        seen = [f"{r}@{at}" for s, at in snaps for r in s.throttle_reasons]
        b, a = self.before, self.after
        counters = False
        if b is not None and a is not None:
            for name, old, new in (
                ("power", b.power_violation_ns, a.power_violation_ns),
                ("thermal", b.thermal_violation_ns, a.thermal_violation_ns),
            ):
                if old is not None and new is not None:
                    counters = True
                    if new > old:
                        seen.append(f"{name}_violation_{(new - old) / 1e6:.1f}ms")
        if not snaps and not counters:
            return None
        return tuple(seen)

    def throttle_exposure(self) -> float | None:
        """Share of the run's time (start to end snapshot) NVML counted as power/thermal violation;
        None when either snapshot lacks a counter or the span is not positive."""
        b, a = self.before, self.after
        if b is None or a is None:
            return None
        grown = 0
        for old, new in (
            (b.power_violation_ns, a.power_violation_ns),
            (b.thermal_violation_ns, a.thermal_violation_ns),
        ):
            if old is None or new is None:
                return None
            grown += max(0, new - old)
        span_ns = (a.taken_at - b.taken_at) * 1e9
        return min(1.0, grown / span_ns) if span_ns > 0 else None


# --------------------------------------------------------------------------- from dicts


def _coerce(value: Any, hint: Any, key: str, src: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _coerce(value, arg, key, src)
            except InputError as exc:
                errors.append(exc)
        raise errors[0] if errors else InputError("must not be null", path=src, key=key)
    if origin is Literal:
        if value in args:
            return value
        raise InputError(f"must be one of {', '.join(map(repr, args))}, got {value!r}", path=src, key=key)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise InputError(f"must be a list, got {type(value).__name__}", path=src, key=key)
        return tuple(_coerce(v, args[0], f"{key}[{i}]", src) for i, v in enumerate(value))
    if origin in (Mapping, dict) or hint in (Mapping, dict):
        if not isinstance(value, dict):
            raise InputError(f"must be an object, got {type(value).__name__}", path=src, key=key)
        return {str(k): _coerce(v, args[1], f"{key}.{k}", src) if args else v for k, v in value.items()}
    if isinstance(hint, type) and is_dataclass(hint):
        return _dataclass_from(hint, value, key, src)
    if hint is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if hint in (int, str) and isinstance(value, hint) and not isinstance(value, bool):
        return value
    if hint is Any:
        return value
    raise InputError(
        f"must be {getattr(hint, '__name__', hint)}, got {type(value).__name__}", path=src, key=key
    )


@functools.cache
def _hints(cls: Any) -> dict[str, Any]:
    # resolved once per class: a 1,000-run history coerces 5,000 provenances (get_type_hints was ~1/3 of it)
    return typing.get_type_hints(cls)


def _dataclass_from(cls: Any, value: Any, key: str, src: str) -> Any:
    if not isinstance(value, dict):
        raise InputError(f"must be an object, got {type(value).__name__}", path=src, key=key or None)
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        where = f"{key}.{f.name}" if key else f.name
        if f.name in value:
            kwargs[f.name] = _coerce(value[f.name], hints[f.name], where, src)
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field is missing
        raise InputError(f"incomplete: {exc}", path=src, key=key or None) from None


def provenance_from_dict(data: Any, *, source: str = "<provenance>") -> Provenance:
    """A :class:`Provenance` from :meth:`Provenance.to_dict` output; unknown keys are ignored."""
    prov = _dataclass_from(Provenance, data, "", source)
    if prov.version > PROVENANCE_VERSION:
        raise InputError(
            f"provenance version {prov.version} is newer than this workbench's "
            f"({PROVENANCE_VERSION}); upgrade cutile-workbench",
            path=source,
            key="version",
        )
    return typing.cast(Provenance, prov)


# --------------------------------------------------------------------------- static facts


def read_git_commit(checkout: Path) -> tuple[str | None, str]:
    """(commit sha, how it was found) of a git checkout, read from ``.git`` without running git."""
    dot_git = checkout / ".git"
    try:
        if dot_git.is_file():  # worktree or submodule: "gitdir: <path>"
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            if not text.startswith("gitdir:"):
                return None, f"{dot_git} is not a gitdir pointer"
            git_dir = (checkout / text[len("gitdir:") :].strip()).resolve()
        elif dot_git.is_dir():
            git_dir = dot_git
        else:
            return None, f"{checkout} is not a git checkout (no .git)"
        head = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
        if not head.startswith("ref:"):
            return (head, "detached HEAD") if _is_sha(head) else (None, f"unreadable HEAD {head[:60]!r}")
        ref = head[len("ref:") :].strip()
        common = git_dir
        if (git_dir / "commondir").is_file():
            common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
        for base in dict.fromkeys((git_dir, common)):
            loose = base / ref
            if loose.is_file():
                sha = loose.read_text(encoding="utf-8", errors="replace").strip()
                if _is_sha(sha):
                    return sha, ref
            packed = base / "packed-refs"
            if packed.is_file():
                for line in packed.read_text(encoding="utf-8", errors="replace").splitlines():
                    parts = line.split()
                    if len(parts) == 2 and parts[1] == ref and _is_sha(parts[0]):
                        return parts[0], ref
        return None, f"{ref} not found in {git_dir}"
    except OSError as exc:
        return None, f"cannot read {dot_git}: {exc.strerror or exc}"


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def find_tilegym_dir(rootdir: Path | None, env: Mapping[str, str]) -> Path | None:
    """``$TILEGYM_PATH``, else the nearest of ``rootdir`` and its parents holding ``src/tilegym``."""
    if env.get("TILEGYM_PATH"):
        return Path(env["TILEGYM_PATH"])
    if rootdir is None:
        return None
    for cand in (rootdir, *rootdir.parents):
        if (cand / "src" / "tilegym").is_dir():
            return cand
    return None


def harness_settings(env: Mapping[str, str]) -> dict[str, str]:
    """The harness knobs that are set in ``env`` (see :data:`HARNESS_ENV_KEYS`)."""
    return {
        k: str(env[k]) for k in sorted(env) if k in HARNESS_ENV_KEYS or k.startswith(HARNESS_ENV_PREFIXES)
    }


def _distribution_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def run_toolchain(tilegym_dir: Path | None) -> tuple[dict[str, str], dict[str, str]]:
    """This process's toolchain facts and why-not reasons (tileiras, ptxas, cutile-rs, cuda-tile, cupti)."""
    from cutile_workbench.history.provenance.toolchain import toolchain_facts

    facts, unknown = toolchain_facts(tilegym_dir=tilegym_dir, cuda_tile=_distribution_version("cuda-tile"))
    cupti = _distribution_version("cupti-python")
    if cupti is None:
        unknown["cupti"] = "no installed cupti-python distribution"
    else:
        facts["cupti"] = cupti
    return facts, unknown


def static_provenance(*, tilegym_dir: Path | None, harness: HarnessInfo) -> Provenance:
    """Everything that does not change during a run (no GPU query; no environment beyond ``harness``)."""
    unknown: dict[str, str] = {}
    commit = lib_hash = None
    if tilegym_dir is None:
        for key in ("tilegym_dir", "tilegym_commit", "cutile_rs_lib_sha256"):
            unknown[key] = "not a TileGym run (no src/tilegym above the rootdir, TILEGYM_PATH unset)"
    else:
        commit, how = read_git_commit(tilegym_dir)
        if commit is None:
            unknown["tilegym_commit"] = f"unknown: {how}"
        lib = tilegym_dir / CUTILE_RS_LIB
        try:
            lib_hash = sha256_file(lib)
        except FileNotFoundError:
            unknown["cutile_rs_lib_sha256"] = f"not built ({lib} absent)"
        except OSError as exc:
            unknown["cutile_rs_lib_sha256"] = f"unreadable: {exc.strerror or exc}"
    wb_commit, wb_how = read_git_commit(Path(cutile_workbench.__file__).resolve().parent.parent)
    if wb_commit is None:
        unknown["workbench_commit"] = f"unknown: {wb_how}"
    tg_version = _distribution_version("tilegym")
    if tg_version is None:
        unknown["tilegym_version"] = "no installed tilegym distribution"
    for key in ("torch", "torch_cuda"):
        unknown[key] = "torch not imported yet (filled in at session finish)"
    toolchain, tool_unknown = run_toolchain(tilegym_dir)
    unknown.update({f"toolchain.{k}": why for k, why in tool_unknown.items()})
    return Provenance(
        toolchain=toolchain,
        source="live",
        harness=harness,
        tilegym_dir=str(tilegym_dir) if tilegym_dir else None,
        tilegym_commit=commit,
        tilegym_version=tg_version,
        cutile_rs_lib_sha256=lib_hash,
        workbench_version=cutile_workbench.__version__,
        workbench_commit=wb_commit,
        host=socket.gethostname(),
        python=platform.python_version(),
        unknown=unknown,
    )


def _torch_facts() -> tuple[str | None, str | None, str | None]:
    """(torch version, its CUDA version, UUID of the current CUDA device) if torch is loaded."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None, None, None
    version = getattr(torch, "__version__", None)
    cuda = getattr(getattr(torch, "version", None), "cuda", None)
    uuid = None
    try:
        if torch.cuda.is_initialized():  # never initialise CUDA ourselves
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            raw = str(getattr(props, "uuid", "") or "")
            uuid = raw if raw.startswith(("GPU-", "MIG-")) else (f"GPU-{raw}" if raw else None)
    except Exception:  # a broken CUDA context: the UUID is just unknown
        uuid = None
    return (str(version) if version else None), (str(cuda) if cuda else None), uuid


def with_gpu(prov: Provenance, reading: GpuReading, phase: Literal["start", "finish"]) -> Provenance:
    """``prov`` with the GPU identity and the ``before``/``after`` snapshot of ``reading``."""
    unknown = dict(prov.unknown)
    slot = "before" if phase == "start" else "after"
    if reading.identity is None:
        unknown.setdefault("gpu", reading.unavailable or "unavailable")
        unknown[slot] = reading.unavailable or "unavailable"
        return replace(prov, unknown=unknown)
    unknown.pop("gpu", None)
    unknown.pop(slot, None)
    if phase == "start":
        return replace(prov, gpu=reading.identity, unknown=unknown, before=reading.snapshot)
    return replace(prov, gpu=reading.identity, unknown=unknown, after=reading.snapshot)


# --------------------------------------------------------------------------- the plugin's entry point

#: static facts per (process, rootdir, harness): computed once per pytest session, not per event
_STATIC: dict[tuple[Any, ...], Provenance] = {}


def collect_provenance(
    phase: Literal["start", "finish"],
    *,
    rootdir: Path | None,
    workbench_harness: bool,
    env: Mapping[str, str] | None = None,
    nvml: Any = None,
) -> Provenance:
    """The provenance a child reports at ``phase`` (static facts cached per process)."""
    environ = os.environ if env is None else env
    settings = harness_settings(environ)
    cache_key = (
        os.getpid(),
        str(rootdir),
        workbench_harness,
        tuple(settings.items()),
        environ.get("TILEGYM_PATH"),
    )
    static = _STATIC.get(cache_key)
    if static is None:
        harness = HarnessInfo(
            name="workbench" if workbench_harness else "unknown",
            settings=settings,
            detail="--workbench-harness swap for TileGym's benchmark_fn_cupti"
            if workbench_harness
            else "the suite's own harness (named from the records' capture_source)",
        )
        static = static_provenance(tilegym_dir=find_tilegym_dir(rootdir, environ), harness=harness)
        _STATIC[cache_key] = static
    now = time.time()
    uuid = None
    prov = replace(static, started_at=now) if phase == "start" else replace(static, finished_at=now)
    if phase == "finish":
        torch_version, torch_cuda, uuid = _torch_facts()
        unknown = dict(prov.unknown)
        for key, value in (("torch", torch_version), ("torch_cuda", torch_cuda)):
            if value is not None:
                unknown.pop(key, None)
            else:
                unknown[key] = "torch was not loaded by the tests"
        prov = replace(prov, torch=torch_version, torch_cuda=torch_cuda, unknown=unknown)
    return with_gpu(prov, read_gpu(env=environ, uuid=uuid, nvml=nvml), phase)


def emit_provenance(config: Any, phase: Literal["start", "finish"]) -> bool:
    """Emit a ``provenance`` event for the plugin (see module doc); False when no stream is active."""
    from cutile_workbench.artifacts import events

    try:
        rootdir = Path(str(config.rootpath)) if config is not None and hasattr(config, "rootpath") else None
        swap = bool(config.getoption("--workbench-harness")) if config is not None else False
        prov = collect_provenance(phase, rootdir=rootdir, workbench_harness=swap)
        payload: dict[str, Any] = prov.to_dict()
    except Exception as exc:  # never fail a benchmark session over its provenance
        payload = Provenance(
            source="live",
            unknown={"provenance": f"collection failed: {type(exc).__name__}: {exc}"},
            started_at=time.time() if phase == "start" else None,
            finished_at=time.time() if phase == "finish" else None,
        ).to_dict()
    return events.emit(config, "provenance", phase=phase, provenance=payload)


def provenance_from_events(evs: Any, *, source: str = "<events>") -> Provenance | None:
    """Merge the ``provenance`` events of one run (see module doc); None when there are none."""
    starts: list[Provenance] = []
    finishes: list[Provenance] = []
    for ev in evs:
        if getattr(ev, "event", None) != "provenance":
            continue
        where = f"{source}:{ev.line}" if getattr(ev, "line", None) else source
        prov = provenance_from_dict(ev.get("provenance"), source=where)
        (starts if ev.get("phase") == "start" else finishes).append(prov)
    if not starts and not finishes:
        return None
    first = starts[0] if starts else finishes[0]
    last = finishes[-1] if finishes else None
    unknown = dict(first.unknown)
    merged = first
    if last is not None:
        for key in ("torch", "torch_cuda"):
            if getattr(last, key) is not None:
                unknown.pop(key, None)
        unknown.pop("after", None)
        unknown.update({k: v for k, v in last.unknown.items() if k in ("after", "torch", "torch_cuda")})
        gpu = first.gpu
        before = first.before if starts else None
        if last.gpu is not None and (gpu is None or gpu.uuid != last.gpu.uuid):
            if gpu is not None and before is not None:
                before = None
                unknown["before"] = (
                    f"the start snapshot was of {gpu.uuid} ({gpu.selected_by}); "
                    f"the CUDA device in use was {last.gpu.uuid}"
                )
            gpu = last.gpu
            unknown.pop("gpu", None)
        merged = replace(
            first,
            gpu=gpu,
            before=before,
            after=last.after,
            torch=last.torch or first.torch,
            torch_cuda=last.torch_cuda or first.torch_cuda,
            finished_at=last.finished_at,
        )
    if not finishes:
        unknown["after"] = "no finish event (the child died before session finish)"
    if not starts:
        unknown.setdefault("before", "no start event")
    return replace(merged, unknown=unknown)
