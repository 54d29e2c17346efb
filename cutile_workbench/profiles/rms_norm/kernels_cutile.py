"""Our cuTile (``cuda.tile``) RMSNorm forward: static persistent, one (TILE_M x TILE_N) tile per step.

The tile shape is a compile-time constant, so one kernel yields different Tile IR per config
(dumped with ``CUDA_TILE_DUMP_TILEIR=<dir>``): 16x1024 for N<=1024, 4xN up to 8192, 2xN beyond.
:func:`tile_config` is the policy; :func:`rms_norm` accepts an explicit ``tile`` to override it.
"""

# No ``from __future__ import annotations`` here: cuda.tile reads the ct.Constant annotations
# of kernel parameters at definition time, so they must stay real objects.
import cuda.tile as ct
import torch


@ct.kernel
def rms_norm_tile_kernel(
    X, W, Y, TILE_M: ct.Constant[int], TILE_N: ct.Constant[int], EPS: ct.Constant[float]
):
    bid = ct.bid(0)
    m = X.shape[0]
    n = X.shape[1]
    n_tiles = (m + TILE_M - 1) // TILE_M
    w = ct.load(W, index=(0,), shape=(TILE_N,), padding_mode=ct.PaddingMode.ZERO)
    w_row = ct.reshape(ct.astype(w, ct.float32), (1, TILE_N))
    for t in range(bid, n_tiles, ct.num_blocks(0)):
        x = ct.load(X, index=(t, 0), shape=(TILE_M, TILE_N), padding_mode=ct.PaddingMode.ZERO)
        x = ct.astype(x, ct.float32)
        sum_sq = ct.sum(x * x, axis=1, keepdims=True)
        mean_sq = sum_sq / ct.full((TILE_M, 1), n * 1.0, dtype=ct.float32)
        rstd = ct.rsqrt(mean_sq + ct.full((TILE_M, 1), EPS, dtype=ct.float32))
        y = x * rstd * w_row
        ct.store(Y, index=(t, 0), tile=ct.astype(y, X.dtype))


def tile_config(n: int) -> tuple[int, int]:
    tile_n = 1 << max(0, (n - 1).bit_length())
    tile_m = 16 if tile_n <= 1024 else 4 if tile_n <= 8192 else 2
    return tile_m, tile_n


_NUM_SMS: dict[int, int] = {}


def rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    out: torch.Tensor | None = None,
    tile: tuple[int, int] | None = None,
) -> torch.Tensor:
    m, n = x.shape
    y = torch.empty_like(x) if out is None else out
    tile_m, tile_n = tile or tile_config(n)
    dev = x.device.index or 0
    if dev not in _NUM_SMS:
        _NUM_SMS[dev] = torch.cuda.get_device_properties(dev).multi_processor_count
    grid = (min(_NUM_SMS[dev], (m + tile_m - 1) // tile_m),)
    ct.launch(torch.cuda.current_stream(), grid, rms_norm_tile_kernel, (x, weight, y, tile_m, tile_n, eps))
    return y
