"""Plain iterative RAG: the KV-reusing pipeline == a reference that recomputes the whole context
for every token; the prompt layout; stop strings, EOS, limits; streaming and stop()."""

import pytest
from iterative_fixtures import QUESTION, reference_answer, retrievers, salad_collection

from specdraft import GenerationConfig
from specdraft.retrieval.iterative import IterativeRAG, IterativeRAGConfig, RetrievalRecord, RetrieverError
from specdraft.retrieval.iterative.prompt import DOCUMENT_FORMAT, build_layout
from specdraft.session import SessionsUnavailableError
from specdraft.text_stream import TextPiece

CONFIG = IterativeRAGConfig(stride=3, query_tokens=8, max_new_tokens=24)
LONG = GenerationConfig(max_new_tokens=24, ignore_eos=True)


@pytest.fixture(scope="module")
def collection(tokenizer):
    return salad_collection(tokenizer)


@pytest.fixture(scope="module")
def all_retrievers(collection):
    return retrievers(collection)


@pytest.mark.parametrize("kind", ["dense", "hnsw", "bm25"])
def test_plain_iterative_rag_equals_the_full_recompute_reference(tiny_model, collection, all_retrievers, kind):
    retriever = all_retrievers[kind]
    answer = IterativeRAG(tiny_model, retriever, collection, CONFIG).generate(QUESTION, LONG)
    tokens, docs = reference_answer(tiny_model, retriever, collection, CONFIG, QUESTION, 24)
    assert answer.token_ids == tokens
    assert answer.docs == docs
    assert len(set(docs)) > 1  # the document did change along the way
    assert [r.stride for r in answer.retrievals] == list(range(len(docs)))
    assert all(r.source == "retriever" and r.status == "exact" for r in answer.retrievals)
    assert answer.stats["searches"] == len(docs) and answer.stats["generated_tokens"] == 24
    assert answer.finish_reason == "length"
    assert answer.text == tiny_model.tokenizer.decode(answer.token_ids)


def test_the_prompt_puts_the_document_before_the_question(tiny_model, collection):
    layout = build_layout(tiny_model, collection, "Why?", "Be brief.")
    text = tiny_model.tokenizer.decode(layout.prompt_ids((3,), []))
    assert text == "Be brief.\n\n" + DOCUMENT_FORMAT.format(text=collection.texts[3]) + "Question: Why?\nAnswer:"


def test_unchanged_documents_reuse_the_cache(tiny_model, collection, all_retrievers):
    answer = IterativeRAG(tiny_model, all_retrievers["dense"], collection, CONFIG).generate(QUESTION, LONG)
    changes = sum(1 for a, b in zip(answer.docs, answer.docs[1:]) if a != b) + 1
    # prefix, one chunk per change, singles
    assert answer.stats["target_forward_passes"] == 1 + changes + (24 - changes)
    assert answer.stats["replayed_tokens"] == 0


def test_stream_yields_records_before_their_text_and_stop_ends_early(tiny_model, collection, all_retrievers):
    rag = IterativeRAG(tiny_model, all_retrievers["bm25"], collection, CONFIG)
    events = list(rag.stream(QUESTION, LONG))
    assert isinstance(events[0], RetrievalRecord)
    assert sum(isinstance(e, RetrievalRecord) for e in events) == 8
    full = rag.generate(QUESTION, LONG)
    assert "".join(e.text for e in events if isinstance(e, TextPiece)) == full.text
    stream = rag.stream(QUESTION, LONG)
    iterator = iter(stream)
    for _ in range(3):
        next(iterator)
    partial = stream.stop()
    assert full.token_ids[: len(partial.token_ids)] == partial.token_ids and len(partial.token_ids) < 24


def test_stop_strings_eos_and_seeded_sampling(tiny_model, collection, all_retrievers):
    rag = IterativeRAG(tiny_model, all_retrievers["dense"], collection, CONFIG)
    full = rag.generate(QUESTION, LONG)
    stop = full.text[10:13]
    cut = rag.generate(QUESTION, GenerationConfig(max_new_tokens=24, ignore_eos=True, stop=(stop,)))
    assert cut.finish_reason == "stop" and cut.text == full.text[: full.text.index(stop)]
    sampled = [
        rag.generate(QUESTION, GenerationConfig(max_new_tokens=12, temperature=1.0, seed=5, ignore_eos=True))
        for _ in range(2)
    ]
    assert sampled[0].token_ids == sampled[1].token_ids and sampled[0].docs == sampled[1].docs


def test_bad_question_and_failing_retriever(tiny_model, collection, all_retrievers):
    rag = IterativeRAG(tiny_model, all_retrievers["dense"], collection, CONFIG)
    with pytest.raises(ValueError, match="non-empty"):
        rag.generate("  ")

    class Broken:
        name = "broken"

        def search(self, queries, k):
            raise TimeoutError("index offline")

        def score(self, query, docs):
            raise TimeoutError("index offline")

    with pytest.raises(RetrieverError, match="'broken' failed: TimeoutError: index offline"):
        IterativeRAG(tiny_model, Broken(), collection, CONFIG).generate(QUESTION)


def test_a_model_without_a_session_of_its_own_is_refused(collection, all_retrievers):
    """A serving engine's model keeps no KV cache here, which iterative RAG cuts back and re-prefills."""

    class EngineStandIn:
        name = "served"
        backend = "engine"

        def new_session(self):
            raise SessionsUnavailableError("a serving engine keeps no session here")

    with pytest.raises(ValueError, match="runs here .*'served' on the engine backend"):
        IterativeRAG(EngineStandIn(), all_retrievers["bm25"], collection, CONFIG)
