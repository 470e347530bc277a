"""PassCostProfile: what one target forward pass costs, by the number of tokens it processes.

Learnt online from timed passes so policies can decide from measured cost rather than constants:
whether a draft of n tokens pays for itself on this device, and how long a draft should be.

Each size bucket keeps its last ``window`` timings and is estimated by their (lower) median. Noise
on a shared machine only ever adds time, and one contended sample used to keep a bucket's moving
average high for long: the policy then avoided that size, so no new sample came to correct it (a
loaded run put 8-token passes at 2-5x a one-token pass and fell back to plain decoding). A median
ignores a lone outlier once the bucket has two samples and follows a lasting change after
``window // 2 + 1`` samples. Thread-safe.
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
        self._samples: dict[int, deque[float]] = {}  # bucket (power of two >= n) -> its last timings
        self._seconds: dict[int, float] = {}  # bucket -> the lower median of its samples
        self._lock = threading.Lock()

    @staticmethod
    def bucket(n_tokens: int) -> int:
        return 1 << max(0, math.ceil(math.log2(max(1, n_tokens))))

    def record(self, n_tokens: int, seconds: float) -> None:
        key = self.bucket(n_tokens)
        with self._lock:
            samples = self._samples.setdefault(key, deque(maxlen=self.window))
            samples.append(seconds)
            self._seconds[key] = statistics.median_low(samples)

    def known(self, n_tokens: int) -> bool:
        return self.bucket(n_tokens) in self._seconds

    def estimate(self, n_tokens: int) -> float | None:
        """Seconds for a pass over ``n_tokens``; None if nothing was measured.

        The bucket's median where measured, else a linear interpolation between the nearest
        measured buckets, else (beyond the largest) the straight line through the two largest
        (a pass costs a fixed part plus a part per token), flat when only one size is known. A
        pass over more tokens is never estimated cheaper than one over fewer.
        """
        return self.estimator()(n_tokens)

    def estimator(self) -> Callable[[int], float | None]:
        """``estimate`` over one snapshot of the profile, each bucket worked out once: for a caller
        that asks about many sizes in one decision (``SpeculationPolicy.best_length`` scans up to
        ``max_draft_len`` of them, 512 for copies, and paid ~4 ms a step asking ``estimate``)."""
        with self._lock:
            known = dict(self._seconds)
        sizes = sorted(known)
        memo: dict[int, float | None] = {}

        def estimate(n_tokens: int) -> float | None:
            key = self.bucket(n_tokens)
            if key not in memo:
                memo[key] = _estimate_bucket(known, sizes, key)
            return memo[key]

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
        with self._lock:
            return dict(sorted(self._seconds.items()))


def _estimate_bucket(known: dict[int, float], sizes: list[int], key: int) -> float | None:
    """``PassCostProfile.estimate`` for bucket ``key``, from the buckets ``known`` (``sizes``: sorted)."""
    if not known:
        return None
    floor = max((known[k] for k in sizes if k <= key), default=0.0)  # monotone in size
    if key in known:
        return max(known[key], floor)
    below = [k for k in sizes if k < key]
    above = [k for k in sizes if k > key]
    if below and above:
        lo, hi = below[-1], above[0]
        value = known[lo] + (known[hi] - known[lo]) * (key - lo) / (hi - lo)
    elif len(below) >= 2:
        lo, hi = below[-2], below[-1]
        slope = max(0.0, (known[hi] - known[lo]) / (hi - lo))
        value = known[hi] + slope * (key - hi)
    elif below:
        value = known[below[-1]]
    else:
        value = known[above[0]]
    return max(value, floor)
