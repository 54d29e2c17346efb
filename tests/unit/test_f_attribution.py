"""Issue 32: F names lines only from attributed evidence (launch attribution of one un-timed call).

Frame filtering (``run.capture.attribution.keep_frames``), the compact per-config format
(``launches_io``), F's issuing lines and its "confirmed" rule. The stacks and launches here are
SYNTHETIC edge cases (shaped like the real H200 recordings of bench/gpu_runs/2026-12-02); the real
recordings are read in ``test_f_attribution_recorded.py``.
"""

from __future__ import annotations

from pathlib import Path

from cutile_workbench.artifacts.launches_io import load_launch_sets, save_launch_sets
from cutile_workbench.evidence import attribution as attr
from cutile_workbench.model import (
    AttributedLaunch,
    CallCapture,
    Finding,
    Launch,
    LaunchSet,
    RatioRow,
    RatioTable,
    SourceFrame,
)
from cutile_workbench.run.capture.attribution import keep_frames
from cutile_workbench.stages.f.diagnosis import diagnose
from cutile_workbench.stages.f.finputs import FInputs

P = "64-1024-4096-torch.float16"
FUNC = "tests/ops/test_silu_and_mul.py::Test_SiluAndMul::test_perf"
W = "src/tilegym/ops/cutile_rs/silu_and_mul.py"
FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>>(int, T2, T3)"
MAIN = "silu_and_mul_kernel_entry"
SITE = "/usr/lib/python3.12/site-packages/"


def test_keep_frames_keeps_tilegym_code_and_the_top_library_frame() -> None:
    """SYNTHETIC stack, outermost first, as traceback.extract_stack gives it."""
    stack = [
        ("/usr/lib/python3.12/site-packages/_pytest/python.py", 150, "pytest_pyfunc_call", "x"),
        ("/tmp/tg/TileGym/tests/ops/test_silu_and_mul.py", 88, "test_perf", "benchmark(fn)"),
        ("/work/wb/cutile_workbench/run/capture/harness.py", 260, "attribution_call", "fn()"),
        ("/tmp/tg/TileGym/tests/ops/test_silu_and_mul.py", 80, "<lambda>", "fn = lambda: op(x)"),
        ("/tmp/tg/TileGym/src/tilegym/ops/cutile_rs/silu_and_mul.py", 117, "silu_and_mul", "r = f(x)"),
        (
            "/tmp/tg/TileGym/src/tilegym/ops/cutile_rs/silu_and_mul.py",
            101,
            "_forward_impl",
            "return F.silu(a) * b",
        ),
        (SITE + "torch/nn/functional.py", 2380, "silu", "return torch._C._nn.silu(input)"),
    ]
    frames = keep_frames(stack, roots=["/tmp/tg/TileGym"], library_prefixes=[SITE])
    assert frames[0] == SourceFrame(
        "torch/nn/functional.py", 2380, "silu", "return torch._C._nn.silu(input)", True
    )
    assert [f.where for f in frames[1:]] == [
        f"{W}:101",
        f"{W}:117",
        "tests/ops/test_silu_and_mul.py:80",
        "tests/ops/test_silu_and_mul.py:88",
    ]
    assert not any("harness" in f.file or "_pytest" in f.file for f in frames)
    # a stack entirely outside the kernel's code keeps nothing
    assert keep_frames(stack[:1], roots=["/tmp/tg/TileGym"], library_prefixes=[SITE]) == ()


def _att(
    name: str, frames: list[tuple[str, int, str, str]], cid: int, kind: str = "kernel"
) -> AttributedLaunch:
    return AttributedLaunch(
        kind,  # type: ignore[arg-type]
        name,
        cid,
        tuple(SourceFrame(f, n, fn, code) for f, n, fn, code in frames),
        "cuLaunchKernel",
        (64, 1, 1),
        (256, 1, 1),
        None,
    )


_MAIN_STACK = [
    (W, 71, "_run_ffi", "rc = lib.cutile_silu_and_mul("),
    (W, 95, "kernel_fn", "_run_ffi(out_local, x2, block_size, cfg)"),
    ("src/tilegym/backend/cutile_rs/autotuner.py", 300, "autotune_launch", "out = kernel_fn(cfg)"),
    (W, 98, "_forward_impl", "result = autotune_launch("),
]


def _sets(
    cand_kernels: list[tuple[str, str, float]], attribution: tuple[AttributedLaunch, ...]
) -> list[LaunchSet]:
    def one(
        backend: str, kernels: list[tuple[str, str, float]], att: tuple[AttributedLaunch, ...]
    ) -> LaunchSet:
        calls, t = [], 0
        for i in range(5):
            launches = []
            for k, (kind, name, us) in enumerate(kernels):
                d = int(us * 1000)
                launches.append(Launch(kind, name, t, t + d, 1000 * i + k))  # type: ignore[arg-type]
                t += d + 1000
            calls.append(CallCapture(i, backend, t - 10_000, t, tuple(launches)))
            t += 10_000
        return LaunchSet(f"{FUNC}[{backend}-{P}]", backend, P, calls, attribution=att)

    return [
        one("cutile", [("kernel", "silu_and_mul_kernel", 50.0)], ()),
        one("cutile-rs", cand_kernels, attribution),
    ]


