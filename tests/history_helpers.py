"""Run-history test data: the REAL recorded matmul session, plus SYNTHETIC follow-up runs derived from it.

REAL: ``cutile_workbench/profiles/tilegym/session/matmul`` (TileGym's own matmul ``test_perf``, real cutile-rs vs
cuTile on the H200, 2026-12-01), imported as shipped: its two runs are the first point of every
series.

SYNTHETIC (labelled as such wherever used): later runs made from that session's **real raw
samples** — each config's samples bootstrap-resampled (seeded) and multiplied by a chosen factor —
under hand-written provenances (later dates, clocks, a driver update, a throttled run), appended
to the store the way the runner appends a live run (``HistoryStore.add``). They exist because no
repository data holds two workbench-harness runs of one config; the statistics they exercise are
tested against scipy in ``test_history_regress.py``.
"""

from __future__ import annotations

import calendar
import hashlib
import random
import shutil
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.history.entries import ConfigResult, RunEntry
from cutile_workbench.history.provenance import HarnessInfo, Provenance
from cutile_workbench.history.provenance.gpu import ClockSnapshot, GpuIdentity
from cutile_workbench.history.query import open_history
from cutile_workbench.history.store import HISTORY_FILE, HistoryStore

ROOT = Path(__file__).resolve().parents[1]
RECORDED_TILEGYM = ROOT / "cutile_workbench" / "profiles" / "tilegym" / "session"
#: static_persistent matmul, fp16, 2048³ (params of TileGym's test_perf)
SP_2048 = "True-True-False-False-2048-2048-2048-0-0-torch.float16"
NP_4096 = "True-False-False-False-4096-4096-4096-0-0-torch.float16"


def utc(text: str) -> float:
    return float(calendar.timegm(time.strptime(text, "%Y-%m-%d %H:%M")))


def snapshot(
    at: float, *, sm: int = 1980, reasons: tuple[str, ...] = (), power_violation_ns: int = 0
) -> ClockSnapshot:
    """SYNTHETIC NVML reading of a busy H200 (clocks as gpu.md measured them)."""
    return ClockSnapshot(at, sm, 3201, sm, 1980, reasons, 41, 312.0, 700.0, 0, power_violation_ns, 0)


def provenance(
    at: float,
    *,
    driver: str = "580.159.04",
    sm_end: int = 1980,
    throttle: tuple[str, ...] = (),
    uuid: str = "GPU-8a1b2c3d-synthetic",
) -> Provenance:
    """SYNTHETIC live provenance of one run on the H200 (``throttle``: clock-event reasons at the end)."""
    gpu = GpuIdentity(
        name="NVIDIA H200",
        uuid=uuid,
        pci_bus_id="00000000:19:00.0",
        driver_version=driver,
        cuda_driver_version="13.0",
        mig_mode="disabled",
        mig_pending="disabled",
        selected_by="CUDA_VISIBLE_DEVICES unset (synthetic)",
    )
    return Provenance(
        source="live",
        gpu=gpu,
        before=snapshot(at),
        after=snapshot(at + 60, sm=sm_end, reasons=throttle),
        harness=HarnessInfo("workbench", {"DISABLE_FALLBACK": "1"}),
        tilegym_commit="75a1430" + "0" * 33,
        cutile_rs_lib_sha256="32638302f6eb1d6c8ee4c1d33d21ae403acbdeb73306c12b1beb98f8c05cee4b",
        workbench_version="0.1.0",
        host="h200-node",
        python="3.12.3",
        torch="2.11.0+cu130",
        started_at=at,
        finished_at=at + 60,
    )


def derived_entry(
    base: list[ConfigResult],
    *,
    kernel: str,
    tag: str,
    at: float,
    prov: Provenance,
    scale: Mapping[str, float] | None = None,
    seed: int = 0,
) -> RunEntry:
    """SYNTHETIC run from a real run's configs: samples resampled with replacement, times ``scale[params]``."""
    rng = random.Random(seed)
    configs = []
    for c in base:
        factor = (scale or {}).get(c.params, 1.0)
        samples = tuple(rng.choice(c.samples_ms) * factor for _ in c.samples_ms) if c.samples_ms else None
        median = sorted(samples)[len(samples) // 2] if samples else c.median_ms * factor
        configs.append(replace(c, samples_ms=samples, median_ms=median))
    key = hashlib.sha256(f"synthetic:{kernel}:{tag}".encode()).hexdigest()
    return RunEntry(
        run_key=key,
        kernel=kernel,
        role="candidate",
        source="live",
        recorded_at=at,
        recorded_at_origin="provenance event",
        provenance=prov,
        configs=tuple(configs),
        log_path=f"synthetic/{tag}.txt",
        log_sha256=key,
    )


def copy_matmul(out_root: Path) -> KernelPaths:
    """A writable copy of the REAL recorded matmul session (an out root)."""
    shutil.copytree(RECORDED_TILEGYM / "matmul", out_root / "matmul")
    return KernelPaths.under(out_root, "matmul")


def candidate_configs(store: HistoryStore) -> list[ConfigResult]:
    """The configs of the store's real cutile-rs run."""
    run = next(r for r in store.runs() if "candidate" in r.roles)
    return [c for rid, c in store.configs() if rid == run.run_id]


def matmul_with_followups(out_root: Path) -> KernelPaths:
    """The REAL matmul session (imported into its out root's store) + two SYNTHETIC cutile-rs runs:

    - 2026-12-08 (same driver, clocks steady): static_persistent 2048³ 0.80x (a fix), the rest unchanged;
    - 2026-12-15 after a driver update to 590.44.01, with sw_power_cap at the end and the SM clock
      at 1755 MHz: static_persistent 2048³ 1.12x slower again, the rest unchanged.
    """
    paths = copy_matmul(out_root)
    store, _report = open_history(paths, source="out_root", persist=True)
    with store:
        base = candidate_configs(store)
        week2, week3 = utc("2026-12-08 10:00"), utc("2026-12-15 10:00")
        store.add(
            derived_entry(
                base,
                kernel="matmul",
                tag="week2",
                at=week2,
                prov=provenance(week2),
                scale={SP_2048: 0.80},
                seed=2,
            )
        )
        store.add(
            derived_entry(
                base,
                kernel="matmul",
                tag="week3",
                at=week3,
                prov=provenance(week3, driver="590.44.01", sm_end=1755, throttle=("sw_power_cap",)),
                scale={SP_2048: 0.80 * 1.12},
                seed=3,
            )
        )
    assert (paths.workbench_dir / HISTORY_FILE).is_file()
    return paths
