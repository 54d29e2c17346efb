"""What a run is, before and after: the spec, its result, the roles, and the child's command lines
(moved out of ``run/runner.py``).

Contract: :class:`RunSpec` (what to run, for which role, with which limits), :class:`Attempt` and
:class:`RunResult` (what one run produced) are frozen dataclasses; :func:`child_env`,
:func:`collect_argv` and :func:`run_argv` build the pytest child's environment and argv (our
package root first on ``PYTHONPATH``, our plugin loaded with ``-p`` whether or not its entry point
is installed); :func:`check_kernel_dir` refuses an unsafe kernel name. No process is started here:
:mod:`cutile_workbench.run.runner` runs the child, :mod:`cutile_workbench.run.results` files what
it produced.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import cutile_workbench
from cutile_workbench.artifacts.events import Event
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.errors import UnsafePath
from cutile_workbench.model import LaunchSet

Role = Literal["candidate", "baseline_cutile", "baseline_triton_tileir"]
ROLES: tuple[Role, ...] = ("candidate", "baseline_cutile", "baseline_triton_tileir")

#: the directory that holds the ``workbench`` package (goes first on the child's PYTHONPATH)
PACKAGE_ROOT = Path(cutile_workbench.__file__).resolve().parent.parent


def in_package_suite(func_key: str) -> bool:
    """The test of a row (``func_key``: ``tests/…py::…``) ships in this package (a built-in profile's
    suite): it runs without a TileGym checkout; any other row is TileGym's and needs one."""
    test_file = func_key.partition("::")[0]
    return bool(test_file) and (PACKAGE_ROOT / "cutile_workbench" / test_file).is_file()


_KERNEL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


# --------------------------------------------------------------------------- spec and result


@dataclass(frozen=True)
class RunSpec:
    """What to run, for which role, with which limits. Times in seconds."""

    kernel: str
    test_target: str  # a suite path, or tests/ops/test_X.py::Class::test_perf (relative to cwd)
    k_expr: str | None = None
    cwd: Path = Path(".")
    role: Role = "candidate"
    python: str = sys.executable
    env: Mapping[str, str] = field(default_factory=dict)  # e.g. CUPTI=1 WARMUP REP MIN_REP
    workbench_harness: bool = False
    #: ``run --dump-ir``: cutile-rs prints its Tile IR (``CUTILE_DUMP=ir``), cuTile Python writes
    #: ``*.tileir`` files here (``CUDA_TILE_DUMP_TILEIR``), our plugin marks tests (``ir.dumps``)
    dump_ir_dir: str | None = None
    per_test_timeout_s: float = 600.0
    total_timeout_s: float | None = None
    extra_pythonpath: tuple[str, ...] = ()
    #: keep only ids whose first id token is exactly this (``cutile`` never matches ``cutile_rs``)
    backend_token: str | None = None
    #: grace before the first event (imports of torch/tilegym, CUDA context) instead of the per-test limit
    startup_timeout_s: float = 300.0
    kill_grace_s: float = 3.0
    max_log_bytes: int = 256 * 1024 * 1024
    extra_args: tuple[str, ...] = ()
    #: ``run --compile-cache DIR``: every toolchain's compile cache under DIR (shared by runs and
    #: scale-out shards; :mod:`cutile_workbench.run.compile_cache`), its cold/warm split recorded per run
    compile_cache: str | None = None

    def describe(self) -> str:
        return f"{self.kernel}/{self.role}: {self.test_target}" + (
            f" -k {self.k_expr!r}" if self.k_expr else ""
        )


@dataclass(frozen=True)
class Attempt:
    """One child pytest process of a run."""

    index: int  # 1-based
    argv: tuple[str, ...]
    rc: int | None  # None: never started
    ended: str  # finished | killed_hang | crashed | poisoned | cancelled | total_timeout | spawn_failed
    detail: str
    duration_s: float
    events_path: str


