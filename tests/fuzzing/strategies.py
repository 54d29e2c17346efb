"""Structured hypothesis strategies for the fuzz and invariant tests (all generated data is SYNTHETIC).

Contract: every strategy draws *valid-ish* documents — close enough to the real formats to get past
the first syntax check and into the deeper code — starting, where one exists, from a real recorded
document (``real_json_with_bad_value`` replaces one value at a random key path of a real
analysis.json / launches document). Strategies:

- ``json_values``: any JSON value, including the awkward ones (NaN, ±inf, 1e308, huge ints, deep lists).
- ``real_json_with_bad_value(doc)``: the real ``doc`` with one value (or key) replaced by a wrong type.
- ``perf_log_texts()``: raw pytest logs made of status lines and "Performance Test Results" blocks
  whose fields and numbers are drawn at random (repr and ``record_json`` payloads).
- ``ir_texts()``: Tile IR-like text from real op names, braces, attributes and ``loc(...)`` tails.
- ``event_lines()``: JSON-lines event streams with every kind from ``EVENT_SCHEMA`` and wrong fields.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import strategies as st

AWKWARD_FLOATS = st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0, 0.0, -1.0])
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    AWKWARD_FLOATS,
    st.text(max_size=20),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:6]):  # the first few elements are representative
            out += _paths(v, (*prefix, i))
    return out


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {k: (_replace(v, rest, value) if k == head else v) for k, v in doc.items()}
    return [(_replace(v, rest, value) if i == head else v) for i, v in enumerate(doc)]


def _drop(doc: Any, path: tuple[Any, ...]) -> Any:
    if len(path) == 1:
        if isinstance(doc, dict):
            return {k: v for k, v in doc.items() if k != path[0]}
        return [v for i, v in enumerate(doc) if i != path[0]]
    head = path[0]
    if isinstance(doc, dict):
        return {k: (_drop(v, path[1:]) if k == head else v) for k, v in doc.items()}
    return [(_drop(v, path[1:]) if i == head else v) for i, v in enumerate(doc)]


@st.composite
def real_json_with_bad_value(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` with one value replaced by a random JSON value, or one key dropped."""
    paths = _paths(doc)
    path = draw(st.sampled_from(paths))
    if path and draw(st.integers(0, 3)) == 0:
        return _drop(doc, path)
    return _replace(doc, path, draw(json_values))


def dumps_loose(doc: Any) -> str:
    """JSON with NaN/Infinity allowed (what Python's json writes, and what a buggy writer emits)."""
    return json.dumps(doc, allow_nan=True)


# ----------------------------------------------------------------------------- perf logs

_FRAMEWORKS = ("cutile", "Cutile", "triton", "cutile_rs", "cutile-rs", "pytorch", "", "x y")
_PARAMS = (
    "4096-1024-torch.bfloat16",
    "16384-2048-torch.bfloat16",
    "8192-8192-torch.float16",
    "",
    "a b",
    "[x]",
)
_MARKER = "-------------------- Performance Test Results --------------------"
_TERMINATOR = "-------------------------------------------------------------------"
_num = st.one_of(st.floats(min_value=1e-6, max_value=10.0), AWKWARD_FLOATS, st.integers(-5, 10**6))


def _pyrepr(x: Any) -> str:
    return repr(x)


