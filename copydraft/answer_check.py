"""Is an answer to "correct this text" a correction? A check of the answer against its input.

A small model asked to correct a text sometimes answers with less of it (a clause or whole sentences
gone), loops (one phrase over and over, up to the token limit), or adds text of its own. Such an
answer must not be shown as a correction. ``check_answer(source, answer, hit_token_limit)`` compares
the two texts word by word and returns an ``AnswerCheck``: ``ok`` is False when any of these holds
(each gives one warning, in plain words):

- **dropped words**: at least ``min_dropped_words`` words of the input and a share of at least
  ``max_dropped_share`` of them have no counterpart in the answer;
- **dropped sentences**: a sentence of the input (of at least ``min_sentence_words`` words) lost at
  least ``sentence_dropped_share`` of its words;
- **dropped passages**: a run of at least ``max_dropped_run`` consecutive words of the input (a
  clause: "... and she like it") is missing from the answer, outside the dropped sentences;
- **loop**: some ``ngram``-word phrase occurs at least ``max_ngram_repeats`` times more often in the
  answer than in the input (and more than twice as often);
- **token limit**: the answer was cut off at the token limit instead of ending by itself;
- **added text**: the answer has more than ``max_added_share`` more words than the input (and at
  least ``min_added_words`` more).

Words are ``\\w+`` runs, compared case-insensitively. The answer is aligned to the input word by
word with the fewest edits (Levenshtein over words): an input word is *kept* when it is aligned with
an equal word, *changed* when it is aligned with another word (a correction: "go" -> "goes"), and
*dropped* when the alignment deletes it. Nothing here needs a model; the alignment costs
(input words x answer words) steps in numpy, well under a second for 3,000 x 3,000 words; beyond
``MAX_ALIGNMENT_CELLS`` it falls back to ``difflib.SequenceMatcher``'s alignment. Repetition the
input has itself ("hello hello hello ...") is not a loop: phrases are counted against the input.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np

_WORD = re.compile(r"\w+")
_KEEP, _DROP, _ADD = 0, 1, 2  # the moves of a word alignment
# Above this many (source words x answer words), the alignment falls back to SequenceMatcher's.
MAX_ALIGNMENT_CELLS = 25_000_000
# a sentence ends at . ! ? (or one of them and a closing quote or bracket) before white space, or at a line break
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"'”’)\]])\s+|\n+")


@dataclass(frozen=True)
class CheckConfig:
    """Thresholds of ``check_answer`` (see the module docstring)."""

    max_dropped_share: float = 0.2
    min_dropped_words: int = 3
    min_sentence_words: int = 3
    sentence_dropped_share: float = 0.75
    max_dropped_run: int = 4
    ngram: int = 3
    max_ngram_repeats: int = 4
    max_added_share: float = 0.5
    min_added_words: int = 8

    def __post_init__(self) -> None:
        if not (0 < self.max_dropped_share <= 1 and 0 < self.sentence_dropped_share <= 1):
            raise ValueError("max_dropped_share and sentence_dropped_share must be in (0, 1]")
        if (
            min(
                self.min_dropped_words,
                self.min_sentence_words,
                self.max_dropped_run,
                self.ngram,
                self.max_ngram_repeats,
            )
            < 1
        ):
            raise ValueError(
                "min_dropped_words, min_sentence_words, max_dropped_run, ngram and max_ngram_repeats must be >= 1"
            )
        if self.max_added_share < 0 or self.min_added_words < 0:
            raise ValueError("max_added_share and min_added_words must be >= 0")


@dataclass(frozen=True)
class AnswerCheck:
    """The verdict on one answer. ``dropped_share``: dropped input words / input words;
    ``dropped_sentences``: the input's sentences the answer lost (their text); ``dropped_passages``:
    the input's other runs of at least ``max_dropped_run`` words it lost (their text); ``added_share``:
    (answer words - input words) / input words (negative when the answer is shorter);
    ``repeated``: the answer's most over-repeated phrase and how many more times than in the input
    it occurs (None when no phrase occurs at least twice more often than there)."""

    ok: bool
    warnings: tuple[str, ...]
    source_words: int
    answer_words: int
    dropped_words: int
    dropped_share: float
    dropped_sentences: tuple[str, ...]
    dropped_passages: tuple[str, ...]
    added_share: float
    repeated: tuple[str, int] | None
    hit_token_limit: bool

    def to_dict(self) -> dict:
        """The JSON form: ``dropped_words`` is the share (``dropped_share``, 4 decimals) and
        ``dropped_word_count`` the count; ``added_words`` is ``added_share``; ``repeated`` is
        ``{"text", "extra_times"}`` or None; the rest as the fields."""
        return {
            "ok": self.ok,
            "warnings": list(self.warnings),
            "dropped_words": round(self.dropped_share, 4),
            "dropped_word_count": self.dropped_words,
            "dropped_sentences": list(self.dropped_sentences),
            "dropped_passages": list(self.dropped_passages),
            "added_words": round(self.added_share, 4),
            "repeated": None if self.repeated is None else {"text": self.repeated[0], "extra_times": self.repeated[1]},
            "hit_token_limit": self.hit_token_limit,
        }


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased."""
    return [w.lower() for w in _WORD.findall(text)]