@dataclass(frozen=True)
class RunResult:
    """Everything one run produced. ``failed``/``not_run`` map node id → human reason."""

    spec: RunSpec
    rc: int  # pytest-like: 0 ok, 1 tests failed, 2 cancelled/timed out, 4 usage, 5 nothing selected
    raw_log_path: Path
    events: tuple[Event, ...]
    collected: tuple[str, ...]
    outcomes: Mapping[str, str]  # node id → passed | failed | skipped
    failed: Mapping[str, str]
    not_run: Mapping[str, str]
    attempts: tuple[Attempt, ...]
    launch_sets: tuple[LaunchSet, ...] = ()
    cancelled: bool = False
    started_at: float = 0.0
    duration_s: float = 0.0
    collect_output: str = ""
    notes: tuple[str, ...] = ()
    #: what the run did to ``spec.compile_cache`` (:func:`cutile_workbench.run.compile_cache.split`); None without one
    compile_cache: Mapping[str, Any] | None = None

    @property
    def completed(self) -> tuple[str, ...]:
        """Node ids pytest reported an outcome for (passed, skipped or failed), in run order."""
        return tuple(self.outcomes)

    @property
    def passed(self) -> tuple[str, ...]:
        return tuple(n for n, o in self.outcomes.items() if o == "passed")

    @property
    def raw_log_text(self) -> str:
        """The raw log (all attempts + resume banners), as text."""
        try:
            return self.raw_log_path.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            return ""

    def summary_line(self) -> str:
        counts = count_outcomes(self.outcomes)
        return (
            f"{counts['passed']} passed, {len(self.failed)} failed, {counts['skipped']} skipped, "
            f"{len(self.not_run)} not run in {len(self.attempts)} attempt(s) ({self.duration_s:.2f}s)"
        )


# --------------------------------------------------------------------------- command lines


def child_env(spec: RunSpec) -> dict[str, str]:
    """Environment of the child: ours + ``spec.env`` + PYTHONPATH with our package first."""
    env = dict(os.environ)
    env.update({str(k): str(v) for k, v in spec.env.items()})
    paths = [str(PACKAGE_ROOT), *spec.extra_pythonpath]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    # A pipe is block-buffered: without this, output written just before a crash is lost and the
    # watchdog cannot see the "<nodeid> " line pytest writes when a test starts.
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("PYTHONFAULTHANDLER", "1")  # a SIGSEGV leaves a Python traceback in the raw log
    if spec.compile_cache:
        from cutile_workbench.run.compile_cache import cache_env

        env.update(cache_env(spec.compile_cache, spec.env))
    if spec.dump_ir_dir:
        from cutile_workbench.ir import dumps

        Path(spec.dump_ir_dir).mkdir(parents=True, exist_ok=True)
        env.setdefault("CUTILE_DUMP", "ir")
        env["CUDA_TILE_DUMP_TILEIR"] = str(Path(spec.dump_ir_dir).resolve())
        env[dumps.MARKER_ENV] = "1"
    return env


def plugin_args() -> list[str]:
    """The pytest arguments that load our plugin whether or not its entry point is installed."""
    # ``-p cutile_workbench.run.plugins.perflog`` alone crashes pytest ("Plugin already registered under a
    # different name") where our distribution is installed, because the pytest11 entry point
    # ``cutile_workbench`` registers the same module; blocking the entry-point name first makes the
    # explicit -p work both with and without the installed entry point.
    return ["-p", "no:cutile_workbench", "-p", "cutile_workbench.run.plugins.perflog"]


def pytest_base_argv(spec: RunSpec) -> list[str]:
    # -p no:cacheprovider: never write .pytest_cache into a (possibly read-only) TileGym checkout.
    # --rootdir=cwd: node ids are relative to cwd, so they can be passed back as arguments.
    return [
        spec.python,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        f"--rootdir={Path(spec.cwd).resolve()}",
        *plugin_args(),
    ]


def collect_argv(spec: RunSpec) -> list[str]:
    argv = [*pytest_base_argv(spec), spec.test_target, "--collect-only", "-q"]
    if spec.k_expr:
        argv += ["-k", spec.k_expr]
    return argv + list(spec.extra_args)


def run_argv(spec: RunSpec, events_file: Path, nodeids: Sequence[str] | None) -> list[str]:
    """The measured run: the canonical ``<target> -k <expr>`` form, or explicit ids on resume."""
    argv = pytest_base_argv(spec)
    if nodeids is None:
        argv.append(spec.test_target)
        if spec.k_expr:
            argv += ["-k", spec.k_expr]
    else:
        argv += list(nodeids)
    argv += ["-sv", "--workbench-print-record", "--workbench-events", str(events_file)]
    if spec.workbench_harness:
        argv.append("--workbench-harness")
    return argv + list(spec.extra_args)


def backend_k_expr(token: str, user_k: str | None = None) -> str:
    """``-k`` for one backend, with TileGym's id quirk: ``cutile`` also matches ``cutile_rs``."""
    base = "cutile and not cutile_rs" if token == "cutile" else token
    return f"({base}) and ({user_k})" if user_k else base


def count_outcomes(outcomes: Mapping[str, str]) -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for o in outcomes.values():
        counts[o] = counts.get(o, 0) + 1
    return counts


def check_kernel_dir(out: KernelPaths) -> None:
    if not _KERNEL_NAME.match(out.kernel) or out.kernel in (".", ".."):
        raise UnsafePath(
            f"refusing kernel name {out.kernel!r} (letters, digits, '_', '.', '-' only)", key="kernel"
        )
