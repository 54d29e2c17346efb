"""Plan stage E's report set (contract §5.1–5.3) and validate it before anything is written.

Contract of :func:`plan_e_report`: from a :class:`~cutile_workbench.artifacts.workspace.Workspace` it renders

- ``reports/performance.md``: first line ``VERDICT: DONE|INVESTIGATE``, the per-config table
  (baseline backend and ms, candidate ms, ratio ``1.07x``, 95% CI when known, launches/call when
  known, row verdict), per-variant sections with ``variant_geomean=`` lines, ``### Missing /
  failed configs`` (NA rows), configs without a baseline, raw CUPTI rows (median, nrep, rel_std),
  with short kernel names and the full ones listed under the table,
  exactly ONE ``geomean_ratio=X.XXXX`` line, ``Geo-mean ratio: X.XXx``, ``Severity: …`` and the CI /
  inconclusive flag in prose;
- ``perf_cutile_rs.txt``: the sanitized raw log (raw = ``reports/agent_logs/perf_cutile_rs.full.txt``
  if present, else the current ``perf_cutile_rs.txt``; or ``raw_log_text``);
- ``reports/agent_logs/perf_investigation.log`` (empty on a clean run);
- ``reports/agent_logs/agent_e.md`` (§5.3: environment, commands, pytest rc, logs, ratio summary,
  validator output verbatim with ``exit=N``) and ``reports/agent_e.md`` (readable summary).

It validates the planned set in-process (validate_perf_log ×2 + validate_agent_e on the overlay)
and, when ``run_real_scripts`` and the TileGym checkout has the skill's scripts, with the real
scripts on a staged copy; ``ok`` only if every exit code is 0. BLOCKED (no usable data) raises
:class:`~cutile_workbench.errors.Blocked`; malformed inputs raise ``InputError`` (strict parsing). The
verdict is never DONE with a missing or failed config (asserted, not just assumed).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cutile_workbench import __version__
from cutile_workbench.artifacts.kernel_names import short_name
from cutile_workbench.artifacts.stand_ins import StandIns, stand_ins_of
from cutile_workbench.artifacts.testids import id_token
from cutile_workbench.artifacts.workspace import Workspace
from cutile_workbench.errors import Blocked, WorkbenchError
from cutile_workbench.evidence.trust import KernelTrust
from cutile_workbench.history.noise import noise_lines, ratio_with_noise
from cutile_workbench.model import PerfLog, PerfRecord, PlannedFile, RatioRow, RatioTable, ReportPlan
from cutile_workbench.stages.e.e_table import PERF_LOG, ETable, RawLog
from cutile_workbench.stages.e.e_table import (
    candidate_raw_logs as candidate_raw_logs,  # re-exported: read where E's table is
)
from cutile_workbench.stages.e.e_table import load_candidate as load_candidate
from cutile_workbench.stages.e.e_table import merge_logs as merge_logs
from cutile_workbench.stages.e.stats import round4
from cutile_workbench.stages.e.validators import (
    ValidatorResult,
    run_real_validator,
    transcript,
    validate_agent_e,
    validate_perf_log,
)

PERFORMANCE_MD = "reports/performance.md"

INVESTIGATION_LOG = "reports/agent_logs/perf_investigation.log"
AGENT_E_LOG = "reports/agent_logs/agent_e.md"
AGENT_E_REPORT = "reports/agent_e.md"
FULL_LOG = "reports/agent_logs/perf_cutile_rs.full.txt"
BENCH_ENV_KEYS = ("CUPTI", "WARMUP", "REP", "MIN_REP", "INITIAL_REP", "QUIET", "MODE")


def _ms(x: float | None) -> str:
    if x is None:
        return "NA"
    return f"{x:.4f}" if x >= 0.1 else f"{x:.6f}"


def _cell(text: object) -> str:
    """A markdown table cell that can neither break the table nor start a counted line."""
    return str(text).replace("\r", " ").replace("\n", " ").replace("|", "\\|")


def _ratio(r: float | None) -> str:
    return "NA" if r is None else f"{r:.2f}x"


def _ci(lo: float | None, hi: float | None) -> str:
    return "–" if lo is None or hi is None else f"{lo:.3f}–{hi:.3f}x"


def _launches(row: RatioRow) -> str:
    if row.candidate_launches is None and row.baseline_launches is None:
        return "–"
    c = "?" if row.candidate_launches is None else str(row.candidate_launches)
    b = "?" if row.baseline_launches is None else str(row.baseline_launches)
    return f"{c} / {b}"


def _row_verdict(row: RatioRow) -> str:
    return row.row_verdict


def _table_head(candidate: str = "cutile-rs") -> str:
    """The ratio table's header; ``candidate`` names a stand-in as one (``cutile (stand-in)``)."""
    return (
        f"| Config | baseline | baseline (ms) | {_cell(candidate)} (ms) | ratio | 95% CI | launches/call "
        "(cand / base) | verdict |\n|--------|----------|---------------|----------------|-------|--------|"
        "------------------------------|---------|\n"
    )