def _table() -> RatioTable:
    row = RatioRow(FUNC, P, None, "cutile", 0.050, 0.060, 1.2, "OK")
    return RatioTable("silu_and_mul", [row], 1.2, None, "INVESTIGATE")


def _finding(rule: str, line: int, summary: str, conf: str = "high") -> Finding:
    return Finding(
        "wrapper",
        summary,
        conf == "high",
        (f"{W}:{line}",),
        conf,  # type: ignore[arg-type]
        {"rule": rule, "file": W, "line": line},
    )


def test_fill_is_named_at_its_line_and_the_unexecuted_copy_is_not_confirmed() -> None:
    """The issue's first row: `torch.zeros` in kernel_fn (executed) and `out.copy_` (never ran)."""
    att = (
        _att(
            FILL,
            [(W, 94, "kernel_fn", "out_local = torch.zeros((n_rows, hidden_size))"), *_MAIN_STACK[1:]],
            1,
        ),
        _att(MAIN, _MAIN_STACK, 2),
    )
    sets = _sets([("kernel", FILL, 5.0), ("kernel", MAIN, 50.0)], att)
    zeros = _finding("kernel_fn_alloc", 94, "torch.zeros inside kernel_fn")
    copy = _finding("hot_path_copy", 121, "out.copy_(result) on every call", "medium")
    inv = diagnose(FInputs("silu_and_mul", _table(), sets, wrapper_findings=[zeros, copy]))[0]
    lc = next(f for f in inv.findings if f.kind == "launch_count")
    assert f"issued at {W}:94 `out_local = torch.zeros" in lc.summary
    assert lc.details["issued_at"][0]["line"] == 94
    ws = {f.details["rule"]: f for f in inv.findings if f.kind == "wrapper"}
    z, c = ws["kernel_fn_alloc"], ws["hot_path_copy"]
    assert (
        z.fixable
        and z.confidence == "high"
        and f"confirmed: the attributed call issued 1 GPU activity through {W}:94" in z.summary
    )
    assert not c.fixable and c.confidence == "low" and "not executed in the measured call" in c.summary
    assert "confirmed:" not in c.summary


def test_canary_is_named_at_its_own_call_line_not_at_the_shared_ffi_helper() -> None:
    canary = [
        (W, 71, "_run_ffi", "rc = lib.cutile_silu_and_mul("),
        (W, 97, "_forward_impl", "_run_ffi(torch.empty_like(out), x2, block_size, configs[0])"),
    ]
    att = (_att(MAIN, canary, 1), _att(MAIN, _MAIN_STACK, 2))
    sets = _sets([("kernel", MAIN, 50.0), ("kernel", MAIN, 50.0)], att)
    inv = diagnose(
        FInputs("silu_and_mul", _table(), sets, wrapper_findings=[_finding("canary_hot_path", 97, "canary")])
    )[0]
    lc = next(f for f in inv.findings if f.kind == "launch_count")
    assert f"canary `{MAIN}` x1 issued at {W}:97" in lc.summary
    assert f"{W}:71" not in lc.summary.split("issued at", 1)[1]
    w = next(f for f in inv.findings if f.kind == "wrapper")
    assert w.fixable and "confirmed: the attributed call issued" in w.summary


def test_without_attribution_f_says_so_and_confirms_nothing() -> None:
    sets = _sets([("kernel", FILL, 5.0), ("kernel", MAIN, 50.0)], ())
    inv = diagnose(
        FInputs("silu_and_mul", _table(), sets, wrapper_findings=[_finding("kernel_fn_alloc", 94, "zeros")])
    )[0]
    lc = next(f for f in inv.findings if f.kind == "launch_count")
    assert "carry no launch attribution" in lc.summary and not lc.details["attributed"]
    w = next(f for f in inv.findings if f.kind == "wrapper")
    assert "unconfirmed" in w.summary and w.confidence == "medium" and "(confirmed" not in w.summary


def test_attribution_round_trips_compactly(tmp_path: Path) -> None:
    att = (_att(FILL, [(W, 94, "kernel_fn", "torch.zeros(...)")], 7),)
    lib = SourceFrame("torch/nn/functional.py", 2380, "silu", "", True)
    att = (
        *att,
        AttributedLaunch(
            "memset", "Memset", 8, (lib, SourceFrame(W, 101, "f", "x")), None, None, None, (2, 1, 1)
        ),
    )
    sets = [
        LaunchSet(
            "n",
            "cutile-rs",
            P,
            [CallCapture(0, "cutile-rs", 0, 1, (Launch("kernel", "k", 0, 1, 1, cluster=(2, 1, 1)),))],
            attribution=att,
        )
    ]
    path = tmp_path / "l.json.gz"
    save_launch_sets(path, sets)
    back = load_launch_sets(path)
    assert back == sets
    assert back[0].calls[0].launches[0].cluster == (2, 1, 1)
    assert attr.executed_lines(back[0]) == {(W, 94), (W, 101)}
