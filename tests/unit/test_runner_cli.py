"""CLI tests for ``run`` and ``timeline`` (no GPU): real child runs of the fixture suite, and a
launches file built from real H200 facts (docs/gpu.md §4) where no recorded session exists yet."""

from __future__ import annotations

import argparse
import io
import json
import shutil
from pathlib import Path

import pytest

from cutile_workbench.artifacts.launches_io import save_launch_sets
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.cli.run import RunCommand, run_request
from cutile_workbench.cli.timeline import TimelineCommand
from cutile_workbench.errors import InputError, WorkbenchError
from cutile_workbench.model import CallCapture, Launch, LaunchSet
from cutile_workbench.services import runs as runs_service

FIXTURES = Path(__file__).parent.parent / "fixtures" / "runner"
REPO = Path(__file__).resolve().parent.parent.parent


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="cutile-workbench")
    sub = parser.add_subparsers(dest="cmd", required=True)
    for command in (RunCommand(), TimelineCommand()):
        p = sub.add_parser(command.name)
        command.prepare_parser(p)
        p.set_defaults(func=command.run)
    return parser.parse_args(list(argv))


def call(*argv: str) -> tuple[int, str]:
    """Run a command like ``cutile_workbench.cli.main`` does (a WorkbenchError → ``error:`` on stderr + its code)."""
    import sys

    args = parse(*argv)
    buf = io.StringIO()
    try:
        rc = args.func(args, buf)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        rc = exc.exit_code
    return rc, buf.getvalue()


# --------------------------------------------------------------------------- run


def test_run_without_gpu_points_at_the_recorded_session(tmp_path, capsys):
    present, _ = runs_service.gpu_probe(shutil.which("python3") or "python3")
    if present:
        pytest.skip("a GPU is visible here")
    rc, _ = call("run", "rms_norm", "--out-root", str(tmp_path))
    err = capsys.readouterr().err
    assert rc == 2
    assert "No GPU on this machine" in err and "nvidia-smi" in err
    assert "cutile_workbench/profiles/rms_norm/session/rms_norm" in err
    assert not list(tmp_path.iterdir())  # nothing written


def test_run_unknown_profile_lists_close_matches(tmp_path, capsys):
    rc, _ = call("run", "rms_nrom", "--out-root", str(tmp_path))
    assert rc == 2
    assert "did you mean rms_norm" in capsys.readouterr().err


def test_run_refuses_a_backend_without_a_layout_slot(tmp_path, capsys):
    rc, _ = call("run", "rms_norm", "--out-root", str(tmp_path), "-b", "pytorch", "--skip-gpu-check")
    assert rc == 2
    assert "no slot in the TileGym layout" in capsys.readouterr().err


def test_run_needs_an_out_root(monkeypatch, capsys):
    monkeypatch.delenv("CUTILE_KERNEL_OUT_ROOT", raising=False)
    assert call("run", "rms_norm")[0] == 2
    assert "--out-root" in capsys.readouterr().err


