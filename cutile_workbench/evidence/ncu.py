"""The focused Nsight Compute probe: one call of one config of one backend, under ``ncu``.

Contract:
- :func:`probe_advice` is the ``cutile-workbench probe`` line F's reports and the Timeline print for a
  config without a probe (the kernel dir's out root and TileGym checkout named: it runs when pasted).
- :func:`probe_command` builds the argv: ``ncu --target-processes all --profile-from-start off
  --kernel-name-base B -k regex:^<recorded kernel name>$ -c 1 --print-kernel-base B --clock-control
  none --metrics <METRICS> --csv --page raw --print-units base --log-file <csv> <python> -m pytest
  <nodeid> -p cutile_workbench.run.plugins.perflog --workbench-harness -q`` (B: :func:`kernel_name_base` of the
  recorded name: ``mangled``, ``demangled`` or ``function``) with ``WORKBENCH_PROFILE_RANGE=1`` in the
  environment: the workbench harness then warms up (JIT + autotune) outside the profiler range and
  runs exactly one measured call inside ``cudaProfilerStart/Stop`` (no CUPTI session of its own), so
  ``-c 1`` catches the tuned kernel of that call, not an autotune trial. The seed allows such a
  focused probe of a slow shape; nothing else is re-run.
- :func:`run_probe` runs it in a child (own process group, killed on timeout; ``tilegym_checks.
  childproc.run_child``) and parses the CSV; :func:`parse_ncu_csv` parses ncu's ``--csv --page raw``
  output (header row, units row, one row per profiled kernel; values with thousands separators,
  ``n/a``; unit prefixes converted to base units; every line that is not a quoted CSV record is
  skipped: ncu's ``==PROF==``/``==WARNING==`` lines and the profiled process's own output — TileGym's
  logger lines and warnings — before or between the records, as in a captured stdout) into
  :class:`ProbeResult`: duration, DRAM bytes read/write, achieved DRAM bytes/s and % of peak,
  achieved and theoretical occupancy, registers/thread, local-memory (spill) bytes and requests,
  static/dynamic shared memory, grid and block. A CSV without a matching kernel row, or with a
  malformed header, raises :class:`~cutile_workbench.errors.InputError` naming the file and line.
- :func:`save_probe` files the result as ``workbench/probes/<backend>-<params token>.json`` (plus the raw
  CSV beside it) with a temp file + fsync + rename, holding the kernel dir's writer lock; it refuses to
  write into a recorded (read-only) session. :func:`load_probes` reads them back strictly.
Nothing here imports torch; the GPU runs only in the child.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.artifacts.testids import id_token, shape_token
from cutile_workbench.artifacts.workspace import command_line
from cutile_workbench.errors import InputError, UnsafePath
from cutile_workbench.run.capture.harness import PROFILE_RANGE_ENV

#: what the probe reads (the first five were read on the H200: docs gpu.md §6)
METRICS: tuple[str, ...] = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "launch__registers_per_thread",
    "sm__warps_active.avg.pct_of_peak_sustained_active",  # achieved occupancy
    "sm__maximum_warps_per_active_cycle_pct",  # theoretical occupancy
    "dram__bytes.sum.per_second",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__grid_size",
    "launch__block_size",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum",
    # read on the H200 on 2026-12-01 (bench/gpu_runs/2026-12-01/ncu_silu_*.csv.log)
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
)
_FIXED_COLUMNS = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
)
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}
DEFAULT_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class ProbeSpec:
    """One probe: which test call, which kernel, where the CSV goes."""

    backend: str
    params: str
    nodeid: str
    kernel_name: str  # as recorded (CUPTI ``name``: mangled where the compiler mangles)
    cwd: Path
    python: str = "python"
    ncu: str = "ncu"
    csv_path: Path | None = None
    pythonpath: tuple[str, ...] = ()  # e.g. the TileGym checkout's src/ (our package always goes first)
    extra_env: tuple[tuple[str, str], ...] = ()  # e.g. DISABLE_FALLBACK=1 for TileGym's cutile-rs side


@dataclass(frozen=True)
class ProbeResult:
    """One kernel's counters from one probed call (base units: ns, bytes, bytes/s, %)."""

    backend: str
    params: str
    kernel: str
    duration_ns: float | None
    dram_read_bytes: float | None
    dram_write_bytes: float | None
    dram_bytes_per_s: float | None
    dram_pct_of_peak: float | None
    achieved_occupancy_pct: float | None
    theoretical_occupancy_pct: float | None
    registers_per_thread: int | None
    local_load_bytes: float | None
    local_store_bytes: float | None
    local_load_requests: float | None
    local_store_requests: float | None
    static_smem: int | None
    dynamic_smem: int | None
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    sm_throughput_pct: float | None = None  # SM throughput, % of peak (compute-bound kernels)
    tensor_pipe_pct: float | None = None  # HMMA tensor pipe active, % of peak (matmul/bmm)
    command: str = ""
    captured_at: str = ""
    device: str = ""  # ncu's device__attribute_display_name (the GPU it profiled on)
    csv: str = ""  # kernel-dir-relative path of the raw CSV
    metrics: Mapping[str, float | None] = field(default_factory=dict, compare=False)

    @property
    def dram_gb_per_s(self) -> float | None:
        return None if self.dram_bytes_per_s is None else self.dram_bytes_per_s / 1e9

    @property
    def spill_bytes(self) -> float | None:
        if self.local_load_bytes is None and self.local_store_bytes is None:
            return None
        return (self.local_load_bytes or 0.0) + (self.local_store_bytes or 0.0)

    @property
    def spill_requests(self) -> float | None:
        if self.local_load_requests is None and self.local_store_requests is None:
            return None
        return (self.local_load_requests or 0.0) + (self.local_store_requests or 0.0)


