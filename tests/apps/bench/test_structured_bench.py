"""``specdraft bench structured``: the data (stand-in pools, nothing downloaded), the answers' verdicts,
the peer's request, the summaries and the report with fake methods; `slow`: the real suite on
qwen2.5-coder-0.5b on both backends (one document per task), identical to plain constrained decoding."""

import argparse
import json
from types import SimpleNamespace

import pytest

from specdraft.apps.bench.datasets import bigbench_data
from specdraft.apps.bench.datasets.structured_data import (
    EXTRACTION_SCHEMA,
    MAX_WORDS,
    TOOL_CHOICE,
    TOOLS,
    structured_items,
)
from specdraft.apps.bench.structured_bench import ALL, PEER, PLAIN, StructuredBenchConfig, run_structured_bench
from specdraft.apps.bench.structured_methods import (
    METHODS,
    ConstrainedMethod,
    StructuredCase,
    StructuredMeasurement,
    judge,
    judge_json,
)
from specdraft.apps.bench.structured_peer import chat_request
from specdraft.apps.bench.structured_report import markdown, write_structured_report
from specdraft.apps.cli.bench import add_bench_parser

LONG = " ".join(["word"] * (MAX_WORDS + 1))
ARTICLES = [
    {"id": "bigbench/xsum/1", "source": "xsum", "text": "Ann Lee of Acme Ltd said on 3 May that Leeds won £5m."},
    {"id": "bigbench/xsum/2", "source": "xsum", "text": "The BBC reported 40 jobs lost in Cardiff in 2014."},
    {"id": "bigbench/xsum/3", "source": "xsum", "text": LONG},
    {"id": "bigbench/wikilingua_en/1", "source": "wikilingua_en", "text": "Open the lid. Pour the water."},
]
PASSAGES = [
    {
        "id": "squad/nyt/1",
        "source": "nyt_v1.0",
        "text": "Dr. Lam, a neuroscientist in Toronto, met Dr. Ohayon in 2011.",
        "question": "q",
    },
    {"id": "squad/nyt/2", "source": "nyt_v1.0", "text": "Mattingly, a Yankee, retired in 1995.", "question": "q"},
    {"id": "squad/dev/1", "source": "squaddev_v1.1", "text": "Normandy is a region in France.", "question": "q"},
]


