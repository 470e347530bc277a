"""PassCostProfile: what one target forward pass costs, by the number of tokens it processes.

Learnt online from timed passes so policies can decide from measured cost rather than constants:
whether a draft of n tokens pays for itself on this device, and how long a draft should be.

Passes are grouped in size buckets (powers of two: a pass over 20 tokens goes to 32). Each bucket
keeps its last ``window`` timings, each with its pass's size, and stands for the point (size,
seconds) of its (lower) median timing. Noise on a shared machine only ever adds time, and one
contended sample used to keep a bucket's moving average high for long: the policy then avoided that
size, so no new sample came to correct it (a loaded run put 8-token passes at 2-5x a one-token pass
and fell back to plain decoding). A median ignores a lone outlier once the bucket has two samples
and follows a lasting change after ``window // 2 + 1`` samples.

A pass is charged as the top of its bucket, estimated on the lower convex hull of those points, so
a bucket's cost is read at its top whatever size measured it, and a contended timing above the hull
is ignored. Reading a bucket at the size that measured it (stop 42 and before) priced passes of up to
64 tokens at the 36-token probe pass of llama.cpp's load (121 ms on the 0.5B, where a 64-token pass
costs ~200) and 128 tokens at 206 ms (~400): the policy then drafted 127 copy tokens where 20-30 paid
best. Reading every size on the hull instead (no step at the bucket tops) drafted copies shorter
and lost in an interleaved A/B on the 0.5B: grammar sentences' decoding took 1.68-1.72 s against
1.52-1.64 charged at the tops, paragraphs 2.61-2.92 s against 2.35-2.39 (the kernels take columns in
groups, so a pass's cost can rise in steps too). Thread-safe.
"""

from __future__ import annotations

import math
import statistics
import threading
from collections import deque
from typing import Callable


class PassCostProfile:
    def __init__(self, window: int = 5) -> None:
        if window < 1:
            raise ValueError("window must be >= 1")
        self.window = window
        self._samples: dict[int, deque[tuple[float, int]]] = {}  # bucket -> its last (seconds, tokens)
        self._points: dict[int, tuple[float, int]] = {}  # bucket -> its lower-median sample
        self._lock = threading.Lock()

    @staticmethod
    def bucket(n_tokens: int) -> int:
        return 1 << max(0, math.ceil(math.log2(max(1, n_tokens))))

    def record(self, n_tokens: int, seconds: float) -> None:
        key = self.bucket(n_tokens)
        with self._lock:
            samples = self._samples.setdefault(key, deque(maxlen=self.window))
            samples.append((seconds, max(1, n_tokens)))
            self._points[key] = statistics.median_low(samples)  # by seconds (then by size, on a tie)

    def known(self, n_tokens: int) -> bool:
        return self.bucket(n_tokens) in self._points

    def estimate(self, n_tokens: int) -> float | None:
        """Seconds for a pass over ``n_tokens``; None if nothing was measured.

        A pass is charged as the top of its bucket (a 20-token pass as 32 tokens), read off the lower
        convex hull of the measured points (``_lower_hull``): the straight line between its nearest
        corners on either side, beyond the largest the line through the two largest (a pass costs a
        fixed part plus a part per token), flat when only one point is known, and below the
        smallest the smallest's cost. A pass over more tokens is never estimated cheaper than one
        over fewer.
        """
        return self.estimator()(n_tokens)

    def estimator(self) -> Callable[[int], float | None]:
        """``estimate`` over one snapshot of the profile, each bucket worked out once: for a caller
        that asks about many sizes in one decision (``SpeculationPolicy.best_length`` scans up to
        ``max_draft_len`` of them, 512 for copies, and paid ~4 ms a step asking ``estimate``)."""
        points = list(self.snapshot().items())
        hull = _lower_hull(points) if points else []
        memo: dict[int, float | None] = {}

        def estimate(n_tokens: int) -> float | None:
            top = self.bucket(n_tokens)
            if top not in memo:
                memo[top] = _on_the_hull(hull, top) if hull else None
            return memo[top]

        return estimate

    @classmethod
    def nominal(cls) -> "PassCostProfile":
        """A fixed, unmeasured profile (a pass over n tokens costs ``1 + 0.1 * (n - 1)``) for
        decisions that must not depend on timing, such as seeded requests that must repeat exactly."""
        profile = cls()
        for n in (1 << i for i in range(10)):
            profile.record(n, 1.0 + 0.1 * (n - 1))
        return profile

    def snapshot(self) -> dict[int, float]:
        """The measured points: tokens in a pass -> seconds, one per bucket, by size."""
        with self._lock:
            return {n: seconds for seconds, n in sorted(self._points.values(), key=lambda point: point[1])}


def _on_the_hull(hull: list[tuple[int, float]], n: int) -> float:
    """``PassCostProfile.estimate`` at ``n`` tokens on ``hull`` (``_lower_hull``'s corners, by size)."""
    if n <= hull[0][0] or len(hull) == 1:
        return hull[0][1] if n <= hull[0][0] else hull[-1][1]
    for (lo, lo_s), (hi, hi_s) in zip(hull, hull[1:]):
        if n <= hi:
            return lo_s + (hi_s - lo_s) * (n - lo) / (hi - lo)
    (lo, lo_s), (hi, hi_s) = hull[-2], hull[-1]
    return hi_s + (hi_s - lo_s) / (hi - lo) * (n - hi)


def _lower_hull(points: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The lower convex hull of ``points`` (sorted by size), made non-decreasing.

    A pass's cost is convex in its size (flat while memory-bound, then a part per token) and noise
    only adds time, so a point above the hull is a contended timing: the 0.5B's load probe once
    timed a 5-token pass at 32.5 ms between a 4-token one at 17.0 and a 16-token one at 48.8, and
    read on the lines through every point, that made the policy draft 3 tokens for 10 steps. A point
    below an earlier one is raised to it."""
    hull: list[tuple[int, float]] = []
    for point in points:
        while len(hull) >= 2:
            (x0, y0), (x1, y1) = hull[-2], hull[-1]
            if (y1 - y0) * (point[0] - x0) >= (point[1] - y0) * (x1 - x0):  # hull[-1] on or above the chord
                hull.pop()
            else:
                break
        hull.append(point)
    top = 0.0
    rising = []
    for size, seconds in hull:
        top = max(top, seconds)
        rising.append((size, top))
    return rising
