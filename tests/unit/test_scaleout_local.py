"""Local scale-out (``run --gpus``) end to end on CPU: real worker processes, real pytest children.

The GPU slots are unprobed ``CUDA_VISIBLE_DEVICES`` values (no GPU here): the suites never touch a
GPU, so what is proven is the plumbing — pinning, sharding, fault isolation, resume, merge —
against the single-process run of the same records. Suites: tests/fixtures/perflog (real H200
records) and tests/fixtures/runner/perf_faults.py (SYNTHETIC faults, see scaleout_helpers).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import signal
import sys
from pathlib import Path

import pytest
from scaleout_helpers import (
    FAULTS_ROLES,
    PERFLOG_ROLES,
    CancelOnceAllStarted,
    comparable_table,
    fake_nvidia_smi,
    fake_pynvml_dir,
    faults_suite,
    interrupt_cli_once_running,
    perflog_suite,
    role_runs,
    single_run,
    still_alive,
)

from cutile_workbench.artifacts.events import Event, read_events
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.artifacts.perflog.sanitizer import count_validator_lines, sanitize
from cutile_workbench.errors import WorkbenchError
from cutile_workbench.run.scaleout.devices import resolve_devices, visible_gpus
from cutile_workbench.run.scaleout.service import ScaleoutRequest, run_scaled
from cutile_workbench.stages.e.validators import validate_perf_log

ID = "test_rms_norm.py::Test_RMSNorm::test_perf[{}-torch.bfloat16]"


def request(roles, out_root: Path, gpus=("0", "1"), **kw) -> ScaleoutRequest:
    return ScaleoutRequest(
        kernel="rms_norm",
        out=KernelPaths.under(out_root, "rms_norm"),
        roles=roles,
        mode="local",
        devices=tuple(resolve_devices(list(gpus), probe=False)),
        **kw,
    )


@pytest.fixture(scope="module")
def perflog_pair(tmp_path_factory):
    """The perflog suite run once single-process and once over two GPU slots. The candidate runs with
    ``--workbench-harness`` and the baseline without (TileGym's harness): both modes go through shards."""
    root = tmp_path_factory.mktemp("scaleout")
    cand, base = role_runs(perflog_suite(root), PERFLOG_ROLES)
    roles = (dataclasses.replace(cand, spec=dataclasses.replace(cand.spec, workbench_harness=True)), base)
    single_run(roles, KernelPaths.under(root / "single", "rms_norm"))
    events: list[Event] = []
    result = run_scaled(request(roles, root / "sharded"), on_event=events.append)
    return root, result, events


def test_merged_ratio_table_equals_the_single_process_one(perflog_pair):
    root, result, _ = perflog_pair
    assert result.merged is not None and len(result.plan.shards) == 2
    single, sharded = comparable_table(root / "single"), comparable_table(root / "sharded")
    assert sharded == single
    assert [r["status"] for r in sharded["rows"]].count("NA") == 1  # the failing cutile-rs config


def test_merged_logs_give_the_validators_the_single_runs_counts(perflog_pair):
    root, *_ = perflog_pair
    for rel in ("baseline_perf_triton_tileir.txt", "reports/agent_logs/perf_cutile_rs.full.txt"):
        single = validate_perf_log(root / "single" / "rms_norm" / rel)
        merged = validate_perf_log(root / "sharded" / "rms_norm" / rel)
        assert merged.output == single.output and merged.exit_code == single.exit_code
    assert validate_perf_log(root / "sharded" / "rms_norm" / "baseline_perf_triton_tileir.txt").exit_code == 0
    # E's sanitized candidate log (the one validate_agent_e checks) passes, as the single run's does
    raw = (root / "sharded" / "rms_norm" / "reports/agent_logs/perf_cutile_rs.full.txt").read_text()
    merged_counts = count_validator_lines(sanitize(raw, pytest_rc=1).validator_log)
    raw1 = (root / "single" / "rms_norm" / "reports/agent_logs/perf_cutile_rs.full.txt").read_text()
    assert merged_counts == count_validator_lines(sanitize(raw1, pytest_rc=1).validator_log)
    assert merged_counts.passes and merged_counts.perf_sections == 4


def test_each_config_ran_on_its_shards_gpu_and_provenance_says_so(perflog_pair):
    root, result, _ = perflog_pair
    session = json.loads((root / "sharded/rms_norm/workbench/session.json").read_text())
    for shard in result.plan.shards:
        device = str(shard.index)  # slot i was GPU "i"
        for role, nodeids in shard.by_role.items():
            measured = session["runs"][role]["measured_on"]
            for nodeid in nodeids:
                assert measured[nodeid]["shard"] == shard.index and measured[nodeid]["device"] == device
                assert (
                    measured[nodeid]["host"] and measured[nodeid]["gpu_name"] == "unknown"
                )  # no nvidia-smi here
            log = (
                result.paths.shard_dir(shard.index)
                / (
                    "baseline_perf_triton_tileir.txt"
                    if role != "candidate"
                    else "reports/agent_logs/perf_cutile_rs.full.txt"
                )
            ).read_text()
            seen = {ln for ln in log.splitlines() if ln.startswith("workbench-test: CUDA_VISIBLE_DEVICES=")}
            assert seen == {f"workbench-test: CUDA_VISIBLE_DEVICES={device}"}  # what the pytest child saw
    merged_log = (root / "sharded/rms_norm/baseline_perf_triton_tileir.txt").read_text()
    assert merged_log.count("===== workbench shard ") == 2


def test_progress_stream_covers_every_config_with_its_shard(perflog_pair):
    _, result, events = perflog_pair
    assert events[0].event == "scaleout_plan" and events[-1].event == "scaleout_finish"
    finished = [(e.get("shard"), e.get("nodeid")) for e in events if e.event == "test_finish"]
    planned = [(s.index, n) for s in result.plan.shards for n in s.nodeids]
    assert sorted(finished) == sorted(planned)
    assert {e.get("role") for e in events if e.event == "record"} == {"candidate", "baseline_triton_tileir"}
    assert result.rc == 1  # one cutile-rs config fails (recorded sm_90 compile error)


def test_merged_events_carry_shard_and_host(perflog_pair):
    root, *_ = perflog_pair
    evs = read_events(root / "sharded/rms_norm/workbench/events.jsonl")
    records = [e for e in evs if e.event == "record"]
    single = [e for e in read_events(root / "single/rms_norm/workbench/events.jsonl") if e.event == "record"]
    assert [e.get("nodeid") for e in records] == [e.get("nodeid") for e in single]  # same records, same order
    assert len(records) == 9 and all(isinstance(e.get("shard"), int) and e.get("host") for e in records)


# --------------------------------------------------------------------------- faults, resume, cancel


def test_a_config_crash_inside_a_shard_is_isolated_like_a_single_run(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNNER_FIXTURE_FAULTS", "triton-4096-1024:segv")  # SYNTHETIC fault
    roles = role_runs(faults_suite(tmp_path), FAULTS_ROLES)
    result = run_scaled(request(roles, tmp_path / "out"))
    assert result.merged is not None and result.rc == 1
    failed = result.merged.results["candidate"].failed
    assert "SIGSEGV" in failed[ID.format("triton-4096-1024")]
    assert set(result.merged.results["candidate"].passed) == {
        ID.format("triton-16384-2048"),
        ID.format("triton-8192-8192"),
    }


def test_a_killed_worker_fails_only_its_shard_and_a_rerun_runs_only_that_shard(tmp_path, monkeypatch):
    monkeypatch.setenv(
        "RUNNER_FIXTURE_FAULTS", "cutile-8192-8192:hang"
    )  # SYNTHETIC: shard 1's last config hangs
    roles = role_runs(faults_suite(tmp_path), FAULTS_ROLES)
    worker_pid: dict[int, int] = {}
    pytest_pid: dict[int, int] = {}

    def on_event(ev: Event) -> None:
        if ev.event == "scaleout_shard_state" and ev.get("state") == "running":
            worker_pid[ev["shard"]] = ev["pid"]
        if ev.event == "session_start":
            pytest_pid[ev["shard"]] = ev["pid"]
        if ev.event == "test_start" and ev.get("nodeid") == ID.format("cutile-8192-8192"):
            os.kill(worker_pid[ev["shard"]], signal.SIGKILL)  # the worker dies (OOM killer, a bug of ours)

    first = run_scaled(request(roles, tmp_path / "out"), on_event=on_event)
    assert first.statuses[0].state == "complete" and first.statuses[1].state == "failed"
    assert "killed by signal 9" in first.statuses[1].detail and "pytest child" in first.statuses[1].detail
    assert first.merged is None and first.rc == 1
    assert not (tmp_path / "out/rms_norm/reports").exists()  # nothing merged
    assert not still_alive([pytest_pid[1]])  # the hanging pytest child did not outlive its worker
    kept = json.loads(first.paths.manifest(0).read_text())

    monkeypatch.delenv("RUNNER_FIXTURE_FAULTS")
    events: list[Event] = []
    second = run_scaled(request(roles, tmp_path / "out"), on_event=events.append)
    assert second.plan.plan_id == first.plan.plan_id
    assert events[0].get("resumed") == [0]
    assert {
        e["shard"] for e in events if e.event == "scaleout_shard_state" and e.get("state") == "running"
    } == {1}
    assert json.loads(second.paths.manifest(0).read_text()) == kept  # shard 0 was not run again
    assert second.merged is not None and second.rc == 0
    assert len(second.merged.results["baseline_cutile"].passed) == 3


def test_cancel_stops_every_shard_and_merges_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNNER_FIXTURE_FAULTS", "triton-4096-1024:hang,triton-8192-8192:hang")  # SYNTHETIC
    roles = role_runs(faults_suite(tmp_path), FAULTS_ROLES)
    watcher = CancelOnceAllStarted({0, 1})
    result = run_scaled(request(roles, tmp_path / "out"), on_event=watcher, cancel=watcher.cancel)
    # every shard ended "cancelled" (not by the per-test hang timeout): the path, not the time it took
    assert result.cancelled and result.rc == 2 and result.merged is None
    assert {s.state for s in result.statuses.values()} == {"cancelled"}
    assert not (tmp_path / "out/rms_norm/baseline_perf_cutile.txt").exists()
    assert watcher.pids and not still_alive(watcher.pids)


def test_running_a_merged_plan_again_re_measures_everything(tmp_path):
    roles = role_runs(faults_suite(tmp_path), FAULTS_ROLES)
    first = run_scaled(request(roles, tmp_path / "out"))
    assert first.merged is not None
    events: list[Event] = []
    second = run_scaled(request(roles, tmp_path / "out"), on_event=events.append)
    assert events[0].get("fresh") is True and events[0].get("resumed") == []
    assert second.statuses[0].started_at > first.statuses[0].finished_at  # measured again, never reused
    assert second.merged is not None


def test_two_shards_on_one_gpu_are_labelled(tmp_path):
    roles = role_runs(faults_suite(tmp_path), FAULTS_ROLES)
    events: list[Event] = []
    result = run_scaled(request(roles, tmp_path / "out", gpus=("0", "0")), on_event=events.append)
    assert result.merged is not None
    assert any("share one GPU" in w for w in events[0].get("warnings"))
    assert all(
        e.get("shared_device")
        for e in events
        if e.event == "scaleout_shard_state" and e.get("state") == "running"
    )


# --------------------------------------------------------------------------- the CLI block


def call(*argv: str) -> tuple[int, str]:
    from cutile_workbench.cli import build_parser

    args = build_parser().parse_args(list(argv))
    for name in ("out_root", "tilegym"):
        if not hasattr(args, name):
            setattr(args, name, None)
    buf = io.StringIO()
    try:
        return args.func(args, buf), buf.getvalue()
    except WorkbenchError as exc:  # what cli.main does with a command's error
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code, buf.getvalue()


def test_cli_run_gpus_prints_progress_and_merges(tmp_path, monkeypatch):
    suite = faults_suite(tmp_path)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    rc, out = call(
        "run",
        "rms_norm",
        "--suite",
        str(suite / "test_rms_norm.py"),
        "--out-root",
        str(tmp_path / "o"),
        "-b",
        "triton",
        "-b",
        "cutile",
        "--gpus",
        "0,1",
        "--skip-gpu-check",
    )
    assert rc == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("== rms_norm: plan ") and "over 2 shard(s) (local)" in lines[0]
    assert sum(1 for ln in lines if ln.startswith("[")) == 6
    assert any(ln.startswith("== merged plan") for ln in lines)
    assert (
        tmp_path / "o/rms_norm/baseline_perf_triton_tileir.txt"
    ).is_file()  # the profile: cutile vs triton


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--gpus", "zero"], "--gpus expects"),
        (["--gpus", "all"], "no GPU is visible"),
        (["--gpus", "0"], "nvidia-smi lists no GPU"),
        (["--fresh"], "--fresh applies to a sharded run"),
        (["--partition", "gpu"], "only apply with --slurm"),
        (["--slurm", "--gpus", "0"], "with --slurm use --gpus-per-node"),
        (["--slurm", "--time", "soon"], "not a SLURM time"),
    ],
)
def test_cli_scaleout_flag_errors_exit_2(tmp_path, capsys, monkeypatch, extra, message):
    if extra[:2] in (["--gpus", "all"], ["--gpus", "0"]) and visible_gpus():
        pytest.skip("a GPU is visible here")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    suite = faults_suite(tmp_path)
    rc, _ = call(
        "run",
        "rms_norm",
        "--suite",
        str(suite / "test_rms_norm.py"),
        "--out-root",
        str(tmp_path / "o"),
        "-b",
        "triton",
        *extra,
    )
    assert rc == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_cli_slurm_without_sbatch_is_a_clear_error(tmp_path, capsys, monkeypatch):
    suite = faults_suite(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    rc, _ = call(
        "run",
        "rms_norm",
        "--suite",
        str(suite / "test_rms_norm.py"),
        "--out-root",
        str(tmp_path / "o"),
        "-b",
        "triton",
        "--slurm",
        "--gpus-per-node",
        "0",
    )
    err = capsys.readouterr().err
    assert rc == 2
    assert "--slurm needs sbatch, squeue, scancel on PATH" in err and "use --gpus" in err
    assert not (tmp_path / "o").exists()


def test_a_shard_runs_the_single_runs_pytest_command_plus_only_its_ids(perflog_pair):
    """Harness flags, -k, env and plugins pass through unchanged (workbench harness or TileGym's)."""
    import shlex

    root, result, _ = perflog_pair
    single = json.loads((root / "single/rms_norm/workbench/session.json").read_text())["runs"]
    for s in result.plan.shards:
        shard = json.loads((result.paths.shard_out(s.index).session_json).read_text())["runs"]
        for role in ("candidate", "baseline_triton_tileir"):
            one, sharded = (shlex.split(runs[role]["commands"][0]) for runs in (single, shard))
            ev = one.index("--workbench-events")
            assert sharded[: ev + 1] == one[: ev + 1] and sharded[ev + 2 : len(one)] == one[ev + 2 :]
            assert sharded[len(one) :] == [
                "-p",
                "cutile_workbench.run.scaleout.select_plugin",
                "--workbench-only-ids",
                str(result.paths.ids_file(s.index, role)),
            ]
            assert shard[role]["env_overrides"]["CUDA_VISIBLE_DEVICES"] == str(s.index)
            assert ("--workbench-harness" in sharded) == (role == "candidate")


def test_an_array_task_with_two_shards_pins_one_per_visible_gpu(tmp_path):
    """What one SLURM array task with --gpus-per-node 2 runs (the worker's --array-task mode), without
    SLURM: CUDA_VISIBLE_DEVICES=0,1 as an allocation would set it; the task runs both shards at once."""
    import subprocess
    import sys

    from cutile_workbench.run.scaleout.plan import PlanPaths, save_plan
    from cutile_workbench.run.scaleout.service import plan_request

    roles = role_runs(faults_suite(tmp_path), FAULTS_ROLES)
    req = request(roles, tmp_path / "out")
    plan = plan_request(req)
    paths = PlanPaths.for_plan(req.out, plan.plan_id)
    save_plan(plan, paths)
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps({"tasks": [[0, 1]]}))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_ARRAY_TASK_ID": "0"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cutile_workbench.run.scaleout.worker",
            "--plan",
            str(paths.plan_json),
            "--array-task",
            "0",
            "--tasks",
            str(tasks),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for i in (0, 1):
        log = (paths.shard_dir(i) / "baseline_perf_cutile.txt").read_text()
        assert f"workbench-test: CUDA_VISIBLE_DEVICES={i}" in log
        assert json.loads(paths.manifest(i).read_text())["device"] == str(i)


