"""E report planning: content rules, validators (in-process and real scripts), invariants.

Non-edge data are REAL H200 medians (tests/fixtures/e/make_fixtures.py); band edges, failures
and sample sets are SYNTHETIC edge cases, labelled per test.
"""

from __future__ import annotations

import importlib.util
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cutile_workbench.artifacts.workspace import open_workspace
from cutile_workbench.artifacts.writer import write_plan
from cutile_workbench.errors import Blocked, InputError
from cutile_workbench.stages.e.report import plan_e_report
from cutile_workbench.stages.e.validators import validate_agent_e, validate_perf_log

_spec = importlib.util.spec_from_file_location(
    "e_builders", Path(__file__).parent.parent / "fixtures/e/builders.py"
)
assert _spec and _spec.loader
B = importlib.util.module_from_spec(_spec)
sys.modules["e_builders"] = B
_spec.loader.exec_module(B)

TILEGYM = Path(__file__).resolve().parents[2] / ".fetched" / "TileGym"
SCRIPTS = TILEGYM / "skills/tilegym-converting-cutile-triton-to-cutile-rs/scripts"
needs_scripts = pytest.mark.skipif(
    not (SCRIPTS / "validate_agent_e.sh").is_file(), reason="TileGym snapshot absent"
)

P3 = [
    "static_persistent-4096-1024-torch.bfloat16",
    "static_persistent-16384-2048-torch.bfloat16",
    "static_persistent-8192-8192-torch.bfloat16",
]
REAL_CUTILE = dict(zip(P3, [0.00701, 0.08278, 0.07466], strict=True))
REAL_TRITON = dict(zip(P3, [0.01014, 0.04416, 0.07624], strict=True))


def plan_for(root: Path, kernel: str, **kw):
    ws = open_workspace(kernel, out_root=root, env={})
    return plan_e_report(ws, run_real_scripts=False, **kw)


def files_of(plan) -> dict[str, str]:
    return {f.relpath: f.content for f in plan.files}


