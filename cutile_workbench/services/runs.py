"""The live runner as a service: which suite a kernel runs, one ``RunSpec`` per backend, the GPU probe.

Contract:

- :func:`plan_runs` turns a :class:`RunRequest` into a :class:`RunPlan` (no process started;
  ``InputError`` for bad input). The suite is resolved the same way as every other kernel
  command resolves TileGym: ``RunRequest.tilegym`` (``--tilegym``), else ``$TILEGYM_PATH``
  (:func:`cutile_workbench.artifacts.workspace.tilegym_checkout`). With a checkout whose
  ``tests/ops/test_<kernel>.py`` exists, TileGym's suite runs; else the built-in profile of that
  name (``cutile_workbench/profiles/``) — also when ``prefer_profile`` is set. When both exist,
  ``RunPlan.suite_note`` says which one runs and how to pick the other. An explicit
  ``--tilegym`` without the test file is an error (close matches listed); a ``$TILEGYM_PATH``
  without it falls back to the profile, and says so.
- Backends map to layout roles (:func:`role_for_backend`): the candidate → E's raw log,
  ``cutile`` → ``baseline_perf_cutile.txt``, ``triton*`` → ``baseline_perf_triton_tileir.txt``;
  any other backend has no slot in the TileGym layout and is refused.
- :func:`gpu_probe` says whether a GPU is visible (``nvidia-smi`` first, then ``torch.cuda`` in
  the child Python) and how it knows.
- :func:`config_rerunner` is the TUI's live re-run of chosen configs (candidate, then baseline)
  through :func:`cutile_workbench.run.runner.run`; :func:`live_rerunner` picks its cwd (:func:`rerun_cwd`) and
  log dir for a workspace (a scratch out root for the read-only recorded session).
  :func:`rerun_targets` / :func:`rerun_env` are a row's node ids and child environment, shared with
  the sharded re-run (:mod:`cutile_workbench.services.sharded`).
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cutile_workbench.artifacts.confine import check_kernel_name, in_recorded_sessions
from cutile_workbench.artifacts.events import Event as Event
from cutile_workbench.artifacts.events import read_events as read_events
from cutile_workbench.artifacts.layout import KernelPaths as KernelPaths
from cutile_workbench.artifacts.testids import id_token
from cutile_workbench.artifacts.testids import split_nodeid as split_nodeid
from cutile_workbench.artifacts.workspace import Workspace, tilegym_checkout
from cutile_workbench.errors import InputError
from cutile_workbench.gpu.smi import run_nvidia_smi
from cutile_workbench.infra.cancel import run_cancellable as run_cancellable
from cutile_workbench.infra.cancel import signal_name as signal_name
from cutile_workbench.model import RatioRow
from cutile_workbench.run.results import raw_log_destination as raw_log_destination
from cutile_workbench.run.results import write_results as write_results
from cutile_workbench.run.runner import run as run
from cutile_workbench.run.runner import run as run_suite
from cutile_workbench.run.spec import PACKAGE_ROOT, Role, RunSpec, backend_k_expr
from cutile_workbench.run.spec import RunResult as RunResult

SuiteKind = Literal["tilegym", "profile", "suite"]


@dataclass(frozen=True)
class RunRequest:
    """What ``run <kernel>`` was asked to do (the CLI builds it from its flags)."""

    kernel: str
    out_root: Path | None = None  # else $CUTILE_KERNEL_OUT_ROOT
    tilegym: Path | None = None  # --tilegym; else $TILEGYM_PATH
    prefer_profile: bool = False  # run the built-in profile even when a TileGym suite exists
    backends: tuple[str, ...] = ()  # record keys; () = the suite's candidate and baseline
    k_expr: str | None = None  # pytest -k, ANDed with each backend's
    per_test_timeout_s: float = 600.0
    total_timeout_s: float | None = None
    python: str = sys.executable
    env: Mapping[str, str] = field(default_factory=dict)
    workbench_harness: bool = True  # False: TileGym's own benchmark_fn_cupti (--tilegym-harness)
    suite: Path | None = None  # a TileGym-convention test file instead of the resolved suite
    dump_ir: bool = False  # --dump-ir: Tile IR dumps filed per config (RunSpec.dump_ir_dir)
    #: --compile-cache DIR: one compile cache for every backend's run and every scale-out shard
    #: (RunSpec.compile_cache; on the shared filesystem for SLURM)
    compile_cache: Path | None = None


@dataclass(frozen=True)
class BackendRun:
    backend: str  # record key, e.g. "cutile-rs"
    role: Role
    spec: RunSpec


@dataclass(frozen=True)
class RunPlan:
    """The child runs of one ``run`` request and where their results go."""

    runs: list[BackendRun]
    out: KernelPaths
    suite_kind: SuiteKind
    #: the profile's recorded session (what to open without a GPU), None for TileGym suites
    recorded: Path | None = None
    #: which suite runs when a TileGym suite and a built-in profile could both run ("" = only one could)
    suite_note: str = ""


def parse_env_items(items: Sequence[str], key: str = "--env") -> dict[str, str]:
    """``KEY=VALUE`` strings → a dict; InputError naming the bad item."""
    env: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise InputError(f"{key} expects KEY=VALUE, got {item!r}", key=key)
        env[name] = value
    return env


def role_for_backend(backend: str, candidate: str) -> Role:
    """Layout slot of a backend's raw log; InputError for a backend without one."""
    if backend == candidate:
        return "candidate"
    if backend == "cutile":
        return "baseline_cutile"
    if backend.startswith("triton"):
        return "baseline_triton_tileir"
    raise InputError(
        f"backend {backend!r} has no slot in the TileGym layout (candidate is {candidate!r}; baselines: "
        "cutile → baseline_perf_cutile.txt, triton → baseline_perf_triton_tileir.txt)",
        key="--backend",
    )


