"""The GPU as the host reports it: nvidia-smi, launched in one place (``smi``), and which GPU a child
process sees as its device 0 (``visible``); NVML readings live in ``history/provenance/gpu``, which
records them per run."""
