"""CUPTI session protocol (enable / window / flush / disable order) against a recording stand-in.

The stand-in ``cupti`` and ``torch`` objects only record the calls the session makes (SYNTHETIC,
no GPU); the records themselves are covered on the H200 by tests/gpu/test_gpu_capture.py. What is
checked here is the order that decides what a sample measures: with ``WORKBENCH_CUPTI_WINDOW=per_call``
(TileGym's per-sample protocol) the kernel kind is enabled right before each window and, after it,
flushed (forced) + disabled; with ``session`` every kind is enabled once for all windows.
"""

from __future__ import annotations

import enum
import sys
import types
from typing import Any

import pytest

from cutile_workbench.errors import CaptureError
from cutile_workbench.run.capture import conflicts
from cutile_workbench.run.capture import session as S


class _NoCbids(enum.IntEnum):
    INVALID = 0


class FakeCupti:
    runtime_api_trace_cbid = _NoCbids
    driver_api_trace_cbid = _NoCbids

    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []
        self.enabled: set[int] = set()
        self.clock = 0
        self.kineto_starts = 0  # what conflicts.kineto_starts() reports
        self.clock_verdict = S.clock.ClockCheck(rate=1.0)

    def activity_register_callbacks(self, req: Any, done: Any) -> None:
        self.log.append(("register", None))

    def activity_flush_all(self, flag: int) -> None:
        self.log.append(("flush", flag))

    def activity_enable(self, kind: int) -> None:
        assert kind not in self.enabled, f"kind {kind} enabled twice"
        self.enabled.add(kind)
        self.log.append(("enable", kind))

    def activity_disable(self, kind: int) -> None:
        assert kind in self.enabled, f"kind {kind} disabled while not enabled"
        self.enabled.discard(kind)
        self.log.append(("disable", kind))

    def get_timestamp(self) -> int:
        self.clock += 10
        self.log.append(("ts", self.clock))
        return self.clock

    def activity_enable_runtime_api(self, cbid: int, on: int) -> None: ...
    def activity_enable_driver_api(self, cbid: int, on: int) -> None: ...
    def activity_get_num_dropped_records(self, ctx: int, stream: int, out: int) -> None: ...


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeCupti:
    cupti = FakeCupti()
    monkeypatch.setitem(sys.modules, "cupti", types.SimpleNamespace(cupti=cupti))
    torch = types.SimpleNamespace(
        cuda=types.SimpleNamespace(synchronize=lambda: cupti.log.append(("sync", None)))
    )
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(conflicts, "active_profiler", lambda: None)
    monkeypatch.setattr(conflicts, "kineto_starts", lambda: cupti.kineto_starts)
    monkeypatch.setattr(conflicts, "install_tracker", lambda: True)
    monkeypatch.setattr(S, "_LEFT_ENABLED", set())
    monkeypatch.setattr(S, "_API_FILTER_ON", set())
    monkeypatch.setattr(S, "_BOOKKEEPING_AT_KINETO", [0])
    monkeypatch.setattr(S, "_ACTIVE", [])
    # the fake clock ticks per call, not per ns: its rate check is replaced by a fixed verdict
    monkeypatch.setattr(S.clock, "ensure_clock", lambda get_ts, **kw: cupti.clock_verdict)
    return cupti


def _run(mode: str, calls: int = 2) -> S.CuptiSession:
    s = S.CuptiSession("x", window_mode=mode)
    with s:
        for _ in range(calls):
            with s.call():
                pass
    return s


