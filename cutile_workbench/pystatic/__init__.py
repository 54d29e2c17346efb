"""Static reading of Python source (AST helpers) shared by the checks and the evidence."""
