"""The drafter registry: one canonical name per drafter, its aliases, what each needs from the
surface it runs on, and the drafter it builds."""

import pytest

from specdraft.retrieval.datastore import Datastore, DatastoreDrafter
from specdraft.retrieval.drafter_registry import (
    DATASTORE,
    EVERYTHING,
    PASSAGES,
    REGISTRY,
    DrafterSpec,
    DraftInputs,
    check_datastore,
    drafter_help,
    drafter_names,
    parse_drafter,
    require,
)
from specdraft.retrieval.pipeline import DRAFTERS, RAG_OFFERS
from specdraft.retrieval.reference_drafter import ReferenceDrafter


def test_one_canonical_name_per_drafter_and_no_name_twice():
    names = [name for entry in REGISTRY for name in (entry.name, *entry.aliases)]
    assert len(names) == len(set(names))
    assert drafter_names() == ("none", "prompt-lookup", "reference", "datastore", "reference+datastore", "model:NAME")
    assert (
        DRAFTERS
        == drafter_names(RAG_OFFERS)
        == ("none", "prompt-lookup", "reference", "datastore", "reference+datastore")
    )
    assert drafter_names(RAG_OFFERS, aliases=True)[-1] == "documents"


def test_names_parse_to_specs_that_keep_their_spelling():
    assert parse_drafter(" documents ") == DrafterSpec("reference", alias="documents")
    assert str(parse_drafter("documents")) == "documents" and str(parse_drafter("reference")) == "reference"
    assert parse_drafter("documents").entry is parse_drafter("reference").entry
    assert parse_drafter("model:tiny") == DrafterSpec("model", "tiny")
    assert str(parse_drafter("model: tiny ", tree_width=3)) == "model:tiny"
    assert parse_drafter("model:tiny", tree_width=3).tree_width == 3
    for bad in ("document", "model:", "", "ngram"):
        with pytest.raises(ValueError, match="unknown drafter"):
            parse_drafter(bad)


def test_a_surface_refuses_what_it_cannot_offer():
    require(parse_drafter("datastore"), EVERYTHING)
    with pytest.raises(ValueError, match="'datastore' needs a datastore"):
        require(parse_drafter("datastore"), frozenset({PASSAGES}))
    with pytest.raises(ValueError, match="needs a draft model"):
        require(parse_drafter("model:x"), RAG_OFFERS)
    with pytest.raises(ValueError, match="needs a datastore"):
        check_datastore(parse_drafter("reference+datastore"), None, None)
    check_datastore(parse_drafter("reference"), None, None)  # needs none


def test_help_describes_each_offered_drafter_and_its_aliases():
    text = drafter_help(RAG_OFFERS)
    assert "none: plain decoding" in text and "reference (alias documents): " in text and "model:NAME" not in text
    assert "datastore" not in drafter_help(frozenset({PASSAGES})) and DATASTORE in EVERYTHING


def test_the_builds(tiny_model):
    tokenizer = tiny_model.tokenizer
    store = Datastore.build([tokenizer.encode("the quick brown fox")], vocab_size=tokenizer.vocab_size)
    inputs = DraftInputs(tokenizer, passages=["the quick brown fox"], datastore=store)
    assert parse_drafter("none").build(inputs) is None
    assert isinstance(parse_drafter("documents").build(inputs), ReferenceDrafter)
    assert isinstance(parse_drafter("datastore").build(inputs), DatastoreDrafter)
    combined = parse_drafter("reference+datastore").build(inputs)
    assert [type(d) for d in combined.drafters] == [ReferenceDrafter, DatastoreDrafter]
    assert parse_drafter("reference").build(DraftInputs(tokenizer)) is None  # no passages: plain decoding
