"""Child processes: how the package stops them (the process-group kill, written once)."""
