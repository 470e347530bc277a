"""``specdraft.apps.iterative_rag.SharedSchedulers``: one OS^3 scheduler per (retriever, model, OS^3
configuration), kept only while the retriever lives; ``iterative_rag`` hands it to speculative
pipelines only."""

from __future__ import annotations

import gc

from specdraft.apps.iterative_rag import SharedScheduler, SharedSchedulers, iterative_rag
from specdraft.retrieval.iterative import Collection
from specdraft.retrieval.iterative.os3 import OS3Config


class Thing:
    """A retriever or model stand-in: only its identity matters to the cache."""


class LocalModel(Thing):
    """A model stand-in that runs here (has sessions; none is fed in these tests)."""

    def new_session(self):
        return UnusedSession()


class UnusedSession:
    """What ``IterativeRAG`` checks a model for (it opens and closes one session): never fed here."""

    def feed(self, *args, **kwargs):
        raise AssertionError("no answer is generated here")

    def close(self) -> None:
        pass


def test_one_scheduler_per_retriever_model_and_config():
    schedulers = SharedSchedulers()
    retriever, other, model, second_model = Thing(), Thing(), Thing(), Thing()
    config = OS3Config()
    first = schedulers.get(retriever, model, config)
    assert isinstance(first, SharedScheduler) and first.answers == 1
    assert schedulers.get(retriever, model, config) is first and first.answers == 2
    assert schedulers.find(retriever, model, config) is first and first.answers == 2
    assert schedulers.get(other, model, config) is not first
    assert schedulers.get(retriever, second_model, config) is not first
    assert schedulers.get(retriever, model, OS3Config(max_strides=2)) is not first


def test_schedulers_go_with_their_retriever_and_unreferenceable_keys_share_nothing():
    schedulers = SharedSchedulers()
    model, config = Thing(), OS3Config()
    retriever = Thing()
    schedulers.get(retriever, model, config)
    del retriever
    gc.collect()
    assert len(schedulers._by_retriever) == 0
    assert schedulers.get(("a", "tuple"), model, config) is not schedulers.get(("a", "tuple"), model, config)
    assert schedulers.find(("a", "tuple"), model, config) is None


def test_shared_scheduler_counts_its_observations():
    scheduler = SharedScheduler(OS3Config())
    scheduler.observe_stride(0.1)
    scheduler.observe_verification(0.2)
    scheduler.observe_retrieval(0.05)
    scheduler.observe_round(1, 2)
    scheduler.observe_stride(0.2, plain=True, reprefilled=True)
    scheduler.observe_rollback(0.3)
    assert scheduler.observations == 6 and scheduler.acceptance == 0.5


def test_iterative_rag_hands_the_shared_scheduler_to_speculative_pipelines_only():
    schedulers = SharedSchedulers()
    retriever, model = Thing(), LocalModel()
    collection = Collection(["a text"], ["a#0"])
    fast = iterative_rag(model, retriever, collection, 8, True, schedulers)
    again = iterative_rag(model, retriever, collection, 8, True, schedulers)
    assert fast.scheduler is not None and again.scheduler is fast.scheduler and fast.scheduler.answers == 2
    assert iterative_rag(model, retriever, collection, 8, False, schedulers).scheduler is None
    assert iterative_rag(model, retriever, collection, 8, True, None).scheduler is None  # built on first use
