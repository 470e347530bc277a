"""The engine target's logic without an engine: the vLLM and SGLang answers it reads (shapes from
their API documentation), its Target-protocol bookkeeping over a scripted API (a unit test: the
real server is in test_engine_llama_server.py), and its errors."""

from __future__ import annotations

import socket

import pytest

from specdraft import ROOT, Draft, GenerationConfig, ModelConfig, SamplingParams, SpeculativeGenerator, TokenChooser
from specdraft.backends.engine import (
    EngineClient,
    EngineConfig,
    EngineError,
    EngineModel,
    EngineTarget,
    SglangApi,
    VllmApi,
)


def test_vllm_rows_come_from_rank_one_and_the_generated_token_id():
    answer = {
        "choices": [
            {
                "prompt_logprobs": [
                    None,
                    {"7": {"logprob": -0.1, "rank": 1}},
                    {"9": {"logprob": -3.0, "rank": 4}, "8": {"logprob": -0.2, "rank": 1}},
                    {"5": {"logprob": -0.3, "rank": 1}},
                ],
                "logprobs": {"tokens": ["token_id:42"]},
            }
        ]
    }
    # ids of length 4, context of 2: rows after ids[:2], ids[:3] and ids[:4]
    assert VllmApi.parse(answer, 4, 2) == [8, 5, 42]
    assert VllmApi(None, "m").request([1, 2])["prompt_logprobs"] == 1


def test_vllm_without_prompt_logprobs_is_an_engine_error():
    with pytest.raises(EngineError, match="prompt_logprobs"):
        VllmApi.parse({"choices": [{"logprobs": {"tokens": ["token_id:1"]}}]}, 3, 1)


def test_sglang_rows_start_at_logprob_start_len():
    answer = {
        "meta_info": {
            "input_top_logprobs": [[[-0.1, 11, None]], [[-0.5, 12, None]]],
            "output_token_logprobs": [[-0.2, 13, None]],
        }
    }
    assert SglangApi.parse(answer, 5, 3) == [11, 12, 13]
    request = SglangApi(None, "").request([1, 2, 3, 4, 5], 3)
    assert (
        request["logprob_start_len"] == 3
        and request["top_logprobs_num"] == 1
        and request["input_ids"] == [1, 2, 3, 4, 5]
    )


class ScriptedApi:
    """Answers as an engine whose greedy choice after any prefix is ``rule(prefix)``."""

    def __init__(self, rule, cut: int | None = None) -> None:
        self.rule = rule
        self.cut = cut  # answer only this many draft rows (as the llama-cpp-python server does for non-canonical text)
        self.calls: list[list[int]] = []

    def info(self):
        return {"model": "scripted", "max_length": 64}

    def tokenize(self, text):
        return None

    def choices(self, ids, first):
        self.calls.append(list(ids))
        last = len(ids) if self.cut is None else min(len(ids), first + self.cut)
        return [self.rule(ids[:j]) for j in range(first, last + 1)]


class NumberTokenizer:
    """Token ``i`` reads as "<i>"."""

    vocab_size = 100

    def encode(self, text, add_special_tokens=False):
        return [int(part) for part in text.replace("<", " ").replace(">", " ").split()]

    def decode(self, ids):
        return "".join(f"<{i}>" for i in ids)

    def fingerprint(self):
        return "numbers"


class Local:
    """What EngineModel needs of the local model."""

    tokenizer = NumberTokenizer()
    vocab_size = 100
    eos_token_ids = frozenset()
    has_chat_template = False


def scripted_model(rule, cut=None, branches=1) -> EngineModel:
    model = EngineModel.__new__(EngineModel)
    model.config = EngineConfig("http://127.0.0.1:9", "vllm", branches=branches)
    model.local = Local()
    model.tokenizer = model.local.tokenizer
    model.api = ScriptedApi(rule, cut)
    from specdraft.cost import PassCostProfile

    model.cost = PassCostProfile()
    model._max_length = 64
    model.info = model.api.info()
    return model


def count_up(prefix):
    return (prefix[-1] + 1) % 100


def test_verify_reads_one_row_per_node_and_commit_extends_the_context():
    model = scripted_model(count_up)
    target = model.new_target()
    target.prefill([1, 2, 3])
    verification = target.verify(Draft.chain([4, 5, 9]))
    assert [verification.choice(r) for r in range(4)] == [4, 5, 6, 10]
    target.commit([0, 1], 6)
    assert target.context_length == 6 and target.forward_passes == 1
    assert model.api.calls == [[1, 2, 3, 4, 5, 9]]
    assert model.cost.known(4)