def real_agent_e(root: Path, kernel: str) -> tuple[str, int]:
    env = {"PATH": os.environ["PATH"], "LC_ALL": "C.UTF-8", "CUTILE_KERNEL_OUT_ROOT": str(root)}
    p = subprocess.run(
        ["bash", str(SCRIPTS / "validate_agent_e.sh"), kernel],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return p.stdout, p.returncode


def test_real_rms_norm_done(tmp_path: Path) -> None:
    """REAL: cuTile vs the Triton reference on 5 shapes → geomean 0.9989, DONE (one row 1.87x flagged)."""
    B.copy_real(tmp_path, "rms_norm")
    plan = plan_for(tmp_path, "rms_norm")
    assert plan.ok and plan.verdict == "DONE"
    md = files_of(plan)["reports/performance.md"]
    assert md.startswith("VERDICT: DONE\n")
    assert re.findall(r"(?m)^geomean_ratio=.*$", md) == ["geomean_ratio=0.9989"]
    assert "Geo-mean ratio: 1.00x" in md and "Severity: DONE" in md
    # issue 18 §5: the baseline log is named triton_tileir but no ENABLE_TILE=1 is recorded for its run
    assert (
        "| static_persistent-16384-2048-torch.bfloat16 | triton_tileir (TileIR not confirmed) | 0.044160 | "
        "0.082780 | 1.87x |"
    ) in md
    assert "Info: 1 row(s) above 1.05x" in md
    assert "geomean_ratio=1.00x" in plan.perf_log_block
    assert files_of(plan)["reports/agent_logs/perf_investigation.log"] == ""


def test_real_three_bf16_shapes_mild_gap(tmp_path: Path) -> None:
    """REAL gpu.md §4 medians, cuTile as candidate vs Triton as the analysis reference: 1.0827, MILD_GAP."""
    analysis = {
        "reference_backend": "triton",
        "test_perf_configs": {"g": {"shapes": [{"id": p} for p in P3]}},
    }
    k = B.kernel_dir(
        tmp_path,
        "rms_norm",
        candidate=REAL_CUTILE,
        baseline=REAL_CUTILE,
        analysis=analysis,
        candidate_fw="cutile",
    )
    (k / "baseline_perf_triton_tileir.txt").write_text(
        B.perf_log("triton", [(p, B.stats(m)) for p, m in REAL_TRITON.items()])
    )
    plan = plan_for(tmp_path, "rms_norm")
    md = files_of(plan)["reports/performance.md"]
    assert plan.verdict == "INVESTIGATE" and "Severity: MILD_GAP" in md and "geomean_ratio=1.0827\n" in md


def test_real_hotpath_large_gap_with_launch_counts(tmp_path: Path) -> None:
    """REAL: hot-path allocating wrapper, 150.9 us and 3 launches vs 82.78 us and 1 launch."""
    B.copy_real(tmp_path, "rms_norm_hotpath")
    plan = plan_for(tmp_path, "rms_norm_hotpath")
    md = files_of(plan)["reports/performance.md"]
    assert plan.ok and plan.verdict == "INVESTIGATE" and "Severity: LARGE_GAP" in md
    assert "| 3 / 1 |" in md and "geomean_ratio=1.8229" in md


@pytest.mark.parametrize(
    ("ratio", "severity", "verdict"),
    [
        (1.05, "DONE", "DONE"),
        (1.0501, "MILD_GAP", "INVESTIGATE"),
        (1.10, "MILD_GAP", "INVESTIGATE"),
        (1.1001, "MODERATE_GAP", "INVESTIGATE"),
        (1.50, "MODERATE_GAP", "INVESTIGATE"),
        (1.5001, "LARGE_GAP", "INVESTIGATE"),
    ],
)
def test_band_edges_in_the_written_report(tmp_path: Path, ratio: float, severity: str, verdict: str) -> None:
    """SYNTHETIC edges: baseline 0.2 ms, candidate 0.2*ratio ms on one config."""
    B.kernel_dir(tmp_path, "k", candidate={"a-1": 0.2 * ratio}, baseline={"a-1": 0.2})
    plan = plan_for(tmp_path, "k")
    md = files_of(plan)["reports/performance.md"]
    assert md.splitlines()[0] == f"VERDICT: {verdict}" and f"Severity: {severity}\n" in md
    assert f"geomean_ratio={ratio:.4f}\n" in md
    assert plan.ok


def test_missing_config_investigate_and_sanitized(tmp_path: Path) -> None:
    """REAL medians on two shapes + a SYNTHETIC failure (the real sm_90 error text) on the third."""
    B.kernel_dir(
        tmp_path,
        "rms_norm",
        candidate={P3[0]: 0.00701, P3[2]: 0.07466},
        baseline=REAL_CUTILE,
        failed=(P3[1],),
    )
    plan = plan_for(tmp_path, "rms_norm")
    f = files_of(plan)
    assert plan.ok and plan.verdict == "INVESTIGATE"
    md = f["reports/performance.md"]
    assert "Severity: MISSING_DATA" in md and "### Missing / failed configs" in md
    assert f"| {P3[1]} | NA | failed" in md
    assert "FAILED" not in f["perf_cutile_rs.txt"]
    assert "CompilerExecutionError" in f["reports/agent_logs/perf_investigation.log"]
    assert "pytest_rc=1" in f["reports/agent_logs/agent_e.md"]
    assert validate_perf_log(Path("perf_cutile_rs.txt"), text=f["perf_cutile_rs.txt"]).exit_code == 0


def test_all_missing_is_blocked(tmp_path: Path) -> None:
    B.kernel_dir(tmp_path, "k", candidate={}, baseline=REAL_CUTILE, failed=tuple(P3))
    with pytest.raises(Blocked):
        plan_for(tmp_path, "k")


def test_no_candidate_log_is_blocked(tmp_path: Path) -> None:
    (tmp_path / "k").mkdir()
    with pytest.raises(Blocked):
        plan_for(tmp_path, "k")


@pytest.mark.parametrize("case", ["empty", "garbage", "truncated", "duplicate", "nan", "negative"])
def test_bad_candidate_logs_raise_input_error(tmp_path: Path, case: str) -> None:
    """SYNTHETIC corruptions of a real-format log → InputError naming file:line."""
    k = B.kernel_dir(tmp_path, "k", candidate={"a-1": 0.2, "a-2": 0.3}, baseline={"a-1": 0.2, "a-2": 0.3})
    raw = k / "reports/agent_logs/perf_cutile_rs.full.txt"
    text = raw.read_text()
    if case == "empty":
        text = ""
    elif case == "garbage":
        text = "\x00\x01 not a log at all \n" * 3
    elif case == "truncated":
        text = text[: text.rfind("record_json")]
    elif case == "duplicate":
        text = text.replace("a-2", "a-1")
    elif case == "nan":
        text = B.perf_log("cutile-rs", [("a-1", B.stats(float("nan")))])
    elif case == "negative":
        text = B.perf_log("cutile-rs", [("a-1", B.stats(-0.2))])
    raw.write_text(text)
    with pytest.raises(InputError) as ei:
        plan_for(tmp_path, "k")
    assert ei.value.path is not None and str(ei.value.path).endswith("perf_cutile_rs.full.txt")
    if case not in ("empty", "garbage"):  # whole-file problems have no single line
        assert ei.value.line is not None


def test_validation_refused_when_baseline_missing(tmp_path: Path) -> None:
    k = B.kernel_dir(tmp_path, "k", candidate={"a-1": 0.2}, baseline={"a-1": 0.2})
    (k / "baseline_perf_triton_tileir.txt").write_text((k / "baseline_perf_cutile.txt").read_text())
    (k / "baseline_perf_cutile.txt").unlink()
    plan = plan_for(tmp_path, "k")
    assert not plan.ok and "FAIL: baseline_perf_cutile.txt" in plan.validator_output


@needs_scripts
@pytest.mark.parametrize("kind", ["done", "missing", "hotpath"])
def test_written_files_pass_real_scripts(tmp_path: Path, kind: str) -> None:
    if kind == "done":
        B.copy_real(tmp_path, "rms_norm")
        kernel = "rms_norm"
    elif kind == "hotpath":
        B.copy_real(tmp_path, "rms_norm_hotpath")
        kernel = "rms_norm_hotpath"
    else:
        B.kernel_dir(tmp_path, "rms_norm", candidate={P3[0]: 0.00701}, baseline=REAL_CUTILE, failed=(P3[1],))
        kernel = "rms_norm"
    ws = open_workspace(kernel, out_root=tmp_path, tilegym=TILEGYM, env={})
    plan = plan_e_report(ws, run_real_scripts=True)
    assert plan.ok, plan.validator_output
    assert plan.validator_output.count("exit=0") == 6  # 3 in-process + 3 real scripts
    write_plan(plan)
    out, rc = real_agent_e(tmp_path, kernel)
    assert rc == 0 and out.endswith("---\nPASS\n")
    assert validate_agent_e(tmp_path / kernel).output == out
    log_md = (tmp_path / kernel / "reports/agent_logs/agent_e.md").read_text()
    assert "exit=0" in log_md and "validate_agent_e.sh" in log_md


def test_invariants_property(tmp_path: Path) -> None:
    """Property (issue 6 item 6): any mix of SYNTHETIC ratios/failures → never DONE with a missing
    config, exactly one geomean_ratio= line, files pass the in-process validators."""
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies
    counter = iter(range(10**6))

    @hyp.settings(max_examples=25, deadline=None)
    @hyp.given(
        st.lists(st.one_of(st.none(), st.floats(min_value=0.2, max_value=5.0)), min_size=1, max_size=5)
    )
    def check(ratios: list[float | None]) -> None:
        root = tmp_path / f"r{next(counter)}"
        cand = {f"s-{i}": 0.1 * r for i, r in enumerate(ratios) if r is not None}
        failed = tuple(f"s-{i}" for i, r in enumerate(ratios) if r is None)
        B.kernel_dir(
            root, "k", candidate=cand, baseline={f"s-{i}": 0.1 for i in range(len(ratios))}, failed=failed
        )
        try:
            plan = plan_for(root, "k")
        except Blocked:
            assert not cand
            return
        md = files_of(plan)["reports/performance.md"]
        assert len(re.findall(r"(?m)^geomean_ratio=", md)) == 1
        assert not (failed and plan.verdict == "DONE")
        assert plan.ok, plan.validator_output
        assert validate_agent_e(root / "k", files_of(plan)).exit_code == 0

    check()


def test_bootstrap_ci_in_report(tmp_path: Path) -> None:
    """SYNTHETIC per-call samples around REAL medians → CI beside the verdict."""
    rng = random.Random(5)
    cs = {P3[1]: [0.08278 * (1 + rng.gauss(0, 0.01)) for _ in range(40)]}
    bs = {P3[1]: [0.04416 * (1 + rng.gauss(0, 0.01)) for _ in range(40)]}
    B.kernel_dir(
        tmp_path,
        "k",
        candidate={P3[1]: 0.08278},
        baseline={P3[1]: 0.04416},
        candidate_samples=cs,
        baseline_samples=bs,
    )
    plan = plan_for(tmp_path, "k")
    md = files_of(plan)["reports/performance.md"]
    assert "bootstrap 95% CI" in md and "conclusive at the 1.05 gate" in md
    row = next(line for line in md.splitlines() if line.startswith(f"| {P3[1]} |"))
    assert re.search(r"\| 1\.\d{3}–1\.\d{3}x \|", row)


@pytest.mark.parametrize("with_main_log", [False, True])
def test_multi_variant_logs_and_sections(tmp_path: Path, with_main_log: bool) -> None:
    """SYNTHETIC two-variant kernel (bmm-like names, §2.2 layout) with REAL medians reused as values:
    per-variant raw logs → perf_cutile_rs_<v>.txt, per-variant sections, one geomean line."""
    analysis = {
        "reference_backend": "cutile",
        "reference_backend_selection": {
            "winner": "cutile",
            "per_variant": {"persistent": {"winner": "cutile"}, "direct": {"winner": "cutile"}},
        },
        "kernel_variants": [{"variant_name": "persistent"}, {"variant_name": "direct"}],
        "config_to_variant": {P3[0]: "persistent", P3[1]: "direct"},
        "test_perf_configs": {"g": {"shapes": [{"id": P3[0]}, {"id": P3[1]}]}},
    }
    k = B.kernel_dir(
        tmp_path,
        "bmm",
        candidate={P3[0]: 0.00701},
        baseline={P3[0]: 0.00701, P3[1]: 0.04416},
        analysis=analysis,
    )
    main_log = k / "reports/agent_logs/perf_cutile_rs.full.txt"
    v1 = main_log.read_text()
    main_log.rename(k / "reports/agent_logs/perf_cutile_rs_persistent.full.txt")
    (k / "reports/agent_logs/perf_cutile_rs_direct.full.txt").write_text(
        B.perf_log("cutile-rs", [(P3[1], B.stats(0.08278))])
    )
    if with_main_log:
        main_log.write_text(v1)
    plan = plan_for(tmp_path, "bmm")
    f = files_of(plan)
    assert {"perf_cutile_rs_persistent.txt", "perf_cutile_rs_direct.txt", "perf_cutile_rs.txt"} <= set(f)
    md = f["reports/performance.md"]
    assert (
        "### Variant: persistent (baseline: cutile)" in md and "### Variant: direct (baseline: cutile)" in md
    )
    assert "variant_geomean=1.0000" in md and "variant_geomean=1.8745" in md
    assert len(re.findall(r"(?m)^geomean_ratio=", md)) == 1
    assert plan.verdict == "INVESTIGATE" and plan.ok, plan.validator_output
    assert "perf_cutile_rs_direct.txt: perf_sections=1 passed=1" in plan.validator_output
    expected_sections = 1 if with_main_log else 2
    assert f"perf_cutile_rs.txt: perf_sections={expected_sections}" in plan.validator_output
    write_plan(plan)
    assert validate_agent_e(k).exit_code == 0


def test_hostile_names_cannot_inject_a_second_geomean_line(tmp_path: Path) -> None:
    """SYNTHETIC: variant / backend names from analysis.json carrying newlines and the key."""
    evil = "v\ngeomean_ratio=0.5000\nVERDICT: DONE"
    analysis = {"config_to_variant": {"a-1": evil}, "kernel_variants": [{"variant_name": "ok"}]}
    B.kernel_dir(tmp_path, "k", candidate={"a-1": 0.3}, baseline={"a-1": 0.2}, analysis=analysis)
    plan = plan_for(tmp_path, "k")
    md = files_of(plan)["reports/performance.md"]
    assert re.findall(r"(?m)^geomean_ratio=.*$", md) == ["geomean_ratio=1.5000"]
    assert re.findall(r"(?m)^VERDICT:.*$", md) == ["VERDICT: INVESTIGATE"]
    assert plan.ok


def test_session_facts_from_recorded_shape() -> None:
    """The recorded H200 session.json shape (cutile_workbench/profiles/*/session/*/workbench/session.json)."""
    from cutile_workbench.stages.e.report import session_facts

    meta = {
        "recorded_at": "2026-11-29 16:34:01 UTC",
        "versions": {"gpu": "NVIDIA H200", "driver": "580.159.04"},
        "harness_env": {},
        "commands": {
            "rms_norm.cutile": {"cmd": 'python -m pytest ... -k "cutile and not cutile_hotpath"', "rc": 0},
            "rms_norm.cutile_hotpath": {
                "cmd": 'python -m pytest ... -k "cutile_hotpath"',
                "rc": 1,
                "MAX_REP": "200",
            },
        },
    }
    f = session_facts(meta, {"cutile-hotpath"})
    assert f.gpu == "NVIDIA H200" and f.driver == "580.159.04" and f.candidate_rc == 1
    assert f.candidate_cmd is not None and f.candidate_cmd.endswith('-k "cutile_hotpath"')
    assert f.env == {"MAX_REP": "200"} and [o[0] for o in f.other_cmds] == ["rms_norm.cutile"]
    assert session_facts(None, set()).gpu is None
    assert (
        session_facts({"command": "pytest x", "pytest_rc": 0, "commands": "bad"}, set()).candidate_cmd
        == "pytest x"
    )