def test_rows_whose_candidate_and_baseline_ran_on_different_gpu_models_are_flagged(tmp_path, monkeypatch):
    """The baseline is measured on one GPU model, the candidate later on another (SYNTHETIC GPUs: a
    fake nvidia-smi names them; everything else is the real path: probe, worker, manifest, merge)."""
    fake_nvidia_smi(tmp_path, monkeypatch, "")
    cand, base = role_runs(faults_suite(tmp_path), FAULTS_ROLES)
    out_root = tmp_path / "out"

    def sharded(role, gpu: str) -> object:
        monkeypatch.setenv("FAKE_SMI_GPUS", gpu)
        req = ScaleoutRequest(
            kernel="rms_norm",
            out=KernelPaths.under(out_root, "rms_norm"),
            roles=(role,),
            mode="local",
            devices=tuple(resolve_devices(["0"])),
        )
        return run_scaled(req)

    first = sharded(base, "0, GPU-11111111-2222-3333-4444-555555555555, NVIDIA H100 80GB HBM3")
    assert first.merged is not None and not first.merged.mixed.rows
    second = sharded(cand, "0, GPU-66666666-7777-8888-9999-000000000000, NVIDIA H200")
    mixed = second.merged.mixed  # type: ignore[union-attr]
    assert len(mixed.rows) == 3 and mixed.models == ("NVIDIA H100 80GB HBM3", "NVIDIA H200")
    assert {(r.candidate_gpu, r.baseline_role, r.baseline_gpu) for r in mixed.rows} == {
        ("NVIDIA H200", "baseline_cutile", "NVIDIA H100 80GB HBM3")
    }
    session = json.loads((out_root / "rms_norm/workbench/session.json").read_text())
    uuids = {w["gpu_uuid"] for w in session["runs"]["candidate"]["measured_on"].values()}
    assert uuids == {"GPU-66666666-7777-8888-9999-000000000000"}
    from cutile_workbench.run.scaleout.console import ConsolePrinter

    buf = io.StringIO()
    printer = ConsolePrinter(buf)
    printer(
        Event(
            "scaleout_merge",
            0.0,
            {
                "plan_id": "p",
                "kernel_dir": "k",
                "written": [],
                "gpu_models": list(mixed.models),
                "mixed_gpu_rows": [r.describe() for r in mixed.rows],
            },
        )
    )
    assert buf.getvalue().count("MIXED GPUs: ") == 3


