"""PassCostProfile: what one target forward pass costs, by the number of tokens it processes.

Learnt online from timed passes (an exponential moving average per size bucket) so policies can
decide from measured cost rather than constants: whether a draft of n tokens pays for itself on
this device, and how long a draft should be. Thread-safe enough for statistics (floats only).
"""

from __future__ import annotations

import math
import threading


class PassCostProfile:
    def __init__(self, smoothing: float = 0.3) -> None:
        self.smoothing = smoothing
        self._seconds: dict[int, float] = {}  # bucket (power of two >= n) -> EMA seconds
        self._lock = threading.Lock()

    @staticmethod
    def bucket(n_tokens: int) -> int:
        return 1 << max(0, math.ceil(math.log2(max(1, n_tokens))))

    def record(self, n_tokens: int, seconds: float) -> None:
        key = self.bucket(n_tokens)
        with self._lock:
            old = self._seconds.get(key)
            self._seconds[key] = seconds if old is None else old + self.smoothing * (seconds - old)

    def known(self, n_tokens: int) -> bool:
        return self.bucket(n_tokens) in self._seconds

    def estimate(self, n_tokens: int) -> float | None:
        """Seconds for a pass over ``n_tokens``: the bucket's average, or an interpolation between
        the nearest measured buckets (linear in the bucket size); None if nothing was measured."""
        key = self.bucket(n_tokens)
        with self._lock:
            if key in self._seconds:
                return self._seconds[key]
            known = sorted(self._seconds)
        if not known:
            return None
        below = [k for k in known if k < key]
        above = [k for k in known if k > key]
        if below and above:
            lo, hi = below[-1], above[0]
            t_lo, t_hi = self._seconds[lo], self._seconds[hi]
            return t_lo + (t_hi - t_lo) * (key - lo) / (hi - lo)
        nearest = below[-1] if below else above[0]
        # Outside the measured range: assume cost grows no faster than linearly with size.
        return self._seconds[nearest] * (key / nearest if key > nearest else 1.0)

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