def _table(rows: list[RatioRow], stand_ins: StandIns | None = None) -> str:
    out = [_table_head(stand_ins.candidate_label() if stand_ins else "cutile-rs")]
    for r in rows:
        base = (
            stand_ins.baseline_label(r.baseline_backend)
            if stand_ins and r.baseline_backend
            else r.baseline_backend or "NA"
        )
        out.append(
            f"| {_cell(r.params)} | {_cell(base)} | {_ms(r.baseline_ms)} | "
            f"{_ms(r.candidate_ms)} | {ratio_with_noise(r, _ratio(r.ratio))} | {_ci(r.ci_low, r.ci_high)} | "
            f"{_launches(r)} | "
            f"{_row_verdict(r)} |\n"
        )
    return "".join(out)


def _raw_rows(
    table: RatioTable, candidate: PerfLog, baselines: Mapping[str, PerfLog], trust: KernelTrust | None = None
) -> str:
    index: dict[tuple[str, str, str], PerfRecord] = {}
    for name, log in [("candidate", candidate), *baselines.items()]:
        for record in log.records:
            index.setdefault((name, record.func_key, record.params), record)
    lines = [
        "| Config | log | framework | harness | median (ms) | nrep | rel_std (%) | launches/iter | self-check "
        "| top kernel | kernel identity |\n",
        "|--------|-----|-----------|---------|-------------|------|-------------|---------------|------------"
        "|------------|-----------------|\n",
    ]
    short_of: dict[str, str] = {}  # full → short, for the names the table shortens
    for row in table.rows:
        names = ["candidate"] + ([row.baseline_backend] if row.baseline_backend else [])
        for name in names:
            rec = index.get((name, row.func_key, row.params))
            fwd = rec.forward if rec else None
            if rec is None or fwd is None:
                continue
            rel = "–" if fwd.rel_std_pct is None else f"{fwd.rel_std_pct:.2f}"
            lines.append(
                f"| {_cell(row.params)} | {_cell(name)} | {_cell(rec.framework)} | {_cell(fwd.harness or '–')} | "
                f"{_ms(fwd.median_ms)} | {fwd.nrep if fwd.nrep is not None else '–'} | {rel} | "
                f"{fwd.launches_per_iter if fwd.launches_per_iter is not None else '–'} | "
                f"{_cell(fwd.capture_verdict or '–')} | {_cell(_top_kernel(fwd.kernel_name, short_of))} | "
                f"{_cell(_identity_cell(trust, row.params, name, short_of))} |\n"
            )
    if short_of:
        lines.append("\nTop kernels in full (the table shows short names):\n\n")
        lines += [f"- `{_code(short)}`: `{_code(full)}`\n" for full, short in short_of.items()]
    return "".join(lines)


_IDENTITY_WORDS = {
    "candidate": "its own framework's kernel",
    "reference": "the reference's kernel",
    "library": "a PyTorch/library kernel",
    "none": "no kernel launched",
}


def _identity_cell(trust: KernelTrust | None, params: str, log: str, short_of: dict[str, str]) -> str:
    """The candidate row's identity mark, in words, with the main kernel's short name (the legend under the
    table lists the full one); a baseline row runs the reference by definition."""
    if log != "candidate":
        return "reference"
    ident = trust.identities.get(params) if trust is not None else None
    if ident is None:
        return "? (identity not checked)"
    if ident.kind == "unknown":
        return (
            f"?: {ident.why}"
            if ident.candidate is None
            else f"?: unrecognised `{_top_kernel(ident.candidate.symbol, short_of)}`"
        )
    text = f"{ident.mark}: {_IDENTITY_WORDS[ident.kind]}"
    if ident.candidate is not None:
        text += f" `{_top_kernel(ident.candidate.symbol, short_of)}`"
    return text + (", same grid/block/registers/smem" if ident.same_launch else "")


def identity_section(trust: KernelTrust | None, table: RatioTable) -> list[str]:
    """performance.md's "Candidate identity" section (placed before the table)."""
    if trust is None:
        return []
    out = ["### Candidate identity\n", "\n", f"{_cell(trust.summary)}.\n"]
    flagged = [
        (r.params, trust.identities[r.params])
        for r in table.rows
        if r.params in trust.identities and trust.identities[r.params].kind != "candidate"
    ]
    whys = {ident.why for _p, ident in flagged}
    if flagged and len(flagged) == len(table.rows) and len(whys) == 1 and flagged[0][1].kind == "unknown":
        out.append(f"Unknown for every row: {_cell(whys.pop())}.\n")  # one reason for all: say it once
    elif flagged:
        # mark first: a row here never starts with the config, like the ratio tables' rows do
        out += [
            "\n",
            "| mark | Config | candidate kernel | reference kernel | why |\n",
            "|---|---|---|---|---|\n",
        ]
        for params, ident in flagged:
            ck = f"`{_code(ident.candidate.symbol)}`" if ident.candidate and ident.candidate.symbol else "–"
            bk = f"`{_code(ident.baseline.symbol)}`" if ident.baseline and ident.baseline.symbol else "–"
            out.append(
                f"| {ident.mark} | {_cell(params)} | {_cell(ck)} | {_cell(bk)} | {_cell(ident.why)} |\n"
            )
    for call in trust.wrapper_calls:
        out.append(f"- wrapper delegates to another backend: {_cell(call)}\n")
    out.append(
        "\nMarks: own = the candidate framework's own kernel, REF = the reference's kernel, LIB = a "
        "PyTorch/library kernel, NONE = no kernel launched, ? = unknown (reason given). From the per-launch "
        "captures (kernel symbols, grid, block, registers, smem).\n\n"
    )
    return out


