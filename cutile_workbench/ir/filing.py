"""File the Tile IR a real run dumped, per config, into the kernel dir (``cutile_workbench/ir/``).

Contract: :func:`plan_filing` takes one role's raw log (with ``ir.dumps`` markers), the cuTile dump
dir of that role (``*.tileir`` files) and the kernel name each test's record names, and returns the
files to write plus the index entries; :func:`write_filing` writes them atomically and merges
``workbench/ir/index.json``::

    {"version": 1, "configs": {"<params>": {
        "candidate": {"file": "workbench/ir/candidate/<slug>.mlir", "how": "...", "module": "...",
                      "nodeid": "...", "dialect": "cutile-rs printer"},
        "reference": {"file": "workbench/ir/reference/<slug>.mlir", "how": "...", "entry": "...",
                      "dialect": "tileirdisasm"}}}}

How the IR that RAN is chosen: cutile-rs (candidate) prints every compile; the block of the
autotune config with the lowest median is what the autotuner ran (``dumps.chosen_candidate_ir``),
found in this test or, when the JIT cache made a recompile unnecessary, in an earlier test for the
same autotune config. cuTile Python (reference) writes one file per compile, its entry symbol
carrying every specialization constant; the file whose ``entry @`` symbol equals the kernel name
CUPTI recorded for that config is the one that ran. The ``how`` sentence says which rule applied.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cutile_workbench.artifacts.testids import split_nodeid
from cutile_workbench.ir import dumps

Side = Literal["candidate", "reference"]
_ENTRY = re.compile(r"entry\s+@([A-Za-z0-9_$.]+)")
_SLUG = re.compile(r"[^A-Za-z0-9._-]")
INDEX_RELPATH = "workbench/ir/index.json"


def slug(params: str) -> str:
    """File-name-safe form of a params string (the contract's perf_investigation_{shape} rule)."""
    return _SLUG.sub("_", params) or "config"


def entry_symbol(text: str) -> str | None:
    m = _ENTRY.search(text)
    return m.group(1) if m else None


@dataclass
class Filing:
    files: dict[str, str] = field(default_factory=dict)  # relpath -> text
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)  # params -> {side: entry}
    notes: list[str] = field(default_factory=list)


def _params(nodeid: str) -> str:
    return split_nodeid(nodeid)[2]


def plan_candidate(raw_log: str) -> Filing:
    """cutile-rs side: one file per test that dumped (or inherited) IR."""
    run = dumps.parse(raw_log)
    out = Filing()
    for nodeid in run.tests:
        block, how = dumps.chosen_candidate_ir(run, nodeid)
        params = _params(nodeid)
        if block is None:
            out.notes.append(f"{params}: {how}")
            continue
        rel = f"workbench/ir/candidate/{slug(params)}.mlir"
        out.files[rel] = block.text
        out.entries.setdefault(params, {})["candidate"] = {
            "file": rel,
            "how": how,
            "module": block.module,
            "nodeid": nodeid,
            "log_line": block.line,
            "autotune_config": block.autotune_cfg,
            "dialect": "cutile-rs Tile IR printer (CUTILE_DUMP=ir)",
        }
    return out