def test_run_streams_one_line_per_config_and_writes_the_layout(tmp_path, monkeypatch):
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(FIXTURES / "perf_faults.py", suite / "test_rms_norm.py")
    shutil.copy(FIXTURES / "host_conftest.py", suite / "conftest.py")
    # SYNTHETIC fault: the baseline's 16384x2048 config crashes its child with SIGSEGV
    monkeypatch.setenv("RUNNER_FIXTURE_FAULTS", "triton-16384-2048:segv")
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    out_root = tmp_path / "out"
    rc, stdout = call(
        "run",
        "rms_norm",
        "--suite",
        str(suite / "test_rms_norm.py"),
        "--out-root",
        str(out_root),
        "--skip-gpu-check",
        "--timeout",
        "120",  # generous: every config here must finish (the SIGSEGV ends its child itself)
    )
    assert rc == 1  # a config failed; results still written
    lines = [ln for ln in stdout.splitlines() if ln.startswith("[")]
    assert len(lines) == 6
    assert any("cutile" in ln and "16384-2048-torch.bfloat16" in ln and "82.78 us" in ln for ln in lines)
    assert any("triton" in ln and "16384-2048" in ln and "FAILED" in ln for ln in lines)
    assert "SIGSEGV" in stdout
    kp = KernelPaths.under(out_root, "rms_norm")
    assert kp.perf_full_log.is_file() and kp.baseline_triton_tileir.is_file()
    assert "Performance Test Results" in kp.perf_full_log.read_text()
    session = json.loads(kp.session_json.read_text())
    assert set(session["runs"]) == {"candidate", "baseline_triton_tileir"}


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_cancels_a_single_run_and_leaves_no_pytest_child(tmp_path, sig):
    """Ctrl-C (SIGINT), a kill (SIGTERM) or a dropped SSH session (SIGHUP) during a plain ``run``:
    the runner must stop its pytest child (it runs in a session of its own, so nothing else would)
    before the CLI exits 2 with nothing written. Regression: Ctrl-C interrupted ``Thread.join``,
    which in Python 3.11 can mark the runner thread finished while it still runs, and SIGTERM/SIGHUP
    killed the CLI outright; either way the child (here a SYNTHETIC hang) was orphaned."""
    import signal

    from scaleout_helpers import faults_suite, interrupt_cli_once_running, still_alive

    suite = faults_suite(tmp_path)
    out_root = tmp_path / "o"
    rc, err, pids = interrupt_cli_once_running(
        [
            "run",
            "rms_norm",
            "--suite",
            str(suite / "test_rms_norm.py"),
            "--out-root",
            str(out_root),
            "-b",
            "triton",
            "--skip-gpu-check",
        ],
        out_root,
        {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "RUNNER_FIXTURE_FAULTS": "triton-4096-1024:hang"},
        shards=1,
        streams="rms_norm/workbench/runs/*.events.*.jsonl",
        sig=getattr(signal, sig),
    )
    # wait for the state (a killed child is gone once reaped), never a fixed pause
    assert len(pids) == 1 and not still_alive(pids), "the pytest child outlived the CLI"
    assert rc == 2, err
    assert f"cancelling ({sig})" in err and "cancelled; nothing written" in err
    assert not (out_root / "rms_norm/baseline_perf_triton_tileir.txt").exists()


# --------------------------------------------------------------------------- timeline

# SYNTHETIC launches built from real H200 facts (docs/gpu.md §4, rms_norm bf16 16384x2048): cuTile
# 82.78 us, 256 threads, 255 regs, 217 KB smem; Triton 44.16 us, 256 threads, 175 regs, 65 KB; the
# hot-path wrapper 3 launches (fill, add, rms_norm) = 150.9 us per call. Grids and the split of the
# wrapper's 150.9 us between its three kernels are illustrative.
FACTS = {
    "cutile": [("rms_norm_kernel_cutile", 82_780, 255, 217 * 1024)],
    "triton": [("_rms_norm_kernel_static_persistent", 44_160, 175, 65 * 1024)],
    "cutile-hotpath": [
        ("fill", 21_000, 16, 0),
        ("add", 47_000, 16, 0),
        ("rms_norm_kernel_cutile", 82_900, 255, 217 * 1024),
    ],
}
PARAMS = "16384-2048-torch.bfloat16"


def launches_fixture(out_root: Path) -> KernelPaths:
    kp = KernelPaths.under(out_root, "rms_norm")
    sets = []
    t = 10_000_000
    for backend, kernels in FACTS.items():
        calls = []
        for i in range(5):
            launches = []
            for j, (name, dur, regs, smem) in enumerate(kernels):
                jitter = (i % 3) * 100  # ±0.1 us spread so min/median/max differ
                launches.append(
                    Launch(
                        kind="kernel",
                        name=name,
                        start_ns=t,
                        end_ns=t + dur + jitter,
                        correlation_id=1000 * i + j,
                        grid=(132, 1, 1),
                        block=(256, 1, 1),
                        registers_per_thread=regs,
                        static_smem=0,
                        dynamic_smem=smem,
                        stream_id=7,
                    )
                )
                t += dur + jitter + 3_000
            calls.append(
                CallCapture(
                    index=i,
                    backend=backend,
                    host_start_ns=launches[0].start_ns - 8_000,
                    host_end_ns=t,
                    launches=tuple(launches),
                )
            )
            t += 40_000
        sets.append(
            LaunchSet(
                nodeid=f"profiles/rms_norm/test_rms_norm.py::Test_RMSNorm::test_perf"
                f"[{backend.replace('-', '_')}-{PARAMS}]",
                backend=backend,
                params=PARAMS,
                calls=calls,
            )
        )
    save_launch_sets(kp.launches_json, sets)
    return kp


