"""Per-launch captures of one config as a service: where they are, which backend plays which role, summaries.

Contract:

- :func:`find_launches` checks the kernel name (:func:`cutile_workbench.artifacts.confine.check_kernel_name`) and
  finds ``workbench/launches.json.gz`` of the kernel dir (``out_root``, else
  ``$CUTILE_KERNEL_OUT_ROOT``), else the recorded session the workspace opens for that kernel (as
  the TUI does); ``InputError`` naming what it looked at; a launches file or session.json that
  resolves outside its kernel dir is refused (``UnsafePath``).
- :func:`select_sets` picks one config's launch sets (params string or node id; optional backends);
  an unknown config is an ``InputError`` listing close matches. :func:`config_timeline` reads them
  through the per-config store (:mod:`cutile_workbench.artifacts.launch_store`): only that config is decoded.
- :func:`backend_roles` maps backend id tokens to ``candidate``/``baseline`` (session.json, else
  the profile; a session.json of the wrong shape is an ``InputError`` naming file and key); :func:`summarize_set` is launches per call, device time per call and per-kernel
  per-launch times (µs) of one set; :func:`measurement_labels` tells a test's forward and backward
  sets apart (by their order).
- :func:`config_trust` is the config's candidate identity and the config the reference ran (the same
  answer ``table``, performance.md and F give; :mod:`cutile_workbench.evidence.trust`), each with what is
  unknown and why; never a guess.
- :func:`write_perfetto` writes Chrome-trace JSON atomically into an existing directory (it
  creates none) and refuses to replace an existing file that is not JSON unless ``force``.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.launches_io import VERSION as VERSION
from cutile_workbench.artifacts.launches_io import sets_from_document as sets_from_document
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.artifacts.testids import id_token
from cutile_workbench.errors import InputError
from cutile_workbench.evidence.candidate_identity import CandidateIdentity
from cutile_workbench.evidence.launches import pick_sets as pick_sets
from cutile_workbench.evidence.launches import same_backend as same_backend
from cutile_workbench.evidence.reference_config import ReferenceConfig
from cutile_workbench.infra.atomicio import atomic_write_bytes
from cutile_workbench.model import LaunchSet
from cutile_workbench.stages.session.kernel import KernelSession


def find_launches(
    kernel: str, out_root: str | Path | None, env: Mapping[str, str] = os.environ
) -> tuple[Path, Path | None]:
    """``(launches file, session.json or None)``: the out-root kernel dir first, then the recording
    (any recorded session the workspace would open: a profile's or a recorded TileGym run's)."""
    from cutile_workbench.artifacts.confine import check_kernel_name, confine_read
    from cutile_workbench.artifacts.workspace import command_line, recorded_session_root

    check_kernel_name(kernel)
    looked: list[str] = []
    root = out_root or env.get("CUTILE_KERNEL_OUT_ROOT")
    roots = [Path(root)] if root else []
    if not out_root:
        recorded = recorded_session_root(kernel)
        if recorded is not None:
            roots.append(recorded)
    for r in roots:
        kp = KernelPaths.under(r, kernel)
        if kp.launches_json.is_file():
            confine_read(kp.root, kp.launches_json)
            session = kp.session_json if kp.session_json.exists() else None
            if session is not None:
                confine_read(kp.root, session)
            return kp.launches_json, session
        looked.append(str(kp.launches_json))
    raise InputError(
        f"no per-launch captures for {kernel!r} (looked at: {', '.join(looked) or 'nothing'}); "
        f"run `{command_line('run', kernel, '--out-root', str(roots[0]) if roots else 'OUT')}` on a GPU node first "
        "(the workbench harness records them)",
        key="kernel",
    )


def backend_roles(session_json: Path | None, kernel: str) -> dict[str, str]:
    """backend record key → "candidate"/"baseline" from session.json (else the profile); a session.json
    of the wrong shape is an ``InputError`` naming the file and key."""
    roles: dict[str, str] = {}
    if session_json is not None:
        from cutile_workbench.artifacts.confine import read_regular_text
        from cutile_workbench.infra.jsonutil import loads_located

        data = loads_located(read_regular_text(session_json, kind="session.json"), str(session_json))
        if not isinstance(data, dict):
            raise InputError(
                f"top level must be a JSON object, not {type(data).__name__}", path=str(session_json)
            )
        runs = data.get("runs") or {}
        if not isinstance(runs, dict):
            raise InputError(
                f"must be an object of role → run, not {type(runs).__name__}",
                path=str(session_json),
                key="runs",
            )
        for role, meta in runs.items():
            if not isinstance(meta, dict):
                raise InputError(
                    f"must be an object, not {type(meta).__name__}",
                    path=str(session_json),
                    key=f"runs.{role}",
                )
            token = meta.get("backend_token")
            if token is not None and not isinstance(token, str):
                raise InputError("must be a string", path=str(session_json), key=f"runs.{role}.backend_token")
            if isinstance(token, str):
                roles[token] = "candidate" if role == "candidate" else "baseline"
        for key in ("candidate", "baseline"):
            for name in (key, f"{key}_backend"):
                value = data.get(name)
                if value is not None and not isinstance(value, str):
                    raise InputError(
                        f"must be a string, not {type(value).__name__}", path=str(session_json), key=name
                    )
            value = data.get(key) or data.get(f"{key}_backend")
            if isinstance(value, str):
                roles.setdefault(id_token(value), key)
    if not roles:
        with contextlib.suppress(ImportError):
            from cutile_workbench.profiles import get_profile, get_recorded_tilegym

            profile = get_profile(kernel) or get_recorded_tilegym(kernel)
            if profile is not None:
                roles[id_token(profile.candidate)] = "candidate"
                roles[id_token(profile.baseline)] = "baseline"
    return roles


def _stats(values: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)} if values else {}


def measurement_labels(sets: Sequence[LaunchSet]) -> list[str]:
    """Per set: which measurement of its test it is — ``forward``, ``backward``, ``measurement 3``…
    by order within (nodeid, backend) (TileGym measures forward first); "" for a test with one set."""
    totals: dict[tuple[str, str], int] = {}
    for s in sets:
        totals[(s.nodeid, s.backend)] = totals.get((s.nodeid, s.backend), 0) + 1
    seen: dict[tuple[str, str], int] = {}
    labels = []
    for s in sets:
        key = (s.nodeid, s.backend)
        index = seen.get(key, 0)
        seen[key] = index + 1
        labels.append(
            ""
            if totals[key] < 2
            else ("forward", "backward")[index]
            if index < 2
            else f"measurement {index + 1}"
        )
    return labels


def summarize_set(s: LaunchSet, role: str, measurement: str = "") -> dict[str, Any]:
    """Launches per call, device time per call and per-kernel per-launch times (µs) of one set."""
    per_call = [len(c.launches) for c in s.calls]
    device_us = [c.device_time_ns / 1000.0 for c in s.calls]
    kernels: dict[str, dict[str, Any]] = {}
    for c in s.calls:
        counts: dict[str, int] = {}
        for x in c.launches:
            k = kernels.setdefault(
                x.display_name,
                {
                    "name": x.display_name,
                    "kind": x.kind,
                    "durations_us": [],
                    "counts": [],
                    "grid": list(x.grid) if x.grid else None,
                    "block": list(x.block) if x.block else None,
                    "registers_per_thread": x.registers_per_thread,
                    "shared_memory_bytes": (
                        None
                        if x.static_smem is None and x.dynamic_smem is None
                        else (x.static_smem or 0) + (x.dynamic_smem or 0)
                    ),
                },
            )
            k["durations_us"].append(x.duration_ns / 1000.0)
            counts[x.display_name] = counts.get(x.display_name, 0) + 1
        for name in kernels:
            kernels[name]["counts"].append(counts.get(name, 0))
    rows = []
    for k in kernels.values():
        rows.append(
            {
                "name": k["name"],
                "kind": k["kind"],
                "launches_per_call": statistics.median(k["counts"]) if k["counts"] else 0,
                "per_launch_us": _stats(k["durations_us"]),
                "grid": k["grid"],
                "block": k["block"],
                "registers_per_thread": k["registers_per_thread"],
                "shared_memory_bytes": k["shared_memory_bytes"],
            }
        )
    rows.sort(key=lambda r: -(r["per_launch_us"].get("median", 0.0) * r["launches_per_call"]))
    return {
        "backend": s.backend,
        "role": role,
        "measurement": measurement,
        "nodeid": s.nodeid,
        "params": s.params,
        "source": s.source,
        "calls": len(s.calls),
        "launches_per_call": _stats([float(n) for n in per_call]),
        "device_time_per_call_us": _stats(device_us),
        "kernels": rows,
        "no_launch_data": s.source == "events",
    }


def select_sets(
    sets: Sequence[LaunchSet], config: str, backends: list[str] | None, path: Path
) -> list[LaunchSet]:
    """One config's sets (params or node id); a :class:`~cutile_workbench.artifacts.launch_store.LaunchStore` decodes only those."""
    from cutile_workbench.artifacts.launch_store import LaunchStore

    if isinstance(sets, LaunchStore):
        chosen = sets.for_params(config) or sets.for_nodeid(config)
        known = sorted(set(sets.params())) if not chosen else []
    else:
        chosen = [s for s in sets if s.params == config or s.nodeid == config]
        known = sorted({s.params for s in sets}) if not chosen else []
    if not chosen:
        close = difflib.get_close_matches(config, known, n=6, cutoff=0.4)
        close += [k for k in known if config in k and k not in close][:6]
        raise InputError(
            f"unknown config {config!r}"
            + (f"; close matches: {', '.join(close)}" if close else "")
            + f" ({len(known)} configs recorded)",
            path=path,
            key="--config",
        )
    if backends:
        want = {id_token(b) for b in backends}
        picked = [s for s in chosen if id_token(s.backend) in want]
        if not picked:
            have = sorted({s.backend for s in chosen})
            raise InputError(
                f"no captures of backend(s) {', '.join(backends)} for {config!r} (have: {', '.join(have)})",
                path=path,
                key="--backend",
            )
        chosen = picked
    return chosen


