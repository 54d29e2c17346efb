"""Speed of light: achieved GB/s or TFLOP/s per config vs the GPU's measured peak.

Contract:
- :func:`shape_of` finds a row's named shape: analysis.json ``test_perf_configs`` entry whose id is
  the row's params string (``{"id": …, "m": 4096, "n": 1024, "dtype": "bfloat16"}``), else the
  params tokens zipped with ``argnames`` (the test's parametrize names in id order:
  :func:`test_argnames` reads them from the TileGym test file with ``ast``, never importing it;
  :func:`recorded_argnames` gives those shipped with a recorded TileGym session).
  Keys are lower-cased; ``torch.`` is dropped from dtypes.
- :func:`work_model` is defined only where the work is well-defined (:data:`FAMILIES`):
  ``silu_and_mul`` (reads B·S·2H, writes B·S·H elements), ``swiglu`` (reads a, b, writes c: 3·B·S·H),
  ``rms_norm`` (reads M·N and the N weights, writes M·N), ``softmax`` (reads and writes M·N) — memory
  bound, the compulsory DRAM traffic; ``matmul`` (2·M·N·K FLOP; A + B + C bytes) and ``bmm``
  (2·Q·M·N·K; Q·(A + B + C)) — compute bound. Anything else (or a shape lacking a dimension or the
  dtype) has no model: None, never a guess.
- :func:`sol_for` computes, for one measured time, achieved bytes/s and FLOP/s and their fractions of
  the **measured** peaks (:mod:`.gpu`); ``sol`` is the larger fraction (the roofline limiter). With an
  ncu probe, the achieved DRAM rate is the probe's own (bytes it really moved / its duration) and the
  peak fraction is ncu's ``dram__throughput`` when no measured peak is known.
- :func:`sol_rows` does that for every matched E row (candidate and reference); :func:`render_sol_section`
  renders them as an extra performance.md section: a heading and a table whose every line starts
  with ``|`` or prose — never ``geomean_ratio=`` or ``VERDICT:``, so the validated lines stay unique.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.testids import split_nodeid
from cutile_workbench.evidence.gpu import GpuFacts
from cutile_workbench.model import RatioRow, RatioTable

ELEMENT_BYTES = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "int8": 1,
    "int32": 4,
}
_ALIASES = {
    "batch": "batch_size",
    "b": "batch_size",
    "bs": "batch_size",
    "q": "batch_size",
    "hidden": "hidden_size",
    "h": "hidden_size",
    "seq": "seq_len",
    "s": "seq_len",
    "n_rows": "m",
    "rows": "m",
    "cols": "n",
    "torch_dtype": "dtype",
}
FAMILIES = ("silu_and_mul", "swiglu", "rms_norm", "softmax", "matmul", "bmm")


@dataclass(frozen=True)
class WorkModel:
    """What one call must move or compute."""

    family: str
    bytes: float
    flops: float | None
    bound: str  # "memory" | "compute"
    formula: str
    dtype: str


@dataclass(frozen=True)
class Sol:
    """Achieved rates for one measured time, and their fractions of the measured peaks."""

    achieved_bytes_per_s: float | None
    achieved_flops: float | None
    bw_fraction: float | None
    flop_fraction: float | None
    basis: str  # "model" | "ncu probe"

    @property
    def sol(self) -> float | None:
        vals = [v for v in (self.bw_fraction, self.flop_fraction) if v is not None]
        return max(vals) if vals else None


@dataclass(frozen=True)
class SolRow:
    """One E row: the model and both sides' speed of light."""

    params: str
    model: WorkModel
    candidate: Sol | None
    baseline: Sol | None
    baseline_backend: str | None


