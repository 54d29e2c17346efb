"""Evidence F gathers beyond launch counts (no Textual, no GPU at import; pure except :mod:`.ncu`'s runner).

- :mod:`.gpu` — the session's GPU: compute capability (for arch-conditional configs) and the
  measured peaks speed-of-light is computed against.
- :mod:`.search_space` — seed F step 3: the cutile-rs wrapper's autotune configs read statically
  (arch branches resolved) vs analysis.json ``autotune_configs``/``best_config`` and the reference
  wrapper's branch for that GPU: missing configs and knobs.
- :mod:`.identity` — which kernel each side ran for each config, mapped to analysis.json variants
  ("dispatch picks the wrong variant").
- :mod:`.candidate_identity` — per config, did the candidate run its own framework's kernel, the
  reference's, a PyTorch/library kernel or nothing (captured symbols and resources; static audit of the
  wrapper's calls into another backend).
- :mod:`.reference_config` — the config the reference ran, decoded from its cuTile kernel symbol and
  matched against its configs function for the session's GPU.
- :mod:`.trust` — both, read for a workspace and its E table (what E, F, ``table``, ``timeline`` and the
  TUI show).
- :mod:`.launches` — per-launch captures summarised (main kernel, launch classes, resources) and the
  one launch-evidence source per config (captures, else kernel_times).
- :mod:`.gap` — is a per-launch kernel-time gap real, noise or unresolved (CI or a stated %).
- :mod:`.ncu` — the focused Nsight Compute probe: command line, child run, CSV parser, typed
  result filed under the kernel's ``workbench/probes/``.
- :mod:`.sol` — bytes/flops models per kernel family and speed-of-light vs the measured peak.
"""