def test_timeline_text_table(tmp_path):
    launches_fixture(tmp_path)
    rc, out = call("timeline", "rms_norm", "--config", PARAMS, "--out-root", str(tmp_path))
    assert rc == 0
    assert "launches/call" in out and "per launch" in out
    row: dict[str, str] = {}
    for ln in out.splitlines():  # the summary rows come first, before the per-backend sections
        if ln.split() and ln.split()[0] in FACTS:
            row.setdefault(ln.split()[0], ln)
    assert row["cutile"].split()[1] == "candidate" and row["triton"].split()[1] == "baseline"
    assert "82.88" in row["cutile"] and "44.26" in row["triton"]  # medians incl. the 0.1 us jitter
    assert row["cutile-hotpath"].split()[3] == "3"  # 3 launches per call: the FIXABLE pattern
    assert "132x1x1" in out and "255" in out and str(217 * 1024) in out
    assert "candidate/baseline device time per call: 1.87x; launches/call 1 vs 1" in out
    rc, out = call(
        "timeline",
        "rms_norm",
        "--config",
        PARAMS,
        "--out-root",
        str(tmp_path),
        "-b",
        "cutile-hotpath",
        "-b",
        "triton",
    )
    assert rc == 0 and "cutile-hotpath" in out and "1.87x" not in out


def test_timeline_json_and_backend_filter(tmp_path):
    launches_fixture(tmp_path)
    rc, out = call(
        "timeline",
        "rms_norm",
        "--config",
        PARAMS,
        "--out-root",
        str(tmp_path),
        "--json",
        "-b",
        "cutile-hotpath",
        "-b",
        "triton",
    )
    assert rc == 0
    doc = json.loads(out)
    by = {b["backend"]: b for b in doc["backends"]}
    assert set(by) == {"cutile-hotpath", "triton"}
    assert by["cutile-hotpath"]["launches_per_call"]["median"] == 3
    assert by["triton"]["launches_per_call"] == {"median": 1.0, "min": 1.0, "max": 1.0}
    assert by["triton"]["kernels"][0]["per_launch_us"]["median"] == pytest.approx(44.26)
    assert by["cutile-hotpath"]["kernels"][0]["name"] == "rms_norm_kernel_cutile"


def test_timeline_perfetto_export_is_a_valid_chrome_trace(tmp_path):
    launches_fixture(tmp_path)
    target = tmp_path / "trace.json"
    rc, out = call(
        "timeline", "rms_norm", "--config", PARAMS, "--out-root", str(tmp_path), "--perfetto", str(target)
    )
    assert rc == 0 and "ui.perfetto.dev" in out
    trace = json.loads(target.read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == 5 * (1 + 1 + 3)
    for e in spans:
        assert {"ph", "ts", "dur", "pid", "tid", "name"} <= set(e)
        assert isinstance(e["ts"], (int, float)) and e["dur"] > 0
    names = {
        e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"
    }
    assert names == set(FACTS)


def test_timeline_perfetto_refuses_to_replace_a_non_json_file(tmp_path, capsys):
    launches_fixture(tmp_path)
    target = tmp_path / "notes.txt"
    target.write_text("my notes, not a trace\n")
    argv = (
        "timeline",
        "rms_norm",
        "--config",
        PARAMS,
        "--out-root",
        str(tmp_path),
        "--perfetto",
        str(target),
    )
    assert call(*argv)[0] == 2
    assert "--force" in capsys.readouterr().err
    assert target.read_text() == "my notes, not a trace\n"
    assert call(*argv, "--force")[0] == 0
    assert "traceEvents" in json.loads(target.read_text())


def test_timeline_unknown_config_lists_close_matches(tmp_path, capsys):
    launches_fixture(tmp_path)
    rc, _ = call("timeline", "rms_norm", "--config", "16384-2048-torch.float16", "--out-root", str(tmp_path))
    assert rc == 2
    err = capsys.readouterr().err
    assert "unknown config" in err and PARAMS in err


def test_timeline_without_captures_says_where_it_looked(tmp_path, capsys):
    rc, _ = call("timeline", "rms_norm", "--config", PARAMS, "--out-root", str(tmp_path))
    assert rc == 2
    assert "launches.json.gz" in capsys.readouterr().err


def test_timeline_corrupt_launches_file_is_a_typed_error(tmp_path, capsys):
    kp = KernelPaths.under(tmp_path, "rms_norm")
    kp.workbench_dir.mkdir(parents=True)
    kp.launches_json.write_bytes(b"\x1f\x8b not really gzip")
    rc, _ = call("timeline", "rms_norm", "--config", PARAMS, "--out-root", str(tmp_path))
    assert rc == 2
    assert "launches.json.gz" in capsys.readouterr().err


RECORDED = sorted(REPO.glob("cutile_workbench/profiles/*/session/*/workbench/launches.json.gz"))


@pytest.mark.skipif(not RECORDED, reason="no recorded H200 session with launches yet")
@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.parts[-3])
def test_timeline_on_a_recorded_session(path, tmp_path):
    from cutile_workbench.artifacts.launches_io import load_launch_sets

    kernel = path.parts[-3]
    sets = load_launch_sets(path)
    config = sets[0].params
    rc, out = call("timeline", kernel, "--config", config, "--out-root", str(path.parents[2]), "--json")
    assert rc == 0
    doc = json.loads(out)
    assert doc["backends"] and all(b["calls"] > 0 for b in doc["backends"])
    rc, _ = call(
        "timeline",
        kernel,
        "--config",
        config,
        "--out-root",
        str(path.parents[2]),
        "--perfetto",
        str(tmp_path / "t.json"),
    )
    assert rc == 0 and json.loads((tmp_path / "t.json").read_text())["traceEvents"]


