"""Shard planning, plan files, the id-selection plugin and GPU-slot parsing (no GPU, no SLURM).

Node ids below follow TileGym's id rules (contract §3.4); the configs are SYNTHETIC edge cases
where a test says so. The plugin test runs a real pytest child.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.errors import InputError
from cutile_workbench.run.scaleout.devices import (
    Device,
    identify,
    parse_gpus,
    pinned_env,
    resolve_devices,
    visible_gpus,
)
from cutile_workbench.run.scaleout.plan import (
    PlanPaths,
    RoleRun,
    balanced_cuts,
    load_plan,
    plan_from_json,
    plan_shards,
    plan_to_json,
    read_status,
    save_plan,
    spec_from_json,
    spec_to_json,
)
from cutile_workbench.run.scaleout.provenance import mixed_gpu_rows
from cutile_workbench.run.spec import RunSpec

F = "tests/ops/test_rms_norm.py::Test_RMSNorm::test_perf"


def ids(token: str, shapes: list[str]) -> list[str]:
    return [f"{F}[{token}-{s}]" for s in shapes]


SHAPES = [f"static_persistent-{m}-1024-torch.float16" for m in (1024, 2048, 4096, 8192, 16384)]
ROLES = (
    RoleRun("cutile-rs", "candidate", RunSpec(kernel="rms_norm", test_target=F, backend_token="cutile_rs")),
    RoleRun(
        "cutile",
        "baseline_cutile",
        RunSpec(kernel="rms_norm", test_target=F, role="baseline_cutile", backend_token="cutile"),
    ),
)


def test_rows_stay_together_and_shards_are_contiguous_in_collection_order():
    collected = {"candidate": ids("cutile_rs", SHAPES), "baseline_cutile": ids("cutile", SHAPES)}
    plan = plan_shards("rms_norm", ROLES, collected, 2)
    assert [len(s.nodeids) for s in plan.shards] == [6, 4]
    for s in plan.shards:  # a config's candidate and baseline always share a shard (one GPU)
        cand = {n.split("-", 1)[1] for n in s.by_role["candidate"]}
        base = {n.split("-", 1)[1] for n in s.by_role["baseline_cutile"]}
        assert cand == base
    # concatenating the shards gives each role's collection order back (merge keeps single-run order)
    for role in ("candidate", "baseline_cutile"):
        assert [n for s in plan.shards for n in s.by_role[role]] == collected[role]


def test_fewer_rows_than_shards_gives_fewer_shards_never_an_empty_one():
    collected = {"candidate": ids("cutile_rs", SHAPES[:2]), "baseline_cutile": ids("cutile", SHAPES[:2])}
    plan = plan_shards("rms_norm", ROLES, collected, 8)
    assert len(plan.shards) == 2 and all(s.nodeids for s in plan.shards)
    assert plan.requested_shards == 8


def test_a_row_only_one_role_has_is_still_planned():
    collected = {"candidate": ids("cutile_rs", SHAPES[:3]), "baseline_cutile": ids("cutile", SHAPES[:2])}
    plan = plan_shards("rms_norm", ROLES, collected, 3)
    assert plan.configs == 5 and plan.rows == 3
    assert plan.shards[2].by_role == {"candidate": (ids("cutile_rs", SHAPES)[2],), "baseline_cutile": ()}


def test_nothing_collected_is_a_clear_error():
    with pytest.raises(InputError, match="no test matched"):
        plan_shards("rms_norm", ROLES, {"candidate": [], "baseline_cutile": []}, 2)


@pytest.mark.parametrize(
    ("weights", "k", "sums"),
    [
        ([2, 2, 2], 2, [4, 2]),
        ([1] * 10, 3, [4, 3, 3]),
        ([1, 1, 1], 3, [1, 1, 1]),
        ([5, 1, 1, 1, 1, 1], 2, [5, 5]),
        ([3], 1, [3]),
    ],
)
def test_balanced_cuts(weights, k, sums):
    cuts = balanced_cuts(weights, k)
    bounds = [0, *cuts, len(weights)]
    assert [sum(weights[a:b]) for a, b in itertools.pairwise(bounds)] == sums


def test_plan_id_is_stable_and_depends_on_selection_and_scale():
    collected = {"candidate": ids("cutile_rs", SHAPES), "baseline_cutile": ids("cutile", SHAPES)}
    a = plan_shards("rms_norm", ROLES, collected, 2, now=1.0)
    b = plan_shards("rms_norm", ROLES, collected, 2, now=2.0)
    c = plan_shards("rms_norm", ROLES, collected, 3)
    d = plan_shards("rms_norm", ROLES, {**collected, "candidate": collected["candidate"][:4]}, 2)
    assert a.plan_id == b.plan_id
    assert len({a.plan_id, c.plan_id, d.plan_id}) == 3


def test_plan_round_trips_through_json_and_rejects_edits(tmp_path):
    collected = {"candidate": ids("cutile_rs", SHAPES), "baseline_cutile": ids("cutile", SHAPES)}
    plan = plan_shards("rms_norm", ROLES, collected, 2)
    paths = PlanPaths.for_plan(KernelPaths.under(tmp_path, "rms_norm"), plan.plan_id)
    save_plan(plan, paths)
    again = load_plan(paths.plan_json)
    assert again.plan_id == plan.plan_id and again.shards == plan.shards
    assert again.roles[0].spec == ROLES[0].spec.__class__(
        **{**ROLES[0].spec.__dict__, "cwd": Path(".").resolve()}
    )
    assert paths.ids_file(1, "candidate").read_text().splitlines() == list(
        plan.shards[1].by_role["candidate"]
    )
    doc = plan_to_json(plan)
    doc["shards"][0]["by_role"]["candidate"].pop()
    with pytest.raises(InputError, match="does not match its plan_id"):
        plan_from_json(doc, "plan.json")
    (paths.plan_json).write_text("{not json")
    with pytest.raises(InputError, match="not JSON"):
        load_plan(paths.plan_json)


def test_runspec_serialization_keeps_types_and_refuses_unknown_fields():
    spec = RunSpec(
        kernel="k",
        test_target="t.py",
        cwd=Path("/tmp"),
        env={"CUPTI": "1"},
        extra_pythonpath=("/x",),
        extra_args=("-x",),
        total_timeout_s=5.0,
    )
    back = spec_from_json(json.loads(json.dumps(spec_to_json(spec))), "plan.json")
    assert back == spec and isinstance(back.cwd, Path) and isinstance(back.extra_args, tuple)
    with pytest.raises(InputError, match="RunSpec lacks"):
        spec_from_json({**spec_to_json(spec), "from_the_future": 1}, "plan.json")


def test_missing_manifest_is_pending_and_a_foreign_one_is_failed(tmp_path):
    paths = PlanPaths(root=tmp_path, kernel="rms_norm")
    assert read_status(paths, 0, "abc").state == "pending"
    paths.manifest(0).parent.mkdir(parents=True)
    paths.manifest(0).write_text(json.dumps({"index": 0, "state": "complete", "plan_id": "other"}))
    st = read_status(paths, 0, "abc")
    assert st.state == "failed" and "another plan" in st.detail
    paths.manifest(0).write_text("{")
    assert read_status(paths, 0, "abc").state == "failed"


# --------------------------------------------------------------------------- selection plugin

# SYNTHETIC suite: ids [1] and [10] (a prefix pair) prove the selection is exact
_PREFIX_SUITE = """
import pytest