def artifact_root(out_root: Path | None, env: Mapping[str, str] = os.environ) -> Path:
    """Where a run's results go: ``out_root``, else ``$CUTILE_KERNEL_OUT_ROOT``; InputError if neither."""
    root = out_root or (Path(env["CUTILE_KERNEL_OUT_ROOT"]) if env.get("CUTILE_KERNEL_OUT_ROOT") else None)
    if root is None:
        raise InputError(
            "no artifact root: pass --out-root DIR or set CUTILE_KERNEL_OUT_ROOT", key="--out-root"
        )
    return root


def tilegym_test_file(tilegym: Path, kernel: str) -> Path:
    return tilegym / "tests" / "ops" / f"test_{kernel}.py"


def tilegym_target(tilegym: Path, kernel: str) -> tuple[str, str | None]:
    """``tests/ops/test_<kernel>.py::<Class>::test_perf`` (or the file + a -k when several classes)."""
    test_file = tilegym_test_file(tilegym, kernel)
    if not test_file.is_file():
        ops = test_file.parent
        known = sorted(p.stem[5:] for p in ops.glob("test_*.py")) if ops.is_dir() else []
        close = difflib.get_close_matches(kernel, known, n=5)
        hint = f"; close matches: {', '.join(close)}" if close else ""
        raise InputError(f"no TileGym test file for kernel {kernel!r}{hint}", path=test_file)
    classes: list[str] = []
    current: str | None = None
    for line in test_file.read_text(encoding="utf-8", errors="replace").splitlines():
        m = re.match(r"class (\w+)", line)
        if m:
            current = m.group(1)
        elif current and re.match(r"\s+def test_perf\(", line) and current not in classes:
            classes.append(current)
    rel = test_file.relative_to(tilegym).as_posix()
    if len(classes) == 1:
        return f"{rel}::{classes[0]}::test_perf", None
    if not classes:
        raise InputError("no test_perf in this TileGym test file", path=test_file)
    return rel, "test_perf and not test_perf_llm"