def _top_kernel(name: str | None, short_of: dict[str, str]) -> str:
    """The table's name for ``name``; distinct full names never share a short one (``#2`` suffix)."""
    if not name:
        return "–"
    if name not in short_of:
        short = short_name(name)
        if short == name:
            return name
        taken = set(short_of.values())
        n = 1
        while (candidate := short if n == 1 else f"{short} #{n}") in taken:
            n += 1
        short_of[name] = candidate
    return short_of[name]


def _code(text: str) -> str:
    """Inline-code text that can neither close its backticks nor break the list line."""
    return text.replace("`", "'").replace("\r", " ").replace("\n", " ")


#: a row whose record gave no description (an NA row): the harness named, nothing claimed about it
HARNESS_NAMES = {
    "workbench": "workbench CUPTI harness",
    "tilegym": "TileGym's benchmark_fn_cupti (torch.profiler per sample)",
}


def harness_summary(rows: list[RatioRow]) -> str:
    """ "candidate: <harness> (N rows); baseline: ..." over the rows that name one. A row's description
    is what its record carries (:attr:`~cutile_workbench.model.PhaseStats.measured_by`: window mode, raw
    samples, self-check present or not); a row without one (NA rows) falls back to the harness name."""
    parts = []
    for side in ("candidate", "baseline"):
        counts: dict[str, int] = {}
        for r in rows:
            h = getattr(r, f"{side}_measured_by") or HARNESS_NAMES.get(getattr(r, f"{side}_harness") or "")
            if h:
                counts[h] = counts.get(h, 0) + 1
        if counts:
            parts.append(f"{side}: " + ", ".join(f"{h} ({n} rows)" for h, n in sorted(counts.items())))
    return "; ".join(parts) or "unknown harness (records carry no harness marks)"


def stand_in_frameworks(candidate: PerfLog) -> list[str]:
    """Frameworks of the candidate log that are not cutile-rs (empty: the candidate is real cutile-rs)."""
    return sorted({r.framework for r in candidate.records} - {"cutile-rs"})


def _frameworks(log: PerfLog) -> str:
    names = sorted({r.framework for r in log.records})
    return ", ".join(_cell(n) for n in names) or "none"


def _verdict_prose(table: RatioTable) -> str:
    assert table.geomean is not None
    parts = [f"Verdict: {table.verdict} (geomean {round4(table.geomean):.4f}, severity {table.severity}"]
    if table.geomean_ci is not None:
        lo, hi = table.geomean_ci
        parts.append(f", bootstrap 95% CI {lo:.4f}–{hi:.4f}")
        parts.append(
            ", INCONCLUSIVE: the CI straddles the 1.05 gate"
            if table.inconclusive
            else ", conclusive at the 1.05 gate"
        )
    else:
        parts.append(", no CI: the logs carry no raw samples")
    parts.append(").")
    return "".join(parts)


