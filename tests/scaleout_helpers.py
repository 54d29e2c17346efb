"""Shared by the scale-out tests: fixture suites installed in a temp dir, role runs, single-run twins.

- ``perflog_suite(root)``: the perflog fixture suite (real H200 rms_norm records, a failing cutile-rs
  config, a skipped cutile one; tests/fixtures/perflog) with TileGym's pytest.ini and host conftest.
- ``faults_suite(root)``: the runner fixture suite (tests/fixtures/runner/perf_faults.py; synthetic
  faults selected by RUNNER_FIXTURE_FAULTS).
- ``fake_nvidia_smi(tmp, monkeypatch, gpus)``: a SYNTHETIC ``nvidia-smi`` first on PATH listing ``gpus``.
- ``fake_pynvml_dir(tmp, gpus)``: a dir holding a SYNTHETIC ``pynvml`` module (for a child's
  ``RunSpec.extra_pythonpath``) whose GPUs are ``gpus`` ``[(name, uuid), ...]`` in NVML index order.
- Both get ``visible_header.py`` (SYNTHETIC test helper): a pytest plugin whose report header line
  ``workbench-test: CUDA_VISIBLE_DEVICES=<value>`` shows in every raw log which GPU slot the pytest
  child itself saw.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

from perflog_helpers import load_suite_runner

from cutile_workbench.artifacts.events import Event, read_events
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.artifacts.testids import id_token
from cutile_workbench.run.results import write_results
from cutile_workbench.run.runner import run
from cutile_workbench.run.scaleout.plan import RoleRun
from cutile_workbench.run.spec import RunSpec, backend_k_expr

FIXTURES = Path(__file__).parent / "fixtures"
VISIBLE_HEADER = '''"""SYNTHETIC test helper: shows the CUDA_VISIBLE_DEVICES the pytest child saw in its header."""
import os


def pytest_report_header(config):
    return "workbench-test: CUDA_VISIBLE_DEVICES=" + os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")
'''


FAKE_NVIDIA_SMI = '''#!{python}
"""SYNTHETIC stand-in for nvidia-smi on the CPU box. The GPUs are the lines of $FAKE_SMI_GPUS,
``index, uuid, name[, compute_cap]``; it answers the --query-gpu queries the workbench makes in
nvidia-smi's csv,noheader format and honours -i/--id (an index or a UUID) as nvidia-smi does."""
import os
import sys

args = sys.argv[1:]
sel = query = None
for i, a in enumerate(args):
    if a in ("-i", "--id") and i + 1 < len(args):
        sel = args[i + 1]
    elif a.startswith("--id="):
        sel = a.split("=", 1)[1]
    elif a.startswith("--query-gpu="):
        query = a.split("=", 1)[1]
gpus = [[f.strip() for f in ln.split(",")] for ln in os.environ.get("FAKE_SMI_GPUS", "").splitlines() if ln.strip()]
gpus = [g for g in gpus if sel is None or sel in (g[0], g[1])]
if not gpus:
    print("No devices were found")
    sys.exit(6)
fields = {{"index": 0, "uuid": 1, "name": 2, "compute_cap": 3}}
for g in gpus:
    g = (g + ["9.0"])[:4]
    values = {{**{{k: g[v] for k, v in fields.items()}}, "driver_version": "580.159.04"}}
    try:
        print(", ".join(values[f] for f in (query or "").split(",")))
    except KeyError:
        sys.exit(9)
'''


def fake_nvidia_smi(tmp: Path, monkeypatch: object, gpus: str) -> None:
    """Put the SYNTHETIC nvidia-smi (see FAKE_NVIDIA_SMI) first on PATH, listing ``gpus``; no GPU pinned."""
    import os
    import sys

    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "nvidia-smi").write_text(FAKE_NVIDIA_SMI.format(python=sys.executable))
    (bin_dir / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")  # type: ignore[attr-defined]
    monkeypatch.setenv("FAKE_SMI_GPUS", gpus)  # type: ignore[attr-defined]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)  # type: ignore[attr-defined]


FAKE_PYNVML = '''"""SYNTHETIC pynvml for CPU-box tests: the GPUs (name, uuid) are GPUS, in NVML index order.
Only identity queries answer; every other NVML call raises as an unsupported query does (read_gpu
records it as that field's error)."""
GPUS = {gpus!r}


class NVMLError_NotSupported(Exception):
    pass


def __getattr__(name):
    def unsupported(*_args):
        raise NVMLError_NotSupported(name)

    return unsupported


def nvmlInit():
    pass


def nvmlShutdown():
    pass


def nvmlDeviceGetCount():
    return len(GPUS)


def nvmlDeviceGetHandleByIndex(index):
    return GPUS[index]


def nvmlDeviceGetHandleByUUID(uuid):
    return next(g for g in GPUS if g[1] == uuid)


def nvmlDeviceGetName(handle):
    return handle[0]


def nvmlDeviceGetUUID(handle):
    return handle[1]


def nvmlSystemGetDriverVersion():
    return "580.159.04"
