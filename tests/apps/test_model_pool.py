"""DrafterSpec: the general drafter names, parsed once for the command line, the service and the
benchmarks, and the fresh drafter each builds for a request."""

import pytest

from specdraft import GenerationConfig
from specdraft.apps.model_pool import DRAFTER_NAMES, DrafterSpec, ModelPool
from specdraft.drafters import PromptLookupDrafter
from specdraft.retrieval.reference_drafter import ReferenceDrafter

GREEDY = GenerationConfig().sampling


def test_the_names_and_what_they_parse_to():
    assert DRAFTER_NAMES == ("none", "prompt-lookup", "documents", "model:NAME")
    assert DrafterSpec.parse(" documents ") == DrafterSpec("documents")
    assert str(DrafterSpec.parse("documents")) == "documents"
    assert DrafterSpec.parse("model:tiny") == DrafterSpec("model", "tiny")
    with pytest.raises(ValueError, match="choose one of none, prompt-lookup, documents, model:NAME"):
        DrafterSpec.parse("document")


def test_documents_builds_the_reference_drafter_over_the_prompt_passages(tiny_model):
    pool = ModelPool()
    spec = DrafterSpec.parse("documents")
    spec.prepare(pool, tiny_model)  # nothing to load
    drafter = spec.build(pool, tiny_model, GREEDY, None, ["Context:\n\nThe quick brown fox.\n\nQuestion: what?"])
    assert isinstance(drafter, ReferenceDrafter)
    assert drafter.index.num_sequences == 3  # "Context:", the passage, the question
    assert spec.build(pool, tiny_model, GREEDY) is None  # no texts: no passages, plain decoding
    assert isinstance(
        DrafterSpec.parse("prompt-lookup").build(pool, tiny_model, GREEDY, None, ["ignored"]), PromptLookupDrafter
    )
    assert DrafterSpec.parse("none").build(pool, tiny_model, GREEDY, None, ["ignored"]) is None
