"""Resolve ``<kernel>`` to its artifact dir and load its inputs lazily, reporting gaps.

Contract: :func:`open_workspace` finds the kernel dir — ``out_root`` argument (``--out-root``),
else ``$CUTILE_KERNEL_OUT_ROOT``, else the recorded session embedded in the installed
``profiles`` package (``cutile_workbench/profiles/*/session/<kernel>/``, source ``"recorded"``) — and the TileGym
checkout (``tilegym`` argument, else ``$TILEGYM_PATH``, else None). Kernel names must pass
:func:`cutile_workbench.artifacts.confine.check_kernel_name` (``UnsafePath`` otherwise). Missing inputs become :class:`Gap` entries, never
exceptions; a present but malformed input raises ``InputError`` when it is loaded
(``analysis.json`` at open time unless ``strict=False``, which records it as an error gap and keeps
the error in ``Workspace.ignored``, for the command that reads on to say so).
Opening runs :func:`cutile_workbench.artifacts.writer.recover` so an interrupted report write is finished first.

Digests (issue 31): :meth:`Workspace.digest` is the SHA-256 of one input's bytes, read once per
workspace (one command; the TUI's open kernel) and reused by every cache key built on it — E's
table, trust, the history's comparability, F's records — and taken again only when the file's
inode, size or times say it was rewritten since;
:meth:`Workspace.input_digests` gives those of the kernel dir's inputs (perf logs, baselines,
analysis.json, captures, session.json, events) by role. A reader that already holds an input's
bytes (E reads the raw log's text) records their digest with :meth:`Workspace.remember_digest`.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from cutile_workbench.artifacts.analysis import Analysis, load_analysis
from cutile_workbench.artifacts.confine import check_kernel_name, confine_read, read_regular_text
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.artifacts.writer import recover
from cutile_workbench.errors import InputError, WorkbenchError
from cutile_workbench.infra.jsonutil import loads_located
from cutile_workbench.infra.paths import is_inside
from cutile_workbench.model import PerfLog

GapSeverity = Literal["error", "warn", "info"]


@dataclass(frozen=True)
class Gap:
    """An expected input that is absent (or unusable), with how much it matters."""

    path: str
    what: str
    severity: GapSeverity


def _parse(path: Path, extra_tokens: tuple[str, ...] = ()) -> PerfLog:
    from cutile_workbench.artifacts.perflog.parser import parse_perf_log

    return parse_perf_log(path, strict=True, extra_tokens=extra_tokens)


@dataclass
class Workspace:
    """One kernel's artifact dir plus lazily parsed inputs (see module docstring)."""

    kernel: str
    paths: KernelPaths
    source: Literal["recorded", "out_root"]
    tilegym: Path | None
    analysis: Analysis | None
    gaps: list[Gap] = field(default_factory=list)
    recovery: str = "clean"
    #: what ``strict=False`` read on without (a malformed analysis.json, an interrupted write not
    #: recovered): the error as raised, naming file and line; a command that reads on says so
    ignored: list[WorkbenchError] = field(default_factory=list)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def kernel_dir(self) -> Path:
        return self.paths.root

    @property
    def locator(self) -> tuple[str, ...]:
        """The flags that find this kernel dir again from any directory and shell: ``--out-root`` (made
        absolute) unless it is the recorded session (the default), ``--tilegym`` when a checkout is known.
        What every printed command line ends with (:func:`command_line`)."""
        words: tuple[str, ...] = ()
        if self.source == "out_root":
            words += ("--out-root", str(self.paths.root.parent.absolute()))
        if self.tilegym is not None:
            words += ("--tilegym", str(Path(self.tilegym).absolute()))
        return words

    def digest(self, path: Path) -> str:
        """SHA-256 (hex) of ``path``'s bytes, read once for this workspace (module contract): an absent
        file hashes as no bytes, a FIFO or device is never read (derive_cache's rule)."""
        from cutile_workbench.artifacts.derive_cache import file_digest_in

        digests: dict[str, tuple[tuple[int, ...], str]] = self._cache.setdefault("digests", {})
        key, now = str(path), _version(Path(path))
        known = digests.get(key)
        if known is None or known[0] != now:
            # the readers' confinement rule (artifacts.confine): a file that resolves outside the kernel
            # dir is never opened (a planted link to /dev/zero or another user's file); it keys as
            # "outside" and its reader refuses it by name. Inside, the resolved path is what is hashed.
            real, root_real = os.path.realpath(path), os.path.realpath(self.paths.root)
            if is_inside(real, root_real):
                digest = file_digest_in(root_real, os.path.relpath(real, root_real))
            else:
                digest = hashlib.sha256(b"\0outside the kernel dir\0" + os.fsencode(real)).hexdigest()
            digests[key] = (now, digest)
        return digests[key][1]

    def remember_digest(self, path: Path, digest: str) -> None:
        """Record the digest of ``path``'s bytes computed by a reader that holds them (E's raw log)."""
        self._cache.setdefault("digests", {})[str(path)] = (_version(Path(path)), digest)

    def input_digests(self) -> dict[str, str]:
        """The digests of this kernel dir's inputs by role (``candidate`` — the raw log E reads —,
        ``candidate:<variant>``, ``baseline_cutile``, ``baseline_triton_tileir``, ``analysis``,
        ``launches``, ``session``, ``events``), each file read once (module contract)."""
        p = self.paths
        roles: dict[str, Path | None] = {
            "candidate": self.raw_log_path(),
            **{f"candidate:{v}": p.perf_cutile_rs_variant(v) for v in self.variant_names()},
            "baseline_cutile": p.baseline_cutile,
            "baseline_triton_tileir": p.baseline_triton_tileir,
            "analysis": p.analysis_json,
            "launches": p.launches_json,
            "session": p.session_json,
            "events": p.events_jsonl,
        }
        return {role: self.digest(path) for role, path in roles.items() if path is not None}

    def _log(self, key: str, path: Path) -> PerfLog | None:
        if key not in self._cache:
            if path.is_file():
                confine_read(self.paths.root, path)  # a perf log linked out of the kernel dir is refused
            self._cache[key] = _parse(path) if path.is_file() else None
        log: PerfLog | None = self._cache[key]
        return log

    def candidate_log(self) -> PerfLog | None:
        """``perf_cutile_rs.txt`` parsed strictly, or None when absent."""
        return self._log("candidate", self.paths.perf_cutile_rs)

    def variant_names(self) -> list[str]:
        names = [v.variant_name for v in self.analysis.kernel_variants] if self.analysis else []
        return names

    def variant_candidate_logs(self) -> dict[str, PerfLog]:
        """``perf_cutile_rs_<variant>.txt`` per analysis variant that has one."""
        out = {}
        for v in self.variant_names():
            log = self._log(f"cand:{v}", self.paths.perf_cutile_rs_variant(v))
            if log is not None:
                out[v] = log
        return out

    def baseline_logs(self) -> dict[str, PerfLog]:
        """``{"cutile": …, "triton_tileir": …}`` for the logs present, plus ``cutile_rs_<variant>``
        candidate logs of multi-variant kernels (consumers pick baselines by the first two keys)."""
        out: dict[str, PerfLog] = {}
        for key, path in (
            ("cutile", self.paths.baseline_cutile),
            ("triton_tileir", self.paths.baseline_triton_tileir),
        ):
            log = self._log(key, path)
            if log is not None:
                out[key] = log
        for v, log in self.variant_candidate_logs().items():
            out[f"cutile_rs_{v}"] = log
        return out

    def reference_ir_files(self) -> list[Path]:
        d = self.paths.reference_dir
        return sorted(d.glob("reference*.mlir")) if d.is_dir() else []

    def generated_ir_files(self) -> list[Path]:
        d = self.paths.generated_dir
        return sorted(d.glob("generated*.mlir")) if d.is_dir() else []

    def wrapper_source(self) -> Path | None:
        if self.tilegym is None:
            return None
        p = self.tilegym / "src" / "tilegym" / "ops" / "cutile_rs" / f"{self.kernel}.py"
        return p if p.is_file() else None

    def session_meta(self) -> dict[str, Any] | None:
        """``workbench/session.json`` (GPU, versions, command...) or None; InputError if malformed.
        Read once per workspace (the error kept too: asking again raises it again)."""
        if "session_meta" not in self._cache:
            try:
                self._cache["session_meta"] = (True, self._session_meta())
            except WorkbenchError as exc:
                self._cache["session_meta"] = (False, exc)
        ok, value = self._cache["session_meta"]
        if not ok:
            raise value
        return cast("dict[str, Any] | None", value)

    def _session_meta(self) -> dict[str, Any] | None:
        p = self.paths.session_json
        if not (p.exists() or p.is_symlink()):
            return None
        data = loads_located(read_regular_text(p, kind="session.json", kernel_dir=self.paths.root), str(p))
        if not isinstance(data, dict):
            raise InputError("top level must be a JSON object", path=str(p))
        return data

    def raw_log_path(self) -> Path | None:
        """The raw pytest log E sanitizes: the ``.full.txt`` tee if present, else perf_cutile_rs.txt."""
        for p in (self.paths.perf_full_log, self.paths.perf_cutile_rs):
            if p.is_file():
                return p
        return None


