"""SYNTHETIC data for snapshots, Pilot tests and ``bench/tui_start.py`` — never shown as real.

Contract: deterministic (seeded) builders of model objects. The small set pins the real H200
medians of ``shared/docs/gpu.md`` §4 (rms_norm bf16: cuTile vs Triton, and the 3-launch
hot-path-allocation wrapper at 16384x2048); everything else here — CIs, per-launch timestamps,
register counts of extra kernels, the IR texts and the large tables — is synthetic, labelled
``source="synthetic"`` so the header says so.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

from cutile_workbench.model import CallCapture, Launch, LaunchSet, RatioRow, RatioTable, Severity

FUNC = "tests/ops/test_rms_norm.py::Test_RMSNorm::test_perf"

# (params, candidate us, baseline us, cand launches) — real H200 medians (gpu.md §4); the last
# row is the real "zeros_like(x).add_(x)" wrapper measurement (150.9 us, 3 launches per call).
_PINNED: tuple[tuple[str, float, float, int], ...] = (
    ("static_persistent-4096-1024-torch.bfloat16", 7.01, 10.14, 1),
    ("static_persistent-16384-2048-torch.bfloat16", 82.78, 44.16, 1),
    ("static_persistent-8192-8192-torch.bfloat16", 74.66, 76.24, 1),
    ("wrapper_alloc-16384-2048-torch.bfloat16", 150.9, 44.16, 3),
)


def _severity(g: float | None) -> Severity | None:
    if g is None:
        return None
    if g <= 1.05:
        return "DONE"
    if g <= 1.10:
        return "MILD_GAP"
    if g <= 1.50:
        return "MODERATE_GAP"
    return "LARGE_GAP"


def _table(kernel: str, rows: list[RatioRow]) -> RatioTable:
    ok = [r.ratio for r in rows if r.ratio is not None]
    g = math.exp(sum(math.log(x) for x in ok) / len(ok)) if ok else None
    sev = _severity(g)
    if any(r.status != "OK" for r in rows) and ok:
        sev = "MISSING_DATA"
    verdict = "BLOCKED" if not ok else ("DONE" if sev == "DONE" else "INVESTIGATE")
    ci = (g * 0.97, g * 1.03) if g else None  # synthetic CI (±3%)
    return RatioTable(
        kernel=kernel,
        rows=rows,
        geomean=g,
        severity=sev,
        verdict=verdict,  # type: ignore[arg-type]
        geomean_ci=ci,
        inconclusive=bool(ci and ci[0] <= 1.05 < ci[1]),
        notes=["SYNTHETIC data (pinned gpu.md §4 medians; CIs synthetic)"],
    )


def pinned_table(kernel: str = "rms_norm") -> RatioTable:
    """4 matched rows with real medians + 1 NA row (synthetic failure)."""
    rows: list[RatioRow] = []
    for params, cand_us, base_us, launches in _PINNED:
        ratio = cand_us / base_us
        rows.append(
            RatioRow(
                FUNC,
                params,
                params.split("-")[0],
                "triton",
                base_us / 1000,
                cand_us / 1000,
                ratio,
                "OK",
                ci_low=ratio * 0.98,
                ci_high=ratio * 1.02,
                candidate_launches=launches,
                baseline_launches=1,
            )
        )
    rows.append(
        RatioRow(
            FUNC,
            "static_persistent-1-65536-torch.bfloat16",
            "static_persistent",
            "triton",
            0.0123,
            None,
            None,
            "NA",
            reason="failed",
        )
    )
    return _table(kernel, rows)


def big_table(n: int, kernel: str = "rms_norm", seed: int = 7) -> RatioTable:
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        m, k = 2 ** rnd.randint(8, 15), 2 ** rnd.randint(8, 13)
        base = m * k * 2 * 2 / 4.3e12 * 1e3 + 0.004  # ms at copy bandwidth + launch floor
        ratio = rnd.lognormvariate(0.02, 0.15)
        variant = ("static_persistent", "persistent")[i % 2]
        rows.append(
            RatioRow(
                FUNC,
                f"{variant}-{m}-{k}-torch.bfloat16-{i}",
                variant,
                "triton",
                base,
                base * ratio,
                ratio,
                "OK",
                ratio * 0.98,
                ratio * 1.02,
                1 + (i % 37 == 0),
                1,
            )
        )
    return _table(kernel, rows)


def _kernel(name: str, t: int, dur: int, cid: int, regs: int, smem: int) -> Launch:
    return Launch(
        "kernel",
        name,
        t,
        t + dur,
        cid,
        grid=(132, 1, 1),
        block=(256, 1, 1),
        registers_per_thread=regs,
        static_smem=0,
        dynamic_smem=smem,
        stream_id=7,
        api_name="cuLaunchKernel",
    )


def pinned_launch_sets(table: RatioTable, calls: int = 4) -> list[LaunchSet]:
    """Launches matching the pinned rows: durations = medians; gaps and ids synthetic."""
    sets: list[LaunchSet] = []
    cid = 1000
    for row in table.rows:
        if row.candidate_ms is None:
            continue
        for backend, total_ms, n in (
            ("cutile", row.candidate_ms, row.candidate_launches or 1),
            (row.baseline_backend or "triton", row.baseline_ms or 0.0, 1),
        ):
            caps = []
            for c in range(calls):
                host = 1_000_000 * (c + 1)
                t = host + 6_000  # ~6 us host launch latency
                launches = []
                if n == 3:  # the allocating wrapper: fill (memset-like) + add + the op
                    launches.append(
                        Launch("memset", "fill", t, t + 2_100, cid, bytes=67_108_864, stream_id=7)
                    )
                    t += 2_100 + 3_000
                    launches.append(_kernel("elementwise_add", t, 21_000, cid + 1, 32, 0))
                    t += 21_000 + 3_000
                    dur = int(total_ms * 1e6) - 2_100 - 21_000
                else:
                    dur = int(total_ms * 1e6)
                regs, smem = (
                    (255, 217_088) if "16384-2048" in row.params and backend == "cutile" else (175, 65_536)
                )
                launches.append(_kernel(f"rms_norm_kernel_{backend}", t, dur, cid + 2, regs, smem))
                cid += 3
                caps.append(CallCapture(c, backend, host, launches[-1].end_ns + 2_000, tuple(launches)))
            sets.append(LaunchSet(f"{row.func_key}[{backend}-{row.params}]", backend, row.params, caps))
    return sets


def many_launches(params: str, total: int, calls: int = 20, seed: int = 3) -> list[LaunchSet]:
    """``total`` launches split over ``calls`` calls x 2 backends (kernel/memcpy/memset mix)."""
    rnd = random.Random(seed)
    per_call = max(1, total // (calls * 2))
    kinds = ("kernel",) * 8 + ("memcpy", "memset")
    out = []
    for backend in ("cutile", "triton"):
        caps = []
        for c in range(calls):
            host = c * 10_000_000_000
            t = host + 5_000
            launches = []
            for i in range(per_call):
                d = rnd.randint(1_000, 30_000)
                kind = kinds[i % len(kinds)]
                launches.append(
                    Launch(
                        kind,  # type: ignore[arg-type]
                        f"k{i % 13}",
                        t,
                        t + d,
                        i,
                        grid=(64, 1, 1),
                        block=(128, 1, 1),
                        registers_per_thread=64,
                    )
                )
                t += d + rnd.randint(200, 4_000)
            caps.append(CallCapture(c, backend, host, t, tuple(launches)))
        out.append(LaunchSet(f"{FUNC}[{backend}-{params}]", backend, params, caps))
    return out


def ir_text(lines: int, *, generated: bool = False, seed: int = 11) -> str:
    """Tile-IR-shaped text (``entry @…`` dump style, gpu.md §2); generated side has diffs."""
    rnd = random.Random(seed)
    hints = "<sm_90 = {occupancy = 2, num_cta_in_cga = 1}>" if not generated else "<default = {}>"
    out = [f"entry @rms_norm_kernel(%arg0: tile<ptr<bf16>>, %arg1: i32) optimization_hints={hints} {{"]
    ops = ("load_view_tko", "mulf", "addf", "reduce", "rsqrt", "store_view_tko", "select", "ftof")
    for i in range(1, lines - 1):
        op = ops[i % len(ops)]
        lat = 3 if generated and i % 48 == 0 else 10  # a changed latency hint every 48 lines
        extra = f" optimization_hints = <sm_90 = {{latency = {lat}}}>" if op.startswith("load") else ""
        if generated and i % 211 == 0:
            out.append(f"  %t{i} = ftof %v{i - 1} : tile<128xf32> -> tile<128xbf16>")
        out.append(
            f"  %v{i} = {op} %v{max(0, i - 1)}, %arg1 : tile<{128 * (1 + rnd.randint(0, 1))}xf32>{extra}"
        )
    out.append("}")
    return "\n".join(out) + "\n"


def write_ir_pair(directory: Path, lines: int) -> tuple[Path, Path]:
    """Bench helper: write the synthetic pair to files (bench measures real loading too)."""
    directory.mkdir(parents=True, exist_ok=True)
    ref, gen = directory / "reference.mlir", directory / "generated.mlir"
    ref.write_text(ir_text(lines))
    gen.write_text(ir_text(lines, generated=True))
    return ref, gen


#: SYNTHETIC argnames of the pinned rows' params strings (variant-M-N-dtype), for the SOL column
PINNED_ARGNAMES = ("variant", "m", "n", "dtype")


PROBED = ("static_persistent-16384-2048-torch.bfloat16", "wrapper_alloc-16384-2048-torch.bfloat16")


def pinned_probes() -> dict[tuple[str, str], Any]:
    """ncu probes of the pinned 16384x2048 rows (candidate ``cutile``, reference ``triton``): the main
    kernel, the same in both rows (the hot-path wrapper adds launches around it). Durations, registers,
    shared memory and block are the real gpu.md §4 H200 numbers of rms_norm 16384x2048 bf16; the DRAM
    bytes are that shape's compulsory traffic; occupancy, SM/tensor throughput and the grid are
    SYNTHETIC."""
    out: dict[tuple[str, str], Any] = {}
    for params in PROBED:
        out.update(_probes_of(params))
    return out


def _probes_of(params: str) -> dict[tuple[str, str], Any]:
    from cutile_workbench.evidence.ncu import ProbeResult

    moved = (16384 * 2048 * 2 + 2048 * 2, 16384 * 2048 * 2)

    def probe(backend: str, us: float, regs: int, smem: int, occ: float, sm: float) -> ProbeResult:
        return ProbeResult(
            backend,
            params,
            f"rms_norm_kernel_{backend}",
            us * 1e3,
            float(moved[0]),
            float(moved[1]),
            sum(moved) / (us * 1e-6),
            sum(moved) / (us * 1e-6) / 4.8e12 * 100,
            occ,
            12.5,
            regs,
            0.0,
            0.0,
            0.0,
            0.0,
            0,
            smem,
            (132, 1, 1),
            (256, 1, 1),
            sm,
            0.0,
            device="NVIDIA H200",
            csv=f"workbench/probes/{backend}-{params}.csv",
        )

    return {
        ("cutile", params): probe("cutile", 82.78, 255, 217_088, 11.9, 38.2),
        ("triton", params): probe("triton", 44.16, 175, 65_536, 12.3, 61.5),
    }


def pinned_sol(table: RatioTable) -> dict[tuple[str, str], Any]:
    """The SOL column of the pinned rows: the rms_norm work model at the pinned medians on the H200
    (measured peaks of gpu.md); the params strings' names are :data:`PINNED_ARGNAMES`."""
    from cutile_workbench.evidence.gpu import gpu_facts
    from cutile_workbench.evidence.sol import row_sol

    gpu = gpu_facts({"gpu": "NVIDIA H200"})
    out = {}
    for row in table.rows:
        sr = row_sol(row, "rms_norm", gpu, argnames=PINNED_ARGNAMES, candidate_backend="cutile")
        if sr is not None:
            out[(row.func_key, row.params)] = sr
    return out