def render_performance_md(
    kernel: str,
    table: RatioTable,
    candidate: PerfLog,
    baselines: Mapping[str, PerfLog],
    *,
    reference: str,
    conditions: str = "",
    extra_section: str = "",
    trust: KernelTrust | None = None,
    stand_ins: StandIns | None = None,
) -> str:
    """``reports/performance.md`` (§5.2 plus the workbench's CI, launches and variant sections).

    ``conditions`` (the measurement-conditions section) and ``extra_section`` (the speed-of-light
    table) go last, after the validated lines; neither may hold a line a validator counts (asserted)."""
    if table.geomean is None or table.verdict not in ("DONE", "INVESTIGATE"):
        raise Blocked("no usable data: no matched config", key="performance.md")
    ok = table.matched
    na = [r for r in table.rows if r.status == "NA"]
    nob = [r for r in table.rows if r.status == "NO_BASELINE"]
    if stand_ins is None:
        stand_ins = stand_ins_of(
            {r.framework for r in candidate.records},
            None,
            {r.baseline_backend for r in ok if r.baseline_backend},
        )
    out = [
        f"VERDICT: {table.verdict}\n",
        "\n",
        f"## Performance Results: {kernel}\n",
        "\n",
        f"Ratio = candidate ({_cell(stand_ins.candidate_label())}; framework(s) in the log: "
        f"{_frameworks(candidate)}) / winning baseline, CUPTI forward medians. Baseline: {reference}.\n",
    ]
    stand_in = stand_in_frameworks(candidate)
    if stand_in:
        out.append(
            f"**Stand-in candidate**: the candidate log holds {', '.join(_cell(f) for f in stand_in)}, not "
            "cutile-rs; these ratios compare a stand-in, not a cutile-rs port.\n"
        )
    out += [
        f"**{_cell(line)}**.\n" for line in stand_ins.lines() if not line.startswith("STAND-IN candidate")
    ]
    out += [f"{_cell(line.strip()[0].upper() + line.strip()[1:])}.\n" for line in noise_lines(table.rows)]
    out += [
        f"Measured by: {harness_summary(table.rows)}.\n",
        f"Rows: {len(table.rows)}; matched: {len(ok)}; missing/failed: {len(na)}; without baseline: {len(nob)}.\n",
        "\n",
        *identity_section(trust, table),
        _table(ok, stand_ins),
    ]
    variants = sorted({r.variant for r in ok if r.variant is not None})
    for v in variants:
        vrows = [r for r in ok if r.variant == v]
        backends = ", ".join(
            sorted(
                {stand_ins.baseline_label(r.baseline_backend) if r.baseline_backend else "NA" for r in vrows}
            )
        )
        out += [
            "\n",
            f"### Variant: {_cell(v)} (baseline: {_cell(backends)})\n",
            "\n",
            _table(vrows, stand_ins),
            "\n",
            f"variant_geomean={round4(table.variant_geomeans[v]):.4f}\n",
        ]
    out += ["\n", "### Missing / failed configs\n", "\n"]
    if na:
        out.append("| Config | status | reason |\n|--------|--------|--------|\n")
        out += [f"| {_cell(r.params)} | NA | {_cell(r.reason)} |\n" for r in na]
    else:
        out.append("None: every selected config has a valid candidate median.\n")
    if nob:
        out += [
            "\n",
            "### Configs without a baseline match (excluded from the geomean)\n",
            "\n",
            f"| Config | {_cell(stand_ins.candidate_label())} (ms) | reason |\n|--------|----------------|--------|\n",
        ]
        out += [f"| {_cell(r.params)} | {_ms(r.candidate_ms)} | {_cell(r.reason)} |\n" for r in nob]
    out += ["\n", "### Raw CUPTI rows\n", "\n", _raw_rows(table, candidate, baselines, trust)]
    if table.notes:
        out += ["\n", "### Notes\n", "\n"] + [f"- {_cell(n)}\n" for n in table.notes]
    if table.verdict == "DONE":
        slow = [r for r in ok if r.ratio is not None and r.ratio > 1.05]
        if slow:
            out += ["\n", f"Info: {len(slow)} row(s) above 1.05x; the gate is the overall geomean only.\n"]
        if trust is not None and trust.warning:
            # E's rule stays geomean-only, but a DONE never stands without this warning beside it
            out += [
                "\n",
                f"**WARNING: DONE by the geomean rule, but {_cell(trust.summary)}.** These rows do not "
                'measure the candidate; see "Candidate identity" above.\n',
            ]
    g = round4(table.geomean)
    out += [
        "\n",
        f"geomean_ratio={g:.4f}\n",
        f"Geo-mean ratio: {table.geomean:.2f}x\n",
        f"Severity: {table.severity}\n",
        "\n",
        _verdict_prose(table) + "\n",
    ]
    for section in (conditions, extra_section):
        if not section:
            continue
        if any(ln.startswith(("geomean_ratio=", "VERDICT:")) for ln in section.splitlines()):
            raise WorkbenchError(
                "internal: an extra performance.md section may not hold a validated line",
                key="performance.md",
            )
        out += ["\n", section]
    return "".join(out)


@dataclass(frozen=True)
class SessionFacts:
    """What ``workbench/session.json`` says about the run (every field optional)."""

    gpu: str | None = None
    driver: str | None = None
    machine: str | None = None
    recorded_at: str | None = None
    tileiras: str | None = None
    #: the candidate run's other toolchain facts (``runs.candidate.provenance`` of a workbench run)
    toolchain: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    candidate_cmd: str | None = None
    candidate_rc: int | None = None
    other_cmds: tuple[tuple[str, str, int | None], ...] = ()


def _s(v: object) -> str | None:
    return None if v in (None, "") else str(v)


#: session.json ``runs.candidate.provenance`` keys → the agent_e.md ``- toolchain:`` line's labels
_TOOLCHAIN_LABELS = (
    ("ptxas", "ptxas"),
    ("cutile_rs", "cutile-rs"),
    ("cutile_rs_commit", "cutile-rs commit"),
    ("cuda_tile", "cuda-tile"),
    ("cupti", "cupti-python"),
    ("torch", "torch"),
    ("torch_cuda", "CUDA"),
    ("driver", "driver"),
    ("tilegym_commit", "TileGym"),
)


