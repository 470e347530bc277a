"""RAG answers on real models are the target's own: speculative == transformers' greedy ``generate``
token for token, for the reference and datastore drafters, as chains and as trees, over a real
FAISS index embedded with the packaged MiniLM; and seeded sampling gives plain sampling's text."""

import pytest
import torch
from oracle import Recording

from specdraft import GenerationConfig, SpeculationConfig, SpeculativeGenerator, TransformersModel
from specdraft.apps.service.demo import EXAMPLE_DOCUMENTS
from specdraft.retrieval import DocumentIndex
from specdraft.retrieval.datastore import Datastore, DatastoreDraftConfig
from specdraft.retrieval.pipeline import RAGConfig, RAGPipeline
from specdraft.retrieval.reference_drafter import ReferenceDraftConfig

pytestmark = pytest.mark.slow

# A second account of the Eiffel Tower that words things a little differently, so that continuations
# of shared n-grams differ between passages and the drafters build trees.
VARIANT = {
    "id": "eiffel-tower-guide",
    "text": "The Eiffel Tower is a wrought-iron lattice tower in Paris. It is named after the engineer Gustave "
    "Eiffel, whose company built the tower for the 1889 World's Fair. The tower is 330 metres tall and was the "
    "tallest structure in the world for 41 years.",
}
DOCUMENTS = [*EXAMPLE_DOCUMENTS, VARIANT]
QUESTIONS = ["How tall is the Eiffel Tower, and who built it?", "When was the Colosseum built, and by whom?"]
N_NEW = 40
FIXED = SpeculationConfig(initial_draft_len=8, adaptive=False, fallback=False)  # drafts that do not depend on timing
SHAPES = {
    "reference-chain": ("reference", RAGConfig(reference=ReferenceDraftConfig(max_branches=1))),
    "reference-tree": ("reference", RAGConfig(reference=ReferenceDraftConfig(max_branches=4))),
    "datastore-chain": ("datastore", RAGConfig(datastore=DatastoreDraftConfig(max_candidates=1))),
    "datastore-tree": ("datastore", RAGConfig()),
    "combined-tree": ("reference+datastore", RAGConfig()),
}


@pytest.fixture(scope="module")
def index():
    index = DocumentIndex.create()  # the packaged all-MiniLM-L6-v2, FAISS flat
    index.add(DOCUMENTS)
    return index


def passages_datastore(model: TransformersModel) -> Datastore:
    tokenizer = model.tokenizer
    return Datastore.build([tokenizer.encode(d["text"]) for d in DOCUMENTS], vocab_size=tokenizer.vocab_size)


@pytest.fixture(scope="module", params=["smollm2-135m", "qwen2.5-coder-0.5b"])
def model(request, real_model):
    return real_model(request.param)


@pytest.fixture(scope="module")
def datastore(model):
    return passages_datastore(model)


@pytest.fixture(scope="module")
def smollm2(real_model):
    """The small model alone, for the tests that run many generations."""
    return real_model("smollm2-135m")


@pytest.fixture(scope="module")
def cases(index, model):
    """(question, hits, prompt ids, transformers' greedy answer) per question (one question for the larger model)."""
    pipeline = RAGPipeline(index, model, "none")
    out = []
    for question in QUESTIONS[: 2 if model.vocab_size < 100_000 else 1]:
        hits = index.search(question, 3)
        ids = pipeline.prompt_ids(question, hits)
        generated = model.hf_model.generate(
            torch.tensor([ids]), max_new_tokens=N_NEW, do_sample=False, eos_token_id=sorted(model.eos_token_ids)
        )
        out.append((question, hits, ids, generated[0, len(ids) :].tolist()))
    return out


@pytest.mark.parametrize("shape", list(SHAPES))
def test_greedy_answers_equal_transformers_generate(index, model, datastore, cases, shape):
    kind, config = SHAPES[shape]
    pipeline = RAGPipeline(index, model, kind, datastore, config)
    accepted, trees = 0, 0
    for question, hits, ids, expected in cases:
        drafter = Recording(pipeline.make_drafter(question, hits))
        result = SpeculativeGenerator(model, FIXED).generate(ids, drafter, GenerationConfig(max_new_tokens=N_NEW))
        assert result.token_ids == expected
        accepted += result.stats.accepted_tokens
        trees += sum(not d.is_chain for d in drafter.drafts)
    assert accepted > 0  # the drafts were really used
    assert (trees > 0) == shape.endswith("tree")


def test_the_pipeline_answers_as_plain_decoding_does(index, smollm2):
    """Through ``RAGPipeline.ask`` with its default (timed) speculation policy."""
    model, datastore = smollm2, passages_datastore(smollm2)
    config = RAGConfig(max_new_tokens=N_NEW)
    for question in QUESTIONS:
        plain = RAGPipeline(index, model, "none", config=config).ask(question)
        for kind in ("reference", "datastore", "reference+datastore", "prompt-lookup"):
            assert RAGPipeline(index, model, kind, datastore, config).ask(question).token_ids == plain.token_ids, kind


@pytest.mark.parametrize("shape", ["reference-tree", "datastore-tree"])
def test_seeded_sampling_equals_plain_sampling(index, smollm2, shape):
    kind, config = SHAPES[shape]
    pipeline = RAGPipeline(index, smollm2, kind, passages_datastore(smollm2), config)
    generator = SpeculativeGenerator(smollm2, FIXED)
    hits = index.search(QUESTIONS[0], 3)
    ids = pipeline.prompt_ids(QUESTIONS[0], hits)
    for seed in range(2):
        sampling = GenerationConfig(max_new_tokens=24, temperature=0.8, seed=seed)
        plain = generator.generate(ids, None, sampling)
        drafted = generator.generate(ids, pipeline.make_drafter(QUESTIONS[0], hits), sampling)
        assert drafted.token_ids == plain.token_ids
