"""Our cuTile (``cuda.tile``) row softmax, in two variants that compile to different Tile IR.

- ``persistent`` (default): grid = min(rows, 4 x SMs); each block walks rows with a stride and
  loads a (1 x TILE_N) tile per row (``ct.load``, -inf padding), ``occupancy=4``.
- ``row``: one block per row; gathers the row by index (``ct.gather``), no loop.
Dump both with ``CUDA_TILE_DUMP_TILEIR=<dir>``.
"""

# No ``from __future__ import annotations`` here: cuda.tile reads the ct.Constant annotations
# of kernel parameters at definition time, so they must stay real objects.
import math

import cuda.tile as ct
import torch
from cuda.tile import RoundingMode as RMd


@ct.kernel(occupancy=4)
def softmax_persistent_kernel(Y, X, N_ROWS: ct.Constant[int], TILE_N: ct.Constant[int]):
    pid = ct.bid(0)
    for row in range(pid, N_ROWS, ct.num_blocks(0)):
        x = ct.load(X, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF)
        x = ct.astype(x, ct.float32)
        num = ct.exp(x - ct.max(x, 1, keepdims=True), rounding_mode=RMd.APPROX)
        y = ct.truediv(num, ct.sum(num, 1, keepdims=True), rounding_mode=RMd.APPROX, flush_to_zero=True)
        ct.store(Y, index=(row, 0), tile=ct.astype(y, X.dtype))


@ct.kernel
def softmax_row_kernel(Y, X, N: ct.Constant[int], TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    offsets = ct.arange(TILE_N, dtype=ct.int32)
    x = ct.gather(X, (row, offsets), check_bounds=TILE_N != N, padding_value=-math.inf)
    x = ct.astype(x, ct.float32)
    num = ct.exp(x - ct.max(x, 0, keepdims=True), rounding_mode=RMd.APPROX)
    y = ct.truediv(num, ct.sum(num, 0, keepdims=True), rounding_mode=RMd.APPROX, flush_to_zero=True)
    ct.scatter(Y, (row, offsets), ct.astype(y, X.dtype), check_bounds=TILE_N != N)


_NUM_SMS: dict[int, int] = {}


def softmax(x: torch.Tensor, variant: str = "persistent") -> torch.Tensor:
    m, n = x.shape
    y = torch.empty_like(x)
    tile_n = 1 << max(0, (n - 1).bit_length())
    stream = torch.cuda.current_stream()
    if variant == "row":
        ct.launch(stream, (m, 1, 1), softmax_row_kernel, (y, x, n, tile_n))
        return y
    dev = x.device.index or 0
    if dev not in _NUM_SMS:
        _NUM_SMS[dev] = torch.cuda.get_device_properties(dev).multi_processor_count
    ct.launch(stream, (min(m, 4 * _NUM_SMS[dev]), 1, 1), softmax_persistent_kernel, (y, x, m, tile_n))
    return y
