"""``run --compile-cache DIR`` (issue 26): every toolchain's disk cache pointed into DIR, shared by
runs and scale-out shards, and the cold/warm split recorded per run in session.json.

SYNTHETIC: the fault-free runner fixture suite plus a conftest hook standing in for a JIT toolchain
(it writes one "cubin" into ``$CUDA_TILE_CACHE_DIR`` unless it is already there); the real cuTile
measurement is the GPU step ``bench/gpu_session.sh coldstart``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_runner import make_suite, spec_for

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.run import compile_cache
from cutile_workbench.run.results import write_results
from cutile_workbench.run.runner import run
from cutile_workbench.run.spec import child_env

STAND_IN_JIT = """

def pytest_sessionfinish(session):  # SYNTHETIC stand-in for a JIT toolchain's disk cache
    import os, pathlib
    d = os.environ.get("CUDA_TILE_CACHE_DIR")
    if d:
        cubin = pathlib.Path(d) / "rms_norm.cubin"
        if not cubin.exists():
            cubin.parent.mkdir(parents=True, exist_ok=True)
            cubin.write_bytes(b"\\0" * 64)
"""


def test_cache_env_points_every_toolchain_and_keeps_explicit_ones(tmp_path: Path) -> None:
    env = compile_cache.cache_env(tmp_path / "cc", {"TRITON_CACHE_DIR": "/mine"})
    assert env == {
        "CUDA_TILE_CACHE_DIR": str((tmp_path / "cc" / "cuda_tile").resolve()),
        "TILECPP_CACHE_DIR": str((tmp_path / "cc" / "tilecpp").resolve()),
    }


def test_child_env_carries_the_cache_and_user_env_wins(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    env = child_env(spec_for(suite, compile_cache=str(tmp_path / "cc"), env={"TRITON_CACHE_DIR": "/mine"}))
    assert env["CUDA_TILE_CACHE_DIR"].endswith("cc/cuda_tile") and env["TRITON_CACHE_DIR"] == "/mine"
    assert (
        "CUDA_TILE_CACHE_DIR" not in child_env(spec_for(suite))
        or child_env(spec_for(suite))["CUDA_TILE_CACHE_DIR"] != env["CUDA_TILE_CACHE_DIR"]
    )


@pytest.mark.parametrize("split", [("unused",), ("cold", "warm")])
def test_cold_then_warm_recorded_in_session_json(tmp_path: Path, split: tuple[str, ...]) -> None:
    suite = make_suite(tmp_path)
    if split != ("unused",):
        with open(suite / "conftest.py", "a") as fh:
            fh.write(STAND_IN_JIT)
    cache = tmp_path / "shared-cache"
    out = KernelPaths.under(tmp_path / "out", "rms_norm")
    states = []
    for _ in split:
        spec = spec_for(suite, "", compile_cache=str(cache), k_expr="cutile and 4096")
        result = run(spec, out)
        assert result.rc == 0, result.failed
        write_results(result, spec, out)
        rec = json.loads(out.session_json.read_text())["runs"]["candidate"]["compile_cache"]
        states.append(rec["state"])
        assert rec["dir"] == str(cache.resolve())
    assert tuple(states) == split
    if split == ("cold", "warm"):
        assert rec["added_files"]["cuda_tile"] == 0 and rec["before"]["cuda_tile"]["files"] == 1


def test_without_the_option_the_split_says_not_recorded(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    out = KernelPaths.under(tmp_path / "out", "rms_norm")
    spec = spec_for(suite, "", k_expr="cutile and 4096")
    result = run(spec, out)
    write_results(result, spec, out)
    rec = json.loads(out.session_json.read_text())["runs"]["candidate"]["compile_cache"]
    assert rec["dir"] is None and rec["state"] == "not recorded"


def test_the_flag_reaches_every_backend_and_every_shard(tmp_path: Path) -> None:
    """``run --compile-cache DIR`` → each backend's RunSpec → the scale-out plan the shards read."""
    from cutile_workbench.cli import build_parser
    from cutile_workbench.cli.run import run_request
    from cutile_workbench.run.scaleout.plan import spec_from_json, spec_to_json
    from cutile_workbench.services.runs import plan_runs

    args = build_parser(("cutile_workbench.cli.run",)).parse_args(
        ["run", "rms_norm", "--out-root", str(tmp_path), "--compile-cache", str(tmp_path / "cc")]
    )
    request = run_request(args)
    assert request.compile_cache == tmp_path / "cc"
    plan = plan_runs(request)
    assert len(plan.runs) >= 2
    for backend_run in plan.runs:
        assert backend_run.spec.compile_cache == str((tmp_path / "cc").resolve())
        back = spec_from_json(json.loads(json.dumps(spec_to_json(backend_run.spec))), "plan.json")
        assert back.compile_cache == backend_run.spec.compile_cache


def test_a_merged_scale_out_run_records_its_shards_split() -> None:
    from cutile_workbench.run.scaleout.merge import _merged_compile_cache

    cold = {"dir": "/shared/cc", "state": "cold"}
    warm = {"dir": "/shared/cc", "state": "warm"}
    assert _merged_compile_cache([{"compile_cache": warm}, {"compile_cache": warm}])["state"] == "warm"
    both = _merged_compile_cache([{"compile_cache": cold}, {"compile_cache": warm}])
    assert (
        both["state"] == "mixed" and both["shard_states"] == ["cold", "warm"] and both["dir"] == "/shared/cc"
    )
    assert (
        _merged_compile_cache([{"compile_cache": {"dir": None, "state": "not recorded"}}])["state"]
        == "not recorded"
    )
