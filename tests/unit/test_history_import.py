"""Import of artifact trees into the history, and what the history view reads back.

REAL data: the recorded H200 sessions (``cutile_workbench/profiles/*/session``) and TileGym's own ``test_perf`` run on
the H200 with TileGym's harness and with ours (``tests/fixtures/tilegym_h200``); a real runner run
of the fixture suite (tests/fixtures/runner) for the live path. The only SYNTHETIC input is a
truncated ``events.jsonl`` (a broken line appended to a copy).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_runner import make_suite, spec_for

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.errors import InputError
from cutile_workbench.history.importer import import_kernel_dir, parse_log_header
from cutile_workbench.history.query import history_csv, history_to_dict, load_history, open_history, sparkline
from cutile_workbench.history.store import HISTORY_FILE, HistoryStore
from cutile_workbench.run.results import write_results
from cutile_workbench.run.runner import run

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "cutile_workbench" / "profiles" / "rms_norm" / "session"
H200 = ROOT / "tests" / "fixtures" / "tilegym_h200"


def files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_recorded_session_imports_with_its_gpu_and_time():
    store = HistoryStore.in_memory()
    report = import_kernel_dir(store, KernelPaths.under(RECORDED, "rms_norm"))
    # the candidate log is byte-identical to the cuTile baseline (the stand-in session): one run, two roles
    assert len(report.added) == 2 and len(report.known) == 1 and not report.skipped
    runs = {r.roles: r for r in store.runs()}
    cutile = runs[("baseline_cutile", "candidate")]
    prov = cutile.provenance
    assert prov.gpu is not None and prov.gpu.name == "NVIDIA H200" and prov.gpu.driver_version == "580.159.04"
    assert prov.gpu.mig_mode is None and prov.throttling() is None  # not recorded then: unknown, not "none"
    assert "not recorded" in prov.unknown["before"] and "not recorded" in prov.unknown["tilegym_commit"]
    assert prov.origin["gpu_name"] == "session.json versions" and prov.torch == "2.11.0+cu130"
    assert prov.harness is not None and prov.harness.name == "workbench"
    assert prov.harness.settings == {"WORKBENCH_SETTLE_US": "0"}
    # time of the run: its pytest session's session_start event (2026-11-29 16:44 UTC)
    assert (
        cutile.recorded_at == pytest.approx(1795970675.07, abs=0.01)
        and "session_start" in cutile.recorded_at_origin
    )
    assert cutile.n_configs == 7
    again = import_kernel_dir(store, KernelPaths.under(RECORDED, "rms_norm"))
    assert again.added == () and len(again.known) == 3 and len(store.runs()) == 2


def test_tilegym_logs_without_session_json_use_the_header():
    store = HistoryStore.in_memory()
    import_kernel_dir(store, KernelPaths.under(H200, "plain"))
    runs = store.runs()
    assert [r.roles for r in runs] == [("baseline_cutile",), ("baseline_triton_tileir",)]
    prov = runs[0].provenance
    assert prov.gpu is not None and prov.gpu.name == "NVIDIA H200" and prov.gpu.driver_version is None
    assert prov.origin["gpu_name"] == "log header (device = ...)"
    assert prov.harness is not None and prov.harness.name == "tilegym"
    assert prov.harness.settings == {
        "CUDAGRAPH": "0",
        "CUPTI": "1",
        "INITIAL_REP": "5",
        "MIN_REP": "2",
        "MODE": "auto",
        "REP": "50",
        "WARMUP": "100",
    }
    assert runs[0].recorded_at == 1795977391.0 and "zone unknown" in runs[0].recorded_at_origin  # 18:36:31


def test_log_header_facts():
    text = (H200 / "harness" / "baseline_perf_cutile.txt").read_text()
    h = parse_log_header(text)
    assert (h.python, h.pytest, h.rootdir, h.torch, h.device) == (
        "3.12.3",
        "9.1.1",
        "/tmp/tg/TileGym",
        "2.11.0+cu130",
        "NVIDIA H200",
    )
    assert h.settings["CUPTI"] == "1" and h.first_stamp is not None


def test_open_recorded_session_writes_nothing():
    """The embedded default: its history shows runs with their GPU, nothing lands in the package."""
    before = files(RECORDED)
    store, report = open_history(KernelPaths.under(RECORDED, "rms_norm"), source="recorded")
    with store:
        assert store.path is None and any("recorded session" in n for n in report.notes)
        hist = load_history(store, "rms_norm")
    assert files(RECORDED) == before
    assert len(hist.runs) == 2 and all(r.provenance.gpu_name == "NVIDIA H200" for r in hist.runs)
    assert len(hist.series) == 14  # 7 configs x (cutile, triton)
    assert all(len(s.points) == 1 and s.changes == () for s in hist.series)


def test_series_across_two_real_runs_flags_what_the_data_can_decide(tmp_path):
    """REAL: TileGym's harness run, then the workbench-harness run of the same 5 configs."""
    kdir = tmp_path / "rms_norm"
    kdir.mkdir()
    for name in ("baseline_perf_cutile.txt", "baseline_perf_triton_tileir.txt"):
        shutil.copy(H200 / "plain" / name, kdir / name)
    paths = KernelPaths.under(tmp_path, "rms_norm")
    store, first = open_history(paths, source="out_root", persist=True)
    store.close()
    assert len(first.added) == 2 and (kdir / "workbench" / HISTORY_FILE).is_file()
    for name in ("baseline_perf_cutile.txt", "baseline_perf_triton_tileir.txt"):
        shutil.copy(H200 / "harness" / name, kdir / name)
    store, second = open_history(paths, source="out_root", persist=True)
    with store:
        assert len(second.added) == 2
        hist = load_history(store, "rms_norm", config="static_persistent-262144-1024-torch.float16")
        assert len(store.runs()) == 4
    assert sorted(s.backend for s in hist.series) == ["cutile", "triton"]
    cut = next(s for s in hist.series if s.backend == "cutile")
    assert len(cut.points) == 2
    flag, cond = cut.changes[0], cut.conditions[0]
    # TileGym's harness keeps no raw samples: never decided on the bare ratio
    assert flag.change == "inconclusive" and "no raw samples in the older run" in flag.reason
    assert flag.ratio == pytest.approx(0.278814 / 0.278654)
    # the two runs used different harnesses: named
    assert not cond.comparable and any(
        "harness: newer run workbench vs older run tilegym" in d.text for d in cond.flags
    )
    assert len(cut.trend) == 2
    doc = history_to_dict(hist)
    json.dumps(doc)  # plain JSON
    assert doc["series"][0]["changes"][0]["change"] == "inconclusive"
    csv_text = history_csv(hist)
    assert csv_text.splitlines()[0].startswith("func_key,params,backend") and len(csv_text.splitlines()) == 5