def to_chrome_trace(sets: Sequence[LaunchSet]) -> dict[str, Any]:
    """Chrome-trace JSON of launch sets (:func:`cutile_workbench.artifacts.launches_io.to_chrome_trace`)."""
    from cutile_workbench.artifacts.launches_io import to_chrome_trace as trace

    return trace(list(sets))


def write_perfetto(path: Path, trace: dict[str, Any], *, force: bool) -> None:
    """Atomic write of a Chrome trace; an existing non-JSON file is only replaced with ``force``."""
    path = Path(path)
    if path.is_dir():
        raise InputError("is a directory", path=path, key="--perfetto")
    if path.exists() and not force:
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            raise InputError(
                "exists and is not JSON; refusing to replace it (use --force)", path=path, key="--perfetto"
            ) from None
    if not path.parent.is_dir():  # a typo in the directory must not create a tree of new ones
        raise InputError("directory does not exist (create it first)", path=path.parent, key="--perfetto")
    # a file the user named (--perfetto FILE): no kernel dir to stay inside
    atomic_write_bytes(path, json.dumps(trace, separators=(",", ":")).encode("utf-8"), None)


@dataclass(frozen=True)
class ConfigTimeline:
    """One config's launch sets (candidate first, then baseline, then others) and their summaries."""

    kernel: str
    config: str
    source: Path  # the launches file read
    sets: list[LaunchSet]
    summaries: list[dict[str, Any]]
    #: what is a stand-in here (``cutile_workbench.artifacts.stand_ins``): the lines every face prints, [] when nothing is
    stand_ins: list[str] = field(default_factory=list)
    #: the session of the kernel dir the captures lie in (``config_trust`` takes it: one per command)
    session: KernelSession | None = field(default=None, compare=False, repr=False)


