"""Low-level helpers that know nothing of TileGym: atomic writes, cancellation, located JSON."""