@pytest.mark.parametrize("n", [1, 10, 2])
def test_x(n):
    pass
"""


def test_only_ids_plugin_keeps_exactly_the_listed_ids(tmp_path):
    (tmp_path / "test_p.py").write_text(_PREFIX_SUITE)
    (tmp_path / "ids.txt").write_text("test_p.py::test_x[1]\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "cutile_workbench.run.scaleout.select_plugin",
            "--workbench-only-ids",
            "ids.txt",
            "test_p.py",
            "-v",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "test_x[1] PASSED" in proc.stdout and "test_x[10]" not in proc.stdout
    assert "2 deselected" in proc.stdout


def test_only_ids_plugin_refuses_an_unreadable_file(tmp_path):
    (tmp_path / "test_p.py").write_text(_PREFIX_SUITE)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "cutile_workbench.run.scaleout.select_plugin",
            "--workbench-only-ids",
            "missing.txt",
            "test_p.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert proc.returncode == 4 and "cannot read missing.txt" in proc.stderr


# --------------------------------------------------------------------------- GPU slots


def test_parse_gpus():
    assert parse_gpus("all") is None
    assert parse_gpus("0,1") == ["0", "1"]
    assert parse_gpus(" 0, 0 ") == ["0", "0"]
    assert parse_gpus("GPU-3f6c1a2b-0000-1111-2222-333344445555") == [
        "GPU-3f6c1a2b-0000-1111-2222-333344445555"
    ]
    for bad in ("", "0,,1", "gpu0", "0;1", "-1"):
        with pytest.raises(InputError, match="--gpus"):
            parse_gpus(bad)


def test_repeated_gpu_marks_its_slots_shared_and_pinning_is_one_entry():
    devices = resolve_devices(["0", "0", "1"], probe=False)
    assert [d.shared for d in devices] == [True, True, False]
    assert pinned_env("1") == {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert pinned_env(None) == {} and Device(None).label == "cpu"


def test_visible_gpus_follows_cuda_visible_devices_like_cuda_does():
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2,3"}) == ["2", "3"]
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == []
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "1,-1,2"}) == ["1"]  # CUDA stops at the first invalid entry


def test_identify_without_nvidia_smi_is_unknown():
    from cutile_workbench.run.scaleout.devices import GpuInfo

    table = [GpuInfo(0, "GPU-aaa", "NVIDIA H200"), GpuInfo(1, "GPU-bbb", "NVIDIA H200")]
    assert identify("1", table) == ("NVIDIA H200", "GPU-bbb", "nvidia-smi")
    assert identify("GPU-aaa", table)[:2] == ("NVIDIA H200", "GPU-aaa")
    assert identify("7", table)[0] == "unknown"
    assert identify(None, table)[:2] == ("unknown", "unknown")


# --------------------------------------------------------------------------- provenance


def test_mixed_gpu_models_are_flagged_per_row():
    # SYNTHETIC session: the candidate was sharded over an H100 and an H200 node, the baseline came
    # from a single run on an H200 (runner "gpu" = nvidia-smi "name, driver").
    cand = {
        f"{F}[cutile_rs-{s}]": {"shard": i, "host": f"n{i}", "gpu_name": g, "gpu_uuid": f"GPU-{i}"}
        for i, (s, g) in enumerate(
            zip(SHAPES[:3], ["NVIDIA H100 80GB HBM3", "NVIDIA H200", "unknown"], strict=True)
        )
    }
    session = {
        "runs": {
            "candidate": {"measured_on": cand, "outcomes": dict.fromkeys(cand, "passed")},
            "baseline_cutile": {
                "gpu": "NVIDIA H200, 580.159.04",
                "outcomes": dict.fromkeys((f"{F}[cutile-{s}]" for s in SHAPES[:3]), "passed"),
            },
        }
    }
    report = mixed_gpu_rows(session)
    assert [r.params for r in report.rows] == [SHAPES[0]]
    assert (
        report.rows[0].candidate_gpu == "NVIDIA H100 80GB HBM3"
        and report.rows[0].baseline_gpu == "NVIDIA H200"
    )
    assert report.unknown == 1
    assert report.models == ("NVIDIA H100 80GB HBM3", "NVIDIA H200")


def test_slurm_options_map_to_sbatch_flags(tmp_path):
    from cutile_workbench.run.scaleout.slurm import SlurmOptions, sbatch_argv

    opts = SlurmOptions(
        nodes=3,
        gpus_per_node=8,
        partition="h200",
        time="2:00:00",
        account="perf",
        sbatch_args=("--qos=short --exclusive",),
    )
    argv = sbatch_argv(
        opts, PlanPaths(tmp_path, "rms_norm"), 3, tmp_path / "job.sh", tmp_path / "t.json", "rms_norm"
    )
    assert argv[:3] == ["sbatch", "--parsable", "--array=0-2"]
    for flag in (
        "--gpus-per-node=8",
        "--partition=h200",
        "--time=2:00:00",
        "--account=perf",
        "--qos=short",
        "--exclusive",
        "--nodes=1",
        "--ntasks=1",
        f"--output={tmp_path}/slurm/%A_%a.out",
    ):
        assert flag in argv
    assert argv[-2:] == [str(tmp_path / "job.sh"), str(tmp_path / "t.json")] and opts.shards == 24