def _version(path: Path) -> tuple[int, ...]:
    """Which version of a file a kept digest is of: a rewrite (``run``, an edit while the TUI holds the
    workspace) changes its size, times or inode, so its digest is taken again; not a key itself (keys
    hash the bytes)."""
    try:
        st = path.stat()
    except OSError:
        return ()
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def command_line(*words: str, locator: Sequence[str] = ()) -> str:
    """A ``cutile-workbench`` command line as the tool prints it for pasting (issue 36): ``words``
    then ``locator`` (:attr:`Workspace.locator`), each quoted for a POSIX shell where it must be."""
    return shlex.join(["cutile-workbench", *words, *locator])


def tilegym_checkout(explicit: Path | str | None, env: Mapping[str, str] = os.environ) -> Path | None:
    """The TileGym checkout every command uses: ``explicit`` (``--tilegym``), else ``$TILEGYM_PATH``,
    else None. Not checked here (``tilegym_checks.precondition.require_tilegym`` does that)."""
    if explicit is not None and str(explicit) != "":
        return Path(explicit)
    value = env.get("TILEGYM_PATH")
    return Path(value) if value else None


def recorded_session_root(kernel: str) -> Path | None:
    """Out root of the recorded session for ``kernel`` in the installed ``profiles`` package."""
    try:
        from cutile_workbench import profiles
    except ImportError:
        return None
    try:
        from cutile_workbench.profiles import get_profile

        prof = get_profile(kernel)
        if prof is not None and prof.kernel_dir.is_dir():
            return prof.session_root
    except (ImportError, AttributeError):
        pass
    base = Path(profiles.__file__).resolve().parent
    for cand in sorted(base.glob(f"*/session/{kernel}")):
        if cand.is_dir():
            return cand.parent
    return None


