"""The engine target against a real OpenAI-compatible engine: llama-cpp-python's server
(``python -m llama_cpp.server``) started on loopback with smollm2-135m's GGUF file.

- greedy speculative output through the engine (prompt lookup, copydraft) == the engine's own
  greedy completion of the same prompt (text), and == plain greedy decoding of the same GGUF file
  by specdraft's llama.cpp backend (token ids);
- the Target protocol's greedy checks of the conformance suite (tests/core/test_target_conformance.py)
  on text-representable tokens: commit continues like a fresh prefill; a tree's rows equal each
  branch verified as a chain;
- the engine down / a wrong url / a different model's tokenizer: clear errors.

Slow: this server post-processes echoed log-probabilities in Python (a sort of the vocabulary per
prompt token), seconds per request; prompts and answers are kept short.
"""

from __future__ import annotations

import pytest
from engine_server import LlamaServer

from specdraft import ROOT, Draft, GenerationConfig, LlamaCppModel, SpeculativeGenerator, TokenChooser
from specdraft.backends.engine import EngineConfig, EngineError, EngineModel
from specdraft.copydraft import CopyDrafter
from specdraft.drafters import PromptLookupDrafter
from specdraft.models import gguf_path

pytestmark = pytest.mark.slow

N_NEW = 16


@pytest.fixture(scope="module")
def local():
    return LlamaCppModel.load("smollm2-135m")


@pytest.fixture(scope="module")
def server():
    with LlamaServer(gguf_path("smollm2-135m")) as running:
        yield running


@pytest.fixture(scope="module")
def engine(server, local):
    return EngineModel(EngineConfig(server.url, "llama-cpp-server", exact=True), local)


def assert_same_as_the_engine(engine, local, server, prompt, drafter):
    ids = engine.encode(prompt)
    config = GenerationConfig(max_new_tokens=N_NEW)
    drafted = SpeculativeGenerator(engine).generate(ids, drafter, config)
    own = server.complete(prompt, N_NEW)
    assert engine.decode(drafted.token_ids) == own["text"]
    assert drafted.token_ids == SpeculativeGenerator(local).generate(ids, None, config).token_ids
    return drafted


def test_prompt_lookup_through_the_engine_equals_the_engines_own_greedy_completion(engine, local, server):
    result = assert_same_as_the_engine(engine, local, server, "A cat. A cat. A cat. A", PromptLookupDrafter())
    assert result.stats.accepted_tokens > 0 and result.stats.verify_steps < N_NEW


def test_copydraft_through_the_engine_equals_the_engines_own_greedy_completion(engine, local, server):
    source = "the cat sat on the mat."
    prompt = f'Repeat exactly: "{source}"\nRepeated: "'
    drafter = CopyDrafter(local.tokenizer.encode(source))
    result = assert_same_as_the_engine(engine, local, server, prompt, drafter)
    assert result.stats.drafted_tokens > 0


def test_commit_continues_like_an_engine_target_prefilled_with_the_accepted_tokens(engine):
    context = engine.encode("The dog sleeps. The")
    tail = engine.encode(" dog sleeps on the mat")  # text-representable tokens
    draft = Draft((tail[0], tail[2], tail[1], tail[3]), (ROOT, ROOT, 0, 2))
    target = engine.new_target(TokenChooser())
    target.prefill(context)
    target.verify(draft)
    target.commit([0, 2], tail[4])
    fresh = engine.new_target(TokenChooser())
    fresh.prefill(context + [tail[0], tail[1], tail[4]])
    probe = Draft.chain(tail[1:3])
    got, want = target.verify(probe), fresh.verify(probe)
    assert [got.choice(r) for r in range(3)] == [want.choice(r) for r in range(3)]


def test_tree_rows_equal_each_branch_verified_as_a_chain(engine):
    context = engine.encode("One, two, three,")
    a, b, c = engine.encode(" four five six")[:3]
    draft = Draft((a, b, c, b), (ROOT, 0, 1, ROOT))
    tree = engine.new_target(TokenChooser())
    tree.prefill(context)
    rows = tree.verify(draft)
    assert tree.forward_passes == 2  # one request per branch
    for leaf in draft.leaves:
        path = draft.path_to(leaf)
        chain_target = engine.new_target(TokenChooser())
        chain_target.prefill(context)
        chain = chain_target.verify(Draft.chain([draft.tokens[n] for n in path]))
        assert [rows.choice(r) for r in [0] + [1 + n for n in path]] == [chain.choice(r) for r in range(1 + len(path))]


def test_tokens_whose_text_names_several_ids_are_resolved_and_split_characters_are_a_clear_error(engine, local):
    """smollm2 answers "Hello in Russian is" with " " (38 ids read " ") and then the first byte of a
    Cyrillic letter (298 ids read ""): both rows are resolved by extra requests to the ids plain
    decoding chooses; the context then ends inside a character, which this text-only server cannot
    be sent, and the target says so instead of guessing."""
    ids = engine.encode("Hello in Russian is")
    plain = SpeculativeGenerator(local).generate(ids, None, GenerationConfig(max_new_tokens=3)).token_ids
    api = engine.api
    before = api.extra_requests
    assert api.choices(ids, len(ids)) == plain[:1]
    assert api.choices(ids + plain[:1], len(ids) + 1) == plain[1:2]
    assert api.extra_requests - before >= 2 + 5  # a probe per row, then binary searches over 38 and 298 ids
    with pytest.raises(EngineError, match="as text"):
        api.choices(ids + plain[:2], len(ids) + 2)


def test_the_cost_profile_holds_measured_request_seconds(engine):
    target = engine.new_target(TokenChooser())
    target.prefill(engine.encode("One, two,"))
    target.verify(Draft.chain(engine.encode(" three, four")))
    assert engine.cost.known(1 + len(engine.encode(" three, four")))
    assert all(seconds > 0 for seconds in engine.cost.snapshot().values())


def test_engine_down_or_a_wrong_url_is_a_clear_error(local, server):
    from engine_server import free_port

    down = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EngineError, match=f"no engine answers at {down}"):
        EngineModel(EngineConfig(down, "llama-cpp-server"), local)
    with pytest.raises(EngineError, match="answered 404"):
        EngineModel(EngineConfig(server.url + "/nowhere", "llama-cpp-server"), local)


def test_a_local_model_with_another_tokenizer_is_refused(server):
    other = LlamaCppModel.load("qwen2.5-coder-0.5b")
    with pytest.raises(ValueError, match="does not tokenize like the engine"):
        EngineModel(EngineConfig(server.url, "llama-cpp-server"), other)