def test_ctrl_c_in_the_real_cli_stops_every_shard_and_merges_nothing(tmp_path):
    suite = faults_suite(tmp_path)
    rc, err, pids = interrupt_cli_once_running(
        [
            "run",
            "rms_norm",
            "--suite",
            str(suite / "test_rms_norm.py"),
            "--out-root",
            str(tmp_path / "o"),
            "-b",
            "triton",
            "-b",
            "cutile",
            "--gpus",
            "0,1",
            "--skip-gpu-check",
        ],
        tmp_path / "o",
        {
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "RUNNER_FIXTURE_FAULTS": "triton-4096-1024:hang,triton-8192-8192:hang",
        },
    )
    assert rc == 2, err
    assert "cancelling (SIGINT)" in err and "cancelled; nothing merged" in err
    assert not (tmp_path / "o/rms_norm/baseline_perf_triton_tileir.txt").exists()
    assert len(pids) == 4 and not still_alive(pids)  # 2 workers + 2 pytest children gone


def test_each_shards_own_session_json_names_the_gpu_it_was_pinned_to(tmp_path, monkeypatch):
    """Two SYNTHETIC GPUs of different models (the fake nvidia-smi): shard 1 runs on GPU 1, and its own
    ``session.json`` must say so. Regression: ``runner.gpu_description`` asked nvidia-smi for GPU 0
    whatever ``CUDA_VISIBLE_DEVICES`` said, so shard 1 was recorded as measured on GPU 0's model."""
    fake_nvidia_smi(
        tmp_path,
        monkeypatch,
        "0, GPU-0a0a0a0a-0000-0000-0000-000000000000, NVIDIA H200\n"
        "1, GPU-1b1b1b1b-1111-1111-1111-111111111111, NVIDIA A100-SXM4-80GB, 8.0",
    )
    roles = role_runs(faults_suite(tmp_path), FAULTS_ROLES)
    result = run_scaled(request(roles, tmp_path / "out"))
    assert result.merged is not None and len(result.plan.shards) == 2
    expected = {0: ("NVIDIA H200, 580.159.04", "9.0"), 1: ("NVIDIA A100-SXM4-80GB, 580.159.04", "8.0")}
    for shard in result.plan.shards:
        runs = json.loads(result.paths.shard_out(shard.index).session_json.read_text())["runs"]
        assert {(r["gpu"], r["compute_capability"]) for r in runs.values()} == {expected[shard.index]}, (
            shard.index
        )


