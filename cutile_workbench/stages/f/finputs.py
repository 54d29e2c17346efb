"""What F's rules read: the :class:`FInputs` bundle (moved out of ``stages/f/diagnosis.py``).

Contract: a plain dataclass, no I/O and no rule. :func:`cutile_workbench.stages.f.inputs.collect_inputs`
fills it from a kernel dir's session; :func:`cutile_workbench.stages.f.diagnosis.diagnose` and the
renderer read it; tests build it by hand. Paths in it are kernel-dir-relative evidence names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cutile_workbench.evidence.gpu import GpuFacts
from cutile_workbench.evidence.ncu import ProbeResult
from cutile_workbench.evidence.search_space import SearchSpaceAudit
from cutile_workbench.evidence.trust import KernelTrust
from cutile_workbench.ir.audit import IRAudit
from cutile_workbench.model import Finding, LaunchSet, PerfRecord, RatioTable


@dataclass
class FInputs:
    """Everything :func:`diagnose` reads; paths are kernel-dir-relative evidence names."""

    kernel: str
    table: RatioTable | None
    launch_sets: Sequence[LaunchSet] = field(default_factory=list)  # a LaunchStore: decoded per row
    analysis: Any = (
        None  # cutile_workbench.artifacts.analysis.Analysis (duck-typed: autotune_configs, autotune_key, …)
    )
    ir_audits: dict[str | None, IRAudit] = field(default_factory=dict)  # variant → audit
    wrapper_findings: list[Finding] = field(default_factory=list)
    candidate_backend: str = "cutile-rs"
    evidence: dict[str, str] = field(default_factory=dict)  # role → relpath (e_table, launches, …)
    missing: list[str] = field(default_factory=list)  # human lines: "<input>: <why>"
    #: the perf records behind the E table: candidate by (func_key, params); baselines by log key too
    candidate_records: Mapping[tuple[str, str], PerfRecord] = field(default_factory=dict)
    baseline_records: Mapping[str, Mapping[tuple[str, str], PerfRecord]] = field(default_factory=dict)
    search_space: SearchSpaceAudit | None = None
    probes: Mapping[tuple[str, str], ProbeResult] = field(default_factory=dict)
    gpu: GpuFacts | None = None
    wrapper_read: bool = False  # the cutile-rs wrapper source was available and audited
    perf_argnames: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # func_key → test param names
    #: params → audit of the IR that config ran (``run --dump-ir``: workbench/ir/index.json); preferred
    #: over the variant pair for that config
    ir_config_audits: dict[str, IRAudit] = field(default_factory=dict)
    #: who ran each row (candidate identity) and which config the reference ran (f_evidence.trust)
    trust: KernelTrust | None = None
    #: issue 18 §5: the sentences naming a stand-in candidate / plain-Triton baseline (``cutile_workbench.artifacts.stand_ins``)
    stand_ins: tuple[str, ...] = ()
    #: issue 32: both sides' autotune tables by (params, side) (``evidence.autotune``, from workbench/events.jsonl)
    autotune: Mapping[tuple[str, str], Any] = field(default_factory=dict)
    #: the flags that find this kernel dir again (``Workspace.locator``): every command line F writes ends with them
    locator: tuple[str, ...] = ()