def session_facts(meta: Mapping[str, Any] | None, candidate_frameworks: set[str]) -> SessionFacts:
    """Pull GPU, env and the candidate's command/rc out of session.json's known shapes."""
    if not meta:
        return SessionFacts()
    raw_versions = meta.get("versions")
    versions: Mapping[str, Any] = raw_versions if isinstance(raw_versions, dict) else {}
    env_src = meta.get("env") if isinstance(meta.get("env"), dict) else meta.get("harness_env")
    env = {str(k): str(v) for k, v in (env_src or {}).items()} if isinstance(env_src, dict) else {}
    cand_cmd, cand_rc = _s(meta.get("command")), meta.get("pytest_rc")
    others: list[tuple[str, str, int | None]] = []
    cmds = meta.get("commands")
    tokens = {id_token(f) for f in candidate_frameworks}
    if isinstance(cmds, dict):
        for name, entry in cmds.items():
            if not isinstance(entry, dict) or not _s(entry.get("cmd")):
                continue
            rc = (
                entry.get("rc")
                if isinstance(entry.get("rc"), int) and not isinstance(entry.get("rc"), bool)
                else None
            )
            if cand_cmd is None and str(name).rpartition(".")[2] in tokens:
                cand_cmd, cand_rc = str(entry["cmd"]), rc
                env = {**env, **{k: str(v) for k, v in entry.items() if k.isupper()}}
            else:
                others.append((str(name), str(entry["cmd"]), rc))
    runs = meta.get("runs")
    cand_run = runs.get("candidate") if isinstance(runs, dict) else None
    prov = cand_run.get("provenance") if isinstance(cand_run, dict) else None
    prov = prov if isinstance(prov, dict) else {}
    tools = [
        f"{label} {prov[key]}"
        for key, label in _TOOLCHAIN_LABELS
        if isinstance(prov.get(key), (str, int, float)) and str(prov[key])
    ]
    return SessionFacts(
        toolchain="; ".join(tools) or None,
        gpu=_s(meta.get("gpu")) or _s(versions.get("gpu")) or _s(versions.get("nvidia_smi")),
        driver=_s(versions.get("driver")),
        machine=_s(meta.get("machine")),
        recorded_at=_s(meta.get("recorded_at")) or _s(meta.get("date")),
        tileiras=_s(meta.get("tileiras")) or _s(versions.get("tileiras")) or _s(prov.get("tileiras")),
        env=env,
        candidate_cmd=cand_cmd,
        candidate_rc=cand_rc if isinstance(cand_rc, int) and not isinstance(cand_rc, bool) else None,
        other_cmds=tuple(others),
    )


def _bench_env(facts: SessionFacts) -> str:
    src: Mapping[str, object] = facts.env or os.environ
    vals = [f"{k}={src[k]}" for k in (*BENCH_ENV_KEYS, "MAX_REP") if k in src]
    return " ".join(vals) if vals else "unset (TileGym defaults: CUPTI=1 WARMUP=100 REP=50 MIN_REP=2)"


def render_agent_e_log(
    ws: Workspace,
    table: RatioTable,
    *,
    command: str,
    pytest_rc: int,
    rc_source: str,
    raw_source: str,
    sanitized: object,
    validator_text: str,
    facts: SessionFacts | None = None,
) -> str:
    """``reports/agent_logs/agent_e.md`` (§5.3)."""
    facts = facts or SessionFacts()
    kept = getattr(sanitized, "kept_records", None)
    dropped = list(getattr(sanitized, "dropped_nodeids", []) or [])
    verbatim = getattr(sanitized, "verbatim", None)
    inv_text = getattr(sanitized, "investigation_log", "")
    g = round4(table.geomean) if table.geomean is not None else None
    out = [
        f"# Agent E log: {ws.kernel}\n",
        "\n",
        "## Environment\n",
        "\n",
        f"- benchmark settings: {_bench_env(facts)}\n",
        f"- GPU: {facts.gpu or 'not recorded'}"
        + (f" (driver {facts.driver})" if facts.driver else "")
        + "\n",
        f"- tileiras: {facts.tileiras or os.environ.get('TILEIRAS_BIN') or 'not recorded'}\n",
        *([f"- toolchain: {facts.toolchain}\n"] if facts.toolchain else []),
        *([f"- machine: {facts.machine}\n"] if facts.machine else []),
        *([f"- run recorded at: {facts.recorded_at}\n"] if facts.recorded_at else []),
        f"- kernel dir: {ws.kernel_dir} (source: {ws.source})\n",
        f"- TileGym: {ws.tilegym or 'not given'}\n",
        f"- written by cutile-workbench {__version__}\n",
        "\n",
        "## Commands\n",
        "\n",
        f"$ {command}  → pytest_rc={pytest_rc} ({rc_source}); full log: {FULL_LOG}\n",
        *(
            f"$ {cmd}  → pytest_rc={rc if rc is not None else '?'} (recorded: {name})\n"
            for name, cmd, rc in facts.other_cmds
        ),
        "\n",
        "## Logs\n",
        "\n",
        f"- raw input: {raw_source}\n",
        f"- sanitized: {PERF_LOG} ({'verbatim copy, pytest rc 0' if verbatim else 'complete record sections only'};"
        f" {kept if kept is not None else '?'} record(s) kept)\n",
        f"- diagnostics: {INVESTIGATION_LOG} ({len(inv_text.splitlines())} line(s))\n",
    ]
    if dropped:
        out.append(f"- dropped (moved to diagnostics): {', '.join(dropped)}\n")
    gtxt = f"{g:.4f}" if g is not None else "NA"
    out += [
        "\n",
        "## Ratio summary\n",
        "\n",
        f"rows={len(table.rows)} matched={len(table.matched)} missing={len(table.missing)} "
        f"geomean_ratio={gtxt} severity={table.severity} verdict={table.verdict}\n",
    ]
    if table.geomean_ci:
        out.append(
            f"bootstrap 95% CI of the geomean: {table.geomean_ci[0]:.4f}–{table.geomean_ci[1]:.4f}"
            f"{' (inconclusive at 1.05)' if table.inconclusive else ''}\n"
        )
    out += ["\n", "## Validator output\n", "\n", "~~~~text\n", validator_text, "~~~~\n"]
    return "".join(out)