def config_timeline(
    kernel: str,
    config: str,
    *,
    backends: list[str] | None = None,
    out_root: str | Path | None = None,
    env: Mapping[str, str] = os.environ,
) -> ConfigTimeline:
    """Find, load and summarize one config's captures (see module contract); InputError for bad input."""
    from cutile_workbench.artifacts.launch_store import open_store

    path, session_json = find_launches(kernel, out_root, env)
    store = open_store(path, kernel_dir=path.parents[1])
    session = _session_of_launches(kernel, path, env)
    # a node id names one test (its backend's sets), a captured config's exact params that config (no
    # name table needed: issue 31, a one-config question reads that config alone); else any spelling
    if not store.for_nodeid(config) and not store.indices_for_params(config):
        config = session.resolve_config(config)
    chosen = select_sets(store, config, backends, path)  # this config's sets only
    roles = backend_roles(session_json, kernel)
    order = {"candidate": 0, "baseline": 1}
    chosen.sort(key=lambda s: (order.get(roles.get(id_token(s.backend), ""), 2), s.backend))
    labels = measurement_labels(chosen)  # after the stable sort: forward still before backward
    summaries = [
        summarize_set(s, roles.get(id_token(s.backend), "-"), label)
        for s, label in zip(chosen, labels, strict=True)
    ]
    return ConfigTimeline(
        kernel, config, path, chosen, summaries, _stand_in_lines(summaries, session_json), session
    )


