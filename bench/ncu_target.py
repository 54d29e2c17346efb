"""A minimal target for Nsight Compute: call one TileGym op on one config a few times.

Usage (GPU machine, TileGym's src on PYTHONPATH, cutile-rs library in place):
    ncu --csv --page raw --print-units base --clock-control none --profile-from-start off -c 1 \
        --metrics M,... \
        python3 bench/ncu_target.py --op silu_and_mul --backend cutile-rs --shape 64,1024,4096 --dtype float16

Why not pytest: TileGym's harness runs torch.profiler (a CUPTI client), which cannot subscribe
while ncu holds CUPTI; a direct call also keeps the profiled process to a few launches. Inputs are
built the way TileGym's ``test_perf`` builds them (``torch.randn`` of the same shapes and dtype).
"""

from __future__ import annotations

import argparse

OPS = {
    # op -> (shape arity, builder of positional args, kwargs)
    "silu_and_mul": 3,  # batch, seq, hidden: input (batch, seq, 2*hidden)
    "matmul": 3,  # m, n, k (+ --static-persistent)
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--op", required=True, choices=sorted(OPS))
    ap.add_argument("--backend", required=True)
    ap.add_argument("--shape", required=True, help="comma-separated ints")
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--static-persistent", action="store_true")
    ap.add_argument("--calls", type=int, default=3)
    ns = ap.parse_args()
    import os

    # ncu holds CUPTI: route TileGym's autotuner timing to CUDA events (never torch.profiler)
    os.environ["WORKBENCH_CAPTURE"] = "events"
    from cutile_workbench.run.capture import tilegym_swap

    tilegym_swap.install(None)
    import tilegym
    import torch

    dims = [int(x) for x in ns.shape.split(",")]
    if len(dims) != OPS[ns.op]:
        ap.error(f"--shape needs {OPS[ns.op]} numbers for {ns.op}")
    dtype = getattr(torch, ns.dtype)
    tilegym.set_backend(ns.backend)
    torch.manual_seed(0)
    if ns.op == "silu_and_mul":
        b, s, h = dims
        x = torch.randn((b, s, 2 * h), dtype=dtype, device="cuda")

        def call() -> object:
            return tilegym.ops.silu_and_mul(x)
    else:
        m, n, k = dims
        a = torch.randn((m, k), dtype=dtype, device="cuda")
        bm = torch.randn((k, n), dtype=dtype, device="cuda")

        def call() -> object:
            return tilegym.ops.matmul(
                a, bm, trans_a=False, trans_b=False, static_persistent=ns.static_persistent, use_tma=True
            )

    call()  # autotune + JIT happen here, outside the profiled range (--profile-from-start off)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(ns.calls):
        call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"ncu_target: {ns.op} {ns.backend} {dims} {ns.dtype} x{ns.calls} done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
