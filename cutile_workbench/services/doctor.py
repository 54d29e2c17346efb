"""``doctor``: is this machine ready for a run, and if not, the exact fix (issue 36).

Contract:
- :func:`diagnose` runs every check of :data:`CHECK_ORDER`, in the order a run needs them: the GPU
  and driver (``nvidia-smi``), the child Python (it starts), torch + CUDA and NVML (``pynvml``) in it, cupti-python
  against the CUDA torch was built for, pytest and TileGym importable in it, the TileGym tree and
  its commit, cuda.tile test-imported in the child (a warn: only the cuTile baselines need it), the
  cutile-rs build (crate version, ``libcutile_kernels.so`` and, where ``cuobjdump`` can tell, the GPU
  arches it embeds against the GPU's; "cannot tell" otherwise), tileiras and ptxas (a
  ptxas older than tileiras fails: tileiras compiles through it),
  ncu and the perf-counter permission, SLURM (only when asked). It returns a :class:`DoctorReport`
  of :class:`Check` rows; it never raises and writes nothing.
- A :class:`Check` is ``ok`` (``detail`` = what was found), ``fail`` (a run that needs it cannot
  work), ``warn`` (it runs, with less evidence: no CUPTI records, no ncu probe), or ``skip`` (not
  asked for: no TileGym checkout, no ``--slurm``). Every ``fail`` and ``warn`` row has ``fix``: the
  command line or setting that repairs it, spelled with this machine's paths.
- :func:`preflight` is what ``run``, the TUI's ``L`` and ``G``, ``probe`` and ``report f
  --demonstrate`` call before any GPU work or write: only the checks that command needs
  (:data:`NEEDS`), cheapest first, and the first failing :class:`Check` (None: go ahead). The
  faces refuse with :meth:`Check.line` (exit 2). It imports no torch in the child (``find_spec``
  only), so it costs one short child process.
- :func:`rerun_refusal` is the TUI's form (``L``, ``G``): ``""`` when the re-run may start, else the
  line to show (``FAIL pytest in the child: … — fix: …``).
- The child is probed with one ``PY -c`` script that prints JSON (:data:`_CHILD_PROBE`); its
  environment is this process's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from cutile_workbench.gpu.smi import query_gpu, run_nvidia_smi
from cutile_workbench.history.provenance import CUTILE_RS_LIB, read_git_commit
from cutile_workbench.history.provenance.toolchain import (
    KERNELS_CRATE,
    cutile_rs_version,
    find_ptxas,
    find_tileiras,
    tool_version,
)

Status = Literal["ok", "fail", "warn", "skip"]

#: the checks in the order a run needs them (the keys of :class:`Check`)
CHECK_ORDER: tuple[str, ...] = (
    "gpu",
    "python",
    "torch",
    "nvml",
    "cupti",
    "pytest",
    "tilegym-import",
    "cuda-tile",
    "tilegym",
    "cutile-rs",
    "tileiras",
    "ptxas",
    "ncu",
    "slurm",
)
#: the checks each GPU-running command needs before it starts (``preflight``)
NEEDS: Mapping[str, tuple[str, ...]] = {
    "run": ("python", "pytest"),
    "rerun": ("python", "pytest"),  # the TUI's L and G
    "probe": ("python", "pytest"),
    "demonstrate": ("tilegym", "python", "pytest", "gpu"),
}
#: the cupti-python matching torch's CUDA major (the ``gpu`` extra pins the 13.0 one)
CUPTI_PIN = {"13": "cupti-python==13.0.1"}
_CHILD_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Check:
    """One line of the doctor: what was checked, the answer, and (fail/warn) the exact fix."""

    key: str
    title: str
    status: Status
    detail: str
    fix: str | None = None

    def line(self) -> str:
        """``FAIL pytest: not importable in /x/python — fix: /x/python -m pip install pytest``."""
        text = f"{self.status.upper():4s} {self.title}: {self.detail}"
        return text + (f" — fix: {self.fix}" if self.fix else "")


@dataclass(frozen=True)
class DoctorRequest:
    python: str = sys.executable
    tilegym: Path | None = None
    slurm: bool = False
    env: Mapping[str, str] | None = None  # None: os.environ


@dataclass(frozen=True)
class DoctorReport:
    checks: tuple[Check, ...]
    python: str
    tilegym: str | None = None
    facts: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == "fail")

    def to_dict(self) -> dict[str, Any]:
        return {
            "python": self.python,
            "tilegym": self.tilegym,
            "ready": not self.failed,
            "checks": [asdict(c) for c in self.checks],
            "facts": dict(self.facts),
        }


# The child's facts, printed as one JSON object. ``import torch`` only when asked (argv[1] == "1").
_CHILD_PROBE = r"""
import importlib.util, json, sys
from importlib import metadata
out = {"python": sys.version.split()[0], "executable": sys.executable, "modules": {}, "dists": {}}
for m in ("pytest", "tilegym", "cupti", "cuda.tile", "pynvml"):
    try:
        out["modules"][m] = importlib.util.find_spec(m) is not None
    except Exception:
        out["modules"][m] = False
