"""The two stages of the pipeline: E (benchmark ratios) and F (residual perf investigation)."""
