"""Short names of GPU kernel symbols for tables that must fit a terminal or a rendered report.

Contract: :func:`short_name` maps a kernel name as CUPTI/the perf log records it to a readable
short form — a cuTile entry specialization (``<base>_Kt1_…_I16_I1024_F<hex>…``) becomes
``<base> [I16 I1024]`` (its integer constants kept: they tell specializations apart), a C++
name becomes its kernel and functor (``vectorized_elementwise_kernel<CUDAFunctor_add>``, the F
reports' rule: :func:`short_kernel_name`, demangled with ``c++filt`` when present), and anything
short stays as is.
A table that shows short names lists the full ones next to it.
"""

from __future__ import annotations

import re

from cutile_workbench.artifacts.demangle import demangle

#: cuTile mangles the entry symbol with its specialization: ``_K`` + types/constants + ``_F<ieee hex>``
_CUTILE_SPECIALIZATION = re.compile(r"^(?P<base>@?\w+?)_Kt\d\w*_F[0-9a-f]{16}(?:_F[0-9a-f]{16})*$")
_INT_CONSTANT = re.compile(r"_(I\d+)(?=_)")


def short_name(name: str) -> str:
    """A readable short form of ``name`` (see the module contract); ``name`` itself when already short."""
    m = _CUTILE_SPECIALIZATION.match(name)
    if m:
        constants = _INT_CONSTANT.findall(name[m.end("base") :])
        return f"{m.group('base')} [{' '.join(constants)}]" if constants else m.group("base")
    return short_kernel_name(name)


_ITANIUM_ID = re.compile(r"(\d+)")


def _itanium_ids(name: str) -> list[str]:
    """Length-prefixed identifiers of an Itanium-mangled name (``29vectorized_…`` → ``vectorized_…``)."""
    out: list[str] = []
    i = 0
    while i < len(name):
        m = _ITANIUM_ID.match(name, i)
        if not m:
            i += 1
            continue
        n, j = int(m.group(1)), m.end()
        ident = name[j : j + n]
        if n > 0 and len(ident) == n and re.fullmatch(r"[A-Za-z_]\w*", ident):
            out.append(ident)
            i = j + n
        else:
            i = j
    return out


def short_kernel_name(name: str) -> str:
    """Readable short form: ``vectorized_elementwise_kernel<FillFunctor>`` for long C++ names."""
    if name.startswith("_Z"):
        dem = demangle(name)  # c++filt when present; else a light parse of the mangled ids
        if dem:
            name = dem
        else:
            ids = [x for x in _itanium_ids(name) if x not in ("at", "native", "c10", "std")]
            fun = next((x for x in ids if "Functor" in x), None)
            stem = ids[0] if ids else name[:40]
            return f"{stem}<{fun}>" if fun else stem
    head = name.split("(", 1)[0]
    base = re.search(r"([A-Za-z_]\w*)\s*(?:<|$)", head.replace("void ", "", 1))
    stem = base.group(1) if base else head[:40]
    if "::" in head and base is not None:
        stem = re.split(r"::", head.split("<", 1)[0])[-1].strip()
    functor = re.search(r"(\w*Functor\w*)", head)
    if functor:
        return f"{stem}<{functor.group(1)}>"
    return stem if len(name) > 60 else name
