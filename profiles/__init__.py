"""Built-in kernel profiles: TileGym-convention perf suites plus recorded real H200 sessions.

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


def _profile(kernel: str, suite_dir: str, test_class: str, candidate: str, baseline: str, description: str,
             backends: tuple[str, ...] = BACKENDS) -> Profile:
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
    _profile("rms_norm", "rms_norm", "Test_RMSNorm", "cutile", "triton",
             "bf16 RMSNorm: our cuTile (static persistent) kernel vs our Triton kernel"),
    _profile("rms_norm_hotpath", "rms_norm", "Test_RMSNorm", "cutile-hotpath", "cutile",
             "bf16 RMSNorm: a wrapper that allocates in its hot path (zeros_like + add_) vs the clean cuTile one"),
    _profile("softmax", "softmax", "Test_Softmax", "cutile", "triton",
             "bf16 row softmax: our cuTile kernel vs our Triton kernel", SOFTMAX_BACKENDS),
)


def list_profiles() -> list[Profile]:
    return list(_PROFILES)


def get_profile(kernel: str) -> Profile | None:
    for p in _PROFILES:
        if p.kernel == kernel:
            return p
    return None