@pytest.fixture
def pools(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECDRAFT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(bigbench_data, "_scan_bigbench", lambda: {"summarization": ARTICLES, "rag-reading": PASSAGES})


def test_items_are_short_xsum_articles_and_nyt_passages_in_a_seeded_order(pools):
    items = structured_items(2, seed=0)
    assert [item.task for item in items] == ["extract", "extract", "tool-call", "tool-call"]
    assert {item.id for item in items[:2]} == {"bigbench/xsum/1", "bigbench/xsum/2"}  # not the long one, not wikiHow
    assert {item.id for item in items[2:]} == {"squad/nyt/1", "squad/nyt/2"}
    for item in items:
        assert item.document in item.messages[-1]["content"] and item.messages[-1]["role"] == "user"
    extract, tool = items[0], items[2]
    assert extract.answer_schema == EXTRACTION_SCHEMA and extract.tools == ()
    assert tool.tools == tuple(TOOLS) and tool.tool_choice == TOOL_CHOICE
    assert tool.answer_schema == TOOLS[0]["function"]["parameters"]  # save_people's arguments
    assert structured_items(2, seed=0) == items and structured_items(1, seed=0) == [items[0], items[2]]
    assert structured_items(1, seed=0, tasks=("tool-call",)) == [items[2]]
    with pytest.raises(ValueError, match="between 0 and 2"):
        structured_items(3)
    with pytest.raises(ValueError, match="tasks must be among"):
        structured_items(1, tasks=("nope",))


def case(task: str = "extract", **overrides) -> StructuredCase:
    tools = {"tools": tuple(TOOLS), "tool_choice": TOOL_CHOICE} if task == "tool-call" else {}
    schema = TOOLS[0]["function"]["parameters"] if task == "tool-call" else EXTRACTION_SCHEMA
    fields = dict(task=task, schema=schema, messages=({"role": "user", "content": "Extract. Ann met Bo."},), **tools)
    return StructuredCase(f"{task}/1", (1, 2, 3), 64, **{**fields, **overrides})


RECORD = (
    '{"people": ["Ann Lee"], "organisations": ["Acme Ltd"], "places": ["Leeds"], "dates": ["3 May"], '
    '"amounts": ["£5m"]}'
)


def test_judge_parses_checks_the_schema_and_restyles_the_answer():
    assert judge_json(RECORD, EXTRACTION_SCHEMA) == judge(case(), RECORD)
    verdict = judge(case(), RECORD)
    assert verdict.valid_json and verdict.valid_schema and verdict.answer == RECORD  # the grammar's own style, £ kept
    spaced = judge(case(), RECORD.replace(", ", ",").replace(": ", ":"))
    assert spaced.answer == RECORD and spaced.valid_schema
    wrong = judge(case(), '{"people": "Ann"}')
    assert wrong.valid_json and not wrong.valid_schema
    assert judge(case(), '{"people": ["Ann"') == judge_json("", EXTRACTION_SCHEMA)
    assert not judge(case(), "").valid_json


def test_judge_reads_the_named_call_of_a_tool_call_answer():
    arguments = '{"people": [{"name": "Dr. Lam", "description": "a neuroscientist"}]}'
    call = f'<tool_call>\n{{"name": "save_people", "arguments": {arguments}}}\n</tool_call>'
    verdict = judge(case("tool-call"), call)
    assert verdict.valid_schema and verdict.answer == arguments
    assert not judge(case("tool-call"), call.replace("save_people", "save_places")).valid_json  # not the chosen tool
    assert not judge(case("tool-call"), call + call).valid_json  # one call asked for
    assert not judge(case("tool-call"), arguments).valid_json  # no <tool_call> block


def test_peer_request_is_a_schema_response_format_or_the_named_tool_greedily():
    extract = chat_request(case())
    assert extract["response_format"] == {"type": "json_object", "schema": EXTRACTION_SCHEMA}
    assert (extract["temperature"], extract["repeat_penalty"], extract["max_tokens"]) == (0.0, 1.0, 64)
    assert extract["messages"] == [{"role": "user", "content": "Extract. Ann met Bo."}] and "tools" not in extract
    tool = chat_request(case("tool-call"))
    assert tool["tools"] == TOOLS and tool["tool_choice"] == TOOL_CHOICE and "response_format" not in tool


class FakeMethod(ConstrainedMethod):
    """Answers from a table: case id -> (token ids, wall seconds, forced tokens, grammar seconds, text)."""

    def __init__(self, name, answers):
        self.name, self.answers = name, answers

    def run(self, case):
        ids, wall, forced, grammar, text = self.answers.get(case.id, ([1], 1.0, 0, 0.0, "{}"))
        verdict = judge(case, text)
        return StructuredMeasurement(
            self.name, case.id, list(ids), wall, len(ids) + 1, 0.5, 0.25 * wall, task=case.task, text=text,
            finish_reason="stop", forced_tokens=forced, grammar_s=grammar, answer=verdict.answer,
            valid_json=verdict.valid_json, valid_schema=verdict.valid_schema,
        )  # fmt: skip


class FakePeer:
    name = PEER

    def run(self, case):
        text = RECORD.replace(", ", ",") if case.task == "extract" else "{}"
        verdict = judge_json(text, case.schema)
        return StructuredMeasurement(
            PEER,
            case.id,
            [9] * 4,
            2.0,
            5,
            0.0,
            0.5,
            task=case.task,
            text=text,
            finish_reason="stop",
            answer=verdict.answer,
            valid_json=True,
            valid_schema=verdict.valid_schema,
            same_prompt=True,
        )


def test_run_summarizes_per_task_and_writes_the_report(tmp_path):
    cases = [case("extract"), case("tool-call")]
    tokens = list(range(8))
    plain = FakeMethod(PLAIN, {"extract/1": (tokens, 4.0, 0, 0.2, RECORD), "tool-call/1": (tokens, 4.0, 0, 0.2, "{}")})
    grammar = FakeMethod(
        METHODS[1], {"extract/1": (tokens, 2.0, 4, 0.1, RECORD), "tool-call/1": (tokens[:7] + [99], 1.0, 2, 0.1, "{}")}
    )
    target = SimpleNamespace(name="fake", backend="transformers")  # the methods and cases are given
    result = run_structured_bench(
        target, StructuredBenchConfig(limit=1), [plain, grammar, FakePeer()], cases, progress=lambda _: None
    )
    rows = {(row["task"], row["method"]): row for row in result.summaries}
    assert [row["task"] for row in result.summaries] == [ALL] * 3 + ["extract"] * 3 + ["tool-call"] * 3
    assert (
        rows[("extract", METHODS[1])]["identical_rate"] == 1.0
        and rows[("tool-call", METHODS[1])]["identical_rate"] == 0.0
    )
    assert rows[(ALL, METHODS[1])]["identical_rate"] == 0.5
    assert rows[(ALL, METHODS[1])]["speedup"] == round(8.0 / 3.0, 3)
    assert rows[("extract", METHODS[1])]["forced_share"] == 0.5  # 4 forced of 8 generated
    assert rows[("extract", METHODS[1])]["grammar_ms_per_token"] == 12.5  # 0.1 s over 8 tokens
    assert rows[("extract", PLAIN)]["grammar_share"] == round(0.2 / 3.0, 4)  # over the 3 s after the first token
    assert (
        rows[("extract", PLAIN)]["valid_schema_rate"] == 1.0 and rows[("tool-call", PLAIN)]["valid_schema_rate"] == 0.0
    )
    peer = rows[("extract", PEER)]
    assert peer["identical_rate"] is None and peer["forced_share"] is None  # its grammar is not ours
    assert (peer["text_equal_rate"], peer["same_record_rate"], peer["same_prompt_rate"]) == (0.0, 1.0, 1.0)
    assert rows[("extract", PLAIN)]["text_equal_rate"] is None

    paths = write_structured_report(result, tmp_path / "out")
    assert set(paths) == {"json", "markdown", "plot"} and paths["plot"].stat().st_size > 0
    data = json.loads(paths["json"].read_text())
    assert data["summaries"] == result.summaries and len(data["measurements"]) == 6
    table = paths["markdown"].read_text()
    assert table == markdown(result)
    assert "## Extraction (JSON schema)" in table and "## Tool call (named choice)" in table
    assert f"| {PEER} |" in table and "n/a" in table and "as a JSON value in 100%" in table


def test_each_method_warms_up_once_untimed_unless_told_not_to():
    ran = []

    class Noting(FakeMethod):
        def run(self, case):
            ran.append((self.name, case.id))
            return super().run(case)

    target = SimpleNamespace(name="fake", backend="transformers")
    methods = [Noting(PLAIN, {}), Noting(METHODS[1], {})]
    result = run_structured_bench(target, StructuredBenchConfig(limit=1), methods, [case()], progress=lambda _: None)
    assert ran == [(PLAIN, "warm-up"), (METHODS[1], "warm-up"), (PLAIN, "extract/1"), (METHODS[1], "extract/1")]
    assert [m.prompt_id for m in result.measurements] == ["extract/1"] * 2  # the warm-up is not measured
    ran.clear()
    run_structured_bench(
        target, StructuredBenchConfig(limit=1, warm_up=False), methods, [case()], progress=lambda _: None
    )
    assert ran == [(PLAIN, "extract/1"), (METHODS[1], "extract/1")]


def test_cli_runs_the_structured_bench_with_its_arguments(monkeypatch, tmp_path):
    from specdraft.apps.bench import structured_bench
    from specdraft.apps.cli import bench, model_args

    seen = {}

    class Pool:
        def get(self, name):
            seen["model"] = name
            return "target"

    def fake_run(target, config):
        seen["config"] = config
        raise SystemExit(0)

    monkeypatch.setattr(model_args, "model_pool", lambda args: Pool())
    monkeypatch.setattr(structured_bench, "run_structured_bench", fake_run)
    parser = argparse.ArgumentParser()
    add_bench_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["bench", "structured", "--model", "qwen2.5-coder-0.5b", "--limit", "2", "--no-peers", "--out", str(tmp_path)]
    )
    with pytest.raises(SystemExit):
        bench.run_bench(args)
    assert seen["model"] == "qwen2.5-coder-0.5b"
    assert seen["config"] == StructuredBenchConfig(
        limit=2, seed=0, max_new_tokens=StructuredBenchConfig().max_new_tokens, peers=False
    )


