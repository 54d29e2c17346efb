"""Built-in kernel profiles: TileGym-convention perf suites plus recorded real H200 sessions.

Two kinds: :class:`Profile` — our own runnable suites (stand-in candidates: cuTile Python or a
deliberately flawed wrapper in the cutile-rs slot, labelled as such everywhere) with their recorded
sessions; :class:`RecordedSession` — real cutile-rs vs cuTile Python runs of TileGym's own
``test_perf`` (``cutile_workbench/profiles/tilegym/session/``), the embedded default for those kernels. Re-running a
recorded TileGym session needs a TileGym checkout with the cutile-rs library built (``--tilegym``).

Contract: :func:`list_profiles` / :func:`get_profile` describe each runnable kernel: its pytest
suite (``profiles/<name>/test_<name>.py``, TileGym conventions: class ``Test_<Kernel>``,
``test_perf(self, framework, m, n, dtype, record_property)``, framework first id token), the
backends it parametrizes, the declared candidate and baseline backends (record keys, e.g.
``"cutile"``), and ``session_root``: an out root in the TileGym artifact layout holding the
recorded session at ``session_root / kernel``. Importing this package needs no torch or GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

_HERE = Path(__file__).resolve().parent

#: framework values of the suites (record keys); ids use ``-``→``_`` (``cutile_hotpath``)
BACKENDS: tuple[str, ...] = ("pytorch", "triton", "cutile", "tilegym", "cutile-hotpath")
#: softmax also has a second cuTile variant (one block per row)
SOFTMAX_BACKENDS: tuple[str, ...] = (*BACKENDS, "cutile-row")


@dataclass(frozen=True)
class Profile:
    kernel: str  # kernel dir name under session_root (and the name users type)
    suite: Path  # the pytest file
    backends: tuple[str, ...]
    candidate: str  # record key of the candidate ("cutile-rs" stand-in)
    baseline: str  # record key of the reference backend
    session_root: Path  # out root of the recorded session: session_root / kernel is the kernel dir
    test_class: str = ""
    description: str = ""

    @property
    def kernel_dir(self) -> Path:
        return self.session_root / self.kernel

    @property
    def func_key(self) -> str:
        """``profiles/<p>/test_<p>.py::Test_X::test_perf`` relative to the repository root."""
        rel = self.suite.relative_to(_HERE.parent).as_posix()
        return f"{rel}::{self.test_class}::test_perf"


def _profile(
    kernel: str,
    suite_dir: str,
    test_class: str,
    candidate: str,
    baseline: str,
    description: str,
    backends: tuple[str, ...] = BACKENDS,
) -> Profile:
    return Profile(
        kernel=kernel,
        suite=_HERE / suite_dir / f"test_{suite_dir}.py",
        backends=backends,
        candidate=candidate,
        baseline=baseline,
        session_root=_HERE / suite_dir / "session",
        test_class=test_class,
        description=description,
    )


_PROFILES: tuple[Profile, ...] = (
    _profile(
        "rms_norm",
        "rms_norm",
        "Test_RMSNorm",
        "cutile",
        "triton",
        "bf16 RMSNorm: our cuTile (static persistent) kernel vs our Triton kernel",
    ),
    _profile(
        "rms_norm_hotpath",
        "rms_norm",
        "Test_RMSNorm",
        "cutile-hotpath",
        "cutile",
        "bf16 RMSNorm: a wrapper that allocates in its hot path (zeros_like + add_) vs the clean cuTile one",
    ),
    _profile(
        "softmax",
        "softmax",
        "Test_Softmax",
        "cutile",
        "triton",
        "bf16 row softmax: our cuTile kernel vs our Triton kernel",
        SOFTMAX_BACKENDS,
    ),
)


@dataclass(frozen=True)
class RecordedSession:
    """A recorded real run of TileGym's own test_perf (no runnable suite here: TileGym's is)."""

    kernel: str
    test: str  # TileGym test (func key)
    candidate: str  # record key of the candidate
    baseline: str
    session_root: Path
    description: str = ""
    #: the test_perf parametrize names in id order, read from TileGym 75a1430's test file (what
    #: ``f_evidence.sol.test_argnames`` reads from a checkout): the SOL shape without one
    perf_argnames: tuple[str, ...] = ()

    @property
    def kernel_dir(self) -> Path:
        return self.session_root / self.kernel

    @property
    def stand_in(self) -> bool:
        return self.candidate != "cutile-rs"


_TILEGYM_SESSIONS: tuple[RecordedSession, ...] = (
    RecordedSession(
        "silu_and_mul",
        "tests/ops/test_silu_and_mul.py::Test_SiLUAndMul::test_perf",
        "cutile-rs",
        "cutile",
        _HERE / "tilegym" / "session",
        "REAL cutile-rs vs cuTile Python, TileGym's test_perf, fp16 64x1024x{512..8192} (H200)",
        ("batch_size", "seq_len", "hidden_size", "dtype"),
    ),
    RecordedSession(
        "matmul",
        "tests/ops/test_matmul.py::Test_Matmul::test_perf",
        "cutile-rs",
        "cutile",
        _HERE / "tilegym" / "session",
        "REAL cutile-rs vs cuTile Python, TileGym's test_perf, fp16 2048-8192 cubed, both variants (H200)",
        (
            "use_tma",
            "static_persistent",
            "transpose_b",
            "transpose_a",
            "m",
            "n",
            "k",
            "offset_a",
            "offset_b",
            "dtype",
        ),
    ),
)


def list_recorded_tilegym() -> list[RecordedSession]:
    return list(_TILEGYM_SESSIONS)


def get_recorded_tilegym(kernel: str) -> RecordedSession | None:
    return next((r for r in _TILEGYM_SESSIONS if r.kernel == kernel), None)


def list_profiles() -> list[Profile]:
    return list(_PROFILES)


def get_profile(kernel: str) -> Profile | None:
    for p in _PROFILES:
        if p.kernel == kernel:
            return p
    return None