def _unknown_profile(kernel: str) -> InputError:
    from cutile_workbench.profiles import list_profiles

    names = [p.kernel for p in list_profiles()]
    close = difflib.get_close_matches(kernel, names, n=5)
    return InputError(
        f"no profile {kernel!r} (known: {', '.join(names)})"
        + (f"; did you mean {', '.join(close)}?" if close else "")
        + "; use --tilegym DIR (or $TILEGYM_PATH) to run TileGym's own tests",
        key="kernel",
    )


def plan_runs(request: RunRequest, env: Mapping[str, str] = os.environ) -> RunPlan:
    """One RunSpec per backend (see module contract); no process is started. Raises InputError."""
    from cutile_workbench.profiles import get_profile

    if request.per_test_timeout_s <= 0:
        raise InputError(
            f"--timeout must be > 0 seconds, got {request.per_test_timeout_s:g}", key="--timeout"
        )
    if request.total_timeout_s is not None and request.total_timeout_s <= 0:
        raise InputError(
            f"--total-timeout must be > 0 seconds, got {request.total_timeout_s:g}", key="--total-timeout"
        )
    kernel = check_kernel_name(request.kernel)
    out = KernelPaths.under(artifact_root(request.out_root, env), kernel)
    if in_recorded_sessions(out.root):  # however it is named (--out-root, env, a link): never written
        raise InputError(
            "the out root is a recorded session shipped with cutile-workbench (read-only): pass "
            "--out-root DIR outside the package",
            path=str(out.root),
            key="--out-root",
        )
    profile = get_profile(kernel)
    # an explicit --suite file is its own suite: an exported $TILEGYM_PATH does not redirect it
    checkout = tilegym_checkout(request.tilegym, env if request.suite is None else {})
    flag = "--tilegym" if request.tilegym is not None else "TILEGYM_PATH"
    note = ""
    use_tilegym = False
    if checkout is not None and not request.prefer_profile:
        checkout = checkout.expanduser().resolve()
        if not checkout.is_dir():
            raise InputError("TileGym checkout not found", path=checkout, key=flag)
        has_test = tilegym_test_file(checkout, kernel).is_file()
        if has_test or request.tilegym is not None or profile is None:
            use_tilegym = True  # an explicit checkout without the file reports it (close matches)
            if profile is not None and has_test:
                note = (
                    f"running TileGym's {tilegym_test_file(checkout, kernel).relative_to(checkout)} from "
                    f"{checkout} ({'--tilegym' if request.tilegym is not None else '$TILEGYM_PATH'}); "
                    f"a built-in profile {kernel!r} exists too: add --profile to run it instead"
                )
        else:
            note = (
                f"$TILEGYM_PATH={checkout} has no tests/ops/test_{kernel}.py: running the built-in "
                f"profile {kernel!r}"
            )
    elif checkout is not None and profile is not None:
        note = (
            f"running the built-in profile {kernel!r} (--profile); TileGym's tests/ops/test_{kernel}.py "
            f"in {checkout} is not run"
        )
    recorded: Path | None = None
    if use_tilegym:
        assert checkout is not None
        target, extra_k = tilegym_target(checkout, kernel)
        if request.suite is not None:
            target, extra_k = str(request.suite), None
        candidate = "cutile-rs"
        backends = list(request.backends) or [candidate]
        cwd = checkout
        kind: SuiteKind = "tilegym"
    else:
        if request.prefer_profile and profile is None:
            raise _unknown_profile(kernel)
        from cutile_workbench.profiles import get_recorded_tilegym

        recorded_tg = get_recorded_tilegym(kernel)
        if profile is None and request.suite is None and recorded_tg is not None:
            raise InputError(
                f"{kernel!r} is a recorded run of TileGym's own {recorded_tg.test} (real cutile-rs); re-run it "
                "with --tilegym DIR (or $TILEGYM_PATH): a TileGym checkout whose cutile-rs library is built "
                "(README: 'Running against real cutile-rs')",
                key="kernel",
            )
        if profile is None and request.suite is None:
            raise _unknown_profile(kernel)
        candidate = profile.candidate if profile else (list(request.backends) or ["cutile"])[0]
        backends = list(request.backends) or (
            [profile.candidate, profile.baseline] if profile else [candidate]
        )
        suite = request.suite.resolve() if request.suite is not None else None
        target = str(suite) if suite is not None else str(profile.suite) if profile else ""
        extra_k = None
        cwd = suite.parent if suite is not None else PACKAGE_ROOT
        recorded = profile.kernel_dir if profile else None
        kind = "suite" if suite is not None else "profile"
    user_k = " and ".join(f"({k})" for k in (extra_k, request.k_expr) if k) or None
    runs: list[BackendRun] = []
    seen: dict[str, str] = {}
    for backend in dict.fromkeys(backends):  # keep order, drop repeats
        role = role_for_backend(backend, candidate)
        if role in seen:
            raise InputError(f"backends {seen[role]!r} and {backend!r} both map to {role}", key="--backend")
        seen[role] = backend
        token = id_token(backend)
        spec_env = dict(request.env)
        if use_tilegym and role == "candidate":
            spec_env = {**NO_SILENT_FALLBACK, **spec_env}
        runs.append(
            BackendRun(
                backend,
                role,
                RunSpec(
                    kernel=kernel,
                    test_target=target,
                    k_expr=backend_k_expr(token, user_k),
                    cwd=cwd,
                    role=role,
                    python=request.python,
                    env=spec_env,
                    workbench_harness=request.workbench_harness,
                    per_test_timeout_s=request.per_test_timeout_s,
                    total_timeout_s=request.total_timeout_s,
                    backend_token=token,
                    dump_ir_dir=str(out.workbench_dir / "tileir_raw" / role) if request.dump_ir else None,
                    compile_cache=str(request.compile_cache.resolve()) if request.compile_cache else None,
                ),
            )
        )
    return RunPlan(runs, out, kind, recorded, note)