@pytest.mark.skipif(
    not any(p.parts[-3] == "rms_norm_hotpath" for p in RECORDED),
    reason="no recorded rms_norm_hotpath session yet",
)
def test_timeline_shows_the_hot_path_wrappers_extra_launches_in_the_recording():
    """Real H200 recording: the allocating wrapper makes 3 launches per call, the clean kernel 1."""
    root = next(p for p in RECORDED if p.parts[-3] == "rms_norm_hotpath").parents[2]
    rc, out = call(
        "timeline",
        "rms_norm_hotpath",
        "--config",
        "16384-2048-torch.bfloat16",
        "--out-root",
        str(root),
        "--json",
    )
    assert rc == 0
    by = {b["role"]: b for b in json.loads(out)["backends"]}
    assert by["candidate"]["launches_per_call"]["median"] == 3
    assert by["baseline"]["launches_per_call"]["median"] == 1
    rc, text = call(
        "timeline", "rms_norm_hotpath", "--config", "16384-2048-torch.bfloat16", "--out-root", str(root)
    )
    assert "launches/call 3 vs 1 → extra launches per call" in text


def test_commands_are_wired_into_cutile_workbench(tmp_path, capsys):
    """Through the real entry point, with --out-root given before the sub-command (a global flag)."""
    from cutile_workbench.cli import main

    launches_fixture(tmp_path)
    assert main(["--out-root", str(tmp_path), "timeline", "rms_norm", "--config", PARAMS, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"] == PARAMS
    assert main(["timeline", "rms_norm", "--config", PARAMS, "--out-root", str(tmp_path)]) == 0


TILEGYM = REPO / ".fetched" / "TileGym"


@pytest.mark.skipif(not (TILEGYM / "tests" / "ops").is_dir(), reason="TileGym snapshot not present")
def test_tilegym_plan_targets_test_perf_and_keeps_cutile_rs_out_of_baselines(tmp_path):
    args = parse(
        "run",
        "rms_norm",
        "--tilegym",
        str(TILEGYM),
        "--out-root",
        str(tmp_path),
        "-b",
        "cutile-rs",
        "-b",
        "cutile",
        "-b",
        "triton",
        "-k",
        "262144-1024",
    )
    plan = runs_service.plan_runs(run_request(args))
    runs, out = plan.runs, plan.out
    assert out.root == tmp_path / "rms_norm"
    by = {r.backend: r for r in runs}
    assert by["cutile-rs"].role == "candidate" and by["cutile"].role == "baseline_cutile"
    assert by["triton"].role == "baseline_triton_tileir"
    spec = by["cutile"].spec
    assert spec.test_target == "tests/ops/test_rms_norm.py::Test_RMSNorm::test_perf"
    assert spec.k_expr == "(cutile and not cutile_rs) and ((262144-1024))"
    assert spec.backend_token == "cutile" and spec.cwd == TILEGYM.resolve()
    assert by["cutile-rs"].spec.env["DISABLE_FALLBACK"] == "1" and "DISABLE_FALLBACK" not in spec.env
    # two classes with test_perf: the file plus a -k that keeps test_perf_llm out
    runs = runs_service.plan_runs(
        run_request(parse("run", "layer_norm_legacy", "--tilegym", str(TILEGYM), "--out-root", str(tmp_path)))
    ).runs
    assert runs[0].spec.test_target == "tests/ops/test_layer_norm_legacy.py"
    assert "test_perf and not test_perf_llm" in (runs[0].spec.k_expr or "")
    with pytest.raises(InputError, match="close matches: rms_norm"):
        runs_service.plan_runs(
            run_request(parse("run", "rms_nrm", "--tilegym", str(TILEGYM), "--out-root", str(tmp_path)))
        )
