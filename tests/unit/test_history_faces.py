"""The run history's faces: ``services.history``, the ``history`` command, comparability in ``table``.

REAL data: the recorded H200 sessions (``cutile_workbench/profiles/tilegym/session``: matmul and silu_and_mul, real
cutile-rs vs cuTile; ``cutile_workbench/profiles/*/session``: the stand-in profiles), imported as shipped, and
TileGym's own rms_norm ``test_perf`` run with TileGym's harness then ours
(``tests/fixtures/tilegym_h200``). SYNTHETIC (labelled in each test): follow-up runs derived from
the real matmul samples (``history_helpers``), provenance events with hand-written NVML facts, and
edits of a copied session.json (another driver, scale-out ``measured_on`` rows).
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from history_helpers import (
    NP_4096,
    RECORDED_TILEGYM,
    ROOT,
    SP_2048,
    copy_matmul,
    matmul_with_followups,
    provenance,
    utc,
)

from cutile_workbench.cli import main
from cutile_workbench.errors import InputError
from cutile_workbench.history.compat import compare_provenance
from cutile_workbench.history.store import HISTORY_FILE
from cutile_workbench.services import stage_e
from cutile_workbench.services.history import _short_flag, kernel_history, ratio_comparability

H200 = ROOT / "tests" / "fixtures" / "tilegym_h200"
RECORDED_KERNELS = sorted(
    {p.parent.parent.name for p in ROOT.glob("cutile_workbench/profiles/*/session/*/workbench/session.json")}
)


def files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in __import__("os").environ.items()
        if k not in ("CUTILE_KERNEL_OUT_ROOT", "TILEGYM_PATH")
    }
    return subprocess.run(
        [sys.executable, "-m", "cutile_workbench", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=env,
    )


@pytest.fixture(autouse=True)
def _no_env_out_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUTILE_KERNEL_OUT_ROOT", raising=False)
    monkeypatch.delenv("TILEGYM_PATH", raising=False)


# --------------------------------------------------------------------------- the history command


def test_history_of_the_embedded_default_is_the_recorded_cutile_rs_session(
    capsys: pytest.CaptureFixture[str],
):
    """REAL: `cutile-workbench history matmul` with no out root imports the shipped session in memory."""
    before = files(RECORDED_TILEGYM)
    assert main(["history", "matmul"]) == 0
    out = capsys.readouterr().out
    assert files(RECORDED_TILEGYM) == before  # nothing written into the package
    assert out.startswith("matmul — run history: 2 runs, 6 configs · recorded session ")
    assert "imported in memory (nothing written)" in out
    # both runs with their GPU, driver and harness, at the time their pytest session started
    assert "56cb411a  2026-12-01 09:20  candidate        NVIDIA H200  580.159.04  workbench" in out
    assert "8277b280  2026-12-01 09:21  baseline_cutile  NVIDIA H200  580.159.04  workbench" in out
    # per config, the candidate first; the recorded medians and how many raw samples each kept
    block = out[out.index(SP_2048) :]
    assert block.index("cutile-rs") < block.index("cutile ")
    assert "0.049089   371  (first run)" in block and "0.024064   921  (first run)" in block
    assert "never on a bare percentage" in out


@pytest.mark.parametrize("kernel", RECORDED_KERNELS)
def test_every_recorded_session_becomes_history_with_its_gpu(kernel: str):
    """REAL: every session shipped under cutile_workbench/profiles/*/session imports with its GPU and run times."""
    ws = stage_e.open_kernel(kernel, out_root=None, tilegym=None, env={})
    history = kernel_history(ws)
    assert not history.persisted and history.store == ":memory:" and history.runs and history.series
    assert all(r.gpu == "NVIDIA H200" and r.driver == "580.159.04" for r in history.runs)
    assert all(r.when_text.startswith("2026-") for r in history.runs)
    assert all(
        p.n_samples > 1 for s in history.series for p in s.points
    )  # the workbench harness keeps samples
    assert {s.params for s in history.series} >= {r.params for r in stage_e.ratio_table(ws).rows}


def test_unknown_config_or_backend_exits_2_naming_what_there_is():
    bad = run_cli("history", "matmul", "--config", "4096-4096")
    assert bad.returncode == 2 and bad.stdout == ""
    assert "key '--config': unknown config '4096-4096'; close matches: " in bad.stderr
    assert "True-True-False-False-4096-4096-4096-0-0-torch.float16" in bad.stderr
    assert "cutile_workbench/profiles/tilegym/session/matmul" in bad.stderr  # not ":memory:"
    bad = run_cli("history", "matmul", "-b", "triton")
    assert (
        bad.returncode == 2
        and "no runs of backend 'triton' in the history (backends: cutile, cutile-rs)" in bad.stderr
    )
    assert run_cli("history", "nosuchkernel").returncode == 2


def test_one_config_and_one_backend(capsys: pytest.CaptureFixture[str]):
    """REAL: --config by params and by node id, --backend by token (cutile_rs ≙ cutile-rs)."""
    assert main(["history", "matmul", "--config", SP_2048, "--backend", "cutile_rs"]) == 0
    out = capsys.readouterr().out
    assert "1 config" in out and "cutile-rs" in out and "  cutile " not in out
    nodeid = f"tests/ops/test_matmul.py::Test_Matmul::test_perf[cutile-{SP_2048}]"
    assert main(["history", "matmul", "--config", nodeid, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [s["backend"] for s in doc["series"]] == ["cutile"] and doc["persisted"] is False


def _record(out_root: Path, kernel: str) -> None:
    """What a recording command does: the kernel dir's logs imported into its own store."""
    from cutile_workbench.artifacts.layout import KernelPaths
    from cutile_workbench.history.query import open_history

    store, _ = open_history(KernelPaths.under(out_root, kernel), source="out_root", persist=True)
    store.close()


def test_out_root_history_writes_nothing_and_reads_a_recorded_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """REAL: `history` on an out root is read-only (issue 33 §2, issue 30 item 4): the logs are imported
    in memory, no store is created; a store a recording command wrote is read, never changed."""
    copy_matmul(tmp_path)
    store = tmp_path / "matmul" / "workbench" / HISTORY_FILE
    assert main(["history", "matmul", "--out-root", str(tmp_path), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["persisted"] is False and first["imported_now"] == 2 and not store.exists()
    _record(tmp_path, "matmul")
    before = store.read_bytes()
    assert main(["history", "matmul", "--out-root", str(tmp_path), "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["imported_now"] == 0 and len(second["runs"]) == 2 and second["persisted"] is False
    assert store.read_bytes() == before


def test_flags_between_runs_with_p_ci_and_condition_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """SYNTHETIC follow-ups of the REAL matmul run (history_helpers): a 0.80x fix, then 1.12x back after a
    driver update on a power-capped GPU; the other configs resampled unchanged."""
    matmul_with_followups(tmp_path)
    assert main(["history", "matmul", "--out-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    sp = out[out.index(SP_2048) :].split("\n\n")[0]
    assert "- improvement ×0.801 99% CI [0.799, 0.802] p=" in sp
    regression = next(ln for ln in sp.splitlines() if "+ regression" in ln)
    assert "+ regression ×1.120 99% CI [1.118, 1.121] p=" in regression and regression.endswith(" ⚠")
    np = out[out.index(NP_4096) :].split("\n\n")[0]
    assert np.count("= same ×") == 2 and "regression" not in np and "improvement" not in np
    # the conditions behind the ⚠, once per pair of runs
    assert out.count("⚠ run ") == 1
    line = next(ln for ln in out.splitlines() if ln.startswith("⚠ run "))
    assert "driver: newer run 590.44.01 vs older run 580.159.04" in line
    # the power cap is no flag of its own (issue 18): the lower clock it caused is, and the runs table names the cap
    assert "throttling" not in line and "SM clock: newer run 1755 MHz" in line
    assert "sw_power_cap@end" in out[out.index("runs:") :]
    assert "1980/3201 → 1755/3201 MHz    sw_power_cap@end" in out  # the runs table
    # the machine forms carry the same decisions
    assert main(["history", "matmul", "--out-root", str(tmp_path), "--config", SP_2048, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    cand = next(s for s in doc["series"] if s["backend"] == "cutile-rs")
    assert [c["change"] for c in cand["changes"]] == ["improvement", "regression"]
    assert cand["changes"][1]["conditions"]["comparable"] is False and cand["changes"][1]["p_value"] < 1e-9
    assert main(["history", "matmul", "--out-root", str(tmp_path), "--csv", "-b", "cutile-rs"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 6 * 3 and {r["change"] for r in rows} == {"", "same", "improvement", "regression"}


def test_median_only_runs_are_inconclusive_and_the_harness_change_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """REAL: TileGym's harness (medians only), then ours on the same configs: never decided on the ratio."""
    kdir = tmp_path / "rms_norm"
    kdir.mkdir()
    for name in ("baseline_perf_cutile.txt", "baseline_perf_triton_tileir.txt"):
        shutil.copy(H200 / "plain" / name, kdir / name)
    _record(tmp_path, "rms_norm")  # the first logs recorded (as `run` does); `history` itself writes nothing
    for name in ("baseline_perf_cutile.txt", "baseline_perf_triton_tileir.txt"):
        shutil.copy(H200 / "harness" / name, kdir / name)
    assert main(["history", "rms_norm", "--out-root", str(tmp_path), "-b", "cutile"]) == 0
    out = capsys.readouterr().out
    assert (
        out.count("~ inconclusive ×") == 5
        and out.count("(no raw samples in the older run (median only)) ⚠") == 5
    )
    tables = out.split("\nvs previous run:")[0]  # the legend names every flag
    assert "+ regression" not in tables and "- improvement" not in tables and "= same" not in tables
    assert "harness: newer run workbench vs older run tilegym" in out


def test_service_refuses_a_config_missing_for_the_backend():
    ws = stage_e.open_kernel("rms_norm", out_root=None, tilegym=None, env={})
    config = "4096-1024-torch.bfloat16"
    assert kernel_history(ws, config=config, backends=["triton_tileir"]).series  # ≙ the triton records
    with pytest.raises(InputError) as err:
        kernel_history(ws, config="4096-1024-torch.bfloat16", backends=["cutile-rs"])
    assert err.value.key == "--backend"


# --------------------------------------------------------------------------- comparability in `table`


def _provenance_events(kdir: Path, **by_role: object) -> None:
    """SYNTHETIC: role-tagged provenance events (what the runner's plugin emits) appended to events.jsonl."""
    ev = kdir / "workbench" / "events.jsonl"
    with open(ev, "a", encoding="utf-8") as fh:
        for role, prov in by_role.items():
            for phase in ("start", "finish"):
                fh.write(
                    json.dumps(
                        {
                            "event": "provenance",
                            "ts": 1.0,
                            "phase": phase,
                            "role": role,
                            "provenance": prov.to_dict(),
                        }
                    )
                    + "\n"
                )  # type: ignore[attr-defined]


def test_table_says_comparability_is_unknown_for_the_recorded_session(capsys: pytest.CaptureFixture[str]):
    """REAL: the shipped session recorded GPU and driver, not MIG mode nor throttling."""
    assert main(["table", "matmul"]) == 0
    out = capsys.readouterr().out
    assert "conditions: ? comparability unknown: MIG mode, throttling not recorded\n" in out
    assert "same GPU model (NVIDIA H200), driver (580.159.04)" in out and "DISABLE_FALLBACK" not in out
    assert main(["table", "matmul", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["conditions"]["state"] == "unknown"
    assert main(["table", "matmul", "--csv"]) == 0
    assert {r["conditions"] for r in csv.DictReader(io.StringIO(capsys.readouterr().out))} == {"unknown"}


def test_table_flags_a_baseline_measured_on_another_driver(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """SYNTHETIC edit of the REAL session: session.json says the cuTile baseline ran on driver 575.51.03."""
    paths = copy_matmul(tmp_path)
    meta = json.loads(paths.session_json.read_text())
    meta["runs"]["baseline_cutile"]["gpu"] = "NVIDIA H200, 575.51.03"
    paths.session_json.write_text(json.dumps(meta))
    assert main(["table", "matmul", "--out-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (
        "conditions: ⚠ baseline cutile measured on another driver (575.51.03 vs candidate 580.159.04)\n"
        in out
    )
    assert "NOT COMPARABLE: driver: candidate 580.159.04 vs baseline cutile 575.51.03" in out
    assert main(["table", "matmul", "--out-root", str(tmp_path), "--csv"]) == 0
    assert {r["conditions"] for r in csv.DictReader(io.StringIO(capsys.readouterr().out))} == {
        "not_comparable"
    }
    assert not (paths.workbench_dir / HISTORY_FILE).exists()  # `table` reads conditions, imports nothing


def test_table_says_nothing_when_comparable_and_flags_throttling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """SYNTHETIC provenance events (NVML facts written by hand) on a copy of the REAL session."""
    paths = copy_matmul(tmp_path)
    at = utc("2026-12-01 09:20")
    _provenance_events(paths.root, candidate=provenance(at), baseline_cutile=provenance(at + 60))
    assert main(["table", "matmul", "--out-root", str(tmp_path)]) == 0
    assert "conditions" not in capsys.readouterr().out
    ws = stage_e.open_kernel("matmul", out_root=tmp_path, tilegym=None)
    comp = ratio_comparability(ws, stage_e.ratio_table(ws))
    assert comp.state == "comparable" and comp.short == ""
    assert (
        "same GPU model (NVIDIA H200), driver (580.159.04), MIG mode (disabled), no throttling"
        in comp.lines[0]
    )
    # the baseline hit the power cap at the same end clocks (1980 MHz): comparable, the cap named as a note
    shutil.rmtree(tmp_path / "matmul")
    paths = copy_matmul(tmp_path)
    _provenance_events(
        paths.root, candidate=provenance(at), baseline_cutile=provenance(at + 60, throttle=("sw_power_cap",))
    )
    ws = stage_e.open_kernel("matmul", out_root=tmp_path, tilegym=None)
    comp = ratio_comparability(ws, stage_e.ratio_table(ws))
    assert comp.state == "comparable", comp.short
    assert (
        "throttling during the baseline cutile run: sw_power_cap@end (0.0% of the run)"
        in comp.baselines[0].notes
    )
    # ... and at lower clocks: flagged by the clocks, both values named
    shutil.rmtree(tmp_path / "matmul")
    paths = copy_matmul(tmp_path)
    _provenance_events(
        paths.root,
        candidate=provenance(at),
        baseline_cutile=provenance(at + 60, throttle=("sw_power_cap",), sm_end=1755),
    )
    ws = stage_e.open_kernel("matmul", out_root=tmp_path, tilegym=None)
    comp = ratio_comparability(ws, stage_e.ratio_table(ws))
    assert comp.state == "not_comparable"
    assert comp.short == "⚠ baseline cutile measured at another SM clock (1755 MHz vs candidate 1980 MHz)"


def test_scaleout_rows_measured_on_two_gpu_models_are_flagged(tmp_path: Path):
    """SYNTHETIC measured_on (what a scale-out merge writes) on a copy of the REAL session."""
    paths = copy_matmul(tmp_path)
    meta = json.loads(paths.session_json.read_text())
    nodeid = next(iter(meta["runs"]["candidate"]["outcomes"]))
    for role, gpu in (("candidate", "NVIDIA H200"), ("baseline_cutile", "NVIDIA H100 80GB HBM3")):
        base_id = nodeid.replace("[cutile_rs-", "[cutile-") if role != "candidate" else nodeid
        meta["runs"][role]["measured_on"] = {
            base_id: {"shard": 0, "host": "n1", "gpu_name": gpu, "gpu_uuid": "GPU-x", "device": 0}
        }
    paths.session_json.write_text(json.dumps(meta))
    ws = stage_e.open_kernel("matmul", out_root=tmp_path, tilegym=None)
    comp = ratio_comparability(ws, stage_e.ratio_table(ws))
    assert comp.state == "not_comparable" and comp.short.startswith(
        "⚠ 1 row(s): candidate and baseline measured"
    )
    assert "candidate on NVIDIA H200, baseline_cutile on NVIDIA H100 80GB HBM3" in comp.lines[-1]


def test_short_flags_name_each_difference_with_both_values():
    """SYNTHETIC provenances, one fact changed per case."""
    base = provenance(1.0)
    gpu = base.gpu
    assert gpu is not None
    cases = {
        "⚠ baseline cutile measured on another GPU model (NVIDIA H100 80GB HBM3 vs candidate NVIDIA H200)": replace(
            base, gpu=replace(gpu, name="NVIDIA H100 80GB HBM3")
        ),
        "⚠ baseline cutile measured on another driver (575.51.03 vs candidate 580.159.04)": replace(
            base, gpu=replace(gpu, driver_version="575.51.03")
        ),
        "⚠ baseline cutile measured with MIG enabled (candidate: disabled)": replace(
            base, gpu=replace(gpu, mig_mode="enabled")
        ),
        "⚠ baseline cutile measured at another SM clock (1500 MHz vs candidate 1980 MHz)": provenance(
            1.0, sm_end=1500
        ),
        "⚠ baseline cutile measured by another harness (tilegym vs candidate workbench)": replace(
            base, harness=replace(base.harness, name="tilegym")
        ),  # type: ignore[type-var]
        "⚠ baseline cutile measured with CUPTI=0 (candidate CUPTI=1)": replace(
            base, harness=replace(base.harness, settings={**base.harness.settings, "CUPTI": "0"})
        ),  # type: ignore[union-attr, type-var]
    }
    cand = replace(base, harness=replace(base.harness, settings={**base.harness.settings, "CUPTI": "1"}))  # type: ignore[union-attr, type-var]
    for expected, other in cases.items():
        comp = compare_provenance(cand if "CUPTI" in expected else base, other, b_label="baseline cutile")
        assert _short_flag(comp.flags[0], "baseline cutile") == expected


def test_run_facts_carry_the_toolchain_row():
    """The History screen's provenance panel and `history --json` show the run's toolchain (issue 36):
    SYNTHETIC live provenance (history_helpers) with a toolchain as the runner records it, and the
    REAL recorded matmul session, whose provenance predates the toolchain ("not recorded")."""
    from cutile_workbench.history.store import StoredRun
    from cutile_workbench.services.history import run_facts

    prov = replace(
        provenance(utc("2026-12-02 03:00")),
        toolchain={
            "tileiras": "13.4.0",
            "ptxas": "13.0.88",
            "cutile_rs": "0.2.0",
            "cutile_rs_commit": "0123456789abcdef0123",
            "cuda_tile": "1.0.0",
            "cupti": "13.0.1",
        },
    )
    when = utc("2026-12-02 03:00")
    run = StoredRun(1, "k" * 16, "matmul", "live", when, "provenance", when, prov, ("candidate",), (), 6)
    facts = dict(run_facts(run).facts)
    assert facts["toolchain"] == (
        "tileiras 13.4.0 · ptxas 13.0.88 · cutile-rs 0.2.0 @ 0123456789ab · cuda-tile 1.0.0 · cupti 13.0.1"
    )
    partial = replace(run, provenance=replace(prov, toolchain={"ptxas": "13.0.88"}))
    assert dict(run_facts(partial).facts)["toolchain"] == "ptxas 13.0.88"
    bare = replace(run, provenance=replace(prov, toolchain={}))
    assert dict(run_facts(bare).facts)["toolchain"] == "not recorded"
    real = kernel_history(stage_e.open_kernel("matmul", out_root=None, tilegym=None, env={}))
    assert all(dict(r.facts)["toolchain"] == "not recorded" for r in real.runs)