@st.composite
def perf_blocks(draw: st.DrawFn) -> list[str]:
    fw = draw(st.sampled_from(_FRAMEWORKS))
    params = draw(st.sampled_from(_PARAMS))
    nodeid = f"tests/ops/test_rms_norm.py::Test_RMSNorm::test_perf[{fw}-{params}]"
    stats: dict[str, Any] = {}
    for key in draw(
        st.lists(
            st.sampled_from(
                [
                    "median",
                    "mean",
                    "min",
                    "max",
                    "std",
                    "nrep",
                    "samples",
                    "kernel_times",
                    "launches_per_call",
                    "peak_mem_mb",
                ]
            ),
            max_size=6,
            unique=True,
        )
    ):
        if key == "samples":
            stats[key] = draw(st.one_of(st.lists(_num, max_size=5), json_values))
        elif key == "kernel_times":
            stats[key] = draw(
                st.one_of(
                    st.lists(
                        st.fixed_dictionaries(
                            {"name": st.text(max_size=8), "self_time_us": _num, "count": st.integers(-1, 3)}
                        ),
                        max_size=3,
                    ),
                    json_values,
                )
            )
        else:
            stats[key] = draw(st.one_of(_num, json_values))
    phase = draw(st.sampled_from(["forward", "backward", "fwd", ""]))
    payload = {phase: stats}
    lines = [
        f"{nodeid} " + draw(st.sampled_from(["PASSED", "FAILED", "SKIPPED", "", "PASSED [ 50%]"])),
        _MARKER,
    ]
    for field in draw(
        st.lists(st.sampled_from(["nodeid", "framework", "params", "repr", "json"]), min_size=0, max_size=6)
    ):
        if field == "nodeid":
            lines.append(f"nodeid: {nodeid}")
        elif field == "framework":
            lines.append(f"framework: {fw}")
        elif field == "params":
            lines.append(f"params: {params}")
        elif field == "repr":
            lines.append(f"{fw.capitalize() or 'X'}: {_pyrepr(payload)} ms")
        else:
            lines.append(
                "record_json: "
                + dumps_loose(
                    {"benchmark": {fw: payload}, "framework": fw, "nodeid": nodeid, "params": params}
                )
            )
    if draw(st.booleans()):
        lines.append(_TERMINATOR)
    return lines


@st.composite
def perf_log_texts(draw: st.DrawFn) -> str:
    lines = ["============================= test session starts =============================="]
    for block in draw(st.lists(perf_blocks(), max_size=5)):
        lines += block
    if draw(st.booleans()):
        lines.append("=========== 2 passed, 1 failed in 1.00s ===========")
    sep = draw(st.sampled_from(["\n", "\r\n"]))
    return sep.join(lines) + draw(st.sampled_from(["", "\n"]))


# ----------------------------------------------------------------------------- Tile IR

_IR_LINES = st.sampled_from(
    [
        "cuda_tile.module @kernels {",
        "entry @rms_norm_kernel(%arg0: !cuda_tile.tile<ptr<bf16>>) {",
        "}",
        "{",
        "  %0 = constant <i32: 0> : !cuda_tile.tile<i32>",
        "  %1 = addi %0, %0 : tile<i32>",
        "  %2 = mmaf %a, %b, %c : tile<16x16xf32>",
        "  %3 = load_ptr_tko weak %p : tile<128xbf16> loc(#loc3)",
        "  for %i in (%c0 to %n, step %c1) : tile<i32> {",
        "  return",
        "  %4 = reduce %x dim=0 {",
        "}) ",
        '#loc3 = loc("kernels.py":14:5)',
        "  %5 = exp2 %4 flush_to_zero : tile<f32>",
        "  continue",
        "  %6 = assume div_by<16>, %p",
        '  "unterminated',
        "%%%",
        "  %7 = select %c, %a, %b loc(",
    ]
)


@st.composite
def ir_texts(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.one_of(_IR_LINES, st.text(max_size=30)), min_size=0, max_size=40))
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- events


@st.composite
def event_objects(draw: st.DrawFn) -> Any:
    from cutile_workbench.artifacts.events import EVENT_SCHEMA

    kind = draw(st.one_of(st.sampled_from(sorted(EVENT_SCHEMA)), st.text(max_size=8), json_values))
    obj: dict[str, Any] = {"event": kind, "ts": draw(st.one_of(st.floats(allow_nan=True), json_values))}
    fields = EVENT_SCHEMA.get(kind, {}) if isinstance(kind, str) else {}
    for name in fields:
        if draw(st.integers(0, 4)):
            obj[name] = draw(json_values)
    if draw(st.booleans()):
        obj = draw(real_json_with_bad_value(obj))
    return obj


@st.composite
def event_lines(draw: st.DrawFn) -> str:
    objs = draw(st.lists(event_objects(), max_size=6))
    text = "\n".join(dumps_loose(o) for o in objs)
    return text + draw(st.sampled_from(["", "\n", "\n\n", '{"event": ']))
