"""Reusable Textual widgets for cutile-workbench, fed model objects only.

Contract: no file, network or GPU I/O in this package (``tests/unit/test_architecture.py`` checks
that no module here calls ``open``/``Path.read_*``/``Path.write_*``). Every widget ships its
own ``DEFAULT_CSS`` (theme variables only) and names its styleable parts in
``COMPONENT_CLASSES`` as ``widgetname--part``.
"""
