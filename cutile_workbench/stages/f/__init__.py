"""Stage F: inputs, diagnosis, rendering and the report (its evidence readers are in ``evidence/``)."""