def gpu_probe(python: str) -> tuple[bool, str]:
    """``(present, how we know)``: nvidia-smi first, then ``torch.cuda`` in the child Python."""
    proc, smi_note = run_nvidia_smi(["-L"], timeout_s=20)
    if proc is not None:
        if proc.returncode == 0 and "GPU" in proc.stdout:
            return True, proc.stdout.strip().splitlines()[0]
        smi_note = f"nvidia-smi -L failed (exit {proc.returncode})"
    code = "import torch, sys; sys.stdout.write(str(torch.cuda.is_available()))"
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
        if proc.returncode == 0 and proc.stdout.strip() == "True":
            return True, f"torch.cuda is available in {python}"
        torch_note = (
            "torch.cuda.is_available() is False" if proc.returncode == 0 else "torch is not importable"
        ) + f" in {python}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        torch_note = f"cannot run {python} ({exc})"
    return False, f"{smi_note}; {torch_note}"


def gpu_present() -> bool:
    """A GPU node, cheaply (the TUI asks at start-up): an NVIDIA device node or ``nvidia-smi`` on PATH."""
    return Path("/dev/nvidia0").exists() or shutil.which("nvidia-smi") is not None


def _id_token_of(backend: str) -> str:
    """Test-id token of a backend name as E spells it (``triton_tileir`` log ≙ ``triton`` ids)."""
    token = id_token(backend)
    return token[: -len("_tileir")] if token.endswith("_tileir") else token


@dataclass(frozen=True)
class RerunTarget:
    """One side of a config's live re-run: the layout role, the backend, its id token and node id."""

    role: Role
    backend: str
    token: str
    nodeid: str


def rerun_targets(row: RatioRow, candidate_backend: str) -> tuple[RerunTarget, RerunTarget]:
    """The candidate's and the baseline's node ids of a table row (the row names its baseline as E's
    log does: ``triton_tileir`` ≙ ``triton`` ids, none ≙ ``cutile``)."""
    base = row.baseline_backend or "cutile"
    base_role: Role = "baseline_triton_tileir" if _id_token_of(base) == "triton" else "baseline_cutile"
    sides: tuple[tuple[Role, str], tuple[Role, str]] = (("candidate", candidate_backend), (base_role, base))
    cand, baseline = (
        RerunTarget(
            role, backend, _id_token_of(backend), f"{row.func_key}[{_id_token_of(backend)}-{row.params}]"
        )
        for role, backend in sides
    )
    return cand, baseline


