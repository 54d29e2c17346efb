"""The GPU as the host reports it: nvidia-smi, launched in one place (NVML readings live in
``history/provenance/gpu``, which records them per run)."""
