"""The compile toolchain of a run: tileiras, ptxas, the cutile-rs crates, cuda-tile (issue 36).

Contract:
- :func:`toolchain_facts` returns ``(facts, unknown)``: ``facts`` maps a key of :data:`TOOLCHAIN_KEYS`
  to the version string found (``tileiras``, ``ptxas``: the tool's own ``--version`` line;
  ``cutile_rs``: the ``cutile`` crate's version from the kernels crate's ``Cargo.lock``, else the
  pin in its ``Cargo.toml``; ``cutile_rs_commit``: the git commit of a ``git+…#sha`` source in
  ``Cargo.lock``; ``cuda_tile``: the installed ``cuda-tile`` distribution), ``unknown`` says why a
  key has no value. Nothing is guessed and it never raises: a missing tool is an ``unknown`` entry.
- Tools are found as TileGym finds them: ``$CUTILE_TILEIRAS_PATH``, else ``$TILEIRAS_BIN``, else
  ``tileiras`` on ``PATH``; ``ptxas`` in ``$CUDA_HOME/bin`` (the folder tileiras needs), else on
  ``PATH``. Each ``--version`` runs with a 20 s limit; the version is its line that names a release
  or version (ptxas: ``Cuda compilation tools, release 13.4, V13.4.92``), else its last line.
- :func:`session_provenance` is the block ``session.json`` records per run role: the toolchain,
  TileGym commit, torch, CUDA, driver and cupti of the run's provenance, ``unknown`` saying why a
  value is missing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

#: the toolchain facts a run records, in the order they are shown
TOOLCHAIN_KEYS: tuple[str, ...] = ("tileiras", "ptxas", "cutile_rs", "cutile_rs_commit", "cuda_tile", "cupti")
#: the cutile-rs kernels crate of a TileGym tree (TileGym's ``backend/cutile_rs/utils.py``)
KERNELS_CRATE = Path("src/tilegym/ops/cutile_rs/cutile_kernels")
_VERSION_TIMEOUT_S = 20.0


def find_tileiras(env: Mapping[str, str]) -> str | None:
    for key in ("CUTILE_TILEIRAS_PATH", "TILEIRAS_BIN"):
        if env.get(key):
            return env[key]
    return shutil.which("tileiras", path=env.get("PATH"))


def find_ptxas(env: Mapping[str, str]) -> str | None:
    cuda_home = env.get("CUDA_HOME")
    if cuda_home and (Path(cuda_home) / "bin" / "ptxas").is_file():
        return str(Path(cuda_home) / "bin" / "ptxas")
    return shutil.which("ptxas", path=env.get("PATH"))


def tool_version(exe: str) -> tuple[str | None, str]:
    """The version line of ``exe --version`` (see the module contract), or None and why."""
    try:
        proc = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=_VERSION_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{exe} --version failed ({exc})"
    lines = [ln.strip() for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        return None, f"{exe} --version exited {proc.returncode}"
    named = [ln for ln in lines if re.search(r"\b(release|version)\b", ln, re.IGNORECASE)]
    return (named or lines)[-1][:200], ""


_LOCK_PACKAGE = re.compile(
    r'\[\[package\]\]\s*\nname = "([^"]+)"\s*\nversion = "([^"]+)"(?:\s*\nsource = "([^"]*)")?'
)
_TOML_PIN = re.compile(r'^\s*cutile\s*=\s*(?:"=?([^"]+)"|\{[^}]*version\s*=\s*"=?([^"]+)")', re.MULTILINE)


def cutile_rs_version(tilegym_dir: Path, env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``cutile_rs`` (and ``cutile_rs_commit`` for a git source) of the TileGym tree's kernels crate."""
    crate = (
        Path(env["CUTILE_RS_KERNELS_DIR"])
        if env.get("CUTILE_RS_KERNELS_DIR")
        else tilegym_dir / KERNELS_CRATE
    )
    facts: dict[str, str] = {}
    unknown: dict[str, str] = {}
    lock = crate / "Cargo.lock"
    try:
        for name, version, source in _LOCK_PACKAGE.findall(
            lock.read_text(encoding="utf-8", errors="replace")
        ):
            if name == "cutile":
                facts["cutile_rs"] = version
                if source.startswith("git+") and "#" in source:
                    facts["cutile_rs_commit"] = source.rsplit("#", 1)[1]
                break
    except OSError:
        pass
    if "cutile_rs" not in facts:
        try:
            pin = _TOML_PIN.search((crate / "Cargo.toml").read_text(encoding="utf-8", errors="replace"))
        except OSError as exc:
            unknown["cutile_rs"] = (
                f"no cutile-rs kernels crate ({crate / 'Cargo.toml'}: {exc.strerror or exc})"
            )
        else:
            if pin:
                facts["cutile_rs"] = pin.group(1) or pin.group(2)
            else:
                unknown["cutile_rs"] = f"no cutile dependency in {crate / 'Cargo.toml'}"
    if "cutile_rs_commit" not in facts:
        unknown["cutile_rs_commit"] = (
            "crates.io release (no git source in Cargo.lock)"
            if "cutile_rs" in facts
            else "no cutile-rs crate"
        )
    return facts, unknown


def toolchain_facts(
    *, tilegym_dir: Path | None, env: Mapping[str, str] | None = None, cuda_tile: str | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """See the module contract; ``cuda_tile`` is the version the caller's Python has (None: not installed)."""
    env = os.environ if env is None else env
    facts: dict[str, str] = {}
    unknown: dict[str, str] = {}
    for key, exe in (("tileiras", find_tileiras(env)), ("ptxas", find_ptxas(env))):
        if exe is None:
            unknown[key] = (
                f"{key} not found (PATH{', CUDA_HOME' if key == 'ptxas' else ', CUTILE_TILEIRAS_PATH'})"
            )
            continue
        version, why = tool_version(exe)
        if version is None:
            unknown[key] = why
        else:
            facts[key] = version
    if tilegym_dir is None:
        for key in ("cutile_rs", "cutile_rs_commit"):
            unknown[key] = "not a TileGym run"
    else:
        got, why_not = cutile_rs_version(tilegym_dir, env)
        facts.update(got)
        unknown.update(why_not)
    if cuda_tile is None:
        unknown["cuda_tile"] = "no installed cuda-tile distribution"
    else:
        facts["cuda_tile"] = cuda_tile
    return facts, unknown


def session_provenance(prov: object) -> dict[str, object]:
    """What ``session.json`` records of a run's provenance (issue 36): the toolchain, TileGym commit,
    torch, CUDA, driver and cupti, each a value or ``None`` with ``unknown`` saying why."""
    from cutile_workbench.history.provenance import Provenance

    if not isinstance(prov, Provenance):
        return {"recorded": False, "why": "no provenance event from the pytest child"}
    gpu = prov.gpu
    out: dict[str, object] = {
        "tilegym_commit": prov.tilegym_commit,
        "torch": prov.torch,
        "torch_cuda": prov.torch_cuda,
        "driver": gpu.driver_version if gpu else None,
        "cuda_driver": gpu.cuda_driver_version if gpu else None,
        **{key: prov.toolchain.get(key) for key in TOOLCHAIN_KEYS},
    }
    unknown = {
        key: prov.unknown.get(key)
        or prov.unknown.get(f"toolchain.{key}")
        or (prov.unknown.get("gpu") if key in ("driver", "cuda_driver") else None)
        or "not recorded"
        for key, value in out.items()
        if value is None
    }
    return {**out, "unknown": unknown}
