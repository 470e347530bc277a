"""The benchmark runner and its report on a tiny model (no timing is asserted: numbers are data)."""

import json

from specdraft.apps.bench.methods import (
    BenchCase,
    Measurement,
    plain,
    specdraft_by_spec,
    transformers_plain,
    transformers_prompt_lookup,
)
from specdraft.apps.bench.report import write_report
from specdraft.apps.bench.runner import run_benchmark
from specdraft.apps.model_pool import ModelPool
from specdraft.retrieval.drafter_registry import parse_drafter


def test_runner_compares_methods_and_writes_json_markdown_and_plot(tiny_model, tokenizer, tmp_path):
    pool = ModelPool()
    pool.add("tiny", tiny_model)
    methods = [
        plain(tiny_model),
        specdraft_by_spec(pool, tiny_model, parse_drafter("prompt-lookup")),
        transformers_plain(tiny_model),
        transformers_prompt_lookup(tiny_model),
    ]
    cases = [
        BenchCase("a", tuple(tokenizer("The dog sleeps. The dog sleeps. The dog").input_ids), 16),
        BenchCase("b", tuple(tokenizer("def add(a, b):\n    return a + b\n").input_ids), 12),
    ]
    result = run_benchmark("tiny-set", "tiny", methods, cases)
    assert [s.method for s in result.summaries] == [
        "plain",
        "specdraft:prompt-lookup",
        "transformers:plain",
        "transformers:prompt-lookup",
    ]
    assert all(s.identical_rate == 1.0 for s in result.summaries)  # every method reproduces plain greedy
    plain_summary = result.summaries[0]
    assert plain_summary.speedup == 1.0 and plain_summary.generated_tokens == 28
    assert plain_summary.forward_passes_per_token == 1.0  # the prefill yields the first token
    assert result.summaries[2].forward_passes_per_token == 1.0  # as transformers' generate
    assert plain_summary.decode_speedup == 1.0
    for m in result.measurements:  # every method times its first token (the prefill) apart
        assert 0 < m.first_token_s < m.wall_s and m.decode_s == m.wall_s - m.first_token_s

    paths = write_report(result, tmp_path / "out")
    data = json.loads(paths["json"].read_text())
    assert len(data["measurements"]) == 8 and data["summaries"][1]["method"] == "specdraft:prompt-lookup"
    table = paths["markdown"].read_text()
    assert (
        "| specdraft:prompt-lookup |" in table
        and "identical to plain greedy" in table
        and "after the first token" in table
    )
    assert paths["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


class Noting:
    """A method that notes the cases it runs and answers two tokens."""

    name = "plain"

    def __init__(self):
        self.ran = []

    def run(self, case):
        self.ran.append(case.id)
        return Measurement(self.name, case.id, [1, 2], 1.0, 3, 0.0, 0.5)


def test_each_method_warms_up_once_untimed_unless_told_not_to():
    cases = [BenchCase("a", (1, 2, 3), 16)]
    warmed, cold = Noting(), Noting()
    assert [m.prompt_id for m in run_benchmark("noted", "fake", [warmed], cases).measurements] == ["a"]
    assert warmed.ran == ["warm-up", "a"]
    run_benchmark("noted", "fake", [cold], cases, warm_up=False)
    assert cold.ran == ["a"]
