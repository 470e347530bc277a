"""Constraints on the engine backend without a real engine: the grammar runs here and the engine
ranks its candidates (``EngineTarget.rank_candidates``, ``VllmApi.ranked`` / ``choose_among``).

Over real HTTP to the loopback server that speaks vLLM's dialect on the tiny model (``vllm_dialect``):
the engine's constrained answer has the token ids of the local model's own constrained decoding (its
logits masked by the same grammar), plainly and with drafts, with one request per counted pass,
including the rows resolved by a second request (the tiny random model rarely ranks an allowed token
in its top few, so they occur). The request bodies and answers vLLM documents are read as unit tests.
"""

from __future__ import annotations

import pytest
from live_server import LiveServer
from vllm_dialect import make_vllm_dialect_app

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.backends.engine import EngineConfig, EngineModel, VllmApi
from specdraft.backends.engine.apis import _generated_ranked, _ranked_ids
from specdraft.constrained import Constraint, GrammarUnavailableError
from specdraft.drafters import PromptLookupDrafter

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 12}, "n": {"type": "integer"}},
    "required": ["name", "n"],
}
PROMPT = "the cat sat on the mat and the cat sat"


@pytest.fixture(scope="module")
def served(tiny_model):
    with LiveServer(make_vllm_dialect_app(tiny_model)) as server:
        yield tiny_model, EngineModel(EngineConfig(server.url, "vllm", exact=True, candidates=3), tiny_model)


REGEX = Constraint.regex(r"(cat|mat)( (cat|mat|sat)){2,6}")


@pytest.mark.parametrize("drafter", [None, "prompt-lookup"])
@pytest.mark.parametrize("constraint", [Constraint.json_schema(SCHEMA), REGEX], ids=["schema", "regex"])
def test_constrained_answer_through_the_engine_equals_local_constrained_decoding(served, constraint, drafter):
    local, engine = served
    ids = local.encode(PROMPT)
    config = GenerationConfig(max_new_tokens=40, constraint=constraint)
    own = SpeculativeGenerator(local).generate(ids, None, config)
    before = engine.client.requests
    result = SpeculativeGenerator(engine).generate(ids, PromptLookupDrafter() if drafter else None, config)
    assert result.token_ids == own.token_ids
    assert result.stats.target_forward_passes == engine.client.requests - before  # resolved rows counted
    assert result.stats.exact is True


def test_rows_without_an_allowed_candidate_are_resolved_by_the_engine(served):
    local, engine = served
    config = GenerationConfig(max_new_tokens=30, constraint=Constraint.json_schema(SCHEMA))
    result = SpeculativeGenerator(engine).generate(local.encode(PROMPT), None, config)
    assert result.stats.grammar_resolved > 0  # the tiny random model ranks few allowed tokens first
    assert result.stats.forced_tokens > 0  # the schema's keys were drafted and kept


def test_an_engine_api_that_cannot_rank_refuses_a_constraint(served):
    local, _ = served

    class NoRanks(VllmApi):
        ranks = False

    engine = EngineModel.__new__(EngineModel)
    engine.__dict__.update(served[1].__dict__)
    engine.api = NoRanks(engine.client, "")
    with pytest.raises(GrammarUnavailableError, match="logits"):
        SpeculativeGenerator(engine).generate(
            local.encode(PROMPT), None, GenerationConfig(max_new_tokens=4, constraint=Constraint.json_object())
        )


def test_vllm_ranked_rows_are_in_rank_order_up_to_k_and_the_generated_token_first():
    entry = {"9": {"logprob": -3.0, "rank": 7}, "8": {"logprob": -0.2, "rank": 1}, "4": {"logprob": -1.0, "rank": 2}}
    assert _ranked_ids(entry, 2, "") == [8, 4]  # 9 is the prompt token, past k: not a candidate
    tops = {"token_id:3": -2.0, "token_id:5": -0.1, "token_id:6": -1.0}
    choice = {"logprobs": {"tokens": ["token_id:5"], "top_logprobs": [tops]}}
    assert _generated_ranked(choice) == [5, 6, 3]


def test_vllm_requests_ask_prompt_rows_only_for_a_draft_and_resolve_with_allowed_token_ids():
    sent: list[dict] = []

    class Client:
        def post(self, path, body):
            sent.append(body)
            return {"choices": [{"logprobs": {"tokens": ["token_id:7"], "top_logprobs": [{"token_id:7": -0.1}]}}]}

    api = VllmApi(Client(), "m")
    assert api.choices([1, 2, 3], 3) == [7]  # no draft: a plain one-token request (it may read vLLM's cache)
    assert "prompt_logprobs" not in sent[-1]
    assert api.choose_among([1, 2], [7, 9]) == 7
    assert sent[-1]["allowed_token_ids"] == [7, 9] and "prompt_logprobs" not in sent[-1]
    assert api.request([1, 2], True, 5)["prompt_logprobs"] == 5