def test_per_call_all_enables_before_each_window_and_flushes_then_disables_after(
    fake: FakeCupti, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_CUPTI_PER_CALL_KINDS", "all")
    s = _run("per_call")
    kinds = set(S._KINDS)
    log = fake.log
    ts = [i for i, (op, _) in enumerate(log) if op == "ts"]
    assert len(ts) == 4 and len(s.windows) == 2
    for start, end in zip(ts[0::2], ts[1::2], strict=True):
        before = log[:start]
        # every kind switched on since the last flush+disable, right before the window opens
        last_off = max((i for i, (op, _) in enumerate(before) if op == "disable"), default=-1)
        assert {k for op, k in before[last_off + 1 :] if op == "enable"} == kinds
        after = log[end + 1 : end + 2 + len(kinds)]
        assert after[0] == ("flush", 1) and {k for op, k in after[1:] if op == "disable"} == kinds
        assert log[end - 1] == ("sync", None)  # the window closes after the device finished
    assert fake.enabled == set(), "nothing may stay enabled after a per_call session"
    assert not S._LEFT_ENABLED


def test_session_mode_enables_once_for_all_windows(fake: FakeCupti) -> None:
    _run("session", calls=3)
    enables = [k for op, k in fake.log if op == "enable"]
    assert sorted(enables) == sorted(S._KINDS)
    first_ts = next(i for i, (op, _) in enumerate(fake.log) if op == "ts")
    assert all(i < first_ts for i, (op, _) in enumerate(fake.log) if op == "enable")
    assert fake.enabled == set(S._KINDS)  # keep_enabled default: left on for the next session


def test_per_call_default_toggles_only_the_kernel_kind_around_a_forced_flush(fake: FakeCupti) -> None:
    # the H200 finding: TileGym's medians need CONCURRENT_KERNEL re-enabled after a forced flush
    s = _run("per_call", calls=3)
    assert len(s.windows) == 3
    K = S.KIND_CONCURRENT_KERNEL
    log = fake.log
    ts = [i for i, (op, _) in enumerate(log) if op == "ts"]
    for start, end in zip(ts[0::2], ts[1::2], strict=True):
        assert log[start - 1] == ("enable", K)
        assert log[end + 1 : end + 3] == [("flush", 1), ("disable", K)]
    assert [k for op, k in log if op == "enable" and k != K] == [k for k in S._KINDS if k != K]
    assert fake.enabled == set(S._KINDS) - {K}


def test_per_call_after_a_session_that_left_kinds_on_switches_them_off_first(
    fake: FakeCupti, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run("session")
    assert fake.enabled == set(S._KINDS)
    monkeypatch.setenv("WORKBENCH_CUPTI_PER_CALL_KINDS", "all")
    _run("per_call")  # FakeCupti asserts no kind is enabled twice
    assert fake.enabled == set()
    _run("per_call")


def test_window_mode_env_is_validated(fake: FakeCupti, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_CUPTI_WINDOW", "per-sample")
    with pytest.raises(CaptureError) as e:
        S.CuptiSession("x")
    assert e.value.key == "WORKBENCH_CUPTI_WINDOW"
    monkeypatch.setenv("WORKBENCH_CUPTI_WINDOW", "session")
    assert S.CuptiSession("x").window_mode == "session"
    monkeypatch.delenv("WORKBENCH_CUPTI_WINDOW")
    assert S.CuptiSession("x").window_mode == "per_call"
    monkeypatch.setenv("WORKBENCH_CUPTI_PER_CALL_FLUSH", "sometimes")
    with pytest.raises(CaptureError) as e2:
        S.CuptiSession("x").__enter__()
    assert e2.value.key == "WORKBENCH_CUPTI_PER_CALL_FLUSH"


@pytest.mark.parametrize("mode", ["session", "per_call"])
def test_keep_enabled_false_leaves_nothing_enabled(fake: FakeCupti, mode: str) -> None:
    # (per_call default: the API/copy kinds were on for the session and must go off at exit)
    s = S.CuptiSession("x", window_mode=mode, keep_enabled=False)
    with s:
        with s.call():
            pass
    assert fake.enabled == set() and not S._LEFT_ENABLED


def test_per_call_kernel_only_keeps_api_kinds_on_for_the_session(
    fake: FakeCupti, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_CUPTI_PER_CALL_FLUSH", "none")
    s = _run("per_call", calls=3)
    toggles = [k for op, k in fake.log if op == "enable" and k == S.KIND_CONCURRENT_KERNEL]
    assert len(toggles) == 3 and len(s.windows) == 3
    assert fake.enabled == set(S._KINDS) - {S.KIND_CONCURRENT_KERNEL}
    flushes_inside = [i for i, (op, _) in enumerate(fake.log) if op == "flush"]
    assert len(flushes_inside) == 2  # session start (drain) + exit only: no per-window flush


def test_per_call_flush_only_toggles_nothing_and_flushes_each_window(
    fake: FakeCupti, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_CUPTI_PER_CALL_KINDS", "none")
    monkeypatch.setenv("WORKBENCH_CUPTI_PER_CALL_FLUSH", "completed")
    s = _run("per_call", calls=3)
    assert sorted(k for op, k in fake.log if op == "enable") == sorted(S._KINDS)  # once, at session start
    assert [f for op, f in fake.log if op == "flush"] == [1, 0, 0, 0, 1]  # drain, 3 windows, exit
    assert len(s.windows) == 3


# --------------------------------------------------------------------------- one CUPTI client per process


def test_kineto_session_during_a_window_contaminates_it_and_rearms_before_the_next(fake: FakeCupti) -> None:
    s = S.CuptiSession("x", window_mode="per_call")
    with s:
        with s.call():
            pass
        with s.call():
            fake.kineto_starts += 1  # e.g. a wrapper's autotuner ran torch.profiler inside fn()
        registers_before = sum(1 for op, _ in fake.log if op == "register")
        with s.call():
            pass
    assert s.contaminated == {
        0: "measured before a torch.profiler (Kineto) session took CUPTI",
        1: "a torch.profiler (Kineto) session started during this call",
    }
    # the third window re-took CUPTI (callbacks) before opening, and is the only clean one
    assert sum(1 for op, _ in fake.log if op == "register") == registers_before + 1
    assert s.rearms == 1 and s.clean_windows() == [s.windows[2]]
    assert s.capture_meta()["discarded_samples"] == 2


def test_kineto_run_between_sessions_resets_the_kind_bookkeeping(fake: FakeCupti) -> None:
    _run("session")  # leaves every kind enabled (keep_enabled)
    fake.kineto_starts += 1
    fake.enabled.clear()  # Kineto's teardown switched them off behind our back
    _run("session")
    assert fake.enabled == set(S._KINDS), "kinds must be on again after a Kineto session"


def test_side_window_inside_a_measured_window_contaminates_it(fake: FakeCupti) -> None:
    s = S.CuptiSession("x", window_mode="per_call")
    with s:
        with s.call():
            with s.call(side=True):  # an autotuner timing a config inside the measured call
                pass
        with s.call(side=True):  # outside any window: never a sample, never contaminating
            pass
        with s.call():
            pass
    assert len(s.side_windows) == 2 and len(s.windows) == 2
    assert s.contaminated == {0: "an autotuner timed its configs inside this call"}
    with pytest.raises(CaptureError, match="nested measured windows"):
        with s.call():
            with s.call():
                pass


def test_a_clock_that_cannot_be_restored_refuses_the_capture(fake: FakeCupti) -> None:
    fake.clock_verdict = S.clock.ClockCheck(rate=2.1, ok=False, reason="CUPTI's clock runs at 2.100x")
    with pytest.raises(CaptureError, match=r"refusing to measure: CUPTI.s clock runs at 2\.100x"):
        with S.CuptiSession("x"):
            pass
    assert not S._ACTIVE


def test_one_cupti_client_at_a_time(fake: FakeCupti) -> None:
    with S.CuptiSession("outer") as outer:
        assert S.active_session() is outer
        with pytest.raises(CaptureError, match="another capture is open"):
            with S.CuptiSession("inner"):
                pass
    assert S.active_session() is None
