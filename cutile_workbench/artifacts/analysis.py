"""``reference/analysis.json`` (contract §2) as frozen dataclasses, read tolerantly.

Contract: :func:`load_analysis` accepts every shape the skill's agents are known to write
(§1.5.10): ``test_perf_configs`` as a dict ``{group: {"shapes": [...]}}`` or a list
``[{"param_list": [...]}, ...]`` (or a bare list of shapes), ``cutile_geomean_ms`` or the
validator's ``cutile_geo_mean_ms``, ``autotune_configs: null``, unknown extra keys. Optional
fields that are absent become ``None``/empty. A field that is present with the wrong type raises
``InputError(path, key=<JSON key path>)``, e.g. ``test_perf_configs.static_persistent.shapes[1]``;
invalid JSON raises ``InputError`` with the line. A ``variant_name`` must be a file-name part
(:data:`VARIANT_NAME_RE`, at most :data:`VARIANT_NAME_MAX` characters), else ``InputError`` at its key. The whole document stays in ``raw``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cutile_workbench.errors import InputError
from cutile_workbench.infra.jsonutil import loads_located

#: a variant name is part of E's file names (``perf_cutile_rs_<variant>.txt``, ``….full.txt``): the
#: kernel-name rule (:mod:`cutile_workbench.artifacts.confine`), so it is one path component that fits
VARIANT_NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")
VARIANT_NAME_MAX = 128


@dataclass(frozen=True)
class ShapeConfig:
    """One selected test_perf config; ``id`` is the test-id params string when the file has one."""

    id: str | None
    params: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def label(self) -> str:
        if self.id:
            return self.id
        return "-".join(str(v) for v in self.params.values())


@dataclass(frozen=True)
class ConfigGroup:
    """A ``test_perf_configs`` group (dict form: its key; list form: ``group<i>`` or its name)."""

    name: str
    test: str | None
    k_filter: str | None
    shapes: tuple[ShapeConfig, ...]


@dataclass(frozen=True)
class VariantSelection:
    """``reference_backend_selection.per_variant[v]``."""

    winner: str | None
    cutile_geomean_ms: float | None = None
    triton_tileir_geomean_ms: float | None = None
    note: str | None = None


@dataclass(frozen=True)
class BackendSelection:
    """``reference_backend_selection``."""

    winner: str | None
    method: str | None = None
    cutile_geomean_ms: float | None = None
    triton_tileir_geomean_ms: float | None = None
    per_variant: Mapping[str, VariantSelection] = field(default_factory=dict)


@dataclass(frozen=True)
class KernelVariant:
    """One ``kernel_variants[]`` entry (fields the E/F stages use)."""

    variant_name: str
    kernel_function: str | None
    reference_ir: str | None
    dispatch_condition: str | None = None
    reference_backend: str | None = None
    variant_type: str | None = None
    autotune_configs: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class Analysis:
    """The parsed analysis.json; ``raw`` is the untouched document."""

    path: str
    kernel_name: str | None
    launch_path: str | None
    pattern: str | None
    reference_backend: str | None
    reference_backend_selection: BackendSelection | None
    test_perf_configs: tuple[ConfigGroup, ...]
    kernel_variants: tuple[KernelVariant, ...]
    config_to_variant: Mapping[str, str]
    autotune_configs: tuple[Mapping[str, Any], ...]
    autotune_key: tuple[str, ...]
    best_config: Mapping[str, Any] | None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def selected_ids(self) -> list[str]:
        """Params strings of every selected shape that names one (order kept, no duplicates)."""
        seen: dict[str, None] = {}
        for g in self.test_perf_configs:
            for s in g.shapes:
                if s.id:
                    seen.setdefault(s.id, None)
        return list(seen)

    def variant_of(self, params: str) -> str | None:
        """Variant of a config row via ``config_to_variant`` (exact params key)."""
        return self.config_to_variant.get(params)

    def winner_for(self, variant: str | None) -> str | None:
        """Reference backend for a variant (per_variant winner, variant's own, then global)."""
        sel = self.reference_backend_selection
        if variant is not None:
            if sel is not None and variant in sel.per_variant and sel.per_variant[variant].winner:
                return sel.per_variant[variant].winner
            for v in self.kernel_variants:
                if v.variant_name == variant and v.reference_backend:
                    return v.reference_backend
        if self.reference_backend:
            return self.reference_backend
        return sel.winner if sel is not None else None


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path

    def err(self, key: str, msg: str) -> InputError:
        return InputError(msg, path=self.path, key=key)

    def opt_str(self, obj: Mapping[str, Any], name: str, key: str) -> str | None:
        v = obj.get(name)
        if v is None:
            return None
        if not isinstance(v, str):
            raise self.err(f"{key}{name}", f"expected a string, got {type(v).__name__}")
        return v

    def opt_num(self, obj: Mapping[str, Any], name: str, key: str) -> float | None:
        v = obj.get(name)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.err(f"{key}{name}", f"expected a number, got {type(v).__name__}")
        try:
            number = float(v)
        except OverflowError:  # an integer of hundreds of digits
            raise self.err(f"{key}{name}", "number too large") from None
        if not math.isfinite(number):
            raise self.err(f"{key}{name}", f"expected a finite number, got {v!r}")
        return number

    def opt_dict(self, obj: Mapping[str, Any], name: str, key: str) -> dict[str, Any] | None:
        v = obj.get(name)
        if v is None:
            return None
        if not isinstance(v, dict):
            raise self.err(f"{key}{name}", f"expected an object, got {type(v).__name__}")
        return v

    def configs(self, v: Any, key: str) -> tuple[Mapping[str, Any], ...]:
        if v is None:
            return ()
        if not isinstance(v, list):
            raise self.err(key, f"expected a list of config objects, got {type(v).__name__}")
        for i, c in enumerate(v):
            if not isinstance(c, dict):
                raise self.err(f"{key}[{i}]", f"autotune config must be an object, got {type(c).__name__}")
        return tuple(v)

    def shape(self, v: Any, key: str) -> ShapeConfig:
        if isinstance(v, str):
            return ShapeConfig(id=v)
        if isinstance(v, dict):
            ident = v.get("id", v.get("params", v.get("param_id")))
            if ident is not None and not isinstance(ident, str):
                raise self.err(f"{key}.id", f"expected a string, got {type(ident).__name__}")
            return ShapeConfig(id=ident, params={k: x for k, x in v.items() if k not in ("id", "params")})
        if isinstance(v, list):  # positional params, e.g. [262144, 1024, "torch.float16"]
            if not all(isinstance(x, (str, int, float, bool)) or x is None for x in v):
                raise self.err(key, "positional shape must hold only scalars")
            return ShapeConfig(id=None, params={str(i): x for i, x in enumerate(v)})
        raise self.err(key, f"a shape must be an object, a string or a list, got {type(v).__name__}")

    def group(self, name: str, obj: Any, key: str, shapes_key: str) -> ConfigGroup:
        if not isinstance(obj, dict):
            raise self.err(key, f"expected an object, got {type(obj).__name__}")
        shapes = obj.get(shapes_key, [])
        if shapes is None:
            shapes = []
        if not isinstance(shapes, list):
            raise self.err(f"{key}.{shapes_key}", f"expected a list, got {type(shapes).__name__}")
        return ConfigGroup(
            name=str(obj.get("name", name)) if isinstance(obj.get("name", name), str) else name,
            test=self.opt_str(obj, "test", f"{key}."),
            k_filter=self.opt_str(obj, "k_filter", f"{key}."),
            shapes=tuple(self.shape(s, f"{key}.{shapes_key}[{i}]") for i, s in enumerate(shapes)),
        )

    def test_perf_configs(self, v: Any) -> tuple[ConfigGroup, ...]:
        key = "test_perf_configs"
        if v is None:
            return ()
        if isinstance(v, dict):
            return tuple(self.group(str(n), g, f"{key}.{n}", "shapes") for n, g in v.items())
        if isinstance(v, list):
            groups = []
            loose: list[ShapeConfig] = []
            for i, item in enumerate(v):
                if isinstance(item, dict) and ("param_list" in item or "shapes" in item):
                    sk = "param_list" if "param_list" in item else "shapes"
                    groups.append(self.group(f"group{i}", item, f"{key}[{i}]", sk))
                else:
                    loose.append(self.shape(item, f"{key}[{i}]"))
            if loose:
                groups.append(ConfigGroup(name="configs", test=None, k_filter=None, shapes=tuple(loose)))
            return tuple(groups)
        raise self.err(key, f"expected an object or a list, got {type(v).__name__}")

    def selection(self, v: Any) -> BackendSelection | None:
        key = "reference_backend_selection"
        if v is None:
            return None
        if not isinstance(v, dict):
            raise self.err(key, f"expected an object, got {type(v).__name__}")
        per: dict[str, VariantSelection] = {}
        pv = self.opt_dict(v, "per_variant", f"{key}.") or {}
        for name, entry in pv.items():
            k = f"{key}.per_variant.{name}."
            if not isinstance(entry, dict):
                raise self.err(k[:-1], f"expected an object, got {type(entry).__name__}")
            per[str(name)] = VariantSelection(
                winner=self.opt_str(entry, "winner", k),
                cutile_geomean_ms=self.opt_num(entry, "cutile_geomean_ms", k)
                if "cutile_geomean_ms" in entry
                else self.opt_num(entry, "cutile_geo_mean_ms", k),
                triton_tileir_geomean_ms=self.opt_num(entry, "triton_tileir_geomean_ms", k),
                note=self.opt_str(entry, "note", k),
            )
        return BackendSelection(
            winner=self.opt_str(v, "winner", f"{key}."),
            method=self.opt_str(v, "method", f"{key}."),
            cutile_geomean_ms=self.opt_num(v, "cutile_geomean_ms", f"{key}.")
            if "cutile_geomean_ms" in v
            else self.opt_num(v, "cutile_geo_mean_ms", f"{key}."),
            triton_tileir_geomean_ms=self.opt_num(v, "triton_tileir_geomean_ms", f"{key}."),
            per_variant=per,
        )

    def variants(self, v: Any) -> tuple[KernelVariant, ...]:
        key = "kernel_variants"
        if v is None:
            return ()
        if not isinstance(v, list):
            raise self.err(key, f"expected a list, got {type(v).__name__}")
        out = []
        for i, entry in enumerate(v):
            k = f"{key}[{i}]"
            if not isinstance(entry, dict):
                raise self.err(k, f"expected an object, got {type(entry).__name__}")
            name = entry.get("variant_name")
            if not isinstance(name, str) or not name:
                raise self.err(f"{k}.variant_name", "required non-empty string")
            if len(name) > VARIANT_NAME_MAX or not VARIANT_NAME_RE.fullmatch(name) or name in (".", ".."):
                raise self.err(
                    f"{k}.variant_name",
                    f"{name[:60]!r}{'…' if len(name) > 60 else ''} ({len(name)} characters) cannot be part "
                    f"of a file name (perf_cutile_rs_<variant>.txt): at most {VARIANT_NAME_MAX} of "
                    "[A-Za-z0-9_.-]",
                )
            out.append(
                KernelVariant(
                    variant_name=name,
                    kernel_function=self.opt_str(entry, "kernel_function", f"{k}."),
                    reference_ir=self.opt_str(entry, "reference_ir", f"{k}."),
                    dispatch_condition=self.opt_str(entry, "dispatch_condition", f"{k}."),
                    reference_backend=self.opt_str(entry, "reference_backend", f"{k}."),
                    variant_type=self.opt_str(entry, "variant_type", f"{k}."),
                    autotune_configs=self.configs(entry.get("autotune_configs"), f"{k}.autotune_configs"),
                )
            )
        return tuple(out)


def parse_analysis(doc: Any, path: str = "analysis.json") -> Analysis:
    """Build an :class:`Analysis` from an already-decoded JSON document."""
    r = _Reader(path)
    if not isinstance(doc, dict):
        raise InputError(f"top level must be a JSON object, got {type(doc).__name__}", path=path)
    ctv = doc.get("config_to_variant") or {}
    if not isinstance(ctv, dict):
        raise r.err("config_to_variant", f"expected an object, got {type(ctv).__name__}")
    for k, v in ctv.items():
        if not isinstance(v, str):
            raise r.err(f"config_to_variant.{k}", f"expected a variant name string, got {type(v).__name__}")
    akey = doc.get("autotune_key")
    if akey is not None and (not isinstance(akey, list) or not all(isinstance(x, str) for x in akey)):
        raise r.err("autotune_key", "expected a list of strings")
    best = doc.get("best_config")
    if best is not None and not isinstance(best, dict):
        raise r.err("best_config", f"expected an object, got {type(best).__name__}")
    rb = r.opt_str(doc, "reference_backend", "")
    return Analysis(
        path=path,
        kernel_name=r.opt_str(doc, "kernel_name", ""),
        launch_path=r.opt_str(doc, "launch_path", ""),
        pattern=r.opt_str(doc, "pattern", ""),
        reference_backend=rb,
        reference_backend_selection=r.selection(doc.get("reference_backend_selection")),
        test_perf_configs=r.test_perf_configs(doc.get("test_perf_configs")),
        kernel_variants=r.variants(doc.get("kernel_variants")),
        config_to_variant={str(k): v for k, v in ctv.items()},
        autotune_configs=r.configs(doc.get("autotune_configs"), "autotune_configs"),
        autotune_key=tuple(akey or ()),
        best_config=best,
        raw=doc,
    )


def load_analysis(path: Path | str, *, text: str | None = None) -> Analysis:
    """Read and parse ``analysis.json``; every rejection names the file and line or key."""
    p = str(path)
    if text is None:
        from cutile_workbench.artifacts.confine import read_regular

        raw = read_regular(path, kind="analysis.json")  # a FIFO/device refused unread, size capped
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise InputError("not valid UTF-8", path=p, line=line) from None
    if not text.strip():
        raise InputError("file is empty", path=p, line=1)
    doc = loads_located(text, p)
    return parse_analysis(doc, p)
