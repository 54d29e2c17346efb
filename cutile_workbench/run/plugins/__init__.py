"""pytest plugins loaded inside the measured child process (``-p`` / the pytest11 entry point)."""