def test_a_tree_is_one_request_per_branch_and_each_row_is_its_branch():
    model = scripted_model(count_up)
    target = model.new_target()
    target.prefill([1])
    draft = Draft((2, 7, 3, 8), (ROOT, ROOT, 0, 1))
    verification = target.verify(draft)
    assert [verification.choice(r) for r in range(5)] == [2, 3, 8, 4, 9]
    assert model.api.calls == [[1, 2, 3], [1, 7, 8]] and target.forward_passes == 2


def test_speculative_greedy_equals_plain_greedy_over_the_scripted_engine():
    model = scripted_model(lambda prefix: (sum(prefix) * 7 + 3) % 100)
    plain = SpeculativeGenerator(model).generate([5, 6], None, GenerationConfig(max_new_tokens=12, ignore_eos=True))

    class Oracle:
        def propose(self, context, budget):
            return Draft.chain((plain.token_ids + [0] * 10)[len(context) - 2 : len(context) - 2 + 4])

        def observe(self, accepted):
            pass

    drafted = SpeculativeGenerator(model).generate(
        [5, 6], Oracle(), GenerationConfig(max_new_tokens=12, ignore_eos=True)
    )
    assert drafted.token_ids == plain.token_ids and drafted.stats.verify_steps < 12


def test_rows_the_engine_could_not_answer_are_an_error_only_when_the_walk_needs_them():
    model = scripted_model(count_up, cut=1)
    target = model.new_target()
    target.prefill([1])
    verification = target.verify(Draft.chain([5, 6]))  # row 0 says 2: node 0 is refused, row 2 is never read
    assert verification.choice(0) == 2
    target.commit([], 2)
    with pytest.raises(EngineError, match="token ids"):
        target.verify(Draft.chain([3, 4, 5]))  # row 1 accepts 3, so row 2 (not answered) would be read


def test_misuse_raises_and_sampling_is_refused():
    model = scripted_model(count_up)
    target = model.new_target()
    with pytest.raises(RuntimeError):
        target.verify(Draft.empty())
    with pytest.raises(RuntimeError):
        target.commit([], 1)
    target.prefill([1])
    with pytest.raises(RuntimeError):
        target.prefill([1])
    target.verify(Draft.empty())
    with pytest.raises(RuntimeError):
        target.verify(Draft.empty())
    with pytest.raises(ValueError, match="greedy"):
        model.new_target(TokenChooser(SamplingParams(temperature=0.7), seed=1))
    assert isinstance(target, EngineTarget)


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="api"):
        EngineConfig("http://x", "tgi")
    with pytest.raises(ValueError, match="http"):
        EngineConfig("localhost:8000")


def test_an_engine_that_is_not_there_is_a_clear_error():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = EngineClient(f"http://127.0.0.1:{port}", timeout=5)
    with pytest.raises(EngineError, match=f"no engine answers at http://127.0.0.1:{port}"):
        client.get("/v1/models")
    with pytest.raises(EngineError, match="no engine answers"):
        EngineModel(EngineConfig(f"http://127.0.0.1:{port}", "vllm"), Local())


def test_the_command_line_selects_the_engine_backend():
    import argparse

    from specdraft.apps.cli.model_args import add_model_args, model_pool
    from specdraft.apps.model_pool import ModelPool

    parser = argparse.ArgumentParser()
    add_model_args(parser, "smollm2-135m")
    pool = model_pool(
        parser.parse_args(["--backend", "engine", "--engine-url", "http://gpu-box:8000", "--engine-api", "sglang"])
    )
    assert pool.model.engine == EngineConfig("http://gpu-box:8000", "sglang") and pool.local_backend == "auto"
    pool = model_pool(
        parser.parse_args(["--backend", "engine", "--engine-url", "http://h:1", "--engine-api", "llama-cpp-server"])
    )
    assert pool.local_backend == "llama-cpp"  # the same GGUF file, for its tokenizer
    with pytest.raises(SystemExit, match="--engine-url"):
        model_pool(parser.parse_args(["--backend", "engine"]))
    with pytest.raises(ValueError, match="engine"):
        ModelPool(ModelConfig(backend="engine"))
    assert model_pool(parser.parse_args([])).model.engine is None


def test_an_engine_that_does_not_answer_in_time_is_a_clear_error():
    with socket.socket() as silent:  # accepts the connection, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        client = EngineClient(f"http://127.0.0.1:{port}", timeout=0.5)
        with pytest.raises(EngineError, match="did not answer GET /v1/models within 0.5 s"):
            client.get("/v1/models")