# --------------------------------------------------------------------------- command


def kernel_regex(kernel_name: str) -> str:
    """``regex:`` filter matching exactly the recorded name."""
    return f"regex:^{re.escape(kernel_name)}$"


def kernel_name_base(kernel_name: str) -> str:
    """Which of ncu's names the regex is matched against: ``mangled`` for an Itanium name (CUPTI's
    ``_Z…``), ``demangled`` for a C++ signature, else ``function`` (cuTile, cutile-rs, Triton names)."""
    if kernel_name.startswith("_Z"):
        return "mangled"
    if any(ch in kernel_name for ch in "(<:"):
        return "demangled"
    return "function"


def probe_advice(kernel: str, params: str, func_key: str, locator: Sequence[str] = ()) -> str:
    """``cutile-workbench probe <kernel> --config <params>`` ended by ``locator`` (``Workspace.locator``:
    the kernel dir found again from anywhere). A TileGym kernel's probe runs TileGym's test: with no
    checkout known the line names ``--tilegym DIR``, the user's to fill in."""
    from cutile_workbench.run.spec import in_package_suite

    words = tuple(locator)
    if "--tilegym" not in words and not in_package_suite(func_key):
        words += ("--tilegym", "DIR")
    return command_line("probe", kernel, "--config", params, locator=words)


def probe_command(spec: ProbeSpec, csv_path: Path) -> tuple[list[str], dict[str, str]]:
    """(argv, extra environment) of the probe (see the module docstring)."""
    from cutile_workbench.run.spec import PACKAGE_ROOT, plugin_args

    argv = [
        spec.ncu,
        "--target-processes",
        "all",
        "--profile-from-start",
        "off",
        "--kernel-name-base",
        kernel_name_base(spec.kernel_name),
        "-k",
        kernel_regex(spec.kernel_name),
        "-c",
        "1",
        # the CSV's "Kernel Name" in the same form as the recorded name (a pasted CSV is checked against it)
        "--print-kernel-base",
        kernel_name_base(spec.kernel_name),
        "--clock-control",
        "none",
        "--metrics",
        ",".join(METRICS),
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        "--log-file",
        str(csv_path),
        spec.python,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        f"--rootdir={spec.cwd}",
        *plugin_args(),
        spec.nodeid,
        "--workbench-harness",
        "-q",
    ]
    path = os.pathsep.join([str(PACKAGE_ROOT), *spec.pythonpath])
    # WORKBENCH_CAPTURE=events: ncu holds CUPTI, so the routed autotuner times configs with CUDA
    # events (never a second CUPTI client next to ncu; seen working under ncu on the H200, call 1)
    return argv, {
        **dict(spec.extra_env),
        PROFILE_RANGE_ENV: "1",
        "CUPTI": "1",
        "PYTHONPATH": path,
        "WORKBENCH_CAPTURE": "events",
    }


