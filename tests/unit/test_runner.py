"""Runner tests: real child pytest processes on tests/fixtures/runner/perf_faults.py (no GPU).

The fixture suite records real H200 medians (docs/gpu.md §4); its faults (hang, SIGSEGV,
os._exit(134), a raised CUDA error, huge output) are SYNTHETIC stand-ins for what a broken kernel
does to the process, selected per config through RUNNER_FIXTURE_FAULTS.

No outcome here depends on the box's speed (issue 35): every run gets a generous per-test timeout
(:data:`LIMIT`), so a normal child test on a loaded box is never killed for being slow; the one test that
must hang signals it (``RUNNER_FIXTURE_SIGNAL_HANG``) and :class:`SteppedClock`, put in as the runner's
watchdog clock, steps past the limit at that signal, so the kill follows from the signal through the
watchdog's own rule. Only the collection that must stall keeps a short (startup) timeout.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from cutile_workbench.artifacts.events import Event, read_events
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.errors import InputError, UnsafePath
from cutile_workbench.run import runner as runner_module
from cutile_workbench.run.results import write_results
from cutile_workbench.run.runner import _failure_reason, _LogSink, _StdoutTracker, parse_collect_output, run
from cutile_workbench.run.spec import RunResult, RunSpec, backend_k_expr

FIXTURES = Path(__file__).parent.parent / "fixtures" / "runner"
TILEGYM_SCRIPTS = (
    Path(__file__).resolve().parent.parent.parent
    / ".fetched"
    / "TileGym"
    / "skills"
    / "tilegym-converting-cutile-triton-to-cutile-rs"
    / "scripts"
)
ID = "test_rms_norm.py::Test_RMSNorm::test_perf[{}-torch.bfloat16]"
#: the per-test timeout of every run here: generous, so a test that must finish finishes on any box
LIMIT = 120.0


class SteppedClock:
    """The runner's watchdog clock for one test: real monotonic time plus the steps the test adds when its
    child signals (a hang beat, a progress beat). A step lands after the runner stamped that event as
    progress, so a step past :data:`LIMIT` makes the watchdog's next poll see a hang, whatever the speed."""

    def __init__(self) -> None:
        self.skew = 0.0
        self.steps = 0

    def __call__(self) -> float:
        return time.monotonic() + self.skew

    def step(self, seconds: float) -> None:
        self.skew += seconds
        self.steps += 1


def make_suite(root: Path) -> Path:
    suite = root / "suite"
    suite.mkdir()
    shutil.copy(FIXTURES / "perf_faults.py", suite / "test_rms_norm.py")
    shutil.copy(FIXTURES / "host_conftest.py", suite / "conftest.py")
    return suite


def spec_for(suite: Path, faults: str = "", **kw: object) -> RunSpec:
    # Entry-point plugins of this venv (hypothesis, textual-snapshot, ...) only slow the children
    # down; ours is loaded explicitly with -p by the runner, so autoload can be off.
    env = {"RUNNER_FIXTURE_FAULTS": faults, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **kw.pop("env", {})}  # type: ignore[dict-item]
    # kill_grace_s bounds the wait for a child that dies on SIGTERM (all here but hang_noterm, which
    # asks for its own); generous, so the SIGKILL escalation is never taken for a slow exit
    base: dict[str, object] = {"per_test_timeout_s": LIMIT, "kill_grace_s": 30.0}
    base.update(kw)
    return RunSpec(kernel="rms_norm", test_target="test_rms_norm.py", cwd=suite, env=env, **base)  # type: ignore[arg-type]


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


# --------------------------------------------------------------------------- faults, one run


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunResult, RunSpec, KernelPaths, list[Event]]:
    """One run: hang, SIGSEGV, os._exit(134) and a raised CUDA error, between two good configs."""
    root = tmp_path_factory.mktemp("faulty")
    suite = make_suite(root)
    out = KernelPaths.under(root / "out", "rms_norm")
    spec = spec_for(
        suite,
        "triton-4096-1024:hang,cutile-16384-2048:segv,triton-16384-2048:abort,cutile-8192-8192:raise",
        env={"RUNNER_FIXTURE_SIGNAL_HANG": "1"},
    )
    seen: list[Event] = []
    clock = SteppedClock()

    def on_event(ev: Event) -> None:
        seen.append(ev)
        if ev.event == "progress" and ev.get("hanging"):
            clock.step(LIMIT + 1.0)  # the child says it hangs: overdue on the watchdog's clock

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner_module, "_clock", clock)
        result = run(spec, out, on_event=on_event)
    assert clock.steps >= 1  # the hang was signalled, so the kill below is the signal's
    return result, spec, out, seen


