"""Row-softmax perf suite in TileGym's test_perf conventions (framework = first id token).

Run: ``pytest profiles/softmax/test_softmax.py::Test_Softmax::test_perf -k "cutile and not cutile_" -sv
--print-record -p cutile_workbench.run.plugins.perflog``. Skips cleanly without torch, CUDA or a backend's package.
"""

from __future__ import annotations

import pytest

from cutile_workbench.profiles._common import (
    SHAPES,
    SOFTMAX_BF16_TOL,
    assert_close,
    benchmark_framework,
    gpu_or_skip,
    need_module,
)

torch = pytest.importorskip("torch")

FRAMEWORKS = ["cutile", "triton", "pytorch", "tilegym", "cutile-hotpath", "cutile-row"]
_NEEDS = {
    "triton": ("triton", "Triton"),
    "cutile": ("cuda.tile", "cuTile Python"),
    "cutile-hotpath": ("cuda.tile", "cuTile Python"),
    "cutile-row": ("cuda.tile", "cuTile Python"),
    "tilegym": ("tilegym", "tilegym.ops"),
}


class Test_Softmax:
    @pytest.mark.parametrize("m,n,dtype", [(m, n, torch.bfloat16) for m, n in SHAPES])
    @pytest.mark.parametrize("framework", FRAMEWORKS)
    def test_perf(self, framework, m, n, dtype, record_property):
        gpu_or_skip()
        if framework in _NEEDS:
            need_module(*_NEEDS[framework])
        from cutile_workbench.profiles.softmax import backends

        gen = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn((m, n), dtype=dtype, device="cuda", generator=gen)
        with torch.no_grad():
            fn = backends.make(framework, x)
            assert_close(
                torch, fn(), backends.reference64(x), f"softmax[{framework}] {m}x{n}", **SOFTMAX_BF16_TOL
            )
            result = benchmark_framework(framework, fn)
        record_property("benchmark", result)
        del x, fn
        torch.cuda.empty_cache()