'''


def fake_pynvml_dir(tmp: Path, gpus: list[tuple[str, str]]) -> Path:
    """A dir with the SYNTHETIC ``pynvml.py`` (see FAKE_PYNVML) naming ``gpus``."""
    where = tmp / "fake_pynvml"
    where.mkdir(exist_ok=True)
    (where / "pynvml.py").write_text(FAKE_PYNVML.format(gpus=[tuple(g) for g in gpus]))
    return where


def perflog_suite(root: Path) -> Path:
    suite = root / "suite"
    load_suite_runner().install(suite)
    (suite / "visible_header.py").write_text(VISIBLE_HEADER)
    return suite


def faults_suite(root: Path) -> Path:
    suite = root / "suite"
    suite.mkdir(parents=True)
    shutil.copy(FIXTURES / "runner" / "perf_faults.py", suite / "test_rms_norm.py")
    shutil.copy(FIXTURES / "runner" / "host_conftest.py", suite / "conftest.py")
    (suite / "visible_header.py").write_text(VISIBLE_HEADER)
    return suite


def role_runs(
    suite: Path, backends: dict[str, str], *, env: dict[str, str] | None = None, **spec_kw: object
) -> tuple[RoleRun, ...]:
    """``{backend: role}`` → RoleRuns of the suite's ``test_rms_norm.py`` (fast children: no autoload)."""
    runs = []
    for backend, role in backends.items():
        token = id_token(backend)
        spec = RunSpec(
            kernel="rms_norm",
            test_target="test_rms_norm.py",
            cwd=suite,
            role=role,  # type: ignore[arg-type]
            k_expr=backend_k_expr(token),
            backend_token=token,
            env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **(env or {})},
            extra_args=("-p", "visible_header"),
            **spec_kw,
        )  # type: ignore[arg-type]
        runs.append(RoleRun(backend=backend, role=role, spec=spec))  # type: ignore[arg-type]
    return tuple(runs)


PERFLOG_ROLES = {"cutile-rs": "candidate", "triton": "baseline_triton_tileir"}
FAULTS_ROLES = {"triton": "candidate", "cutile": "baseline_cutile"}


def single_run(roles: tuple[RoleRun, ...], out: KernelPaths) -> None:
    """The single-process twin: today's ``run``, one role after the other, into ``out``."""
    for r in roles:
        result = run(r.spec, out)
        write_results(result, r.spec, out)


def comparable_table(out_root: Path) -> dict[str, object]:
    """E's ratio table of a kernel dir as JSON, without the fields that name the directory."""
    from cutile_workbench.artifacts.workspace import open_workspace
    from cutile_workbench.cli.stage_e import table_json
    from cutile_workbench.services.stage_e import ratio_table

    ws = open_workspace("rms_norm", out_root=out_root)
    doc = table_json(ratio_table(ws))  # without ws: no gaps, source or kernel_dir (they name the dir)
    doc["notes"] = [str(n).replace(str(out_root), "<root>") for n in doc["notes"]]  # type: ignore[union-attr]
    return doc


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def still_alive(pids: list[int], cap_s: float = 60.0) -> list[int]:
    """The pids still running once every one stopped or ``cap_s`` passed (waits for the state; the cap
    only ends a hung test — no assertion rides on how fast this box reaps a killed process)."""
    deadline = time.monotonic() + cap_s
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


class CancelOnceAllStarted:
    """An ``on_event`` that sets ``cancel`` (what Ctrl-C does) once every shard has started a test,
    and keeps every pid the stream names (workers and pytest children) for the no-orphan check."""

    def __init__(self, shards: set[int]) -> None:
        self.shards = shards
        self.cancel = threading.Event()
        self.pids: list[int] = []
        self.started: set[int] = set()

    def __call__(self, ev: Event) -> None:
        if ev.event in ("shard_start", "session_start") or (
            ev.event == "scaleout_shard_state" and ev.get("pid")
        ):
            self.pids.append(ev["pid"])
        if ev.event == "test_start":
            self.started.add(ev["shard"])
            if self.started >= self.shards:
                self.cancel.set()


def interrupt_cli_once_running(
    argv: list[str],
    out_root: Path,
    env: dict[str, str],
    shards: int = 2,
    timeout_s: float = 60.0,
    *,
    streams: str = "rms_norm/workbench/shards/*/*/progress.jsonl",
    sig: int | None = None,
) -> tuple[int, str, list[int]]:
    """Run the real CLI, send it ``sig`` (default SIGINT: a Ctrl-C) once each of ``shards`` event streams
    (``streams``, a glob under ``out_root``: the shards' progress files, or a single run's
    ``workbench/runs/*.events.*.jsonl``) started a test, wait for it.

    Returns ``(exit status, stderr, pids the streams named)``.
    """
    import os
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "cutile_workbench", *argv],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + timeout_s
    found: list[Path] = []
    while time.monotonic() < deadline and proc.poll() is None:
        found = list(out_root.glob(streams))
        if len(found) == shards and all('"test_start"' in p.read_text() for p in found):
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT if sig is None else sig)
    _, err = proc.communicate(timeout=timeout_s)
    pids = [
        e.get("pid")
        for p in found
        for e in read_events(p, allow_truncated_tail=True)
        if e.event in ("shard_start", "session_start")
    ]
    return proc.returncode, err, [p for p in pids if isinstance(p, int)]
