"""Every script of benchmarks/ runs as a script (``python benchmarks/<name>.py --help``), from any
working directory, in a fresh interpreter: one for all of them, each run as ``__main__``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(
    path for path in BENCHMARKS.glob("*.py") if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")
)

DRIVER = """
import contextlib, io, json, runpy, sys
helps = {}
for path in sys.argv[1:]:
    sys.argv, sys.path[0] = [path, "--help"], path.rsplit("/", 1)[0]  # as `python PATH --help` sets them
    out = io.StringIO()
    code = None
    with contextlib.redirect_stdout(out):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exit:
            code = exit.code
    helps[path] = [code, out.getvalue()]
print(json.dumps(helps))
"""


def test_every_script_prints_its_help(tmp_path):
    assert {path.name for path in SCRIPTS} >= {
        "load.py",
        "pass_cost.py",
        "prefix_bench.py",
        "http_rag.py",
        "grammar_quality.py",
        "datastore_lookup.py",
        "load_batch_probe.py",
    }
    out = subprocess.run(
        [sys.executable, "-c", DRIVER, *map(str, SCRIPTS)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    helps = json.loads(out.stdout.strip().splitlines()[-1])
    for path in SCRIPTS:
        code, text = helps[str(path)]
        assert code == 0 and text.startswith("usage:"), (path.name, code, text[:200])
