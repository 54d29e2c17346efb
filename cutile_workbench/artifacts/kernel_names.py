"""Short names of GPU kernel symbols for tables that must fit a terminal or a rendered report.

Contract: :func:`short_name` maps a kernel name as CUPTI/the perf log records it to a readable
short form — a cuTile entry specialization (``<base>_Kt1_…_I16_I1024_F<hex>…``) becomes
``<base> [I16 I1024]`` (its integer constants kept: they tell specializations apart), a C++
name becomes its kernel and functor (``vectorized_elementwise_kernel<CUDAFunctor_add>``, the F
reports' rule: :func:`cutile_workbench.stages.f.diagnosis.short_kernel_name`), and anything short stays as is.
A table that shows short names lists the full ones next to it.
"""

from __future__ import annotations

import re

from cutile_workbench.stages.f.diagnosis import short_kernel_name

#: cuTile mangles the entry symbol with its specialization: ``_K`` + types/constants + ``_F<ieee hex>``
_CUTILE_SPECIALIZATION = re.compile(r"^(?P<base>@?\w+?)_Kt\d\w*_F[0-9a-f]{16}(?:_F[0-9a-f]{16})*$")
_INT_CONSTANT = re.compile(r"_(I\d+)(?=_)")


def short_name(name: str) -> str:
    """A readable short form of ``name`` (see the module contract); ``name`` itself when already short."""
    m = _CUTILE_SPECIALIZATION.match(name)
    if m:
        constants = _INT_CONSTANT.findall(name[m.end("base"):])
        return f"{m.group('base')} [{' '.join(constants)}]" if constants else m.group("base")
    return short_kernel_name(name)
