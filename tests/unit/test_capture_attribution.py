"""The attribution subscriber's protocol against a recording stand-in of cupti-python (SYNTHETIC, no GPU).

What is checked: only launch/copy/set cbids get a callback; a stack is taken at API_ENTER only, keyed
by the callback's correlation id, and keeps this (the kernel's own) file; the subscriber is gone after
the ``with`` block (no stack is taken for a later, timed call); a refused subscription (another CUPTI
client, error 39) leaves ``unavailable`` naming the holder and takes nothing. The real records are
checked on the H200 (bench/gpu_session.sh ``evidence``; bench/gpu_runs/2026-12-02).
"""

from __future__ import annotations

import enum
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from cutile_workbench.run.capture.attribution import Attributor


class _Rt(enum.IntEnum):
    INVALID = 0
    cudaLaunchKernel_v7000 = 211
    cudaMalloc_v3020 = 20


class _Drv(enum.IntEnum):
    INVALID = 0
    cuLaunchKernel = 307
    cuMemsetD8Async = 140
    cuCtxSynchronize = 17


class FakeCupti:
    runtime_api_trace_cbid = _Rt
    driver_api_trace_cbid = _Drv
    SUBSCRIBER_PARAMS_SIZE = 16
    ApiCallbackSite = types.SimpleNamespace(API_ENTER=0, API_EXIT=1)
    CallbackDomain = types.SimpleNamespace(RUNTIME_API=2, DRIVER_API=1)

    class SubscriberParams:
        def __init__(self) -> None:
            self.ptr = 1
            self.struct_size = 0
            self.subscriber_name = ""
            self.old_subscriber_name: str | None = None

    def __init__(self, refuse: str | None = None) -> None:
        self.refuse = refuse
        self.cb: Any = None
        self.enabled: set[tuple[int, int]] = set()
        self.log: list[str] = []

    def subscribe_v2(self, cb: Any, userdata: Any, ptr: int) -> int:
        if self.refuse:
            raise RuntimeError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")
        self.cb = cb
        self.log.append("subscribe")
        return 7

    def enable_callback(self, on: int, sub: int, domain: int, cbid: int) -> None:
        self.enabled.add((domain, cbid))

    def unsubscribe(self, sub: int) -> None:
        self.cb = None
        self.log.append("unsubscribe")

    def api(self, domain: int, cbid: int, cid: int) -> None:
        """What the driver does around an API call: enter and exit callbacks, if subscribed."""
        if self.cb is None or (domain, cbid) not in self.enabled:
            return
        for site in (0, 1):
            self.cb(None, domain, cbid, types.SimpleNamespace(callback_site=site, correlation_id=cid))


def _install(monkeypatch: pytest.MonkeyPatch, fake: FakeCupti) -> None:
    monkeypatch.setitem(sys.modules, "cupti", types.SimpleNamespace(cupti=fake))


def _issue_launch(fake: FakeCupti, cid: int) -> None:
    fake.api(1, 307, cid)  # the line that "launches": this file's frame must be kept


def test_stacks_at_enter_of_launch_cbids_only_and_unsubscribed_after(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCupti()
    _install(monkeypatch, fake)
    here = str(Path(__file__).resolve().parent)
    att = Attributor(roots=[here])
    with att:
        assert fake.enabled == {(2, 211), (1, 307), (1, 140)}  # no cudaMalloc, no cuCtxSynchronize
        _issue_launch(fake, 41)
        fake.api(1, 17, 42)  # a sync: not enabled, no stack
    assert fake.log == ["subscribe", "unsubscribe"]
    assert set(att.stacks) == {41} and att.taken == 1  # API_EXIT took no second stack
    frames = att.stacks[41]
    # innermost first; the harness's own callback frame is dropped (the stand-in "driver" is this file)
    assert all(f.file == "test_capture_attribution.py" and not f.library for f in frames[:3])
    assert [f.function for f in frames[:3]] == [
        "api",
        "_issue_launch",
        "test_stacks_at_enter_of_launch_cbids_only_and_unsubscribed_after",
    ]
    _issue_launch(fake, 43)  # a timed call after the block: nothing is taken
    assert set(att.stacks) == {41}


def test_a_refused_subscriber_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCupti(refuse="nsight-compute")
    _install(monkeypatch, fake)
    with Attributor(roots=["/x"]) as att:
        _issue_launch(fake, 1)
    assert att.unavailable is not None and "MULTIPLE_SUBSCRIBERS" in att.unavailable
    assert att.stacks == {} and fake.log == []