for d in ("pytest", "torch", "cupti-python", "cuda-tile", "tilegym"):
    try:
        out["dists"][d] = metadata.version(d)
    except Exception:
        out["dists"][d] = None
if sys.argv[1:] == ["1"]:
    try:
        import cuda.tile
        out["cuda_tile_import"] = {"ok": True, "version": getattr(cuda.tile, "__version__", None)}
    except BaseException as exc:
        out["cuda_tile_import"] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    try:
        import torch
        out["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda,
                        "available": bool(torch.cuda.is_available())}
    except Exception as exc:
        out["torch"] = {"error": f"{type(exc).__name__}: {exc}"}
sys.stdout.write(json.dumps(out))
"""


def probe_child(
    python: str, *, import_torch: bool, env: Mapping[str, str]
) -> tuple[dict[str, Any] | None, str]:
    """The child Python's facts (:data:`_CHILD_PROBE`), or None and why it could not be read."""
    try:
        proc = subprocess.run(
            [python, "-c", _CHILD_PROBE, "1" if import_torch else "0"],
            capture_output=True,
            text=True,
            timeout=_CHILD_TIMEOUT_S,
            env=dict(env),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"cannot run {python} ({exc})"
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"{python} exited {proc.returncode}: {tail[:200]}"
    return (data, "") if isinstance(data, dict) else (None, f"{python} printed no facts")


def _python_check(python: str, child: dict[str, Any] | None, why: str) -> Check:
    if child is None:
        return Check(
            "python",
            "child Python",
            "fail",
            why,
            f"pass the Python that has torch and pytest: --python /path/to/venv/bin/python (now {python})",
        )
    return Check(
        "python", "child Python", "ok", f"{child.get('executable') or python} (Python {child.get('python')})"
    )


def _pytest_check(python: str, child: dict[str, Any]) -> Check:
    if child.get("modules", {}).get("pytest"):
        return Check(
            "pytest", "pytest in the child", "ok", f"pytest {child.get('dists', {}).get('pytest') or '?'}"
        )
    return Check(
        "pytest",
        "pytest in the child",
        "fail",
        f"pytest is not importable in {python} (every run is a pytest child)",
        f"{python} -m pip install pytest",
    )


def _gpu_check() -> tuple[Check, str | None]:
    lines = query_gpu("name,driver_version,compute_cap", timeout_s=20)
    if lines:
        parts = [p.strip() for p in lines[0].split(",")]
        name, driver = parts[0], parts[1] if len(parts) > 1 else "?"
        cap = parts[2] if len(parts) > 2 else None
        more = f" (+{len(lines) - 1} more)" if len(lines) > 1 else ""
        arch = f", sm_{cap.replace('.', '')}" if cap else ""
        return Check("gpu", "GPU and driver", "ok", f"{name}{more}, driver {driver}{arch}"), cap
    proc, why = run_nvidia_smi(["-L"], timeout_s=20)
    detail = why or f"nvidia-smi -L exited {proc.returncode if proc else '?'}"
    return (
        Check(
            "gpu",
            "GPU and driver",
            "fail",
            f"no GPU visible: {detail}",
            "run on a GPU node (an NVIDIA driver with nvidia-smi on PATH); here, open a recorded session: "
            "cutile-workbench matmul",
        ),
        None,
    )


def _torch_check(python: str, child: dict[str, Any]) -> Check:
    t = child.get("torch") or {}
    if "error" in t or not t:
        return Check(
            "torch",
            "torch + CUDA in the child",
            "fail",
            f"torch is not importable in {python} ({t.get('error', 'not probed')})",
            f"{python} -m pip install torch --index-url https://download.pytorch.org/whl/cu130",
        )
    if not t.get("available"):
        return Check(
            "torch",
            "torch + CUDA in the child",
            "fail",
            f"torch {t.get('version')} (CUDA {t.get('cuda')}): torch.cuda.is_available() is False",
            "install a CUDA build of torch that this driver supports: "
            f"{python} -m pip install torch --index-url https://download.pytorch.org/whl/cu130",
        )
    return Check(
        "torch", "torch + CUDA in the child", "ok", f"torch {t.get('version')}, CUDA {t.get('cuda')}"
    )


def _nvml_check(python: str, child: dict[str, Any]) -> Check:
    if child.get("modules", {}).get("pynvml"):
        return Check(
            "nvml", "NVML in the child", "ok", "pynvml importable (clocks, throttling, GPU identity)"
        )
    return Check(
        "nvml",
        "NVML in the child",
        "warn",
        "pynvml is not importable: no clock or throttle readings, the run's GPU and driver not recorded",
        f"{python} -m pip install nvidia-ml-py",
    )


def _cupti_check(python: str, child: dict[str, Any]) -> Check:
    cuda = str((child.get("torch") or {}).get("cuda") or "")
    major = cuda.split(".")[0] if cuda else ""
    pin = CUPTI_PIN.get(major, "cupti-python")
    version = child.get("dists", {}).get("cupti-python")
    if not child.get("modules", {}).get("cupti") or version is None:
        return Check(
            "cupti",
            "cupti-python",
            "warn",
            "not installed: the harness falls back to torch.profiler, then CUDA events (no launch records)",
            f"{python} -m pip install {pin}",
        )
    if major and not str(version).startswith(major + "."):
        return Check(
            "cupti",
            "cupti-python",
            "warn",
            f"cupti-python {version} does not match the libcupti of torch's CUDA {cuda}",
            f"{python} -m pip install {pin}",
        )
    return Check(
        "cupti", "cupti-python", "ok", f"cupti-python {version}" + (f" (torch CUDA {cuda})" if cuda else "")
    )


def _cuda_tile_check(python: str, child: dict[str, Any]) -> Check:
    """cuda.tile imported in the child (cuTile Python: the reference backend the baselines run)."""
    got = child.get("cuda_tile_import") or {}
    fix = f"{python} -m pip install cuda-tile"
    if got.get("ok"):
        version = got.get("version") or (child.get("dists") or {}).get("cuda-tile") or "(version unknown)"
        return Check("cuda-tile", "cuda.tile importable", "ok", f"cuda.tile {version} imported")
    if not got:
        why = "cuda.tile not tried (the child did not run the import)"
    elif (child.get("modules") or {}).get("cuda.tile"):
        why = f"cuda.tile is installed in {python} but its import fails: {got.get('error')}"
    else:
        why = f"cuda.tile is not importable in {python}: {got.get('error')}"
    return Check(
        "cuda-tile",
        "cuda.tile importable",
        "warn",
        f"{why} (the cuTile reference baselines cannot run; cutile-rs candidates still can)",
        fix,
    )


#: ``cuobjdump --list-elf LIB``: the GPU code embedded in a host library, or (None, why)
ListElf = Callable[[Path], tuple[str | None, str | None]]


def _cuobjdump_list_elf(lib: Path) -> tuple[str | None, str | None]:
    exe = shutil.which("cuobjdump")
    if exe is None:
        return None, "cuobjdump not on PATH"
    try:
        proc = subprocess.run(
            [exe, "--list-elf", str(lib)],
            capture_output=True,
            text=True,
            timeout=_CHILD_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"cuobjdump failed ({exc})"
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        if "does not contain device code" in proc.stderr:
            return "", None
        return None, f"cuobjdump exited {proc.returncode}: {tail[:160]}"
    return proc.stdout, None


def library_arch_check(lib: Path, compute_cap: str | None, list_elf: ListElf = _cuobjdump_list_elf) -> Check:
    """The built library's embedded GPU code (``cuobjdump --list-elf``) against the GPU's arch. Says
    "cannot tell" when it cannot (no cuobjdump, no embedded cubin: cutile-rs compiles Tile IR at run
    time, no GPU seen); a warn only when the library embeds code for other arches and not this one."""
    listing, why = list_elf(lib)
    if listing is None:
        return Check("cutile-rs", "cutile-rs build", "ok", f"{lib.name} built; arch: cannot tell ({why})")
    arches = sorted({int(m) for m in re.findall(r"\bsm_(\d+)[a-z]?\b", listing)})
    if not arches:
        return Check(
            "cutile-rs",
            "cutile-rs build",
            "ok",
            f"{lib.name} built; arch: cannot tell (no embedded cubin: its kernels are compiled at run time)",
        )
    names = ", ".join(f"sm_{a}" for a in arches)
    if compute_cap is None:
        return Check(
            "cutile-rs",
            "cutile-rs build",
            "ok",
            f"{lib.name} built for {names}; arch: cannot tell (no GPU seen)",
        )
    want = int(compute_cap.replace(".", ""))
    if want in arches:
        return Check(
            "cutile-rs",
            "cutile-rs build",
            "ok",
            f"{lib.name} built for {names}; arch: matches the GPU's sm_{want}",
        )
    return Check(
        "cutile-rs",
        "cutile-rs build",
        "warn",
        f"{lib.name} embeds GPU code for {names} only, the GPU is sm_{want}",
        f"rebuild it on this node (cargo build --release) or for sm_{want}",
    )


def _tilegym_checks(
    tilegym: Path | None,
    python: str,
    child: dict[str, Any] | None,
    env: Mapping[str, str],
    compute_cap: str | None = None,
) -> list[Check]:
    if tilegym is None:
        why = "no --tilegym DIR and $TILEGYM_PATH unset: the built-in profiles run"
        return [
            Check("tilegym-import", "TileGym importable", "skip", why),
            Check("tilegym", "TileGym tree", "skip", why),
            Check("cutile-rs", "cutile-rs build", "skip", why),
        ]
    checks: list[Check] = []
    if child is not None:
        if child.get("modules", {}).get("tilegym"):
            checks.append(
                Check(
                    "tilegym-import",
                    "TileGym importable",
                    "ok",
                    f"tilegym {child['dists'].get('tilegym') or '(source tree)'}",
                )
            )
        else:
            checks.append(
                Check(
                    "tilegym-import",
                    "TileGym importable",
                    "fail",
                    f"tilegym is not importable in {python} (TileGym's tests import it)",
                    f"{python} -m pip install -e {tilegym}",
                )
            )
    if not (tilegym / "tests" / "ops").is_dir():
        checks.append(
            Check(
                "tilegym",
                "TileGym tree",
                "fail",
                f"{tilegym} has no tests/ops/ (not a TileGym checkout)",
                "pass the checkout's root: --tilegym /path/to/TileGym (or export TILEGYM_PATH=…)",
            )
        )
        return checks
    commit, how = _tilegym_commit(tilegym)
    checks.append(
        Check(
            "tilegym",
            "TileGym tree",
            "ok",
            f"{tilegym} at {f'{commit[:12]} ({how})' if commit else f'unknown commit ({how})'}",
        )
    )
    facts, unknown = cutile_rs_version(tilegym, env)
    lib = tilegym / CUTILE_RS_LIB
    crate = tilegym / KERNELS_CRATE
    if "cutile_rs" not in facts:
        checks.append(
            Check(
                "cutile-rs",
                "cutile-rs build",
                "fail",
                unknown.get("cutile_rs", "no crate"),
                f"check out a TileGym with {KERNELS_CRATE}/",
            )
        )
    elif not lib.is_file():
        checks.append(
            Check(
                "cutile-rs",
                "cutile-rs build",
                "fail",
                f"cutile {facts['cutile_rs']}, but {lib} is not built",
                f"cargo build --release --manifest-path {crate / 'Cargo.toml'}",
            )
        )
    else:
        commit_note = f" @ {facts['cutile_rs_commit'][:12]}" if "cutile_rs_commit" in facts else ""
        arch = library_arch_check(lib, compute_cap)
        checks.append(
            Check(
                "cutile-rs",
                "cutile-rs build",
                arch.status,
                f"cutile {facts['cutile_rs']}{commit_note}, {arch.detail}",
                arch.fix,
            )
        )
    return checks


#: the file bench/make_tilegym_trim.sh writes into a trimmed tree (no .git): ``git rev-parse HEAD``
TILEGYM_COMMIT_FILE = "TILEGYM_COMMIT"
_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def _tilegym_commit(tilegym: Path) -> tuple[str | None, str]:
    """(commit, how it was found): the checkout's git HEAD, else a trimmed tree's TILEGYM_COMMIT
    file (one full sha on its first line; anything else is not trusted and said so)."""
    commit, how = read_git_commit(tilegym)
    if commit is not None:
        return commit, how
    marker = tilegym / TILEGYM_COMMIT_FILE
    if not marker.is_file():
        return None, how
    try:
        with marker.open("rb") as fh:
            head = fh.read(200).decode("utf-8", errors="replace")
    except OSError as exc:
        return None, f"{how}; cannot read {marker}: {exc.strerror or exc}"
    first = head.split("\n", 1)[0].strip()
    if _SHA.fullmatch(first):
        return first, f"from {TILEGYM_COMMIT_FILE}: a trimmed tree without .git"
    return None, f"{how}; {marker} holds no commit sha"


def _tool_check(key: str, exe: str | None, fix: str) -> Check:
    if exe is None:
        return Check(key, key, "fail" if key == "tileiras" else "warn", f"{key} not found", fix)
    version, why = tool_version(exe)
    if version is None:
        return Check(key, key, "fail", why, fix)
    return Check(key, key, "ok", f"{exe}: {version}")


def _release(detail: str) -> tuple[int, int] | None:
    """``(13, 4)`` of a ``--version`` line (``release 13.4, V13.4.92``), or None."""
    m = re.search(r"release (\d+)\.(\d+)", detail) or re.search(r"\bV?(\d+)\.(\d+)\.\d+", detail)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _ptxas_for_tileiras(ptxas: Check, tileiras: Check, cuda_home: str) -> Check:
    """tileiras compiles through the ptxas beside it: an older ptxas fails every compile ("failed to compile
    Tile IR program", exit 5, seen with tileiras 13.4 and CUDA 13.0's ptxas on an H200)."""
    if ptxas.status != "ok" or tileiras.status != "ok":
        return ptxas
    have, need = _release(ptxas.detail), _release(tileiras.detail)
    if have is None or need is None or have >= need:
        return ptxas
    return Check(
        "ptxas",
        "ptxas",
        "fail",
        f"{ptxas.detail} is older than tileiras {need[0]}.{need[1]}: every Tile IR compile fails (exit 5)",
        f"export CUDA_HOME={cuda_home} (a folder whose bin/ptxas and libnvvm are {need[0]}.{need[1]}, "
        "e.g. pip's nvidia/cu13)",
    )


def _ncu_check(env: Mapping[str, str]) -> Check:
    ncu = shutil.which("ncu", path=env.get("PATH"))
    if ncu is None:
        return Check(
            "ncu",
            "ncu (probe)",
            "warn",
            "Nsight Compute not on PATH: `probe` prints its command lines only",
            "install Nsight Compute and put ncu on PATH (or pass probe --ncu /path/to/ncu)",
        )
    version, _why = tool_version(ncu)
    params = Path("/proc/driver/nvidia/params")
    try:
        admin_only = "RmProfilingAdminOnly: 1" in params.read_text(encoding="utf-8", errors="replace")
    except OSError:
        admin_only = False
    if admin_only and os.geteuid() != 0:
        return Check(
            "ncu",
            "ncu (probe)",
            "warn",
            f"{ncu} ({version}); the driver restricts perf counters to admin users (ERR_NVGPUCTRPERM)",
            "run probe as root, or load the driver with options nvidia NVreg_RestrictProfilingToAdminUsers=0",
        )
    return Check("ncu", "ncu (probe)", "ok", f"{ncu}: {version}")


def _slurm_check(wanted: bool, env: Mapping[str, str]) -> Check:
    if not wanted:
        return Check("slurm", "SLURM", "skip", "not asked (doctor --slurm)")
    sbatch = shutil.which("sbatch", path=env.get("PATH"))
    if sbatch is None:
        return Check(
            "slurm", "SLURM", "fail", "sbatch not on PATH", "run on a SLURM login node (or drop --slurm)"
        )
    return Check("slurm", "SLURM", "ok", sbatch)


def diagnose(req: DoctorRequest) -> DoctorReport:
    """Every check, in :data:`CHECK_ORDER` (see the module contract)."""
    env = os.environ if req.env is None else req.env
    checks: list[Check] = []
    gpu, cap = _gpu_check()
    checks.append(gpu)
    child, why = probe_child(req.python, import_torch=True, env=env)
    checks.append(_python_check(req.python, child, why))
    if child is not None:
        checks.append(_torch_check(req.python, child))
        checks.append(_nvml_check(req.python, child))
        checks.append(_cupti_check(req.python, child))
        checks.append(_pytest_check(req.python, child))
        checks.append(_cuda_tile_check(req.python, child))
    checks.extend(_tilegym_checks(req.tilegym, req.python, child, env, cap))
    cuda_home = env.get("CUDA_HOME") or "<the folder holding the 13.4 ptxas and libnvvm>"
    checks.append(
        _tool_check(
            "tileiras",
            find_tileiras(env),
            f'{req.python} -m pip install "nvidia-cuda-tileiras>=13.4" and export CUTILE_TILEIRAS_PATH=<its bin/tileiras>',
        )
    )
    tileiras = checks[-1]
    ptxas = _tool_check(
        "ptxas", find_ptxas(env), f"export CUDA_HOME={cuda_home} (tileiras needs its bin/ptxas)"
    )
    checks.append(_ptxas_for_tileiras(ptxas, tileiras, cuda_home))
    checks.append(_ncu_check(env))
    checks.append(_slurm_check(req.slurm, env))
    order = {k: i for i, k in enumerate(CHECK_ORDER)}
    checks.sort(key=lambda c: order[c.key])
    facts = {}
    if child is not None:
        facts = {k: str(v) for k, v in (child.get("dists") or {}).items() if v}
    return DoctorReport(tuple(checks), req.python, str(req.tilegym) if req.tilegym else None, facts)


def preflight(
    command: str, *, python: str, tilegym: Path | None = None, env: Mapping[str, str] | None = None
) -> Check | None:
    """The first failing check that ``command`` (a key of :data:`NEEDS`) needs, or None (see the contract)."""
    env = os.environ if env is None else env
    needs: Collection[str] = NEEDS[command]
    if "tilegym" in needs:
        if tilegym is None:
            return Check(
                "tilegym",
                "TileGym tree",
                "fail",
                f"{command} needs a TileGym checkout and none is known",
                "pass --tilegym /path/to/TileGym (or export TILEGYM_PATH=…)",
            )
        for c in _tilegym_checks(tilegym, python, None, env):
            if c.key == "tilegym" and c.status == "fail":
                return c
    child, why = probe_child(python, import_torch=False, env=env)
    if child is None:
        return _python_check(python, None, why)
    if "pytest" in needs:
        c = _pytest_check(python, child)
        if c.status == "fail":
            return c
    if "gpu" in needs:
        c, _cap = _gpu_check()
        if c.status == "fail":
            return c
    return None


def rerun_refusal(python: str | None = None) -> str:
    """The TUI's preflight of ``L`` and ``G`` (see the module contract): "" or the failing check's line."""
    failing = preflight("rerun", python=python or sys.executable)
    return "" if failing is None else f"not ready to re-run: {failing.line()}"
