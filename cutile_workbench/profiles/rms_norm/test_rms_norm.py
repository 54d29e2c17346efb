"""RMSNorm perf suite in TileGym's test_perf conventions (framework = first id token).

Run: ``pytest profiles/rms_norm/test_rms_norm.py::Test_RMSNorm::test_perf -k "triton" -sv --print-record
-p cutile_workbench.run.plugins.perflog``. Skips cleanly without torch, CUDA or a backend's package.
"""

from __future__ import annotations

import pytest

from cutile_workbench.profiles._common import (
    SHAPES,
    assert_close,
    benchmark_framework,
    gpu_or_skip,
    need_module,
)

torch = pytest.importorskip("torch")

FRAMEWORKS = ["cutile", "triton", "pytorch", "tilegym", "cutile-hotpath"]
_NEEDS = {
    "triton": ("triton", "Triton"),
    "cutile": ("cuda.tile", "cuTile Python"),
    "cutile-hotpath": ("cuda.tile", "cuTile Python"),
    "tilegym": ("tilegym", "tilegym.ops"),
}


class Test_RMSNorm:
    @pytest.mark.parametrize("m,n,dtype", [(m, n, torch.bfloat16) for m, n in SHAPES])
    @pytest.mark.parametrize("framework", FRAMEWORKS)
    def test_perf(self, framework, m, n, dtype, record_property):
        gpu_or_skip()
        if framework in _NEEDS:
            need_module(*_NEEDS[framework])
        from cutile_workbench.profiles.rms_norm import backends

        gen = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn((m, n), dtype=dtype, device="cuda", generator=gen)
        w = torch.randn((n,), dtype=dtype, device="cuda", generator=gen)
        with torch.no_grad():
            fn = backends.make(framework, x, w)
            assert_close(torch, fn(), backends.reference64(x, w), f"rms_norm[{framework}] {m}x{n}")
            result = benchmark_framework(framework, fn)
        record_property("benchmark", result)
        del x, w, fn
        torch.cuda.empty_cache()
