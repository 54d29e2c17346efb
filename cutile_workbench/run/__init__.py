"""Running and measuring: the pytest child (runner), CUPTI capture (capture/), the pytest
plugins loaded in the child (plugins/), scale-out over GPUs and SLURM (scaleout/)."""
