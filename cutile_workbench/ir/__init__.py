"""Tile IR engine (no Textual): ``loader`` (guarded reading, variant pairing), ``canon``
(canonical text for diffing, with a canonical → source line map), ``diffmodel`` (side-by-side rows,
intraline spans, folding, hunks), ``lexer`` (Pygments MLIR lexer, alias ``mlir``), ``audit``
(diff_ir.sh-parity perf-attribute audit), ``graph`` (op graphs), the structural diff (``structdiff``
on ``structmatch``, the matcher, and ``structrender``, the rows' text), ``dumps`` and ``filing``."""