def _session_of_launches(kernel: str, launches: Path, env: Mapping[str, str]) -> KernelSession:
    """The session of the kernel dir the launches file lies in (the out root's or the recording's)."""
    from cutile_workbench.artifacts.workspace import open_workspace

    ws = open_workspace(kernel, out_root=launches.parents[2], tilegym=None, env=env, strict=False)
    return KernelSession.of(ws)


def _stand_in_lines(summaries: list[dict[str, Any]], session_json: Path | None) -> list[str]:
    """Issue 18 §5: a stand-in candidate (or a plain-Triton baseline) is named on this face too."""
    from cutile_workbench.artifacts.stand_ins import stand_ins_of

    session: dict[str, Any] | None = None
    if session_json is not None:
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(session_json.read_text(encoding="utf-8"))
            session = data if isinstance(data, dict) else None
    candidates = {str(s["backend"]) for s in summaries if s["role"] == "candidate"}
    triton = any(s["role"] == "baseline" and id_token(str(s["backend"])) == "triton" for s in summaries)
    return stand_ins_of(
        candidates or None,
        session,
        {"triton_tileir"} if triton else set(),
        frameworks_from="the captures' candidate",
    ).lines()


@dataclass(frozen=True)
class ConfigTrust:
    """Who ran the config (candidate identity) and which config the reference ran; ``None`` + ``why`` when the
    workspace cannot say (no candidate log, no such row)."""

    identity: CandidateIdentity | None
    reference: ReferenceConfig | None
    why: str = ""

    def lines(self) -> list[str]:
        if self.identity is None:
            return [f"candidate identity: unknown ({self.why})"]
        out = [f"candidate identity: {self.identity.mark} — {self.identity.why}"]
        out += [f"  unknown: {u}" for u in self.identity.unknown]
        out += [f"  wrapper: {c}" for c in self.identity.wrapper_calls]
        if self.reference is not None:
            out.append(f"reference config: {self.reference.text}")
        return out

    def as_dict(self) -> dict[str, Any]:
        ref = self.reference
        return {
            "identity": self.identity.as_dict() if self.identity else None,
            "why": self.why,
            "reference_config": None
            if ref is None
            else {
                "text": ref.text,
                "config": ref.config.label if ref.config else None,
                "fits": [c.label for c in ref.fits],
                "unknown": list(ref.unknown),
            },
        }


def config_trust(
    kernel: str,
    config: str,
    *,
    out_root: str | Path | None = None,
    tilegym: Path | None = None,
    env: Mapping[str, str] = os.environ,
    session: KernelSession | None = None,
) -> ConfigTrust:
    """See the module contract; InputError only for malformed inputs (an absent one gives ``why``). The
    session's E table and trust: the same rows and identities ``table`` shows; ``config`` in any spelling
    the config naming accepts (:mod:`cutile_workbench.stages.session.configs`)."""
    from cutile_workbench.artifacts.workspace import open_workspace
    from cutile_workbench.errors import WorkbenchError

    if session is None or (tilegym is not None and session.tilegym != tilegym):  # else the command's session
        ws = open_workspace(
            kernel, out_root=Path(out_root) if out_root else None, tilegym=tilegym, env=env, strict=False
        )
        session = KernelSession.of(ws)
    try:
        store = session.launches()
    except WorkbenchError:
        store = None
    exact = store is not None and bool(store.indices_for_params(config))
    try:  # a captured config's exact params: that config's rows alone (its log sections, seeked)
        table = session.config_table(config) if exact else session.table()
    except WorkbenchError as exc:
        return ConfigTrust(None, None, f"no candidate log: {exc.message}")
    try:
        params = config if exact else session.resolve_config(config)
    except WorkbenchError:
        params = config
    rows = [r for r in table.rows if r.params == params]
    if not rows:
        return ConfigTrust(None, None, f"config {config!r} is not a row of the E table")
    one = session.config_trust(params)  # that config's entry alone (issue 31: no kernel-wide assembly)
    if one is None:
        return ConfigTrust(None, None, f"config {config!r} is not a row of the E table")
    return ConfigTrust(one.identity, one.reference)
