"""grammar_quality: summaries, the table and the files, from crafted answers and from a tiny model."""

import json

from benchmarks import grammar_quality
from specdraft.apps.bench.datasets.grammar_data import GrammarItem
from specdraft.copydraft import GrammarCorrector
from specdraft.copydraft.answer_check import check_answer

ITEMS = [
    ("She go to school every days and she like it.", "She goes to school every day and she likes it."),
    ("He have a dog.", "He has a dog."),
    ("They was happy. We go home.", "They were happy. We go home."),
]


def row(source, reference, corrected, hit_limit=False):
    return {
        "source": source,
        "reference": reference,
        "corrected": corrected,
        "quality": check_answer(source, corrected, hit_limit).to_dict(),
        "generated_tokens": 10,
        "wall_s": 0.5,
    }


def test_summary_counts_drops_flags_and_scores():
    rows = [
        row(*ITEMS[0], "She goes to school every day."),  # drops a clause
        row(*ITEMS[1], "He has a dog."),  # right
        row(*ITEMS[2], "They were happy. " * 6, hit_limit=True),  # loops to the token limit (no word dropped)
    ]
    summary = grammar_quality.summarize(rows)
    assert summary["items"] == 3
    assert summary["drops_words"] == round(1 / 3, 4)
    assert summary["mean_dropped_share"] == round(0.4 / 3, 4)
    assert summary["flagged"] == round(2 / 3, 4)
    assert summary["flags"] == {"drops": 1, "loops": 1, "token_limit": 1, "adds_text": 1}
    assert summary["reference_drops_words"] == 0.0 and summary["reference_flagged"] == 0.0
    assert 0 < summary["errant"]["f0.5"] < 1 and summary["errant"]["tp"] >= 2
    assert summary["generated_tokens"] == 30 and summary["wall_s"] == 1.5


def test_a_perfect_model_scores_1_and_drops_nothing(tmp_path):
    rows = [row(source, reference, reference) for source, reference in ITEMS]
    summary = grammar_quality.summarize(rows)
    assert summary["errant"]["f0.5"] == 1.0
    assert summary["drops_words"] == summary["flagged"] == summary["mean_dropped_share"] == 0.0
    report = {
        "settings": {"models": ["m"], "sentences": 3, "paragraphs": 0, "seed": 0, "device": "cpu"},
        "environment": {"torch": "2", "threads": 1, "time": "now"},
        "results": {"m": {"sentences": {"summary": summary, "rows": rows}}},
    }
    paths = grammar_quality.write(report, tmp_path / "out")
    assert json.loads(paths["json"].read_text()) == report
    table = paths["markdown"].read_text()
    assert "| m | sentences | 3 | 1.00 / 1.00 / **1.000** | 0% | 0.0% | 0% | 0 / 0 / 0 / 0 | 0% / 0% | 2 |" in table


def test_rows_are_the_correctors_answers(tiny_model):
    items = [GrammarItem("a/s0", "sentence", source, reference, ("agreement",)) for source, reference in ITEMS[:2]]
    corrector = GrammarCorrector(tiny_model)
    rows = grammar_quality.correct_items(corrector, items, progress=False)
    for item, got in zip(items, rows):
        expected = corrector.correct(item.source, speculate=False)
        assert got["corrected"] == expected.corrected
        assert got["quality"] == expected.quality.to_dict()
        assert got["generated_tokens"] == len(expected.token_ids)
        assert (got["id"], got["source"], got["reference"], got["errors"]) == (
            item.id,
            item.source,
            item.reference,
            ["agreement"],
        )