def _gaps(paths: KernelPaths, tilegym: Path | None, kernel: str) -> list[Gap]:
    g: list[Gap] = []
    if not paths.root.is_dir():
        return [Gap(str(paths.root), "kernel dir does not exist", "error")]

    def need(p: Path, what: str, sev: GapSeverity) -> None:
        if not p.is_file():
            g.append(Gap(str(p), what, sev))

    need(paths.analysis_json, "reference/analysis.json (configs to run, reference backend)", "warn")
    need(paths.baseline_cutile, "cuTile baseline log (validate_agent_e.sh requires it)", "error")
    need(paths.baseline_triton_tileir, "Triton-TileIR baseline log", "info")
    if not paths.perf_cutile_rs.is_file() and not paths.perf_full_log.is_file():
        g.append(Gap(str(paths.perf_cutile_rs), "candidate perf log (run E's test_perf first)", "error"))
    if not (paths.reference_dir.is_dir() and any(paths.reference_dir.glob("reference*.mlir"))):
        g.append(Gap(str(paths.reference_dir / "reference*.mlir"), "reference Tile IR", "warn"))
    if not (paths.generated_dir.is_dir() and any(paths.generated_dir.glob("generated*.mlir"))):
        g.append(Gap(str(paths.generated_dir / "generated*.mlir"), "generated Tile IR", "warn"))
    if tilegym is None:
        g.append(
            Gap(
                "$TILEGYM_PATH",
                "TileGym checkout not given: no wrapper source, no real validator scripts",
                "info",
            )
        )
    else:
        need(
            tilegym / "src" / "tilegym" / "ops" / "cutile_rs" / f"{kernel}.py",
            "cutile-rs wrapper source",
            "warn",
        )
    need(paths.session_json, "workbench session metadata", "info")
    return g


def open_workspace(
    kernel: str,
    *,
    out_root: Path | None = None,
    tilegym: Path | None = None,
    env: Mapping[str, str] = os.environ,
    strict: bool = True,
) -> Workspace:
    """Resolve and open ``kernel``'s workspace (see module docstring for the resolution order)."""
    check_kernel_name(kernel)
    source: Literal["recorded", "out_root"] = "out_root"
    root: Path | None = Path(out_root) if out_root is not None else None
    if root is None and env.get("CUTILE_KERNEL_OUT_ROOT"):
        root = Path(env["CUTILE_KERNEL_OUT_ROOT"])
    if root is None:
        root = recorded_session_root(kernel)
        source = "recorded"
        if root is None:
            from cutile_workbench.artifacts.kernel_index import close_kernels, recorded_kernels

            close = close_kernels(kernel, tilegym=tilegym_checkout(tilegym, env))
            raise InputError(
                f"no out root for kernel {kernel!r}: pass --out-root DIR or set "
                "CUTILE_KERNEL_OUT_ROOT (no recorded session has this kernel"
                + (f"; did you mean {' or '.join(close)}?" if close else "")
                + f"; recorded: {', '.join(recorded_kernels())}; all: cutile-workbench kernels)",
                key="kernel",
            )
    tg = tilegym_checkout(tilegym, env)
    paths = KernelPaths.under(root, kernel)
    gaps = _gaps(paths, tg, kernel)
    recovery = "absent"
    ignored: list[WorkbenchError] = []
    if paths.root.is_dir():
        try:
            recovery = recover(paths.root)
        except WorkbenchError as exc:
            ignored.append(exc)
            gaps.append(
                Gap(
                    str(exc.path or paths.reports_dir),
                    f"interrupted write not recovered: {exc.message}",
                    "error",
                )
            )
    analysis: Analysis | None = None
    if paths.analysis_json.is_file():
        confine_read(paths.root, paths.analysis_json)
        try:
            analysis = load_analysis(paths.analysis_json)
        except InputError as exc:
            if strict:
                raise
            ignored.append(exc)
            gaps.append(Gap(str(paths.analysis_json), f"malformed: {exc}", "error"))
    return Workspace(
        kernel=kernel,
        paths=paths,
        source=source,
        tilegym=tg,
        analysis=analysis,
        gaps=gaps,
        recovery=recovery,
        ignored=ignored,
    )