def test_hang_is_killed_after_the_per_test_timeout_and_marked_failed(faulty):
    result, *_ = faulty
    reason = result.failed[ID.format("triton-4096-1024")]
    assert "without progress" in reason and f"{LIMIT:.1f}s" in reason and "SIGTERM" in reason
    hang = next(a for a in result.attempts if a.ended == "killed_hang")
    assert hang.duration_s > LIMIT  # on the watchdog's clock: the kill came only past the limit
    assert [a.ended for a in result.attempts].count("killed_hang") == 1  # no normal test was killed


def test_crashing_children_are_marked_failed_with_the_signal_or_status(faulty):
    result, *_ = faulty
    assert "SIGSEGV" in result.failed[ID.format("cutile-16384-2048")]
    assert "status 134" in result.failed[ID.format("triton-16384-2048")]
    ended = [a.ended for a in result.attempts]
    assert ended.count("crashed") == 2 and ended[-1] == "finished"


def test_raised_error_is_a_normal_failure_with_pytests_reason(faulty):
    result, *_ = faulty
    assert "failed to compile Tile IR program" in result.failed[ID.format("cutile-8192-8192")]
    assert result.outcomes[ID.format("cutile-8192-8192")] == "failed"


def test_other_configs_complete_with_records(faulty):
    result, *_ = faulty
    assert set(result.passed) == {ID.format("cutile-4096-1024"), ID.format("triton-8192-8192")}
    assert not result.not_run and result.rc == 1
    records = {e.get("nodeid"): e for e in result.events if e.event == "record"}
    assert records[ID.format("triton-8192-8192")]["benchmark"]["triton"]["forward"]["median"] == 0.07624
    assert len(result.collected) == 6


def test_resumed_raw_log_is_a_coherent_pytest_log(faulty):
    result, *_ = faulty
    text = result.raw_log_text
    assert text.count("test session starts") == len(result.attempts) == 4
    assert text.count("===== workbench resume: attempt") == 3
    assert text.count("Performance Test Results") == 2 == text.count(" PASSED")
    for nodeid in result.failed:
        if "8192-8192" not in nodeid:  # the raised one fails the normal pytest way
            assert f"FAILED {nodeid} - workbench: child" in text
    assert text.rstrip().splitlines()[-1].startswith("===== workbench summary: 2 passed, 4 failed")
    # banners never carry the words the validators count
    for line in text.splitlines():
        if line.startswith("===== workbench"):
            assert not any(w in line for w in ("PASSED", "FAILED", "SKIPPED"))


def test_synthetic_failure_events_are_in_the_stream(faulty):
    result, _, _, seen = faulty
    killed = [e for e in result.events if e.event == "test_finish" and e.get("source") == "runner"]
    assert {e["nodeid"] for e in killed} == {
        ID.format(p) for p in ("triton-4096-1024", "cutile-16384-2048", "triton-16384-2048")
    }
    assert [e.event for e in seen] == [e.event for e in result.events]  # on_event saw all, in order
    assert seen[-1].event == "runner_finish"


def test_stdout_fallback_tracks_the_same_tests(faulty):
    """The -v line tracker (used when the plugin's events are missing) agrees with the events."""
    result, *_ = faulty
    tracker = _StdoutTracker(result.collected)
    tracker.feed(result.raw_log_text.encode())
    assert tracker.finished[ID.format("cutile-4096-1024")] == "passed"
    assert tracker.finished[ID.format("cutile-8192-8192")] == "failed"
    # a killed test has no outcome word after its own line: it is the one left running
    assert ID.format("triton-4096-1024") in tracker.started