def test_rows_name_the_gpu_the_pytest_child_measured_on_from_its_own_nvml_reading(tmp_path, monkeypatch):
    """No nvidia-smi for the workers (their manifests say ``unknown``), but each pytest child reads its
    GPU through NVML (a SYNTHETIC pynvml of two different models): ``measured_on`` and the merged
    ``gpu`` come from the child's provenance, and say so."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    gpus = [
        ("NVIDIA H200", "GPU-0a0a0a0a-0000-0000-0000-000000000000"),
        ("NVIDIA H100 80GB HBM3", "GPU-1b1b1b1b-1111-1111-1111-111111111111"),
    ]
    roles = role_runs(
        faults_suite(tmp_path), FAULTS_ROLES, extra_pythonpath=(str(fake_pynvml_dir(tmp_path, gpus)),)
    )
    result = run_scaled(request(roles, tmp_path / "out"))
    assert result.merged is not None and len(result.plan.shards) == 2
    assert {s.gpu_name for s in result.statuses.values()} == {"unknown"}  # the workers could not tell
    session = json.loads((tmp_path / "out/rms_norm/workbench/session.json").read_text())
    for role, meta in session["runs"].items():
        for nodeid, where in meta["measured_on"].items():
            name, uuid = gpus[int(where["device"])]
            assert (where["gpu_name"], where["gpu_uuid"]) == (name, uuid), (role, nodeid)
            assert where["gpu_source"].startswith("NVML in the pytest child (NVML index")
        assert meta["gpu"] == "mixed: NVIDIA H100 80GB HBM3, NVIDIA H200 (see measured_on)"
    assert not result.merged.mixed.rows  # a row's candidate and baseline still share one GPU
    assert result.merged.mixed.models == ("NVIDIA H100 80GB HBM3", "NVIDIA H200")
