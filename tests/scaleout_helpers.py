"""Shared by the scale-out tests: fixture suites installed in a temp dir, role runs, single-run twins.

- ``perflog_suite(root)``: the perflog fixture suite (real H200 rms_norm records, a failing cutile-rs
  config, a skipped cutile one; tests/fixtures/perflog) with TileGym's pytest.ini and host conftest.
- ``faults_suite(root)``: the runner fixture suite (tests/fixtures/runner/perf_faults.py; synthetic
  faults selected by RUNNER_FIXTURE_FAULTS).
- Both get ``visible_header.py`` (SYNTHETIC test helper): a pytest plugin whose report header line
  ``workbench-test: CUDA_VISIBLE_DEVICES=<value>`` shows in every raw log which GPU slot the pytest
  child itself saw.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

from perflog_helpers import load_suite_runner

from workbench.events import Event, read_events
from workbench.layout import KernelPaths
from workbench.runner import RunSpec, backend_k_expr, run, write_results
from workbench.scaleout.plan import RoleRun
from workbench.testids import id_token

FIXTURES = Path(__file__).parent / "fixtures"
VISIBLE_HEADER = '''"""SYNTHETIC test helper: shows the CUDA_VISIBLE_DEVICES the pytest child saw in its header."""
import os


def pytest_report_header(config):
    return "workbench-test: CUDA_VISIBLE_DEVICES=" + os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>")
'''


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


def role_runs(suite: Path, backends: dict[str, str], *, env: dict[str, str] | None = None,
              **spec_kw: object) -> tuple[RoleRun, ...]:
    """``{backend: role}`` → RoleRuns of the suite's ``test_rms_norm.py`` (fast children: no autoload)."""
    runs = []
    for backend, role in backends.items():
        token = id_token(backend)
        spec = RunSpec(kernel="rms_norm", test_target="test_rms_norm.py", cwd=suite, role=role,  # type: ignore[arg-type]
                       k_expr=backend_k_expr(token), backend_token=token,
                       env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **(env or {})},
                       extra_args=("-p", "visible_header"), **spec_kw)  # type: ignore[arg-type]
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
    from workbench.cli.stage_e import table_json
    from workbench.services.stage_e import ratio_table
    from workbench.workspace import open_workspace

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


class CancelOnceAllStarted:
    """An ``on_event`` that sets ``cancel`` (what Ctrl-C does) once every shard has started a test,
    and keeps every pid the stream names (workers and pytest children) for the no-orphan check."""

    def __init__(self, shards: set[int]) -> None:
        self.shards = shards
        self.cancel = threading.Event()
        self.pids: list[int] = []
        self.started: set[int] = set()

    def __call__(self, ev: Event) -> None:
        if ev.event in ("shard_start", "session_start") or (ev.event == "scaleout_shard_state" and ev.get("pid")):
            self.pids.append(ev["pid"])
        if ev.event == "test_start":
            self.started.add(ev["shard"])
            if self.started >= self.shards:
                self.cancel.set()


def interrupt_cli_once_running(argv: list[str], out_root: Path, env: dict[str, str], shards: int = 2,
                               timeout_s: float = 60.0, *, streams: str = "rms_norm/workbench/shards/*/*/progress.jsonl",
                               sig: int | None = None) -> tuple[int, str, list[int]]:
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

    proc = subprocess.Popen([sys.executable, "-m", "workbench", *argv], env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout_s
    found: list[Path] = []
    while time.monotonic() < deadline and proc.poll() is None:
        found = list(out_root.glob(streams))
        if len(found) == shards and all('"test_start"' in p.read_text() for p in found):
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT if sig is None else sig)
    _, err = proc.communicate(timeout=timeout_s)
    pids = [e.get("pid") for p in found for e in read_events(p, allow_truncated_tail=True)
            if e.event in ("shard_start", "session_start")]
    return proc.returncode, err, [p for p in pids if isinstance(p, int)]
