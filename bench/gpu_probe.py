"""Probe the GPU node before measuring: versions, libcupti, demangler, and one raw CUPTI trace.

Prints what a failed later step needs for diagnosis: per-kind record counts, whether runtime and
driver records share correlation ids, and how a Triton launch, a torch op and a copy are seen.
"""

from __future__ import annotations

import collections
import ctypes
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    import torch

    info = {
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0),
        "c++filt": shutil.which("c++filt"),
        "python": sys.version.split()[0],
    }
    try:
        lib = ctypes.CDLL("libcupti.so.13", mode=getattr(ctypes, "RTLD_NOLOAD", 4))
        v = ctypes.c_uint32()
        lib.cuptiGetVersion(ctypes.byref(v))
        info["libcupti_api_version"] = v.value
    except OSError as exc:
        info["libcupti_api_version"] = f"not loaded: {exc}"
    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm", "--format=csv,noheader"],
        capture_output=True,
        text=True,
    )
    info["nvidia_smi"] = smi.stdout.strip()
    print(json.dumps(info, indent=1))

    from cupti import cupti

    from cutile_workbench.profiles.rms_norm import kernels_triton

    x = torch.randn((4096, 1024), dtype=torch.bfloat16, device="cuda")
    w = torch.randn((1024,), dtype=torch.bfloat16, device="cuda")
    kernels_triton.rms_norm(x, w, 1e-5)
    torch.cuda.synchronize()
    recs: list = []

    def done(records: list) -> None:
        for r in records:
            d = {"kind": int(r.kind), "cid": int(r.correlation_id), "start": int(r.start), "end": int(r.end)}
            if hasattr(r, "name"):
                d["name"] = str(r.name)[:60]
            if hasattr(r, "cbid"):
                d["cbid"] = int(r.cbid)
            recs.append(d)

    cupti.activity_register_callbacks(lambda: (8 << 20, 0), done)
    for k in (10, 5, 4, 1, 2):
        cupti.activity_enable(k)
    t0 = cupti.get_timestamp()
    kernels_triton.rms_norm(x, w, 1e-5)
    torch.zeros_like(x).add_(x)
    x.clone()
    torch.cuda.synchronize()
    t1 = cupti.get_timestamp()
    cupti.activity_flush_all(1)
    for k in (10, 5, 4, 1, 2):
        cupti.activity_disable(k)
    print("window", t0, t1, "records", collections.Counter(r["kind"] for r in recs))
    by_cid = collections.defaultdict(list)
    for r in recs:
        by_cid[r["cid"]].append(r["kind"])
    print("ids with several API kinds:", sum(1 for v in by_cid.values() if 4 in v and 5 in v))
    for r in sorted(recs, key=lambda r: r["start"]):
        if r["kind"] in (10, 1, 2) or (r["kind"] in (4, 5) and t0 <= r["start"] <= t1):
            name = (
                r.get("name")
                or cupti.get_callback_name(
                    cupti.CallbackDomain.RUNTIME_API if r["kind"] == 5 else cupti.CallbackDomain.DRIVER_API,
                    r["cbid"],
                )
                if r["kind"] in (4, 5)
                else r.get("name")
            )
            print(
                f"  kind={r['kind']:>2} cid={r['cid']:>6} start-t0={r['start'] - t0:>9} dur={r['end'] - r['start']:>7} {name}"
            )
    dropped = ctypes.c_size_t(0)
    cupti.activity_get_num_dropped_records(0, 0, ctypes.addressof(dropped))
    print("dropped", dropped.value)


if __name__ == "__main__":
    main()