def shell_line(spec: ProbeSpec, csv_path: Path) -> str:
    """The probe as one shell line to paste on the GPU node (from ``spec.cwd``)."""
    argv, env = probe_command(spec, csv_path)
    return (
        f"cd {shlex.quote(str(spec.cwd))} && "
        + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        + " "
        + shlex.join(argv)
    )


def probe_specs(
    row: Any,
    *,
    launch_sets: Sequence[Any],
    candidate_backend: str,
    candidate_record: Any,
    baseline_record: Any,
    cwd: Path,
    python: str = "python",
    ncu: str = "ncu",
) -> list[ProbeSpec]:
    """(candidate, reference) :class:`ProbeSpec` s of one E row: the kernel name and node id come from
    the per-launch captures (the main kernel's CUPTI name, the set's node id), else the perf records
    (``kernel_name``, node id); a side with no kernel name is left out (it cannot be filtered)."""
    from cutile_workbench.evidence.identity import record_kernel
    from cutile_workbench.evidence.launches import pick_sets, summarize_launch_set

    cset, bset = pick_sets(launch_sets, row, candidate_backend)
    out = []
    for backend, lset, rec in (
        (candidate_backend, cset, candidate_record),
        (row.baseline_backend or "cutile", bset, baseline_record),
    ):
        summary = summarize_launch_set(lset) if lset is not None else None
        name = summary.main_name if summary is not None else record_kernel(rec)
        nodeid = (
            summary.nodeid
            if summary is not None and summary.nodeid
            else getattr(rec, "nodeid", "") or nodeid_for(row.func_key, backend, row.params)
        )
        src = Path(cwd) / "src"
        extra = (str(src.resolve()),) if (src / "tilegym").is_dir() else ()
        if name:
            out.append(
                ProbeSpec(backend, row.params, nodeid, name, cwd, python=python, ncu=ncu, pythonpath=extra)
            )
    return out


def nodeid_for(func_key: str, backend: str, params: str) -> str:
    """TileGym's node id of one config (``cutile-rs`` → ``cutile_rs``; ``triton_tileir`` → ``triton``)."""
    token = id_token(backend)
    token = token[: -len("_tileir")] if token.endswith("_tileir") else token
    return f"{func_key}[{token}-{params}]"


# --------------------------------------------------------------------------- CSV


def _number(text: str, unit: str, where: str, metric: str) -> float | None:
    raw = text.strip()
    if raw in ("", "n/a", "N/A", "-"):
        return None
    try:
        value = float(raw.replace(",", ""))
    except ValueError:
        raise InputError(f"metric {metric}: not a number: {raw!r}", path=where, key=metric) from None
    u = unit.strip()
    if u in _TIME:
        return value * _TIME[u]
    m = re.fullmatch(r"([KMGTP]?)(byte|request|sector|inst|cycle|warp|thread|block)(/second)?", u)
    if m:
        return value * _PREFIX[m.group(1)]
    return value


def _dims(text: str) -> tuple[int, int, int] | None:
    nums = [int(x) for x in re.findall(r"\d+", text.replace(",", " "))] if text else []
    return (nums[0], nums[1], nums[2]) if len(nums) == 3 else None