def dropped_mask(source: list[str], answer: list[str]) -> list[bool]:
    """For each word of ``source``: whether the answer has nothing standing for it (see module doc)."""
    if len(source) * len(answer) > MAX_ALIGNMENT_CELLS:
        return _surplus_mask(source, answer)
    moves = _alignment_moves(source, answer)
    mask = [False] * len(source)
    i, j = len(source), len(answer)
    while i > 0 or j > 0:
        move = moves[i, j]
        if move == _KEEP:
            i, j = i - 1, j - 1
        elif move == _DROP:
            i -= 1
            mask[i] = True
        else:
            j -= 1
    return mask


def _alignment_moves(source: list[str], answer: list[str]) -> np.ndarray:
    """The last move of a cheapest word alignment of ``source[:i]`` with ``answer[:j]``, for every
    ``(i, j)``: keep or change a word (cost 0 or 1), drop a source word (1), add an answer word (1);
    on a tie, keep > drop > add. Rows are computed in whole (numpy): the additions along a row are
    a running minimum."""
    ids: dict[str, int] = {}
    src = np.array([ids.setdefault(w, len(ids)) for w in source], dtype=np.int64)
    ans = np.array([ids.setdefault(w, len(ids)) for w in answer], dtype=np.int64)
    m = len(ans)
    steps = np.arange(m + 1)
    moves = np.full((len(src) + 1, m + 1), _ADD, dtype=np.int8)
    moves[1:, 0] = _DROP
    row = steps.copy()
    for i, word in enumerate(src, start=1):
        differ = ans != word
        keep = row[:-1] + differ
        drop = row[1:] + 1
        best = np.empty(m + 1, dtype=np.int64)
        best[0] = i
        best[1:] = np.minimum(keep, drop)
        # on a tie, an equal word is kept, but a different one is dropped rather than changed: the
        # drops then form the runs they are ("every day [and she like it]", not "every [days and she like] it")
        moves[i, 1:] = np.where((keep < drop) | ((keep == drop) & ~differ), _KEEP, _DROP)
        new_row = np.minimum.accumulate(best - steps) + steps
        moves[i, 1:][new_row[1:] < best[1:]] = _ADD
        row = new_row
    return moves


def _surplus_mask(source: list[str], answer: list[str]) -> list[bool]:
    """The fall-back for very long texts: ``SequenceMatcher``'s alignment; the surplus of a
    replacement by fewer words counts as dropped."""
    mask = [False] * len(source)
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, source, answer, autojunk=False).get_opcodes():
        if tag == "delete" or (tag == "replace" and i2 - i1 > j2 - j1):
            kept = j2 - j1 if tag == "replace" else 0
            mask[i1 + kept : i2] = [True] * (i2 - i1 - kept)
    return mask