#: TileGym's dispatcher falls back to another backend with only a warning; for the cutile-rs side
#: a silent fallback must fail, not be measured (``run --tilegym``, live re-runs, probes)
NO_SILENT_FALLBACK: Mapping[str, str] = {"DISABLE_FALLBACK": "1"}


def rerun_env(token: str) -> dict[str, str]:
    """A live re-run's child environment: CUPTI timing; for cutile-rs, :data:`NO_SILENT_FALLBACK`."""
    return {"CUPTI": "1", **(NO_SILENT_FALLBACK if token == "cutile_rs" else {})}


def config_rerunner(
    kernel: str, candidate_backend: str, cwd: Path, out: KernelPaths
) -> Callable[[Sequence[RatioRow], Callable[[Any], None], threading.Event], int]:
    """Live re-run of chosen configs' node ids (candidate, then baseline) through ``cutile_workbench.run.runner.run``
    (child pytest, CUPTI harness, JSON-lines events).

    ``cwd`` is where the node ids resolve (the TileGym checkout, or the dir holding the
    ``profiles`` package for a recorded session); ``out`` is where the runner keeps its logs.
    """

    def rerun(rows: Sequence[RatioRow], on_event: Callable[[Any], None], cancel: threading.Event) -> int:
        rc = 0
        for row in rows:
            for target in rerun_targets(row, candidate_backend):
                if cancel.is_set():
                    return 130
                spec = RunSpec(
                    kernel=kernel,
                    test_target=target.nodeid,
                    cwd=cwd,
                    role=target.role,
                    backend_token=target.token,
                    env=rerun_env(target.token),
                    workbench_harness=True,
                )
                result = run_suite(spec, out, on_event=on_event, cancel=cancel)
                rc = rc or result.rc
        return rc

    rerun.events_source = str(out.workbench_dir / "runs")  # type: ignore[attr-defined]
    return rerun


def rerun_cwd(ws: Workspace) -> tuple[Path | None, str]:
    """Where a live re-run of ``ws``'s configs resolves their node ids, or ``(None, why not)`` ("" = no
    reason to give: nothing to run). The recorded session re-runs our profile suite, or — a recorded
    TileGym session (real cutile-rs) — TileGym's own test_perf, which needs the checkout."""
    if ws.source == "out_root" and ws.tilegym is not None:
        return ws.tilegym, ""
    if ws.source == "recorded":
        from cutile_workbench import profiles

        if profiles.get_recorded_tilegym(ws.kernel) is not None:
            if ws.tilegym is None:
                return None, (
                    "this is a recorded run of TileGym's own test_perf (real cutile-rs): a live re-run "
                    "needs --tilegym DIR (a checkout with the cutile-rs library built)"
                )
            return ws.tilegym, ""
        return Path(profiles.__file__).resolve().parent.parent, ""
    return None, ""


def live_rerunner(ws: Workspace, candidate_backend: str) -> tuple[Callable[..., int] | None, str]:
    """The TUI's live runner for ``ws`` on a GPU node, and why there is none ("" = no reason to give:
    no GPU here, or nothing to run)."""
    if not gpu_present():
        return None, ""
    cwd, why = rerun_cwd(ws)
    if cwd is None:
        return None, why
    if ws.source == "recorded" or in_recorded_sessions(ws.kernel_dir):  # read-only: logs go to a scratch root
        scratch = Path(tempfile.mkdtemp(prefix="cutile-workbench-live-"))
        return config_rerunner(ws.kernel, candidate_backend, cwd, KernelPaths.under(scratch, ws.kernel)), ""
    return config_rerunner(ws.kernel, candidate_backend, cwd, ws.paths), ""
