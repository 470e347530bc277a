"""SuffixIndex: a suffix array over token sequences, shared by the reference (LLMA) and the
datastore (REST) drafters.

Words used here and by both drafters:

- **corpus**: the indexed sequences concatenated as ``seq_0 SEP seq_1 SEP ... seq_{D-1} SEP``, where
  ``SEPARATOR`` (-1) is a sentinel that no token id can equal. Token ids are any non-negative
  integers (no 16-bit limit); they are stored as int32 when they fit and int64 otherwise.
- **suffix array**: the corpus positions sorted by the suffix that starts there. Separators compare
  below every token, and two separators compare by position, so no suffix comparison ever runs from
  one sequence into the next.
- **tail**: the last tokens of the context; a **suffix n-gram** of the tail is its last ``n`` tokens.
- **match**: an occurrence of a suffix n-gram in the corpus that is followed by at least one token of
  the same sequence; the tokens after it, up to the sequence's end, are its **continuation**.

The longest matching n-gram is found by binary search over ``n``: if the last ``n`` tokens of the
tail match at position ``p``, its last ``n - 1`` match at ``p + 1`` (followed by the same token), so
"has a match" is monotone in ``n``. Each probe is a binary search of the suffix array, so a lookup
costs ``O(log(max_n) * log(corpus) * max_n)`` token comparisons, independent of how often the
n-gram occurs. Within the suffix-array range of an n-gram, occurrences followed by a separator (no
continuation) sort first, so the matches are the range from the n-gram extended by token 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

SEPARATOR = -1  # ends every sequence in the corpus; below every token id
INT32_MAX = np.iinfo(np.int32).max
SMALLEST_TOKEN = 0  # ``ngram + (SMALLEST_TOKEN,)`` is the first n-gram occurrence followed by a token


def token_dtype(max_token: int) -> np.dtype:
    """int32 when every id (and the separator) fits, else int64."""
    return np.dtype(np.int32) if max_token <= INT32_MAX else np.dtype(np.int64)


def concatenate(sequences: Iterable[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The corpus ``[n]`` (each sequence followed by ``SEPARATOR``) and the start offset of each
    sequence ``[num_sequences]`` (int64). Raises ValueError for a negative token id."""
    parts = [np.asarray(sequence, dtype=np.int64).reshape(-1) for sequence in sequences]
    return concatenate_arrays(parts)