def render_agent_e_report(ws: Workspace, table: RatioTable, trust: KernelTrust | None = None) -> str:
    """``reports/agent_e.md``: the readable summary (the final gate's fallback log location)."""
    assert table.geomean is not None
    ok = sorted(table.matched, key=lambda r: -(r.ratio or 0))
    out = [
        f"# Agent E report: {ws.kernel}\n",
        "\n",
        f"**{table.verdict}**: geomean {round4(table.geomean):.4f} "
        f"({table.geomean:.2f}x), severity {table.severity}.\n",
        "\n",
    ]
    if table.geomean_ci:
        out.append(
            f"Bootstrap 95% CI {table.geomean_ci[0]:.4f}–{table.geomean_ci[1]:.4f}"
            f"{', inconclusive at the 1.05 gate' if table.inconclusive else ''}.\n\n"
        )
    out.append(
        f"{len(table.matched)} of {len(table.rows)} config(s) matched; {len(table.missing)} missing or "
        "without baseline.\n\n"
    )
    if trust is not None:
        out.append(f"{_cell(trust.summary)}.\n\n")
    if ok:
        out.append("Slowest configs (candidate / baseline):\n\n")
        out += [
            f"- {_cell(r.params)}: {_ratio(r.ratio)} ({_ms(r.candidate_ms)} vs {_ms(r.baseline_ms)} ms, "
            f"{r.baseline_backend}; launches {_launches(r)})\n"
            for r in ok[:5]
        ]
    for r in table.missing:
        out.append(f"- {_cell(r.params)}: {r.status} ({_cell(r.reason)})\n")
    out.append("\n")
    if table.verdict == "DONE":
        out.append("Next: none (DONE is terminal).\n")
    else:
        out.append("Next: route to C (IR diff) / F (perf investigation); see reports/performance.md.\n")
    return "".join(out)


def _infer_rc(candidate: PerfLog, raw_text: str) -> tuple[int, str]:
    if any(o.outcome in ("failed", "error") for o in candidate.outcomes):
        return 1, "inferred from failed tests in the log"
    if re.search(r"(?m)^=+ .*\b(failed|error|errors)\b.* =+\s*$", raw_text):
        return 1, "inferred from the pytest summary line"
    return 0, "inferred: no failures in the log"


def _join_investigation(parts: list[tuple[RawLog, str]]) -> str:
    """Concatenate investigation logs; stays empty when every part is empty (clean run)."""
    nonempty = [(r, t) for r, t in parts if t]
    if len(nonempty) == 1 and nonempty[0][0].variant is None:
        return nonempty[0][1]
    out = []
    for r, t in nonempty:
        out.append(f"== {r.out_relpath} (from {r.source}) ==\n")
        out.append(t if t.endswith("\n") else t + "\n")
    return "".join(out)


