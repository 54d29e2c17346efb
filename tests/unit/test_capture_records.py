"""CPU tests of CUPTI record attribution and its self-checks (records are SYNTHETIC: no GPU here).

The synthetic timestamps mimic what CUPTI delivers (ns, one clock): a launch API record inside a
call's window, its kernel shortly after, the L2-flush kernel between windows (never attributed).
"""

from __future__ import annotations

import pytest

from cutile_workbench.errors import CaptureError
from cutile_workbench.run.capture.records import (
    KIND_DRIVER,
    KIND_MEMCPY,
    KIND_MEMSET,
    KIND_RUNTIME,
    ApiRec,
    CopyRec,
    KernelRec,
    Window,
    attribute_calls,
)


def kernel(cid: int, start: int, end: int, name: str = "k", graph: int = 0) -> KernelRec:
    return KernelRec(cid, start, end, name, (132, 1, 1), (256, 1, 1), 64, 0, 1024, 7, graph, 0)


def api(cid: int, start: int, kind: int = KIND_DRIVER) -> ApiRec:
    return ApiRec(cid, start, start + 3_000, 307, kind, 1)


def two_calls():
    windows = [Window(10_000, 50_000), Window(60_000, 100_000)]
    apis = [api(1, 11_000), api(2, 12_000, KIND_RUNTIME), api(3, 55_000), api(4, 61_000)]
    kernels = [
        kernel(1, 15_000, 20_000, "fill"),
        kernel(2, 21_000, 30_000, "_Z3foov"),
        kernel(3, 56_000, 58_000, "l2_flush"),
        kernel(4, 65_000, 90_000, "main"),
    ]
    return windows, kernels, apis


def test_attributes_by_correlation_id_within_windows():
    windows, kernels, apis = two_calls()
    names = {307: "cuLaunchKernel"}
    calls = attribute_calls(
        windows,
        kernels,
        apis,
        [],
        backend="b",
        api_name=lambda a: names.get(a.cbid),
        demangle=lambda n: "foo()" if n == "_Z3foov" else None,
    )
    assert [len(c.launches) for c in calls] == [2, 1]
    first = calls[0].launches
    assert [x.name for x in first] == ["fill", "_Z3foov"]
    assert first[1].display_name == "foo()"
    assert first[0].api_name == "cuLaunchKernel"
    assert first[0].grid == (132, 1, 1) and first[0].dynamic_smem == 1024
    assert calls[0].device_time_ns == 5_000 + 9_000
    assert (
        calls[1].launches[0].name == "main"
    )  # the flush kernel (cid 3, API outside windows) is not attributed


def test_memcpy_and_memset_are_attributed_with_bytes():
    windows = [Window(0, 100_000)]
    apis = [api(9, 1_000, KIND_RUNTIME), api(10, 2_000, KIND_RUNTIME)]
    copies = [
        CopyRec(KIND_MEMCPY, 9, 5_000, 6_000, 4096, 7, "DtoD", 0),
        CopyRec(KIND_MEMSET, 10, 7_000, 7_500, 512, 7, None, 0),
    ]
    (call,) = attribute_calls(windows, [], apis, copies, backend="b")
    assert [(x.kind, x.name, x.bytes) for x in call.launches] == [
        ("memcpy", "Memcpy DtoD", 4096),
        ("memset", "Memset", 512),
    ]


def test_refuses_duplicate_api_correlation_ids():
    windows, kernels, apis = two_calls()
    with pytest.raises(CaptureError, match="duplicate correlation ids in API records"):
        attribute_calls(windows, kernels, [*apis, api(4, 62_000)], [], backend="b")


def test_same_id_from_runtime_and_driver_is_not_a_duplicate():
    windows, kernels, apis = two_calls()
    calls = attribute_calls(windows, kernels, [*apis, api(4, 61_500, KIND_RUNTIME)], [], backend="b")
    assert len(calls[1].launches) == 1  # one kernel, found once even though two API records carry id 4


def test_refuses_duplicate_kernel_ids_outside_graphs_but_allows_graph_replays():
    windows, kernels, apis = two_calls()
    with pytest.raises(CaptureError, match="duplicate correlation ids in kernel records"):
        attribute_calls(windows, [*kernels, kernel(4, 91_000, 92_000)], apis, [], backend="b")
    graph = [kernel(4, 65_000, 70_000, "n1", graph=5), kernel(4, 71_000, 80_000, "n2", graph=5)]
    calls = attribute_calls(windows, kernels[:3] + graph, apis, [], backend="b")
    assert [x.name for x in calls[1].launches] == ["n1", "n2"] and calls[1].launches[0].graph_id == 5


@pytest.mark.parametrize("start,end", [(5_000, 9_000), (65_000, 200_000), (10**14, 10**14 + 5)])
def test_refuses_kernel_outside_host_window(start, end):
    # before its launch API, after the post-sync timestamp, or ~1e14 ns off (Kineto clock corruption)
    windows, kernels, apis = two_calls()
    kernels[3] = kernel(4, start, end, "main")
    with pytest.raises(CaptureError, match="outside its host window"):
        attribute_calls(windows, kernels, apis, [], backend="b")


def test_refuses_call_without_launches_when_expected():
    windows, kernels, apis = two_calls()
    with pytest.raises(CaptureError, match=r"call 1 .* produced no GPU activity"):
        attribute_calls(windows, kernels, apis[:3], [], backend="b")
    calls = attribute_calls(windows, kernels, apis[:3], [], backend="b", expect_launches=False)
    assert calls[1].launches == ()


def test_refuses_end_before_start():
    windows, kernels, apis = two_calls()
    kernels[0] = kernel(1, 20_000, 15_000)
    with pytest.raises(CaptureError, match="ends before it starts"):
        attribute_calls(windows, kernels, apis, [], backend="b")