def test_results_land_in_the_layout_and_nowhere_else(faulty):
    result, spec, out, _ = faulty
    written = write_results(result, spec, out)
    assert out.perf_full_log in written
    assert out.perf_full_log.read_text() == result.raw_log_text
    assert files_under(out.root.parent) == {f"rms_norm/{p}" for p in files_under(out.root)}
    lines = [json.loads(ln) for ln in out.events_jsonl.read_text().splitlines()]
    assert lines and all(ln["role"] == "candidate" for ln in lines)
    session = json.loads(out.session_json.read_text())
    meta = session["runs"]["candidate"]
    assert meta["rc"] == 1 and len(meta["attempts"]) == 4 and len(meta["failed"]) == 4
    assert not list(out.root.rglob(".*.tmp*"))
    # writing again replaces this role's events rather than duplicating them
    write_results(result, spec, out)
    assert len(out.events_jsonl.read_text().splitlines()) == len(lines)


@pytest.mark.skipif(not TILEGYM_SCRIPTS.is_dir(), reason="TileGym snapshot not present")
def test_tilegym_validator_reads_the_resumed_log_truthfully(faulty, tmp_path):
    result, *_ = faulty
    log = tmp_path / "perf_cutile_rs.full.txt"
    log.write_text(result.raw_log_text)
    proc = subprocess.run(
        ["bash", str(TILEGYM_SCRIPTS / "validate_perf_log.sh"), str(log)], capture_output=True, text=True
    )
    assert "perf_sections=2 passed=2" in proc.stdout
    assert proc.returncode == 1 and "FAILED" in proc.stdout  # failures are not hidden in the raw log


# --------------------------------------------------------------------------- streaming, progress, launches


def test_sticky_cuda_error_restarts_the_child_so_later_configs_still_run(tmp_path):
    """An illegal address poisons the CUDA context: later tests in that process would all fail."""
    suite = make_suite(tmp_path)
    result = run(spec_for(suite, "cutile-4096-1024:sticky"), KernelPaths.under(tmp_path / "out", "rms_norm"))
    assert list(result.failed) == [ID.format("cutile-4096-1024")]
    assert "illegal memory access" in result.failed[ID.format("cutile-4096-1024")]
    assert len(result.passed) == 5 and result.rc == 1
    assert result.attempts[0].ended == "poisoned" and result.attempts[-1].ended == "finished"
    assert "sticky CUDA error" in result.attempts[0].detail


def test_events_stream_while_the_child_runs(tmp_path):
    """The test blocks until on_event has seen its test_start: passes only if streaming is live."""
    suite = make_suite(tmp_path)
    flag = tmp_path / "flag"
    waiting = ID.format("cutile-4096-1024")
    spec = spec_for(
        suite,
        "cutile-4096-1024:wait_flag,cutile-16384-2048:progress,triton-16384-2048:launches",
        env={"RUNNER_FIXTURE_FLAG": str(flag)},
    )
    threads: set[str] = set()
    clock = SteppedClock()

    def on_event(ev: Event) -> None:
        threads.add(threading.current_thread().name)
        if ev.event == "test_start" and ev.get("nodeid") == waiting:
            flag.write_text("seen")
        if ev.event == "progress":
            clock.step(0.6 * LIMIT)  # each beat: 0.6 of the limit on the watchdog's clock

    out = KernelPaths.under(tmp_path / "out", "rms_norm")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner_module, "_clock", clock)
        result = run(spec, out, on_event=on_event)
    assert result.outcomes[waiting] == "passed", result.failed
    assert threading.current_thread().name not in threads  # callbacks come from the dispatcher
    # harness-style progress events keep the watchdog quiet: ten beats of 0.6 x the limit each are six
    # limits on its clock, a kill unless each beat counts as progress (never a race with the box's speed)
    assert clock.steps == 10 and clock.skew > 5 * LIMIT
    assert result.outcomes[ID.format("cutile-16384-2048")] == "passed"
    assert len(result.attempts) == 1 and result.rc == 0
    # per test: start < record < finish, in stream order
    kinds = [(e.event, e.get("nodeid")) for e in result.events]
    for nodeid in result.collected:
        idx = [i for i, (_, n) in enumerate(kinds) if n == nodeid]
        order = [kinds[i][0] for i in idx]
        assert order[0] == "test_start" and order[-1] == "test_finish"
    # launches events become launch sets and merge into launches.json.gz
    assert [s.params for s in result.launch_sets] == ["16384-2048-torch.bfloat16"]
    assert [len(c.launches) for c in result.launch_sets[0].calls] == [3, 3, 3]
    write_results(result, spec, out)
    doc = json.loads(gzip.decompress(out.launches_json.read_bytes()))
    assert [s["backend"] for s in doc["sets"]] == ["triton"]
    # issue 26: written per config with an index (one config is read without the others)
    from cutile_workbench.artifacts.launch_store import index_path_for, open_store

    assert index_path_for(out.launches_json).is_file()
    store = open_store(out.launches_json)
    assert store._data_path == out.launches_json and store.for_params("16384-2048-torch.bfloat16") == list(
        result.launch_sets
    )


