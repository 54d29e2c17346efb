"""``python -m cutile_workbench`` = the ``cutile-workbench`` console script."""

from __future__ import annotations

import sys

from cutile_workbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