# ---------------------------------------------------------------------------------------------
# slow: the real suite


@pytest.mark.slow
@pytest.mark.parametrize(
    "backend", ["llama-cpp"]
)  # transformers exactness under constraints: tests/core/constrained/test_constrained_real.py (suite time)
def test_real_suite_is_identical_to_plain_constrained_decoding(backend, tmp_path, real_model):
    # the bench's plumbing on the smallest real model (its numbers are read on the 0.5B and 1.5B in docs/bench)
    target = real_model("smollm2-135m", backend)
    # the times are not read here: no warm-up, and the methods share each prompt's prefill (prefix cache)
    config = StructuredBenchConfig(limit=1, max_new_tokens=40, warm_up=False, share_prefill=True)
    result = run_structured_bench(target, config, progress=lambda _: None)
    methods = list(METHODS) + ([PEER] if backend == "llama-cpp" else [])
    assert [row["method"] for row in result.summaries if row["task"] == ALL] == methods
    for row in result.summaries:
        if row["method"] != PEER:
            assert row["identical_rate"] == 1.0, row
    grammar = next(row for row in result.summaries if row["task"] == ALL and row["method"] == METHODS[1])
    assert grammar["forced_share"] > 0 and grammar["forward_passes_per_token"] < 1.0
    if backend == "llama-cpp":
        peer = next(row for row in result.summaries if row["task"] == ALL and row["method"] == PEER)
        assert peer["same_prompt_rate"] == 1.0
    paths = write_structured_report(result, tmp_path)
    assert all(path.stat().st_size > 0 for path in paths.values())