def parse_ncu_csv(
    text: str,
    *,
    path: str = "<ncu csv>",
    backend: str = "",
    params: str = "",
    kernel_name: str | None = None,
    strict_kernel: bool = False,
) -> ProbeResult:
    """Parse ``--csv --page raw`` output into a :class:`ProbeResult` (see the module docstring).

    ``kernel_name`` picks its row (else the first one); with ``strict_kernel`` a CSV without that
    kernel is refused (a CSV brought from elsewhere must be of this side's kernel)."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID",')), None)
    if start is None:
        errors = [ln for ln in lines if ln.startswith("==ERROR==")]
        why = errors[0] if errors else 'no CSV header ("ID",…): ncu profiled nothing'
        raise InputError(why, path=path, line=1)
    # One CSV record per line (kernel names hold no newline), every cell quoted: a line that does not
    # start with a quote is not ncu's CSV — its own ==PROF==/==WARNING== lines, or the profiled
    # process's stdout/stderr (TileGym's logger, warnings) when ncu wrote to the same stream.
    body = [
        (i + 1, next(csv.reader([ln]))) for i, ln in enumerate(lines) if i >= start and ln.startswith('"')
    ]
    header = body[0][1]
    missing = [c for c in ("ID", "Kernel Name") if c not in header]
    if missing:
        raise InputError(f"CSV header lacks {', '.join(missing)}", path=path, line=start + 1)
    has_units = len(body) > 1 and bool(body[1][1]) and body[1][1][0] == ""
    units = body[1][1] if has_units else [""] * len(header)
    data = body[2:] if has_units else body[1:]
    col = {name: i for i, name in enumerate(header)}
    for lineno, r in data:
        if len(r) != len(header):
            raise InputError(f"CSV row has {len(r)} cells, header has {len(header)}", path=path, line=lineno)
    kernels = list(data)
    if kernel_name is not None:
        named = [(n, r) for n, r in kernels if r[col["Kernel Name"]] == kernel_name]
        if strict_kernel and kernels and not named:
            found = ", ".join(sorted({r[col["Kernel Name"]] for _n, r in kernels}))
            raise InputError(
                f"the CSV profiles {found}, not this side's kernel {kernel_name}",
                path=path,
                line=kernels[0][0],
                key="Kernel Name",
            )
        kernels = named or kernels
    if not kernels:
        raise InputError(
            "no kernel row: the regex matched no launch inside the profiled range", path=path, line=start + 1
        )
    row_line, row = kernels[0]
    metrics: dict[str, float | None] = {}
    for name, i in col.items():
        if name in _FIXED_COLUMNS:
            continue
        try:
            metrics[name] = _number(row[i], units[i] if i < len(units) else "", path, name)
        except InputError as exc:
            if name in METRICS:  # a counter the probe reads must be a number
                raise InputError(exc.message, path=path, line=row_line, key=name) from None
            # device/launch attributes ncu adds to the raw page are words ("NVIDIA H200", "No-CC")
    device = row[col["device__attribute_display_name"]] if "device__attribute_display_name" in col else ""

    def m(name: str) -> float | None:
        return metrics.get(name)

    def as_int(v: float | None) -> int | None:
        return None if v is None else round(v)

    duration = m("gpu__time_duration.sum")
    read, write = m("dram__bytes_read.sum"), m("dram__bytes_write.sum")
    rate = m("dram__bytes.sum.per_second")
    if rate is None and duration and read is not None and write is not None:
        rate = (read + write) / (duration * 1e-9)
    grid = _dims(row[col["Grid Size"]]) if "Grid Size" in col else None
    block = _dims(row[col["Block Size"]]) if "Block Size" in col else None
    return ProbeResult(
        backend=backend,
        params=params,
        kernel=row[col["Kernel Name"]],
        device=device,
        duration_ns=duration,
        dram_read_bytes=read,
        dram_write_bytes=write,
        dram_bytes_per_s=rate,
        dram_pct_of_peak=m("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        achieved_occupancy_pct=m("sm__warps_active.avg.pct_of_peak_sustained_active"),
        theoretical_occupancy_pct=m("sm__maximum_warps_per_active_cycle_pct"),
        registers_per_thread=as_int(m("launch__registers_per_thread")),
        local_load_bytes=m("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"),
        local_store_bytes=m("l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"),
        local_load_requests=m("l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum"),
        local_store_requests=m("l1tex__t_requests_pipe_lsu_mem_local_op_st.sum"),
        static_smem=as_int(m("launch__shared_mem_per_block_static")),
        dynamic_smem=as_int(m("launch__shared_mem_per_block_dynamic")),
        grid=grid,
        block=block,
        sm_throughput_pct=m("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        tensor_pipe_pct=m("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"),
        metrics=metrics,
    )


# --------------------------------------------------------------------------- run + file


def probe_path(paths: KernelPaths, backend: str, params: str) -> Path:
    return paths.workbench_dir / "probes" / f"{id_token(backend)}-{shape_token(params)}.json"


def run_probe(
    spec: ProbeSpec,
    paths: KernelPaths,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
) -> tuple[ProbeResult, str]:
    """Run one probe in a child; (parsed result, raw CSV). Nothing is filed: see :func:`save_probe`."""
    import tempfile

    from cutile_workbench.checks.childproc import run_child

    with tempfile.TemporaryDirectory(prefix="wb-ncu-") as tmp:
        csv_path = spec.csv_path or Path(tmp) / "probe.csv"
        argv, extra = probe_command(spec, csv_path)
        child_env = dict(os.environ if env is None else env)
        inherited = child_env.get("PYTHONPATH")
        child_env.update(extra)
        if inherited:
            child_env["PYTHONPATH"] += os.pathsep + inherited
        try:
            res = run_child(argv[0], argv[1:], cwd=spec.cwd, env=child_env, timeout_s=timeout_s)
        except InputError as exc:
            raise InputError(f"cannot start ncu: {exc.message}", path=spec.ncu) from None
        command = shlex.join(argv)
        if res.timed_out:
            raise InputError(f"ncu probe killed after {timeout_s:g} s: {command}", key="timeout")
        if not csv_path.is_file():
            tail = (res.output.strip().splitlines() or ["no output"])[-1]
            raise InputError(f"ncu wrote no CSV (rc={res.rc}): {tail}", path=str(csv_path))
        text = csv_path.read_text(encoding="utf-8", errors="replace")
        try:
            result = parse_ncu_csv(
                text,
                path=str(csv_path),
                backend=spec.backend,
                params=spec.params,
                kernel_name=spec.kernel_name,
            )
        except InputError as exc:  # say what the child said: a failed test, a permission error
            tail = (res.output.strip().splitlines() or ["no output"])[-1]
            raise InputError(
                f"{exc.message} (ncu rc={res.rc}; last output line: {tail})",
                path=exc.path,
                line=exc.line,
                key=exc.key,
            ) from None
    rel = probe_path(paths, spec.backend, spec.params).with_suffix(".csv").relative_to(paths.root).as_posix()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return replace(result, command=command, captured_at=stamp, csv=rel), text


def save_probe(
    paths: KernelPaths, result: ProbeResult, *, recorded: bool = False, raw_csv: str | None = None
) -> Path:
    """File ``result`` (and its raw CSV) under ``workbench/probes/`` atomically; refuses recorded sessions."""
    from cutile_workbench.artifacts.writer import kernel_lock
    from cutile_workbench.infra.atomicio import atomic_write_bytes

    if recorded:
        raise UnsafePath(
            f"the recorded session is read-only; copy it (cp -r {paths.root} <dir>/) and pass "
            "--out-root <dir> to file probes",
            path=paths.root,
        )
    target = probe_path(paths, result.backend, result.params)
    doc = {"version": 1, "probe": _to_json(result)}
    target.parent.mkdir(parents=True, exist_ok=True)
    with kernel_lock(paths.root):
        if raw_csv is not None:
            atomic_write_bytes(target.with_suffix(".csv"), raw_csv.encode("utf-8"), paths.root)
        atomic_write_bytes(
            target, (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8"), paths.root
        )
    return target


def _to_json(result: ProbeResult) -> dict[str, Any]:
    d = asdict(result)
    d["metrics"] = dict(result.metrics)
    return d


_INT_FIELDS = ("registers_per_thread", "static_smem", "dynamic_smem")
_DIM_FIELDS = ("grid", "block")
_STR_FIELDS = ("backend", "params", "kernel", "command", "captured_at", "csv", "device")
_OPTIONAL_FIELDS = {"device": ""}  # added after version 1 was first written: absent = unknown


def probe_from_json(doc: Any, path: str) -> ProbeResult:
    """Strict reader of one probe file (InputError naming the key)."""
    if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(doc.get("probe"), dict):
        raise InputError('not a workbench probe file (expected {"version": 1, "probe": {...}})', path=path)
    p = doc["probe"]
    kw: dict[str, Any] = {}
    for f in ProbeResult.__dataclass_fields__:
        v = p.get(f, _OPTIONAL_FIELDS.get(f))
        key = f"probe.{f}"
        if f in _STR_FIELDS:
            if not isinstance(v, str):
                raise InputError("expected a string", path=path, key=key)
        elif f in _DIM_FIELDS:
            if v is not None and not (
                isinstance(v, list) and len(v) == 3 and all(isinstance(x, int) for x in v)
            ):
                raise InputError("expected [x, y, z] integers or null", path=path, key=key)
            v = tuple(v) if v is not None else None
        elif f == "metrics":
            if not isinstance(v, dict) or not all(
                x is None or isinstance(x, (int, float)) for x in v.values()
            ):
                raise InputError("expected an object of numbers", path=path, key=key)
        elif f in _INT_FIELDS:
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise InputError("expected an integer or null", path=path, key=key)
        elif v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise InputError("expected a number or null", path=path, key=key)
        kw[f] = v
    return ProbeResult(**kw)


def load_probes(paths: KernelPaths) -> dict[tuple[str, str], ProbeResult]:
    """Every filed probe, keyed ``(backend id token, params)``; a malformed file raises InputError."""
    from cutile_workbench.infra.jsonutil import loads_located

    d = paths.workbench_dir / "probes"
    out: dict[tuple[str, str], ProbeResult] = {}
    if not d.is_dir():
        return out
    from cutile_workbench.artifacts.confine import read_regular_text

    for f in sorted(d.glob("*.json")):
        text = read_regular_text(f, kind="JSON", kernel_dir=paths.root)  # confined, regular, capped
        res = probe_from_json(loads_located(text, str(f)), str(f))
        out[(id_token(res.backend), res.params)] = res
    return out


def probe_for(
    probes: Mapping[tuple[str, str], ProbeResult], backend: str | None, params: str
) -> ProbeResult | None:
    """The probe of ``backend`` (any spelling: ``triton_tileir`` ≙ ``triton``) at ``params``."""
    if backend is None:
        return None
    token = id_token(backend)
    for key in (token, token[: -len("_tileir")] if token.endswith("_tileir") else token + "_tileir"):
        if (key, params) in probes:
            return probes[(key, params)]
    return None


def _fmt(v: float | None, unit: str, scale: float = 1.0, digits: int = 1) -> str:
    return "n/a" if v is None else f"{v / scale:,.{digits}f} {unit}".strip()


def _smem(p: ProbeResult) -> str:
    return (
        f"{p.static_smem if p.static_smem is not None else 'n/a'} / "
        f"{p.dynamic_smem if p.dynamic_smem is not None else 'n/a'} B"
    )


#: (report label, compact label for a 36-column panel, value of one probe)
_SIDE_ROWS: tuple[tuple[str, str, Any], ...] = (
    ("duration", "time", lambda p: _fmt(p.duration_ns, "us", 1e3, 2)),
    ("DRAM read", "DRAM rd", lambda p: _fmt(p.dram_read_bytes, "MB", 1e6)),
    ("DRAM write", "DRAM wr", lambda p: _fmt(p.dram_write_bytes, "MB", 1e6)),
    ("DRAM achieved", "DRAM GB/s", lambda p: _fmt(p.dram_gb_per_s, "GB/s")),
    ("DRAM % of peak", "DRAM %pk", lambda p: _fmt(p.dram_pct_of_peak, "%")),
    ("SM throughput % of peak", "SM %pk", lambda p: _fmt(p.sm_throughput_pct, "%")),
    ("tensor pipe % of peak", "tensor %", lambda p: _fmt(p.tensor_pipe_pct, "%")),
    ("achieved occupancy", "occ ach", lambda p: _fmt(p.achieved_occupancy_pct, "%")),
    ("theoretical occupancy", "occ theo", lambda p: _fmt(p.theoretical_occupancy_pct, "%")),
    (
        "registers/thread",
        "regs",
        lambda p: "n/a" if p.registers_per_thread is None else str(p.registers_per_thread),
    ),
    ("local-memory (spill) bytes", "spill B", lambda p: _fmt(p.spill_bytes, "B", 1.0, 0)),
    ("local-memory requests", "spill req", lambda p: _fmt(p.spill_requests, "", 1.0, 0)),
    ("static / dynamic smem", "smem s/d", _smem),
)


def side_by_side(
    cand: ProbeResult | None, base: ProbeResult | None, *, compact: bool = False
) -> list[tuple[str, str, str]]:
    """Rows (metric, candidate, reference) for the report; ``compact``: short labels and values
    (no unit where the label names it) for the TUI's side panel."""
    out = []
    for label, short, value in _SIDE_ROWS:
        c = value(cand) if cand else "n/a"
        b = value(base) if base else "n/a"
        if compact:
            c, b = (_compact(x) for x in (c, b))
        out.append((short if compact else label, c, b))
    return out


def _compact(text: str) -> str:
    """``"382.72 us"`` → ``"382.72us"``; ``"0 / 0 B"`` → ``"0/0"``; ``"4,172.1 GB/s"`` → ``"4,172"`` (the
    label names the unit): the panel's cells stay short."""
    if text.endswith(" GB/s"):
        return text.removesuffix(" GB/s").split(".")[0]
    return text.replace(" / ", "/").removesuffix(" B").replace(" ", "")