def concatenate_arrays(parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``concatenate`` for sequences that are already int64 arrays."""
    lengths = np.fromiter((len(part) for part in parts), dtype=np.int64, count=len(parts))  # [D]
    starts = np.zeros(len(parts), dtype=np.int64)  # [D]
    if len(parts) > 1:
        starts[1:] = np.cumsum(lengths[:-1] + 1)
    max_token = max((int(part.max()) for part in parts if part.size), default=0)
    min_token = min((int(part.min()) for part in parts if part.size), default=0)
    if min_token < 0:
        raise ValueError(f"token ids must be >= 0, got {min_token}")
    corpus = np.full(int(lengths.sum()) + len(parts), SEPARATOR, dtype=token_dtype(max_token))  # [n]
    for start, part in zip(starts.tolist(), parts):
        corpus[start : start + len(part)] = part
    return corpus, starts


def build_suffix_array(corpus: np.ndarray, progress: Callable[[str], None] | None = None) -> np.ndarray:
    """Suffix array ``[n]`` of ``corpus`` by prefix doubling (Manber-Myers, with Larsson-Sadakane's
    skipping of finished groups), on numpy sorts.

    Suffixes are kept sorted by their first ``width`` tokens, in **groups** of equal prefixes, each
    suffix labelled by the suffix-array index where its group starts. Each round sorts only the
    suffixes still in groups of two or more, by (own label, label of the suffix ``width`` further),
    which orders them by their first ``2 * width`` tokens; a group of one is final. Separators start
    in groups of their own, so no comparison crosses a sequence end and the number of rounds is about
    ``log2`` of the longest substring repeated inside the sequences. Returns int32 positions when
    the corpus is shorter than 2^31.
    """
    n = len(corpus)
    index_dtype = np.int32 if n <= INT32_MAX else np.int64
    if n == 0:
        return np.zeros(0, dtype=index_dtype)
    if n >= 3_000_000_000:  # the combined key label * (n + 1) + label2 must fit in int64
        raise ValueError(f"a corpus of {n} tokens is too long for one suffix array")
    is_sep = corpus == SEPARATOR  # [n]
    first = np.empty(n, dtype=np.int64)  # [n] orders suffixes by their first token, separators apart
    first[is_sep] = np.arange(int(is_sep.sum()))
    first[~is_sep] = np.unique(corpus[~is_sep], return_inverse=True)[1].reshape(-1) + int(is_sep.sum())
    order = np.argsort(first, kind="stable")  # [n] the suffix array, sorted by the first `width` tokens
    label = np.empty(n, dtype=np.int64)  # [n] per position: where its group starts in `order`
    slots = np.arange(n)  # [u] indices in `order` of the unfinished suffixes (ascending)
    keys = first[order]  # [u] their sort keys, ascending
    del first, is_sep
    width = 1
    while True:
        starts_group = np.empty(len(keys), dtype=bool)  # [u]
        starts_group[0] = True
        np.not_equal(keys[1:], keys[:-1], out=starts_group[1:])
        group_start = np.maximum.accumulate(np.where(starts_group, np.arange(len(keys)), 0))  # [u] local
        label[order[slots]] = slots[group_start]
        group = np.cumsum(starts_group) - 1  # [u]
        unfinished = np.bincount(group)[group] > 1  # [u]
        slots = slots[unfinished]
        if slots.size == 0:
            break
        if progress is not None:
            progress(f"sorting {slots.size} suffixes by their first {2 * width} tokens")
        members = order[slots]  # [u] positions
        after = members + width  # [u] never past the end: the final separator is in a group of its own
        keys = label[members] * (n + 1) + label[after] + 1
        sort = np.argsort(keys)
        order[slots] = members[sort]
        keys = keys[sort]
        width *= 2
    return order.astype(index_dtype, copy=False)


@dataclass(frozen=True)
class SuffixMatch:
    """The longest matching suffix n-gram: its length ``ngram`` (0: none) and the suffix-array range
    ``[lo, hi)`` of its matches (occurrences followed by at least one token), sorted by continuation."""

    ngram: int = 0
    lo: int = 0
    hi: int = 0

    @property
    def count(self) -> int:
        return self.hi - self.lo

    def __bool__(self) -> bool:
        return self.ngram > 0 and self.hi > self.lo


NO_MATCH = SuffixMatch()


class SuffixIndex:
    """A corpus ``[n]``, its suffix array ``[n]`` and the sequences' start offsets ``[D]``.

    The arrays may be memory-mapped; lookups read ``O(max_n * log n)`` tokens of them.
    """

    def __init__(self, corpus: np.ndarray, suffix_array: np.ndarray, starts: np.ndarray) -> None:
        if len(corpus) != len(suffix_array):
            raise ValueError(f"corpus of {len(corpus)} tokens but suffix array of {len(suffix_array)}")
        if len(corpus) and corpus[-1] != SEPARATOR:
            raise ValueError("the corpus must end with a separator")
        # plain ndarray views: slicing a np.memmap subclass costs several times more per probe
        self.corpus = np.asarray(corpus)  # [n]
        self.suffix_array = np.asarray(suffix_array)  # [n]
        self.starts = np.asarray(starts)  # [D]

    @classmethod
    def from_sequences(cls, sequences: Iterable[Sequence[int]]) -> "SuffixIndex":
        corpus, starts = concatenate(sequences)
        return cls(corpus, build_suffix_array(corpus), starts)

    def __len__(self) -> int:
        return len(self.corpus)

    @property
    def num_sequences(self) -> int:
        return len(self.starts)

    # --- binary search -----------------------------------------------------------------------
    def _prefix(self, rank: int, length: int) -> tuple[int, ...]:
        """The first ``length`` tokens of the suffix at suffix-array rank ``rank`` (fewer at the
        corpus end, which is a separator, so such a prefix still compares correctly)."""
        position = int(self.suffix_array[rank])
        return tuple(self.corpus[position : position + length].tolist())

    def _lower_bound(self, pattern: tuple[int, ...], lo: int = 0) -> int:
        """First rank whose suffix starts with ``pattern`` or sorts after it."""
        hi = len(self.suffix_array)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._prefix(mid, len(pattern)) < pattern:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _upper_bound(self, pattern: tuple[int, ...], lo: int = 0) -> int:
        """First rank whose suffix sorts after every suffix starting with ``pattern``."""
        hi = len(self.suffix_array)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._prefix(mid, len(pattern)) <= pattern:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def occurrences(self, ngram: Sequence[int]) -> tuple[int, int]:
        """Suffix-array range ``[lo, hi)`` of every occurrence of ``ngram``."""
        pattern = tuple(int(t) for t in ngram)
        lo = self._lower_bound(pattern)
        return lo, self._upper_bound(pattern, lo)

    def matches(self, ngram: Sequence[int]) -> SuffixMatch:
        """The occurrences of ``ngram`` followed by at least one token (a ``SuffixMatch``)."""
        pattern = tuple(int(t) for t in ngram)
        lo = self._lower_bound(pattern + (SMALLEST_TOKEN,))  # skips occurrences at a sequence's end
        hi = self._upper_bound(pattern, lo)
        return SuffixMatch(len(pattern), lo, hi) if hi > lo and pattern else NO_MATCH

    def longest_suffix_match(self, tail: Sequence[int], max_ngram: int, min_ngram: int) -> SuffixMatch:
        """The longest suffix n-gram of ``tail`` (``max_ngram`` down to ``min_ngram`` tokens, at most
        ``len(tail)``) that has a match; ``NO_MATCH`` if none has. Binary search over the length."""
        tail = [int(t) for t in tail[len(tail) - min(max_ngram, len(tail)) :]]
        best, shortest, longest = NO_MATCH, max(min_ngram, 1), len(tail)
        while shortest <= longest:
            ngram = (shortest + longest) // 2
            match = self.matches(tail[len(tail) - ngram :])
            if match:
                best, shortest = match, ngram + 1
            else:
                longest = ngram - 1
        return best

    # --- reading matches -----------------------------------------------------------------------
    def positions(self, match: SuffixMatch, max_count: int | None = None) -> np.ndarray:
        """Corpus positions ``[m]`` where the match's continuations start, in suffix-array order
        (sorted by continuation). With ``max_count`` and a larger range, ``max_count`` ranks spread
        evenly over it (the centre of each of ``max_count`` equal slices), so frequent continuations
        stay proportionally frequent."""
        if not match:
            return np.zeros(0, dtype=np.int64)
        if max_count is None or match.count <= max_count:
            ranks = np.arange(match.lo, match.hi)  # [m]
        else:
            ranks = match.lo + ((2 * np.arange(max_count) + 1) * match.count) // (2 * max_count)  # [m]
        return self.suffix_array[ranks].astype(np.int64) + match.ngram

    def continuations(self, positions: np.ndarray, max_len: int) -> list[tuple[int, ...]]:
        """Up to ``max_len`` tokens from each position ``[m]``, each cut at its sequence's end."""
        if len(positions) == 0 or max_len <= 0:
            return []
        offsets = np.arange(max_len)  # [L]
        windows = self.corpus[np.minimum(positions[:, None] + offsets, len(self.corpus) - 1)]  # [m, L]
        is_sep = windows == SEPARATOR  # [m, L]
        lengths = np.where(is_sep.any(axis=1), is_sep.argmax(axis=1), max_len)  # [m]
        return [tuple(row[:length]) for row, length in zip(windows.tolist(), lengths.tolist())]

    def locate(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For corpus positions ``[m]``: the sequence index ``[m]`` and the offset in it ``[m]``."""
        sequence = np.searchsorted(self.starts, positions, side="right") - 1  # [m]
        return sequence, positions - self.starts[sequence]
