"""The TileGym artifact layout and its files: paths (layout), the workspace, analysis.json,
perf logs (perflog/), per-launch captures, event streams, test ids, guarded writes."""