def plan_reference(raw_log: str, dump_dir: Path, kernel_names: dict[str, str]) -> Filing:
    """cuTile side: per test, the dump file whose entry symbol is the recorded kernel name."""
    run = dumps.parse(raw_log)
    out = Filing()
    texts: dict[str, str] = {}
    for names in run.tileir_files.values():
        for fname in names:
            p = dump_dir / fname
            if fname not in texts and p.is_file():
                texts[fname] = p.read_text(encoding="utf-8", errors="replace")
    by_entry: dict[str, str] = {}
    for fname, text in texts.items():
        sym = entry_symbol(text)
        if sym:
            by_entry.setdefault(sym, fname)
    for nodeid in run.tests:
        params = _params(nodeid)
        kernel = kernel_names.get(nodeid)
        own = run.tileir_files.get(nodeid, [])
        name: str | None = None
        how = ""
        if kernel and kernel in by_entry:
            name = by_entry[kernel]
            how = "the compile whose entry symbol is the kernel CUPTI recorded for this config " + (
                "(compiled in this test)" if name in own else "(compiled in an earlier test)"
            )
        elif len(own) == 1:
            name, how = own[0], "the only Tile IR compiled in this test (kernel name not matched)"
        if name is None:
            out.notes.append(
                f"{params}: no cuTile dump matches kernel {kernel!r} ({len(own)} compiled in the test)"
            )
            continue
        rel = f"workbench/ir/reference/{slug(params)}.mlir"
        out.files[rel] = texts[name]
        out.entries.setdefault(params, {})["reference"] = {
            "file": rel,
            "how": how,
            "entry": entry_symbol(texts[name]),
            "dump_file": name,
            "nodeid": nodeid,
            "dialect": "cuTile Python tileirdisasm (CUDA_TILE_DUMP_TILEIR)",
        }
    return out


def read_index(kernel_dir: Path) -> dict[str, Any]:
    """``workbench/ir/index.json`` or an empty index; a malformed file raises InputError, one that is not a
    regular file, over its size cap or resolving outside the kernel dir is refused unread."""
    from cutile_workbench.artifacts.confine import read_regular_text
    from cutile_workbench.errors import InputError
    from cutile_workbench.infra.jsonutil import loads_located

    p = Path(kernel_dir) / INDEX_RELPATH
    if not (p.exists() or p.is_symlink()):
        return {"version": 1, "configs": {}}
    text = read_regular_text(p, kind="IR index", kernel_dir=kernel_dir)
    data = loads_located(text, str(p))
    if not isinstance(data, dict) or not isinstance(data.get("configs"), dict):
        raise InputError("IR index must be an object with a 'configs' object", path=p, key="configs")
    return data


def index_file(kernel_dir: Path, entry: object, params: str, side: str) -> Path:
    """The IR file one index entry names (``configs[params][side].file``): a relative path that resolves,
    symlinks followed, inside the kernel dir; ``InputError``/``UnsafePath`` naming the index and key otherwise."""
    from cutile_workbench.artifacts.confine import confine_read
    from cutile_workbench.errors import InputError, UnsafePath

    index = Path(kernel_dir) / INDEX_RELPATH
    key = f"configs[{params!r}].{side}.file"
    rel = entry.get("file") if isinstance(entry, dict) else None
    if not isinstance(rel, str) or not rel or "\0" in rel:
        raise InputError("must be a non-empty relative path string", path=str(index), key=key)
    if Path(rel).is_absolute() or ".." in Path(rel).parts:
        raise UnsafePath(
            f"refused: {rel!r} is outside the kernel dir (absolute or '..')", path=str(index), key=key
        )
    target = Path(kernel_dir) / rel
    try:
        confine_read(kernel_dir, target)
    except UnsafePath as exc:
        raise UnsafePath(f"{rel!r}: {exc.message}", path=str(index), key=key) from None
    return target


def merge_index(index: dict[str, Any], filing: Filing) -> dict[str, Any]:
    configs = dict(index.get("configs", {}))
    for params, sides in filing.entries.items():
        merged = dict(configs.get(params, {}))
        merged.update(sides)
        configs[params] = merged
    return {"version": 1, "configs": dict(sorted(configs.items()))}


def write_filing(kernel_dir: Path, filing: Filing) -> list[Path]:
    """Write the IR files and the merged index atomically (temp file + rename per file)."""
    from cutile_workbench.infra.atomicio import atomic_write_bytes

    root = Path(kernel_dir)
    index = merge_index(read_index(root), filing)
    written = []
    for rel, text in sorted(filing.files.items()):
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(dest, text.encode("utf-8"), root)
        written.append(dest)
    dest = root / INDEX_RELPATH
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(dest, (json.dumps(index, indent=1, sort_keys=True) + "\n").encode(), root)
    written.append(dest)
    return written
