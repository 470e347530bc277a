"""The device calls' sections (``scripts/gpu_run.py``): ``say`` (a timestamped progress line on stderr)
and ``Sections`` (run in order, none started past the deadline, a failing one recorded instead of
ending the call). Torch-free and specdraft-free."""

from __future__ import annotations

import sys
import time
import traceback
from typing import Callable, TypeVar

T = TypeVar("T")


def say(message: str) -> None:
    print(f"[gpu_run {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Sections:
    """A call's sections, run in order by ``run(name, step, *args)``: a section that would start after
    ``limit_s`` seconds is skipped (listed in ``skipped``), and one that raises is recorded in
    ``errors`` (its traceback) instead of ending the call, so that the sections after it still run
    and the report says what failed (``scripts/gpu_run.py``'s ``main`` then exits 1). Device time is short; one broken
    section must not cost the others' measurements."""

    def __init__(self, limit_s: float) -> None:
        self.start = time.perf_counter()
        self.limit_s = limit_s
        self.skipped: list[str] = []
        self.errors: dict[str, str] = {}

    def elapsed(self) -> float:
        return round(time.perf_counter() - self.start, 1)

    def run(self, name: str, step: Callable[..., T], *args: object) -> T | None:
        """``step(*args)``, or None when skipped or failed."""
        if self.elapsed() >= self.limit_s:
            self.skipped.append(name)
            say(f"skipping {name}: {self.elapsed():.0f} s in, past the deadline")
            return None
        say(f"{name} ({self.elapsed():.0f} s in)")
        try:
            return step(*args)
        except Exception:  # recorded in the report and the exit code (class doc)
            self.errors[name] = traceback.format_exc()
            say(f"{name} failed:\n{self.errors[name]}")
            return None

    def close(self, report: dict) -> None:
        report.update(skipped_for_time=self.skipped, errors=self.errors, elapsed_s=self.elapsed())
