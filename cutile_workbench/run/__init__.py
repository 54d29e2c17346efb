"""Running and measuring: the run's spec and command lines (spec), the pytest child (runner), its
results filed into the artifact layout (results), CUPTI capture (capture/), the pytest plugins loaded
in the child (plugins/), scale-out over GPUs and SLURM (scaleout/)."""
