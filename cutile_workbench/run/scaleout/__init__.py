"""Scale-out of a live run: shards over a node's GPUs (``run --gpus``) and over nodes (``run --slurm``).

Modules (each states its own contract):
- :mod:`~cutile_workbench.run.scaleout.plan` — which node ids each shard runs (rows kept together), the plan id,
  the on-disk layout under ``<kernel>/workbench/shards/<plan_id>/`` and the shard manifests.
- :mod:`~cutile_workbench.run.scaleout.select_plugin` — pytest plugin: ``--workbench-only-ids FILE`` keeps a
  shard's ids (loaded with ``-p`` through ``RunSpec.extra_args``; the runner itself is unchanged).
- :mod:`~cutile_workbench.run.scaleout.devices` — ``--gpus`` parsing, GPU enumeration and identity (name, UUID).
- :mod:`~cutile_workbench.run.scaleout.worker` — the shard worker process (``python -m cutile_workbench.run.scaleout.worker``):
  the runner once per role on one shard, on one GPU; writes the shard layout, manifest and progress.
- :mod:`~cutile_workbench.run.scaleout.local` — one worker per GPU slot on this node.
- :mod:`~cutile_workbench.run.scaleout.slurm` — one ``sbatch --array`` job, watched with squeue/sacct/scontrol,
  cancelled with scancel.
- :mod:`~cutile_workbench.run.scaleout.progress` — tails the shards' progress streams into one event stream.
- :mod:`~cutile_workbench.run.scaleout.merge` — shards → the kernel's TileGym layout, with per-row provenance.
- :mod:`~cutile_workbench.run.scaleout.service` — :func:`run_scaled`: plan → resume → execute → merge.
- :mod:`~cutile_workbench.run.scaleout.console` — the CLI face (flags → request, progress lines, exit code).

This package's ``__init__`` imports nothing: the pytest child imports ``select_plugin`` through it.
"""
