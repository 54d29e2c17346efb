"""Plant three wrapper bugs of different classes in a COPY of TileGym's real cutile-rs wrappers (issue 32).

Usage (GPU machine, on a copy, never on the tracked tree):

    python bench/plant_bugs.py TILEGYM_COPY --out planted.json

Bugs, one per kernel and class, each a one-line edit of the real wrapper:

- ``silu_and_mul`` **canary**: a default-config ``_run_ffi`` launch right above ``autotune_launch`` on
  every call (an extra main-kernel launch per call);
- ``matmul`` **hot-path allocation**: the output of ``launch_with_cfg`` (inside the autotuned
  ``kernel_fn``) made with ``torch.zeros`` instead of ``torch.empty`` (a fill kernel per call);
- ``bmm`` **fallback**: batches of 8 or more (no transpose) routed to ``torch.bmm`` (cuBLAS) instead of
  the FFI kernel, which accepts the shape (the q=2 rows keep the real, unmodified path).

Writes ``--out``: per bug the file (TileGym-relative), the planted line number and its text, so a
GPU step can check that F names exactly that line. Exit 2 (message on stderr) when an anchor line is
not found; nothing is written then.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

BUGS = (
    {
        "kernel": "silu_and_mul",
        "class": "canary",
        "file": "src/tilegym/ops/cutile_rs/silu_and_mul.py",
        "anchor": "    result = autotune_launch(\n",
        "insert_before": "    _run_ffi(torch.empty((n_rows, hidden_size), device=x.device, dtype=x.dtype), x2, block_size, configs[0])  # PLANTED canary\n",
    },
    {
        "kernel": "matmul",
        "class": "hot_path_alloc",
        "file": "src/tilegym/ops/cutile_rs/matmul.py",
        "anchor": "        out = torch.empty((m, n), device=a.device, dtype=out_dtype)\n",
        "replace": "        out = torch.zeros((m, n), device=a.device, dtype=out_dtype)  # PLANTED hot-path allocation\n",
    },
    {
        "kernel": "bmm",
        "class": "fallback",
        "file": "src/tilegym/ops/cutile_rs/bmm.py",
        "anchor": "    configs = _persistent_configs() if persistent else _non_persistent_configs()\n",
        "insert_before": "    if q >= 8 and not transpose_a and not transpose_b:\n        return torch.bmm(a, b)  # PLANTED fallback\n",
    },
)


def plant(root: Path) -> list[dict[str, object]]:
    texts: dict[Path, str] = {}
    planted: list[dict[str, object]] = []
    for bug in BUGS:
        path = root / str(bug["file"])
        text = texts.get(path) or path.read_text()
        anchor = str(bug["anchor"])
        if text.count(anchor) != 1:
            raise SystemExit(f"plant_bugs: anchor not found once in {path}: {anchor.strip()!r}")
        head = text[: text.index(anchor)]
        if "replace" in bug:
            new = str(bug["replace"])
            text = text.replace(anchor, new)
            line = head.count("\n") + 1
        else:
            new = str(bug["insert_before"])
            text = text.replace(anchor, new + anchor)
            line = head.count("\n") + new.count("\n")  # the planted line is the last inserted one
        texts[path] = text
        planted.append(
            {
                "kernel": bug["kernel"],
                "class": bug["class"],
                "file": bug["file"],
                "line": line,
                "code": new.rstrip("\n").split("\n")[-1].strip(),
            }
        )
    for path, text in texts.items():
        path.write_text(text)
    return planted


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("tilegym")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    try:
        planted = plant(Path(args.tilegym))
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    Path(args.out).write_text(json.dumps(planted, indent=1))
    for p in planted:
        print(f"{p['kernel']} {p['class']}: {p['file']}:{p['line']} {p['code']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
