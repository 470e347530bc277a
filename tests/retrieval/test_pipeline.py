"""RAGPipeline on a tiny model and a hash-embedding index: identical answers with every drafter."""

import pytest
from hash_embedder import HashEmbedder

from specdraft import SpeculationConfig
from specdraft.retrieval import DocumentIndex, IndexConfig, ReferenceDrafter
from specdraft.retrieval.datastore import Datastore
from specdraft.retrieval.pipeline import DRAFTERS, RAGConfig, RAGPipeline
from specdraft.retrieval.provenance import cited

DOCUMENTS = [
    {"id": "fox", "text": "The quick brown fox jumps over the lazy dog. The dog sleeps all day."},
    {"id": "code", "text": "def add(a, b): return a + b. The function adds two numbers."},
    {"id": "grammar", "text": "Grammar correction returns mostly the text it was given, with a few edits."},
]


@pytest.fixture(scope="module")
def index():
    index = DocumentIndex.create(embedder=HashEmbedder())
    index.add(DOCUMENTS)
    return index


@pytest.fixture(scope="module")
def datastore(tokenizer):
    return Datastore.build([tokenizer(d["text"]).input_ids for d in DOCUMENTS], vocab_size=len(tokenizer))


def test_every_drafter_gives_the_plain_answer(index, tiny_model, datastore):
    config = RAGConfig(top_k=2, max_new_tokens=24)
    answers = {d: RAGPipeline(index, tiny_model, d, datastore, config).ask("What does the fox do?") for d in DRAFTERS}
    plain = answers["none"]
    assert plain.hits[0].chunk.doc_id == "fox" and len(plain.hits) == 2
    for drafter, answer in answers.items():
        assert answer.token_ids == plain.token_ids, drafter
        assert answer.answer == plain.answer
    assert plain.stats.drafted_tokens == 0


def test_reference_drafter_drafts_from_the_retrieved_passages(index, tiny_model):
    pipeline = RAGPipeline(index, tiny_model, "reference", config=RAGConfig(top_k=1))
    hits = index.search("fox", 1)
    drafter = pipeline.make_drafter("fox", hits)
    assert isinstance(drafter, ReferenceDrafter)
    prompt = pipeline.prompt_ids("fox", hits)
    drafter.propose(prompt, 8)  # learns where the output starts
    tokens = tiny_model.tokenizer.encode(" The quick brown")
    draft = drafter.propose(prompt + tokens, 8)
    assert len(draft) > 0  # it continues the passage


def test_the_question_is_a_reference_too(index, tiny_model):
    """Answers restate their question: after the passages, the question is drafted from."""
    pipeline = RAGPipeline(index, tiny_model, "reference", config=RAGConfig(top_k=1))
    question = "Which zebra crossing gleams near the harbour?"
    hits = index.search(question, 1)
    assert RAGPipeline.references(question, hits) == [hits[0].chunk.text, question]
    drafter = pipeline.make_drafter(question, hits)
    prompt = pipeline.prompt_ids(question, hits)
    drafter.propose(prompt, 8)  # learns where the output starts
    question_ids = tiny_model.tokenizer.encode(question)
    said = question_ids[:3]  # the answer began by restating the question
    draft = drafter.propose(prompt + said, 4)
    assert list(draft.tokens) == question_ids[3:7]


def test_citations_are_the_passages_the_answer_quotes(index):
    hits = index.search("fox dog", 3)
    assert cited("As it says, the quick brown fox jumps over everything.", hits, 4) == ["fox#0"]
    assert cited("Nothing quoted here.", hits, 4) == []


@pytest.mark.parametrize(
    "kwargs, message",
    [({"drafter": "magic"}, "unknown drafter"), ({"drafter": "datastore"}, "needs a datastore")],
)
def test_bad_configuration(index, tiny_model, kwargs, message):
    with pytest.raises(ValueError, match=message):
        RAGPipeline(index, tiny_model, **kwargs)


def test_empty_question_is_rejected(index, tiny_model):
    with pytest.raises(ValueError, match="non-empty"):
        RAGPipeline(index, tiny_model).ask("  ")


# The tiny model answers every question with ">=vedae6..." whatever the passages say: a passage that
# holds those characters lets the reference drafter draft a run the model accepts.
ECHO = {"id": "echo", "text": "The fox says >=vedae6 and then runs over the lazy dog."}


def test_stream_gives_the_pieces_then_the_answer_with_linked_spans(tiny_model):
    index = DocumentIndex.create(embedder=HashEmbedder())
    index.add([*DOCUMENTS, ECHO])
    fixed = SpeculationConfig(initial_draft_len=4, adaptive=False)  # drafts that do not depend on timing
    pipeline = RAGPipeline(
        index, tiny_model, "reference", config=RAGConfig(top_k=2, max_new_tokens=16, speculation=fixed)
    )
    stream = pipeline.stream("What does the fox say?")
    assert "echo" in [h.chunk.doc_id for h in stream.hits] and stream.answer is None
    pieces = list(stream)
    answer = stream.answer
    assert answer is not None and answer.answer == "".join(p.text for p in pieces).strip()
    assert (
        answer.token_ids
        == RAGPipeline(index, tiny_model, "none", config=pipeline.config).ask("What does the fox say?").token_ids
    )
    assert "".join(s.text for s in answer.spans) == answer.answer
    drafted = [s for s in answer.spans if s.source == "draft"]
    assert drafted and all(s.passage == "echo#0" for s in drafted)
    for span in drafted:
        assert ECHO["text"][span.passage_start :].startswith(span.text.strip())
    body = answer.to_dict()
    assert set(body) == {"answer", "citations", "token_ids", "stats", "passages", "spans"}
    assert "echo" in [p["document"] for p in body["passages"]]


def test_a_datastore_from_another_tokenizer_is_refused(index, tiny_model, tokenizer):
    other = Datastore.build([[1, 2, 3]], tokenizer="other-model", vocab_size=len(tokenizer) + 7)
    with pytest.raises(ValueError, match="tokenizer of other-model"):
        RAGPipeline(index, tiny_model, "datastore", other)


def test_a_prompt_longer_than_the_model_takes_is_refused(tiny_model):
    index = DocumentIndex.create(IndexConfig(chunk_words=tiny_model.max_length + 10, chunk_overlap=0), HashEmbedder())
    index.add([{"id": "long", "text": "fox " * (tiny_model.max_length + 10)}])
    config = RAGConfig(top_k=1)
    with pytest.raises(ValueError, match="fewer passages"):
        RAGPipeline(index, tiny_model, config=config).ask("fox")