def plan_e_report(
    ws: Workspace,
    *,
    table: RatioTable | None = None,
    raw_log_text: str | None = None,
    pytest_rc: int | None = None,
    command: str | None = None,
    run_real_scripts: bool = True,
    raw_log_path: Path | None = None,
    etable: ETable | None = None,
    trust: KernelTrust | None = None,
) -> ReportPlan:
    """Render + validate E's report set for ``ws`` (see module docstring); nothing is written.

    ``etable`` / ``trust``: the facts the caller's session already holds (E's table of the workspace's
    own logs, the candidate identity): given, they are not loaded again.

    ``raw_log_path`` names where ``raw_log_text`` came from (used in messages and agent_e.md).
    Multi-variant kernels: each variant's raw log (``reports/agent_logs/perf_cutile_rs_<v>.full.txt``,
    else ``perf_cutile_rs_<v>.txt``) is sanitized to ``perf_cutile_rs_<v>.txt`` and its records join
    the table; without a main log, ``perf_cutile_rs.txt`` is the variants' sanitized logs concatenated.
    """
    from cutile_workbench.artifacts.perflog.sanitizer import sanitize
    from cutile_workbench.stages.e.e_table import load_e_table

    paths = ws.paths
    if etable is None or raw_log_text is not None:
        etable = load_e_table(ws, raw_log_text=raw_log_text, raw_log_path=raw_log_path)
    candidate, parsed, baselines = etable.candidate, etable.parsed, etable.baselines
    if table is None:
        from cutile_workbench.history.noise import table_with_noise

        table = table_with_noise(etable.table, paths, set(etable.candidate_frameworks))  # issue 18 §4
    if table.verdict == "BLOCKED" or table.geomean is None:
        reason = "; ".join(table.notes) or "no matched config (no candidate median with a baseline)"
        raise Blocked(f"no usable data: {reason}", path=str(paths.root))
    has_missing = any(r.status == "NA" for r in table.rows)
    if table.verdict == "DONE" and has_missing:  # the invariant, enforced even for a supplied table
        raise WorkbenchError("internal: refusing DONE with a missing or failed config", path=str(paths.root))
    facts = session_facts(ws.session_meta(), {r.framework for r in candidate.records})
    main_raw = parsed[0][0] if parsed[0][0].variant is None else None
    sanitized_parts: list[tuple[RawLog, Any, int, str]] = []
    for raw, log in parsed:
        if raw is main_raw and pytest_rc is not None:
            rc, rc_src = pytest_rc, "given"
        elif raw is main_raw and facts.candidate_rc is not None:
            rc, rc_src = facts.candidate_rc, "recorded in workbench/session.json"
        else:
            rc, rc_src = _infer_rc(log, raw.text)
        sanitized_parts.append((raw, sanitize(raw.text, pytest_rc=rc, source=str(raw.path)), rc, rc_src))
    if command is None:
        command = facts.candidate_cmd or "not recorded (raw log supplied)"

    if ws.analysis is not None and ws.analysis.reference_backend:
        reference = (
            f"`{_cell(ws.analysis.reference_backend)}` (analysis.json reference_backend, "
            "per-variant winners applied)"
        )
    else:
        reference = "the faster available baseline per config (analysis.json names no reference_backend)"
    # issue #15: were candidate and baseline measured under the same conditions? (extra section)
    from cutile_workbench.history.conditions import ratio_conditions

    conditions = ratio_conditions(
        paths,
        {r.baseline_backend for r in table.matched if r.baseline_backend},
        candidate_log=raw_log_path or ws.raw_log_path(),
        candidate=candidate,
        baselines=baselines,
    ).section()
    if trust is None or raw_log_text is not None:
        trust = workspace_trust(ws, table, candidate)
    from cutile_workbench.clock_exposure import render_clock_section

    clocks = render_clock_section([(r.params, r.candidate_clocks, r.baseline_clocks) for r in table.matched])
    conditions = "\n".join(part for part in (conditions, clocks) if part)
    files: dict[str, str] = {
        PERFORMANCE_MD: render_performance_md(
            ws.kernel,
            table,
            candidate,
            baselines,
            reference=reference,
            conditions=conditions,
            stand_ins=stand_ins_of(
                {r.framework for r in candidate.records},
                ws.session_meta(),
                {r.baseline_backend for r in table.matched if r.baseline_backend},
            ),
            extra_section=speed_of_light_section(ws, table, candidate),
            trust=trust,
        ),
    }
    for raw, san, _rc, _src in sanitized_parts:
        files[raw.out_relpath] = san.validator_log
        if not raw.full_exists:
            files[raw.full_relpath] = raw.text  # keep the raw tee next to the sanitized log (§1.2)
    if main_raw is None:  # variants only: the validator-consumed main log is their union
        files[PERF_LOG] = "".join(
            san.validator_log
            if san.validator_log.endswith("\n") or not san.validator_log
            else san.validator_log + "\n"
            for _r, san, _c, _s in sanitized_parts
        )
    files[INVESTIGATION_LOG] = _join_investigation(
        [(r, san.investigation_log) for r, san, _c, _s in sanitized_parts]
    )
    files[AGENT_E_REPORT] = render_agent_e_report(ws, table, trust)
    first_raw, first_san, first_rc, first_src = sanitized_parts[0]

    def agent_log(validator_text: str) -> str:
        text = render_agent_e_log(
            ws,
            table,
            command=command or "",
            pytest_rc=first_rc,
            rc_source=first_src,
            raw_source=first_raw.source,
            sanitized=first_san,
            validator_text=validator_text,
            facts=facts,
        )
        if len(sanitized_parts) > 1:
            extra = "".join(
                f"- variant log {r.out_relpath}: from {r.source}; pytest_rc={rc} ({src}); "
                f"{getattr(san, 'kept_records', '?')} record(s) kept\n"
                for r, san, rc, src in sanitized_parts
                if r.variant is not None
            )
            text = text.replace("\n## Ratio summary\n", extra + "\n## Ratio summary\n", 1)
        return text

    # validator results depend on agent_e.md only through "non-empty", so validate with a draft
    files[AGENT_E_LOG] = agent_log("(validator output follows in the final log)\n")
    variant_logs = [r.out_relpath for r, *_ in sanitized_parts if r.variant is not None]
    results = _validate(ws, files, run_real_scripts, variant_logs)
    text = transcript(results)
    files[AGENT_E_LOG] = agent_log(text)
    final = validate_agent_e(paths.root, files)
    if final.output != next(r for r in results if "validate_agent_e" in r.command).output:
        results.append(final)  # pragma: no cover - would mean the draft changed the outcome
        text = transcript(results)
    ok = all(r.exit_code == 0 for r in results)
    g = table.geomean
    block = (
        "<PERF_LOG>\n"
        f"geomean_ratio={g:.2f}x\n"
        f"severity={table.severity}\n"
        f"report={paths.performance_md}\n"
        f"perf_log={paths.perf_cutile_rs}\n"
        f"investigation_log={paths.perf_investigation_log}\n"
        "</PERF_LOG>\n"
    )
    planned = [PlannedFile(rel, content) for rel, content in files.items()]
    return ReportPlan(
        stage="E",
        kernel=ws.kernel,
        kernel_dir=paths.root,
        files=planned,
        verdict=table.verdict,
        validator_output=text,
        ok=ok,
        perf_log_block=block,
    )


