"""ModelPool: the models loaded once after one ModelConfig, and the fresh drafter each request's
drafter choice (``specdraft.retrieval.drafter_registry``) builds over what a completion offers."""

import pytest

from specdraft import GenerationConfig, ModelConfig
from specdraft.apps.model_pool import COMPLETION_OFFERS, ModelPool
from specdraft.drafters import DraftModelDrafter, PromptLookupDrafter
from specdraft.retrieval.drafter_registry import drafter_names, parse_drafter
from specdraft.retrieval.prompt_passages import prompt_passages
from specdraft.retrieval.reference_drafter import ReferenceDrafter

GREEDY = GenerationConfig().sampling


def test_a_completion_offers_the_general_drafters_the_prompt_passages_and_draft_models():
    assert drafter_names(COMPLETION_OFFERS) == ("none", "prompt-lookup", "reference", "model:NAME")
    with pytest.raises(
        ValueError, match=r"choose one of none, prompt-lookup, reference \(alias documents\), model:NAME"
    ):
        parse_drafter("document", offers=COMPLETION_OFFERS)


@pytest.mark.parametrize("name", ["documents", "reference"])
def test_documents_builds_the_reference_drafter_over_the_prompt_passages(tiny_model, name):
    pool = ModelPool()
    spec = parse_drafter(name)
    pool.prepare(spec, tiny_model)  # nothing to load
    passages = prompt_passages(["Context:\n\nThe quick brown fox.\n\nQuestion: what?"])
    drafter = pool.drafter(spec, tiny_model, GREEDY, None, passages)
    assert isinstance(drafter, ReferenceDrafter)
    assert drafter.index.num_sequences == 3  # "Context:", the passage, the question
    assert pool.drafter(spec, tiny_model, GREEDY) is None  # no texts: no passages, plain decoding
    assert isinstance(
        pool.drafter(parse_drafter("prompt-lookup"), tiny_model, GREEDY, None, ["ignored"]), PromptLookupDrafter
    )
    assert pool.drafter(parse_drafter("none"), tiny_model, GREEDY, None, ["ignored"]) is None


def test_a_draft_model_comes_from_the_pool(tiny_model):
    pool = ModelPool()
    pool.add("tiny", tiny_model)
    spec = parse_drafter("model:tiny", tree_width=2)
    pool.prepare(spec, tiny_model)  # the same tokenizer
    drafter = pool.drafter(spec, tiny_model, GREEDY, seed=1)
    assert isinstance(drafter, DraftModelDrafter) and drafter.model is tiny_model


def test_every_model_of_the_pool_is_loaded_with_its_config():
    pool = ModelPool(ModelConfig(device="cpu", dtype="float32", context=512))
    assert pool.config("m") == ModelConfig("m", device="cpu", dtype="float32", context=512)
    assert pool.local_backend == "auto"
    with pytest.raises(ValueError, match="needs an engine"):
        ModelPool(ModelConfig(backend="engine"))