def _dtype(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip().lower()
    text = text[len("torch.") :] if text.startswith("torch.") else text
    return {
        "fp16": "float16",
        "half": "float16",
        "bf16": "bfloat16",
        "fp32": "float32",
        "float": "float32",
    }.get(text, text)


def _norm(shape: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in shape.items():
        key = str(k).strip().lower()
        out[_ALIASES.get(key, key)] = _dtype(v) if _ALIASES.get(key, key) == "dtype" else v
    return out


# keyed on the analysis object's identity (a frozen Analysis holds dicts: it is not hashable); an
# entry lives as long as its analysis (weakref), so a reloaded analysis.json gets a fresh index
_SHAPE_INDEX: dict[int, tuple[weakref.ref[Any], dict[str, dict[str, Any]]]] = {}


def shape_index(analysis: Any) -> dict[str, dict[str, Any]]:
    """analysis.json's named shapes by params string (a shape's id, and its id less a backend token),
    the first selected shape winning: built once per analysis (each id parsed once), so a table's
    lookups cost O(rows + selections), not O(rows × selections)."""
    if analysis is None:
        return {}
    hit = _SHAPE_INDEX.get(id(analysis))
    if hit is not None and hit[0]() is analysis:
        return hit[1]
    index: dict[str, dict[str, Any]] = {}
    for group in getattr(analysis, "test_perf_configs", ()) or ():
        for s in group.shapes:
            named = {k: v for k, v in s.params.items() if not str(k).isdigit()}
            if not named:
                continue
            ident = s.id or ""
            _func, token, rest = split_nodeid(f"x[{ident}]")
            shape = _norm(named)
            index.setdefault(ident, shape)
            if token:
                index.setdefault(rest, shape)
    key = id(analysis)
    try:
        _SHAPE_INDEX[key] = (weakref.ref(analysis, lambda _ref: _SHAPE_INDEX.pop(key, None)), index)
    except TypeError:  # not weak-referenceable: rebuilt per call (still linear per call)
        pass
    return index


def shape_of(
    params: str, analysis: Any = None, argnames: Sequence[str] | None = None
) -> dict[str, Any] | None:
    """The named shape of a row (see the module docstring), or None."""
    named = shape_index(analysis).get(params)
    if named is not None:
        return dict(named)
    if argnames:
        tokens = params.split("-")
        if len(tokens) == len(argnames):
            return _norm({name: _token_value(tok) for name, tok in zip(argnames, tokens, strict=True)})
    return None


def _token_value(tok: str) -> Any:
    if re.fullmatch(r"-?\d+", tok):
        return int(tok)
    return {"True": True, "False": False}.get(tok, tok)


def _ints(shape: Mapping[str, Any], *names: str) -> list[int] | None:
    vals = [shape.get(n) for n in names]
    if all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in vals):
        return [int(v) for v in vals]  # type: ignore[arg-type]
    return None


def work_model(kernel: str, shape: Mapping[str, Any] | None) -> WorkModel | None:
    """The family's model for ``shape`` (see :data:`FAMILIES`), or None when not well-defined."""
    if shape is None:
        return None
    dtype = _dtype(shape.get("dtype"))
    es = ELEMENT_BYTES.get(dtype or "")
    if es is None or dtype is None:
        return None
    family = kernel.lower()
    if family == "silu_and_mul":
        d = _ints(shape, "batch_size", "seq_len", "hidden_size")
        if d is None:
            return None
        rows, h = d[0] * d[1], d[2]
        return WorkModel(
            family,
            float((rows * 2 * h + rows * h) * es),
            float(4 * rows * h),
            "memory",
            f"read B·S·2H + write B·S·H = {rows * 3 * h:,} elements x {es} B",
            dtype,
        )
    if family == "swiglu":
        d = _ints(shape, "batch_size", "seq_len", "hidden_size")
        if d is None:
            return None
        n = d[0] * d[1] * d[2]
        return WorkModel(
            family,
            float(3 * n * es),
            float(4 * n),
            "memory",
            f"read a, b + write c = 3 x {n:,} elements x {es} B",
            dtype,
        )
    if family in ("rms_norm", "softmax"):
        d = _ints(shape, "m", "n")
        if d is None:
            return None
        m, n = d
        extra = n if family == "rms_norm" else 0
        return WorkModel(
            family,
            float((2 * m * n + extra) * es),
            None,
            "memory",
            f"read + write M·N{' + N weights' if extra else ''} = {2 * m * n + extra:,} elements x "
            f"{es} B (compulsory traffic)",
            dtype,
        )
    if family == "matmul":
        d = _ints(shape, "m", "n", "k")
        if d is None:
            return None
        m, n, k = d
        return WorkModel(
            family,
            float((m * k + k * n + m * n) * es),
            2.0 * m * n * k,
            "compute",
            f"2·M·N·K = {2 * m * n * k:,} FLOP; A + B + C = {(m * k + k * n + m * n) * es:,} B",
            dtype,
        )
    if family == "bmm":
        d = _ints(shape, "batch_size", "m", "n", "k")
        if d is None:
            return None
        q, m, n, k = d
        return WorkModel(
            family,
            float(q * (m * k + k * n + m * n) * es),
            2.0 * q * m * n * k,
            "compute",
            f"2·Q·M·N·K = {2 * q * m * n * k:,} FLOP; Q·(A + B + C) = {q * (m * k + k * n + m * n) * es:,} B",
            dtype,
        )
    return None


def sol_for(model: WorkModel, time_ms: float | None, gpu: GpuFacts, probe: Any = None) -> Sol | None:
    """Speed of light of one measured time (see the module docstring); None without a time."""
    bw_peak = gpu.peak("dram")
    flop_peak = gpu.peak(model.dtype) if model.flops is not None else None
    if probe is not None and getattr(probe, "dram_bytes_per_s", None) is not None:
        rate = float(probe.dram_bytes_per_s)
        frac = (
            rate / bw_peak.value
            if bw_peak
            else (probe.dram_pct_of_peak / 100.0 if probe.dram_pct_of_peak is not None else None)
        )
        flops = None
        if model.flops is not None and probe.duration_ns:
            flops = model.flops / (probe.duration_ns * 1e-9)
        return Sol(
            rate,
            flops,
            frac,
            flops / flop_peak.value if flops is not None and flop_peak else None,
            "ncu probe",
        )
    if time_ms is None or time_ms <= 0:
        return None
    seconds = time_ms / 1000.0
    rate = model.bytes / seconds
    flops = model.flops / seconds if model.flops is not None else None
    return Sol(
        rate,
        flops,
        rate / bw_peak.value if bw_peak else None,
        flops / flop_peak.value if flops is not None and flop_peak else None,
        "model",
    )


def test_argnames(tilegym: Path | None, func_keys: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """``{func_key: parametrize names in id order}`` read from the TileGym checkout's test files.

    A test file that is absent or cannot be parsed gives no entry (its rows then have no model)."""
    from cutile_workbench.checks.testfile import load_test_module
    from cutile_workbench.errors import InputError

    out: dict[str, tuple[str, ...]] = {}
    if tilegym is None:
        return out
    for key in set(func_keys):
        path, _, qualname = key.partition("::")
        try:
            module = load_test_module(Path(tilegym) / path, Path(tilegym))
            out[key] = tuple(module.find(qualname).param_argnames)
        except InputError:
            continue
    return out


def recorded_argnames(kernel: str) -> dict[str, tuple[str, ...]]:
    """``{func_key: parametrize names}`` shipped with a recorded TileGym session (``profiles``), for
    opening it without a checkout; {} for anything else."""
    try:
        from cutile_workbench.profiles import get_recorded_tilegym
    except ImportError:
        return {}
    rec = get_recorded_tilegym(kernel)
    return {rec.test: rec.perf_argnames} if rec is not None and rec.perf_argnames else {}


def sol_rows(
    table: RatioTable,
    kernel: str,
    gpu: GpuFacts,
    *,
    analysis: Any = None,
    argnames: Mapping[str, Sequence[str]] | None = None,
    probes: Mapping[tuple[str, str], Any] | None = None,
    candidate_backend: str = "cutile-rs",
) -> list[SolRow]:
    """One :class:`SolRow` per matched row that has a work model (``argnames`` by func_key)."""
    out = []
    for row in table.matched:
        sr = row_sol(
            row,
            kernel,
            gpu,
            analysis,
            (argnames or {}).get(row.func_key),
            probes=probes,
            candidate_backend=candidate_backend,
        )
        if sr is not None:
            out.append(sr)
    return out


def _rate(s: Sol | None, model: WorkModel) -> str:
    if s is None:
        return "n/a"
    if model.bound == "compute" and s.achieved_flops is not None:
        return f"{s.achieved_flops / 1e12:.1f} TFLOP/s"
    return "n/a" if s.achieved_bytes_per_s is None else f"{s.achieved_bytes_per_s / 1e9:,.0f} GB/s"


def _pct(s: Sol | None) -> str:
    return "n/a" if s is None or s.sol is None else f"{s.sol * 100:.0f}%"


def render_sol_section(rows: Sequence[SolRow], gpu: GpuFacts) -> str:
    """The performance.md section (empty string when no row has a model)."""
    if not rows:
        return ""
    compute = sorted({r.model.dtype for r in rows if r.model.bound == "compute"})
    peaks = [p for p in (gpu.peak("dram"), *(gpu.peak(d) for d in compute)) if p]
    out = [
        "### Speed of light (achieved vs measured peak)\n",
        "\n",
        f"GPU: {gpu.name or 'unknown'}; peaks: "
        + (
            "; ".join(p.source for p in peaks)
            if peaks
            else "none measured for this GPU (fractions not computed)"
        )
        + ".\n",
        "Memory-bound families use their compulsory DRAM traffic, matmul/bmm 2·M·N·K; times are E's medians "
        "(or an ncu probe's, where filed).\n",
        "\n",
        "| Config | model | cutile-rs achieved | cutile-rs SOL | baseline achieved | baseline SOL | basis |\n",
        "|--------|-------|--------------------|---------------|-------------------|--------------|-------|\n",
    ]
    for r in rows:
        basis = ", ".join(sorted({s.basis for s in (r.candidate, r.baseline) if s is not None})) or "n/a"
        out.append(
            f"| {_cell(r.params)} | {_cell(r.model.family)} ({r.model.bound}) | {_rate(r.candidate, r.model)} "
            f"| {_pct(r.candidate)} | {_rate(r.baseline, r.model)} | {_pct(r.baseline)} | {basis} |\n"
        )
    return "".join(out)


def _cell(text: object) -> str:
    return str(text).replace("\r", " ").replace("\n", " ").replace("|", "\\|")


def row_sol(
    row: RatioRow,
    kernel: str,
    gpu: GpuFacts,
    analysis: Any = None,
    argnames: Sequence[str] | None = None,
    *,
    probes: Mapping[tuple[str, str], Any] | None = None,
    candidate_backend: str = "cutile-rs",
) -> SolRow | None:
    """Speed of light of one row (the Ratios screen's column): the model at E's medians, or a side's
    filed ncu probe where there is one (as :func:`sol_rows`); None without a work model."""
    from cutile_workbench.evidence.ncu import probe_for

    model = work_model(kernel, shape_of(row.params, analysis, argnames))
    if model is None:
        return None
    cprobe = probe_for(probes or {}, candidate_backend, row.params)
    bprobe = probe_for(probes or {}, row.baseline_backend, row.params)
    return SolRow(
        row.params,
        model,
        sol_for(model, row.candidate_ms, gpu, cprobe),
        sol_for(model, row.baseline_ms, gpu, bprobe),
        row.baseline_backend,
    )
