"""Misbehaving backends for fault-isolation tests (issue 6 item 4); NOT a registered profile.

Frameworks: ``pytorch`` (healthy), ``raises`` (Python exception in the hot path), ``illegal``
(a Triton store far outside any allocation → CUDA "illegal memory access", which poisons the
process's CUDA context), ``hangs`` (a Triton kernel spinning on a flag nobody sets). Everything
skips unless ``WORKBENCH_FAULTS=1`` so nobody hangs a GPU by accident; run each risky config in its
own child process with a timeout (that is what the runner / tests/gpu/test_gpu_faults.py do).
"""

from __future__ import annotations

import os

import pytest

from cutile_workbench.profiles._common import benchmark_framework, gpu_or_skip

torch = pytest.importorskip("torch")

FRAMEWORKS = ["pytorch", "raises", "illegal", "hangs"]


def _make(framework: str, x):
    if framework == "pytorch":
        return lambda: torch.softmax(x, dim=-1)
    if framework == "raises":

        def boom():
            raise RuntimeError("backend 'raises' failed on purpose in its hot path")

        return boom
    import triton
    import triton.language as tl

    if framework == "illegal":

        @triton.jit
        def bad_store_kernel(P):
            tl.store(P + (1 << 40), 1.0)  # ~4 TiB past the allocation

        return lambda: bad_store_kernel[(1,)](x)

    @triton.jit
    def spin_kernel(F):
        v = tl.load(F, volatile=True)
        while v == 0:
            v = tl.load(F, volatile=True)

    flag = torch.zeros(1, dtype=torch.int32, device="cuda")
    return lambda: spin_kernel[(1,)](flag)


class Test_Faults:
    @pytest.mark.parametrize("m,n,dtype", [(1024, 1024, torch.float32)])
    @pytest.mark.parametrize("framework", FRAMEWORKS)
    def test_perf(self, framework, m, n, dtype, record_property):
        if os.environ.get("WORKBENCH_FAULTS") != "1":
            pytest.skip("fault-injection backends run only with WORKBENCH_FAULTS=1")
        gpu_or_skip()
        x = torch.randn((m, n), dtype=dtype, device="cuda")
        fn = _make(framework, x)
        fn()
        torch.cuda.synchronize()
        record_property("benchmark", benchmark_framework(framework, fn))
