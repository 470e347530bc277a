"""OS^3, RaLMSpec's optimal speculation stride scheduler: how many strides to answer from the cache
before verifying them.

With acceptance rate ``g`` (the chance that a cached guess is the retriever's answer), ``a`` the
seconds of one speculative stride (cache lookup + generating the stride) and ``b`` the seconds of
a batched verification, speculating ``s`` strides settles on average

    E(s) = 1 + g + ... + g^(s-1) = (1 - g^s) / (1 - g)        (s when g = 1)

strides per verification (the matched guesses, plus the stride regenerated after the first wrong
one), and takes, in this pipeline,

    synchronous:  T(s) = s*a + b + (1 - g^s)*a
    asynchronous: T(s) = g^s * max(s*a, b) + (1 - g^s) * (s*a + b + a)

(asynchronously the next strides are speculated while the verification runs, so a round that is
all correct costs the longer of the two; a round with a wrong guess loses what was speculated
meanwhile and regenerates one stride). OS^3 picks the ``s`` in ``[1, max_strides]`` with the most
expected strides per second, ``E(s) / T(s)``. ``g`` is estimated over the latest verification rounds,
until they hold ``guesses`` compared guesses (a round compares guesses up to its first wrong one),
with ``prior`` counted as one more guess: ``(matched + prior) / (compared + 1)``. Rounds often
compare one guess each, so a window of a few rounds would read 5 right guesses of 5 as certainty
and ignore a 1-in-20 miss that, where a rollback re-prefills, costs more than speculation saves.
``a`` and ``b`` are the means of the last ``window`` measurements. Until both are
measured the scheduler answers ``initial``. Only the speed depends on ``s``; the answer does not.

**Plain strides** (``allow_plain``, issue 11): ``s = 0`` means "retrieve this stride for real, then
generate it with the true documents", as plain iterative RAG does. Such a stride settles one stride
in ``p + r`` seconds (``p`` below), ``r`` the mean of the last ``window`` measured plain retrievals
(one query on the answering thread: the pipeline's exact first stride and its plain strides; until
one is measured, plain is not considered), so OS^3 answers 0 when

    1 / (p + r)  >  max over s in [1, max_strides] of E(s) / T(s)

(strictly: a tie speculates). Where retrieval is cheap against a stride and guesses are often wrong,
each wrong guess costs a regenerated stride worth far more than the retrieval it saved, and plain
wins; with the choice the expected rate is the best of OS^3's and plain's. Plain is considered only
once the acceptance estimate rests on at least ``window`` compared guesses (a plain stride's cache
guess, compared with the true documents, counts as a round of one), so speculation is never given
up on the prior or on a couple of guesses.

**Measured costs beyond RaLMSpec's model** (each falls back to ``a``, RaLMSpec's rule, until
measured):

* ``c``, the seconds of a rollback (restoring the cache and generating the stride again with the
  true documents), replaces the regenerated stride's ``a`` in ``T(s)``. RaLMSpec regenerates a
  stride at the cost of any other; here the true documents differ from the wrong guess, so the
  regenerated stride always re-prefills documents + question + answer, which on llama.cpp costs
  several strides' worth. Until a rollback has been measured, ``c`` is the mean of the measured
  strides that re-prefilled (``observe_stride(..., reprefilled=True)``).
* ``p``, the seconds of a plain stride's generation (no verification running beside it), is the
  stride of the plain alternative, ``a`` staying the speculated stride's. With asynchronous
  verification on a machine whose cores the model already fills (llama.cpp on 2 cores), a search
  on the worker thread slows the model's passes beside it; ``a`` measures that, and plain strides
  do not pay it.

With every quantity measured where it is paid, the choice is the best expected rate of the
alternatives as they really run. Until a plain stride has been measured, OS^3 takes one to measure
``p`` (once the acceptance estimate rests on ``window`` guesses) only where plain could win even
with a stride that cost nothing, ``1 / r`` above the best speculation rate; where retrieval is
expensive it never does (a plain stride is never wrong: measuring one costs at most its retrieval).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

__all__ = ["OS3Config", "OS3Scheduler", "expected_strides", "plain_seconds", "round_seconds"]


@dataclass(frozen=True)
class OS3Config:
    max_strides: int = 4
    window: int = 5  # timings averaged; guesses compared before plain is considered
    prior: float = 0.5
    guesses: int = 20  # compared guesses the acceptance estimate looks back over
    asynchronous: bool = True
    enabled: bool = True  # False: always max_strides
    allow_plain: bool = True  # may answer 0: retrieve this stride plainly (never when enabled is False)

    def __post_init__(self) -> None:
        if self.max_strides < 1 or self.window < 1 or self.guesses < 1 or not 0.0 <= self.prior <= 1.0:
            raise ValueError("max_strides, window and guesses must be >= 1 and prior in [0, 1]")


def expected_strides(s: int, g: float) -> float:
    """Strides settled by one verification of ``s`` guesses each right with probability ``g``."""
    return float(s) if g >= 1.0 else (1.0 - g**s) / (1.0 - g)


def round_seconds(s: int, g: float, a: float, b: float, asynchronous: bool, c: float | None = None) -> float:
    """Expected seconds of one round of ``s`` speculative strides and their verification; ``c``:
    the seconds of a rollback (the stride regenerated after a wrong guess; ``a`` when None)."""
    hit = g**s
    c = a if c is None else c
    if asynchronous:
        return hit * max(s * a, b) + (1.0 - hit) * (s * a + b + c)
    return s * a + b + (1.0 - hit) * c


def plain_seconds(p: float, r: float) -> float:
    """Seconds of one plain stride: a real retrieval of ``r`` seconds, then the stride's generation
    (``p``: a plain stride's own time where measured)."""
    return p + r


class OS3Scheduler:
    """The measurements and the choice. Thread-safe, so one scheduler may be shared by the answers of
    a pipeline (its estimates then carry from one answer to the next; only the speed depends on it)."""

    def __init__(self, config: OS3Config = OS3Config()) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._rounds: deque[tuple[int, int]] = deque(maxlen=config.guesses)  # a round compares >= 1 guess
        self._strides: deque[float] = deque(maxlen=config.window)
        self._verifications: deque[float] = deque(maxlen=config.window)
        self._retrievals: deque[float] = deque(maxlen=config.window)
        self._plain_strides: deque[float] = deque(maxlen=config.window)
        self._rollbacks: deque[float] = deque(maxlen=config.window)
        self._reprefills: deque[float] = deque(maxlen=config.window)
        self.observations = 0  # observe_* calls so far (a shared scheduler's estimates carry across answers)

    @property
    def initial(self) -> int:
        return max(1, self.config.max_strides // 2)

    def observe_round(self, matched: int, compared: int) -> None:
        """A verification compared ``compared`` guesses (up to the first wrong one) and ``matched`` were right."""
        with self._lock:
            self.observations += 1
            if compared > 0:
                self._rounds.append((matched, compared))

    def observe_stride(self, seconds: float, plain: bool = False, reprefilled: bool = False) -> None:
        """A stride took ``seconds``: speculated (``a``), or ``plain`` (``p``: after a real retrieval,
        with no verification running beside it); ``reprefilled``: it began by prefilling new
        documents (what a rollback always does: ``c``'s estimate until one is measured)."""
        with self._lock:
            self.observations += 1
            (self._plain_strides if plain else self._strides).append(seconds)
            if reprefilled:
                self._reprefills.append(seconds)

    def observe_rollback(self, seconds: float) -> None:
        """A rollback (restore + the stride generated again with the true documents) took ``seconds``."""
        self._observe(self._rollbacks, seconds)

    def observe_verification(self, seconds: float) -> None:
        self._observe(self._verifications, seconds)

    def observe_retrieval(self, seconds: float) -> None:
        """A plain (single-query) retrieval took ``seconds``."""
        self._observe(self._retrievals, seconds)

    def _observe(self, timings: deque[float], seconds: float) -> None:
        with self._lock:
            self.observations += 1
            timings.append(seconds)

    @property
    def acceptance(self) -> float:
        with self._lock:
            rounds = list(self._rounds)
        return self._estimate(rounds)[0]

    def _estimate(self, rounds: list[tuple[int, int]]) -> tuple[float, int]:
        """(g, compared guesses it rests on): the latest rounds until they hold ``guesses`` guesses,
        plus the prior as one guess."""
        matched = compared = 0
        for m, c in reversed(rounds):
            if compared >= self.config.guesses:
                break
            matched, compared = matched + m, compared + c
        return (matched + self.config.prior) / (compared + 1), compared

    def strides(self) -> int:
        """The number of strides to speculate before the next verification; 0: retrieve the next
        stride plainly (only with ``allow_plain``)."""
        config = self.config
        if not config.enabled:
            return config.max_strides
        with self._lock:
            rounds, strides = list(self._rounds), list(self._strides)
            verifications, retrievals = list(self._verifications), list(self._retrievals)
            plain_strides, rollback_costs = list(self._plain_strides), list(self._rollbacks) or list(self._reprefills)
        if not strides or not verifications:
            return min(self.initial, config.max_strides)
        g, compared = self._estimate(rounds)
        a = _mean(strides)
        b = _mean(verifications)
        c = _mean(rollback_costs) if rollback_costs else a
        best, best_rate = 1, -1.0
        for s in range(1, config.max_strides + 1):
            rate = expected_strides(s, g) / max(round_seconds(s, g, a, b, config.asynchronous, c), 1e-12)
            if rate > best_rate + 1e-12:
                best, best_rate = s, rate
        if config.allow_plain and retrievals and compared >= config.window:
            r = _mean(retrievals)
            if not plain_strides:  # measure a plain stride once, if even a free one could win (module docstring)
                return 0 if 1.0 / max(r, 1e-12) > best_rate * (1.0 + 1e-9) + 1e-12 else best
            p = _mean(plain_strides)
            if 1.0 / max(plain_seconds(p, r), 1e-12) > best_rate * (1.0 + 1e-9) + 1e-12:
                return 0
        return best


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
