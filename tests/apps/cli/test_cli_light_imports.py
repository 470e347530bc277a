"""The command line builds its parser without torch, so `specdraft edge` runs on a laptop that has
llama-cpp-python and numpy alone."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import contextlib, io, sys
from specdraft.apps.cli import main
sys.argv = ["specdraft", "edge", "--help"]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit:
        pass
print(sorted(name for name in ("torch", "transformers", "faiss") if name in sys.modules))
"""


def test_edge_help_imports_no_torch() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
