"""Stage E: the ratio table and its statistics, the report and the in-process validators."""