def candidate_framework(candidate: PerfLog) -> str:
    """The candidate log's framework (``cutile-rs`` unless a stand-in's single framework says otherwise):
    the one rule, :func:`cutile_workbench.artifacts.candidate.log_framework`."""
    from cutile_workbench.artifacts.candidate import log_framework

    return log_framework(candidate)


def framework_of(frameworks: Iterable[str]) -> str:
    """:func:`candidate_framework` from the candidate records' frameworks alone (the same rule)."""
    names = sorted(set(frameworks))
    return names[0] if len(names) == 1 else "cutile-rs"


def workspace_trust(
    ws: Workspace, table: RatioTable, candidate: PerfLog, launch_sets: Sequence[Any] | None = None
) -> KernelTrust:
    """Candidate identity per row and the reference's config (:mod:`cutile_workbench.evidence.trust`),
    through the one cached path every face takes (issue 31: computed once per content, per config)."""
    from cutile_workbench.evidence.trust import cached_kernel_trust

    return cached_kernel_trust(
        ws, table, candidate_framework=candidate_framework(candidate), launch_sets=launch_sets
    )


def speed_of_light_section(ws: Workspace, table: RatioTable, candidate: PerfLog) -> str:
    """performance.md's speed-of-light section (empty when no row has a bytes/flops model)."""
    from cutile_workbench.evidence.gpu import gpu_facts
    from cutile_workbench.evidence.ncu import load_probes
    from cutile_workbench.evidence.sol import recorded_argnames, render_sol_section, sol_rows, test_argnames

    gpu = gpu_facts(ws.session_meta())
    argnames = {
        **recorded_argnames(ws.kernel),
        **test_argnames(ws.tilegym, (r.func_key for r in table.matched)),
    }
    rows = sol_rows(
        table,
        ws.kernel,
        gpu,
        analysis=ws.analysis,
        probes=load_probes(ws.paths),
        argnames=argnames,
        candidate_backend=candidate_framework(candidate),
    )
    return render_sol_section(rows, gpu)


def _validate(
    ws: Workspace, files: Mapping[str, str], run_real_scripts: bool, variant_logs: Sequence[str] = ()
) -> list[ValidatorResult]:
    root = ws.paths.root
    results = [
        validate_perf_log(root / PERF_LOG, PERF_LOG, text=files[PERF_LOG]),
        validate_perf_log(root / "baseline_perf_cutile.txt", "baseline_perf_cutile.txt"),
        *(validate_perf_log(root / v, v, text=files[v]) for v in variant_logs),
        validate_agent_e(root, files),
    ]
    if run_real_scripts and ws.tilegym is not None:
        runs: list[tuple[str, list[str]]] = [
            ("validate_perf_log.sh", ["{BASE}/" + PERF_LOG, PERF_LOG]),
            ("validate_perf_log.sh", ["{BASE}/baseline_perf_cutile.txt", "baseline_perf_cutile.txt"]),
        ]
        runs += [("validate_perf_log.sh", ["{BASE}/" + v, v]) for v in variant_logs]
        runs.append(("validate_agent_e.sh", [ws.kernel]))
        for script, args in runs:
            res = run_real_validator(ws.tilegym, script, args, root, files)
            if res is not None:
                results.append(res)
    return results


def real_scripts_available(tilegym: Path | None) -> bool:
    from cutile_workbench.stages.e.validators import find_scripts_dir

    return find_scripts_dir(tilegym) is not None