@pytest.mark.skipif(not TILEGYM_SCRIPTS.is_dir(), reason="TileGym snapshot not present")
def test_clean_run_log_passes_tilegyms_validator(tmp_path):
    suite = make_suite(tmp_path)
    out = KernelPaths.under(tmp_path / "out", "rms_norm")
    spec = spec_for(suite, k_expr=backend_k_expr("cutile"), backend_token="cutile")
    result = run(spec, out)
    assert result.rc == 0 and len(result.passed) == 3
    write_results(result, spec, out)
    proc = subprocess.run(
        ["bash", str(TILEGYM_SCRIPTS / "validate_perf_log.sh"), str(out.perf_full_log)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout
    assert "PASS: perf_cutile_rs.full.txt: 3 perf records for 3 passed tests" in proc.stdout


def test_cancel_kills_the_group_and_stops(tmp_path):
    """Cancel while a test ignores SIGTERM: SIGKILL follows, the rest is not run, nothing hangs."""
    suite = make_suite(tmp_path)
    cancel = threading.Event()
    hanging = ID.format("cutile-16384-2048")
    pids: list[int] = []

    def on_event(ev: Event) -> None:
        if ev.event == "session_start":
            pids.append(int(ev["pid"]))
        if ev.event == "test_start" and ev.get("nodeid") == hanging:
            cancel.set()

    spec = spec_for(suite, "cutile-16384-2048:hang_noterm", per_test_timeout_s=60, kill_grace_s=0.5)
    result = run(spec, KernelPaths.under(tmp_path / "out", "rms_norm"), on_event=on_event, cancel=cancel)
    # the path taken, not the time it took: cancelled (not the 60 s per-test timeout), then SIGKILL
    assert result.cancelled and result.rc == 2
    assert result.attempts[-1].ended == "cancelled" and "SIGKILL" in result.attempts[-1].detail
    assert result.not_run[hanging] == "not run: cancelled while running"
    assert len(result.not_run) == 5 and hanging not in result.failed
    with pytest.raises(ProcessLookupError):
        os.kill(pids[0], 0)


def test_huge_output_is_capped_and_never_blocks_the_child(tmp_path):
    suite = make_suite(tmp_path)
    spec = spec_for(
        suite,
        "cutile-4096-1024:spam",
        k_expr="4096",
        env={"RUNNER_FIXTURE_SPAM_MB": "3"},
        max_log_bytes=256 * 1024,
    )
    result = run(spec, KernelPaths.under(tmp_path / "out", "rms_norm"))
    assert result.rc == 0 and len(result.passed) == 2
    size = result.raw_log_path.stat().st_size
    assert size < 256 * 1024 + 4096
    text = result.raw_log_text
    assert "bytes of child output omitted here" in text
    assert "2 passed" in text.splitlines()[-2]  # pytest's own summary survives in the tail


def test_no_matching_config_runs_nothing(tmp_path):
    suite = make_suite(tmp_path)
    result = run(spec_for(suite, k_expr="no_such_config"), KernelPaths.under(tmp_path / "out", "rms_norm"))
    assert result.rc == 5 and not result.collected and not result.attempts
    assert "deselected" in result.raw_log_text


def test_collection_error_is_reported_not_raised(tmp_path):
    suite = make_suite(tmp_path)
    (suite / "test_rms_norm.py").write_text("import no_such_module_for_runner_test\n")
    result = run(spec_for(suite), KernelPaths.under(tmp_path / "out", "rms_norm"))
    assert result.rc not in (0, 5) and not result.attempts
    assert "no_such_module_for_runner_test" in result.raw_log_text
    assert result.notes and "collection failed" in result.notes[0]


def test_stalled_collection_is_killed_at_the_startup_timeout(tmp_path):
    suite = make_suite(tmp_path)
    spec = spec_for(suite, env={"RUNNER_FIXTURE_COLLECT_SLEEP": "60"}, startup_timeout_s=1.0)
    result = run(spec, KernelPaths.under(tmp_path / "out", "rms_norm"))
    # the startup timeout's own message proves the kill (the conftest would sleep 60 s)
    assert result.rc == 124 and not result.attempts and "collection killed after 1.0s" in result.raw_log_text


def test_cancel_during_collection_returns_promptly(tmp_path):
    suite = make_suite(tmp_path)
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    result = run(
        spec_for(suite, env={"RUNNER_FIXTURE_COLLECT_SLEEP": "60"}),
        KernelPaths.under(tmp_path / "out", "rms_norm"),
        cancel=cancel,
    )
    # the collection was cut by the cancel (its marker), not left to finish its 60 s sleep
    assert result.cancelled and result.rc == 2 and not result.attempts
    assert "cancelled during collection" in result.notes


# --------------------------------------------------------------------------- pure units


def test_failure_reason_is_the_exception_header_of_a_multi_line_cuda_error():
    # The multi-line form torch prints for a CUDA error. On the H200 run (torch 2.11) the old
    # "last E line" rule picked exactly the last line below as the reason; the header's exception
    # class (torch.AcceleratorError in torch >= 2.8, RuntimeError before) was not captured there.
    longrepr = (
        "    def test_perf(...):\n>       torch.cuda.synchronize()\n"
        "E       torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
        "E       CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
        "below might be incorrect.\n"
        "E       For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "E       Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n\n"
        "test_rms_norm.py:70: AcceleratorError\n"
    )
    assert (
        _failure_reason(longrepr)
        == "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
    )
    assert _failure_reason("E       assert 1 == 2\nE        +  where 1 = f()\n") == "assert 1 == 2"


def test_parse_collect_output_real_format():
    text = (
        f"{ID.format('cutile-4096-1024')}\n{ID.format('triton-4096-1024')}\n\n"
        "2/6 tests collected (4 deselected) in 0.01s\n"
    )
    assert parse_collect_output(text) == [ID.format("cutile-4096-1024"), ID.format("triton-4096-1024")]


def test_backend_k_expr_keeps_cutile_rs_out_of_cutile():
    assert backend_k_expr("cutile") == "cutile and not cutile_rs"
    assert backend_k_expr("cutile_rs", "2048") == "(cutile_rs) and (2048)"


def test_log_sink_keeps_head_and_tail(tmp_path):
    sink = _LogSink(tmp_path / "log", 4096)
    sink.write(b"HEAD\n")
    for i in range(2000):
        sink.write(f"line {i}\n".encode())
    sink.write_line("END")
    sink.close()
    text = (tmp_path / "log").read_text()
    assert text.startswith("HEAD\n") and text.endswith("END\n") and "omitted here" in text
    assert len(text) < 4096 + 200


def test_write_results_refuses_unsafe_kernel_dirs(tmp_path, faulty):
    result, spec, _, _ = faulty
    with pytest.raises(UnsafePath):
        write_results(result, spec, KernelPaths(root=tmp_path / "x", kernel="../x"))
    # a workbench dir symlinked elsewhere: the write target resolves outside the kernel dir
    kernel_dir = tmp_path / "out" / "rms_norm"
    kernel_dir.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (kernel_dir / "workbench").symlink_to(elsewhere)
    with pytest.raises(UnsafePath):
        write_results(result, spec, KernelPaths.under(tmp_path / "out", "rms_norm"))
    assert not list(elsewhere.iterdir())


def test_write_results_rejects_a_malformed_events_file_before_writing(tmp_path, faulty):
    result, spec, _, _ = faulty
    out = KernelPaths.under(tmp_path / "out", "rms_norm")
    out.workbench_dir.mkdir(parents=True)
    out.events_jsonl.write_text('{"event": "x", "ts": 1, "role": "baseline_cutile"}\n{not json\n')
    with pytest.raises(InputError) as err:
        write_results(result, spec, out)
    assert err.value.line == 2 and "events.jsonl" in str(err.value)
    assert not out.perf_full_log.exists()  # nothing written


def test_events_file_lines_read_back_with_the_shared_reader(tmp_path, faulty):
    result, spec, _, _ = faulty
    out = KernelPaths.under(tmp_path / "out", "rms_norm")
    write_results(result, spec, out)
    events = read_events(out.events_jsonl)
    assert {e.get("role") for e in events} == {"candidate"}
    assert sum(e.event == "record" for e in events) == 2
