"""The code style holds on the whole repository: ruff's lint and its format (pyproject.toml: lines of at most
120 characters, rules E, F, W, I) and mypy on ``core/`` (``[tool.mypy]``). A failure prints the tool's own
report, so it reads as running the tool by hand: ``.venv/bin/ruff check``, ``.venv/bin/ruff format --check``,
``.venv/bin/mypy``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = {
    "ruff-check": ["ruff", "check", "--no-cache", "."],
    "ruff-format": ["ruff", "format", "--check", "--no-cache", "."],
    "mypy": ["mypy"],  # files and settings from [tool.mypy]; incremental through .mypy_cache
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_tool_reports_nothing(name):
    command = [sys.executable, "-m", *COMMANDS[name]]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(COMMANDS[name])} failed:\n{result.stdout}{result.stderr}", pytrace=False)
