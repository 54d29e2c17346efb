"""Render one passed test's ``benchmark`` record as the "Performance Test Results" block (§3.6).

Contract (pure functions, no I/O, no pytest):

    -------------------- Performance Test Results --------------------
    nodeid: <nodeid>
    framework: <record key, e.g. cutile-rs>
    params: <test id minus the backend token>
    <Framework.capitalize()>: <repr(benchmark[framework])> ms
    <phase>: median_ms=… mean_ms=… min_ms=… max_ms=… rel_std_pct=… nrep=… launches_per_iter=… top_kernel=…
    record_json: <single-line JSON, sort_keys, default=str>
    ------------------------------------------------------------------

``validate_perf_log.sh`` counts *lines* containing ``Performance Test Results``, ``PASSED``,
``FAILED`` and ``SKIPPED``. Only the marker line may match, exactly once per block. A nodeid,
params string, kernel name or any other recorded string can contain those words (whatever a
user named a test or a kernel), so every other line of the block carries them *escaped*, in a
form that decodes back to the exact text:

- the repr line and ``top_kernel=`` use Python escapes inside string literals (``P\\x41SSED``),
  which ``ast.literal_eval`` decodes;
- ``record_json`` uses JSON escapes (``P\\u0041SSED``), which ``json.loads`` decodes;
- the human ``nodeid:``/``params:`` lines use the same ``\\x`` spelling; :func:`unescape_counted`
  reverses it (the parser uses ``record_json`` first anyway).

Decision: we always print the block, even for such nodeids. We cannot change pytest's own
``<nodeid> PASSED`` line (if a nodeid contains ``FAILED`` the validator fails on pytest's line,
not ours), but the block itself never adds a counted line, so ``perf_sections == passed`` holds
whenever it holds for pytest's lines.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from cutile_workbench.artifacts.events import json_default
from cutile_workbench.artifacts.testids import id_token, split_nodeid

MARKER = "Performance Test Results"
MARKER_LINE = f"{'-' * 20} {MARKER} {'-' * 20}"
TERMINATOR = "-" * len(MARKER_LINE)

#: the substrings validate_perf_log.sh counts, and their escaped spellings (one char escaped each)
COUNTED_WORDS: tuple[str, ...] = (MARKER, "PASSED", "FAILED", "SKIPPED")
_PY_ESCAPES: dict[str, str] = {
    MARKER: "Performance Test Result\\x73",
    "PASSED": "P\\x41SSED",
    "FAILED": "F\\x41ILED",
    "SKIPPED": "SKIPP\\x45D",
}
_JSON_ESCAPES: dict[str, str] = {
    MARKER: "Performance Test Result\\u0073",
    "PASSED": "P\\u0041SSED",
    "FAILED": "F\\u0041ILED",
    "SKIPPED": "SKIPP\\u0045D",
}

#: phase-line fields: (output key, benchmark_fn_cupti key, format)
_PHASE_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("median_ms", "median", "{:.6f}"),
    ("mean_ms", "mean", "{:.6f}"),
    ("min_ms", "min", "{:.6f}"),
    ("max_ms", "max", "{:.6f}"),
    ("rel_std_pct", "rel_std", "{:.3f}"),
)
_PHASE_ORDER = ("forward", "backward")


def escape_py(text: str) -> str:
    """Escape counted words for a Python string literal context (repr text / human lines)."""
    for word, esc in _PY_ESCAPES.items():
        text = text.replace(word, esc)
    return text


def escape_json(text: str) -> str:
    """Escape counted words inside JSON text (they can only occur inside JSON strings)."""
    for word, esc in _JSON_ESCAPES.items():
        text = text.replace(word, esc)
    return text


def unescape_counted(text: str) -> str:
    """Reverse :func:`escape_py` on a human line (``nodeid:``/``params:``)."""
    for word, esc in _PY_ESCAPES.items():
        text = text.replace(esc, word)
    return text


def _one_line(text: str) -> str:
    # A nodeid/params with a line break would split the block; show it as an escape instead.
    return text.replace("\r", "\\r").replace("\n", "\\n")


def select_framework(nodeid: str, benchmark: Mapping[str, Any]) -> str:
    """The record key this test measured: the one whose id token is the nodeid's first token.

    ``benchmark_framework`` stores exactly one key, so this matters only for hand-made records
    with several; then the key matching the id wins, else the first key.
    """
    keys = [str(k) for k in benchmark]
    _func, token, _params = split_nodeid(nodeid, extra_tokens=tuple(id_token(k) for k in keys))
    for key in keys:
        if token and id_token(key) == token:
            return key
    return keys[0]


def record_params(nodeid: str, framework: str, extra_tokens: tuple[str, ...] = ()) -> str:
    """Test id minus the backend token (§3.5), also for profile backends like ``cutile_hotpath``.

    The framework's own spelling is stripped first, in id form (``cutile_rs``) or raw form
    (``cutile-rs``: a suite without TileGym's id hook), so ``cutile-rs-2-2048`` never becomes
    token ``cutile`` + params ``rs-2-2048``.
    """
    _func, _sep, rest = nodeid.strip().partition("[")
    test_id = rest[:-1] if rest.endswith("]") else ""
    for prefix in dict.fromkeys((id_token(framework), framework)):
        if prefix and test_id.startswith(prefix + "-"):
            return test_id[len(prefix) + 1 :]
        if prefix and test_id == prefix:
            return ""
    _func, _token, params = split_nodeid(nodeid, extra_tokens=(id_token(framework), *extra_tokens))
    return params


def is_benchmark_record(value: Any) -> bool:
    """True for ``{framework: {phase: {stats...}}}`` (at least one phase dict)."""
    if not isinstance(value, Mapping) or not value:
        return False
    return all(
        isinstance(v, Mapping) and any(isinstance(p, Mapping) for p in v.values()) for v in value.values()
    )


def _fmt_num(value: Any, fmt: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "NA"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # nan / inf stay visible: the parser flags them
    return fmt.format(value)


def launches_per_iter(stats: Mapping[str, Any]) -> int | None:
    """Σ ``kernel_times[].count`` (TileGym's definition), else the harness's ``launches_per_call``."""
    kts = stats.get("kernel_times")
    if isinstance(kts, list) and kts:
        total = 0
        for row in kts:
            count = row.get("count") if isinstance(row, Mapping) else None
            if isinstance(count, bool) or not isinstance(count, int):
                break
            total += count
        else:
            return total
    lpc = stats.get("launches_per_call")
    if isinstance(lpc, int) and not isinstance(lpc, bool):
        return lpc
    return None


def phase_line(phase: str, stats: Mapping[str, Any]) -> str:
    """``forward: median_ms=… … launches_per_iter=N top_kernel='name'`` (NA for missing keys)."""
    tokens = [f"{out}={_fmt_num(stats.get(key), fmt)}" for out, key, fmt in _PHASE_FIELDS]
    nrep = stats.get("nrep")
    tokens.append(f"nrep={nrep if isinstance(nrep, int) and not isinstance(nrep, bool) else 'NA'}")
    lpi = launches_per_iter(stats)
    tokens.append(f"launches_per_iter={lpi if lpi is not None else 'NA'}")
    name = stats.get("kernel_name")
    tokens.append(f"top_kernel={escape_py(_one_line(repr(name))) if name is not None else 'NA'}")
    return f"{escape_py(_one_line(str(phase)))}: " + " ".join(tokens)


def _phases(value: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    known = [(p, value[p]) for p in _PHASE_ORDER if isinstance(value.get(p), Mapping)]
    other = [(str(k), v) for k, v in value.items() if k not in _PHASE_ORDER and isinstance(v, Mapping)]
    return known + other


def record_json(nodeid: str, framework: str, params: str, benchmark: Mapping[str, Any]) -> str:
    """The single-line JSON payload (sort_keys, default=str), counted words escaped."""
    payload = {"benchmark": benchmark, "framework": framework, "nodeid": nodeid, "params": params}
    return escape_json(json.dumps(payload, sort_keys=True, default=json_default))


def format_block(
    nodeid: str,
    benchmark: Mapping[str, Any],
    *,
    framework: str | None = None,
    extra_tokens: tuple[str, ...] = (),
) -> list[str]:
    """The block's lines (no newlines), for one passed test's ``benchmark`` property."""
    fw = framework if framework is not None else select_framework(nodeid, benchmark)
    value = benchmark[fw]
    params = record_params(nodeid, fw, extra_tokens)
    lines = [
        MARKER_LINE,
        f"nodeid: {escape_py(_one_line(nodeid))}",
        f"framework: {escape_py(_one_line(fw))}",
        f"params: {escape_py(_one_line(params))}",
        f"{escape_py(_one_line(fw.capitalize()))}: {escape_py(_one_line(repr(value)))} ms",
    ]
    if isinstance(value, Mapping):
        lines.extend(phase_line(name, stats) for name, stats in _phases(value))
    lines.append(f"record_json: {record_json(nodeid, fw, params, benchmark)}")
    lines.append(TERMINATOR)
    return lines