def test_unknown_config_names_close_matches():
    store, _ = open_history(KernelPaths.under(RECORDED, "rms_norm"), source="recorded")
    with store, pytest.raises(InputError) as err:
        load_history(store, "rms_norm", config="4096-1024")
    assert err.value.key == "--config" and "4096-1024-torch.bfloat16" in err.value.message


def test_broken_events_file_is_a_note_not_a_failure(tmp_path):
    """SYNTHETIC damage: a copy of the recorded session with a malformed line in events.jsonl."""
    shutil.copytree(RECORDED / "rms_norm", tmp_path / "rms_norm")
    ev = tmp_path / "rms_norm" / "workbench" / "events.jsonl"
    ev.write_text(ev.read_text() + "{not json\n" + '{"event": "x", "ts": 1}\n')
    store = HistoryStore.in_memory()
    report = import_kernel_dir(store, KernelPaths.under(tmp_path, "rms_norm"))
    assert len(report.added) == 2 and any(
        "events not used" in n and "events.jsonl" in n for n in report.notes
    )
    assert all(r.provenance.gpu_name == "NVIDIA H200" for r in store.runs())  # session.json still used


def test_sparkline():
    assert sparkline([]) == "" and sparkline([1.0, 1.0]) == "▄▄"
    assert sparkline([1.0, 2.0, 3.0]) == "▁▅█"


def test_runner_appends_one_entry_per_run_and_import_adds_nothing(tmp_path):
    """REAL runner run (fixture suite, cuTile configs): write_results appends the run's entry."""
    suite = make_suite(tmp_path)
    out = KernelPaths.under(tmp_path / "out", "rms_norm")
    spec = spec_for(suite, k_expr="cutile", backend_token="cutile")
    result = run(spec, out)
    assert result.rc == 0, result.failed
    written = write_results(result, spec, out)
    store_path = out.workbench_dir / HISTORY_FILE
    assert store_path in written
    meta = json.loads(out.session_json.read_text())["runs"]["candidate"]["history"]
    assert meta["added"] is True and meta["error"] is None and meta["run_key"]
    with HistoryStore.open(store_path) as store:
        (entry,) = store.runs()
        assert entry.source == "live" and entry.roles == ("candidate",) and entry.n_configs == 3
        assert entry.recorded_at_origin == "provenance event"
        prov = entry.provenance
        assert prov.source == "live" and prov.host and prov.started_at and prov.finished_at
        assert prov.gpu is not None or prov.unknown["gpu"].startswith("unavailable: ")
        # the fixture suite replays TileGym-style records (no capture_source): named from the records
        assert (
            prov.harness is not None
            and prov.harness.name == "tilegym"
            and "capture_source" in prov.harness.detail
        )
    write_results(result, spec, out)  # the same run laid out again: no second entry
    assert json.loads(out.session_json.read_text())["runs"]["candidate"]["history"]["added"] is False
    with HistoryStore.open(store_path) as store:
        report = import_kernel_dir(store, out)
        assert report.added == () and len(store.runs()) == 1


def test_runner_survives_a_broken_store(tmp_path):
    """SYNTHETIC damage: history.sqlite is garbage; results are written, the error is recorded."""
    suite = make_suite(tmp_path)
    out = KernelPaths.under(tmp_path / "out", "rms_norm")
    spec = spec_for(suite, k_expr="cutile and 4096-1024", backend_token="cutile")
    result = run(spec, out)
    out.workbench_dir.mkdir(parents=True, exist_ok=True)
    (out.workbench_dir / HISTORY_FILE).write_bytes(b"garbage" * 50)
    written = write_results(result, spec, out)
    assert out.perf_full_log in written and out.workbench_dir / HISTORY_FILE not in written
    meta = json.loads(out.session_json.read_text())["runs"]["candidate"]["history"]
    assert meta["added"] is False and "corrupt" in meta["error"] and HISTORY_FILE in meta["error"]
