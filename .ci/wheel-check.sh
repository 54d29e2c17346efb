#!/usr/bin/env bash
# A wheel install (not editable) in a clean venv opens the README's first command on the embedded
# default (issue 36): the recorded sessions and every non-Python file the app reads must ship in
# the wheel as package data. Run from anywhere; builds in a temp dir and removes it.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" wheel -q --no-deps -w "$work/dist" "$repo"
"$work/venv/bin/pip" install -q "$work"/dist/cutile_workbench-*.whl
cd "$work"  # outside the checkout: nothing may come from the source tree
"$work/venv/bin/python" -c '
import cutile_workbench, sys
assert "site-packages" in cutile_workbench.__file__, cutile_workbench.__file__
'
"$work/venv/bin/cutile-workbench" kernels
"$work/venv/bin/cutile-workbench" table matmul >/dev/null
# `cutile-workbench matmul` opens the TUI: the same app, headless, on the same default, then Ctrl+Q
"$work/venv/bin/python" -c '
import asyncio
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data

async def main() -> None:
    app = make_app(load_app_data("matmul", out_root=None, tilegym=None))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.data.kernel == "matmul" and app.data.source == "recorded", (app.data.kernel, app.data.source)
        assert type(app.screen).__name__ == "RatiosScreen", app.screen
        await pilot.press("ctrl+q")

asyncio.run(main())
'
echo "wheel-check: ok (a non-editable install opened matmul's recorded session)"