def sentences(text: str) -> list[str]:
    """``text`` cut at sentence ends and line breaks (stripped, empty pieces left out)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def most_repeated(source: list[str], answer: list[str], n: int) -> tuple[str, int] | None:
    """The ``n``-word phrase occurring most often in ``answer`` beyond its count in ``source``
    (among those more than twice as frequent as there), with that surplus; None if no phrase
    occurs at least twice more often in the answer than in the source."""

    def grams(ws: list[str]) -> Counter:
        return Counter(tuple(ws[i : i + n]) for i in range(len(ws) - n + 1))

    in_source, in_answer = grams(source), grams(answer)
    best: tuple[str, int] | None = None
    for gram, count in in_answer.items():
        surplus = count - in_source[gram]
        if count > 2 * in_source[gram] and surplus >= 2 and (best is None or surplus > best[1]):
            best = (" ".join(gram), surplus)
    return best


def check_answer(
    source: str, answer: str, hit_token_limit: bool = False, config: CheckConfig = CheckConfig()
) -> AnswerCheck:
    """Check ``answer`` as a correction of ``source`` (``hit_token_limit``: whether the model was
    cut off at its token limit); see the module docstring for what is flagged."""
    src, ans = words(source), words(answer)
    mask = dropped_mask(src, ans)
    dropped = sum(mask)
    share = dropped / len(src) if src else 0.0
    lost = _lost_sentences(source, mask, config)
    passages = [p for p in _lost_passages(source, mask, config.max_dropped_run) if not any(p in s for s in lost)]
    added = (len(ans) - len(src)) / len(src) if src else float(bool(ans))
    repeated = most_repeated(src, ans, config.ngram)

    warnings = []
    if dropped >= config.min_dropped_words and share >= config.max_dropped_share:
        warnings.append(f"the answer leaves out {dropped} of the {len(src)} words of the text ({share:.0%})")
    if lost:
        warnings.append(
            f"the answer leaves out {_count(len(lost), 'sentence')} of the text: " + " / ".join(_quote(s) for s in lost)
        )
    if passages:
        warnings.append("the answer leaves out " + " / ".join(_quote(p) for p in passages))
    if repeated is not None and repeated[1] >= config.max_ngram_repeats:
        warnings.append(f"the answer repeats {_quote(repeated[0])} {repeated[1]} more times than the text: it loops")
    if hit_token_limit:
        warnings.append("the answer was cut off at the token limit instead of ending by itself")
    if len(ans) - len(src) >= config.min_added_words and added > config.max_added_share:
        warnings.append(f"the answer adds {len(ans) - len(src)} words to the {len(src)} of the text ({added:.0%} more)")
    return AnswerCheck(
        ok=not warnings,
        warnings=tuple(warnings),
        source_words=len(src),
        answer_words=len(ans),
        dropped_words=dropped,
        dropped_share=share,
        dropped_sentences=tuple(lost),
        dropped_passages=tuple(passages),
        added_share=added,
        repeated=repeated,
        hit_token_limit=hit_token_limit,
    )


def _lost_sentences(source: str, mask: list[bool], config: CheckConfig) -> list[str]:
    """The sentences of ``source`` whose words ``mask`` marks dropped, mostly (``source``'s words in order)."""
    lost, position = [], 0
    for sentence in sentences(source):
        count = len(words(sentence))
        part = mask[position : position + count]
        position += count
        if count >= config.min_sentence_words and sum(part) >= config.sentence_dropped_share * count:
            lost.append(sentence)
    return lost


def _lost_passages(source: str, mask: list[bool], min_run: int) -> list[str]:
    """The text of ``source`` spanned by each run of at least ``min_run`` consecutive dropped words."""
    spans = [m.span() for m in _WORD.finditer(source)]
    passages, start = [], None
    for i, dropped in enumerate([*mask, False]):
        if dropped and start is None:
            start = i
        elif not dropped and start is not None:
            if i - start >= min_run:
                passages.append(source[spans[start][0] : spans[i - 1][1]])
            start = None
    return passages


def _quote(text: str, limit: int = 60) -> str:
    return f'"{text}"' if len(text) <= limit else f'"{text[: limit - 1]}…"'


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
