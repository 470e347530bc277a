"""The shared embedder of the RAG indexes (``specdraft.apps.service.rag_indexes``): a question is
embedded while a large add is under way, not after it (first come, first served, one batch at a time)."""

import threading
import time

import numpy as np
from hash_embedder import HashEmbedder

from specdraft.apps.service.rag_indexes import SerializedEmbedder, TicketLock


class SlowEmbedder(HashEmbedder):
    """Takes ``per_call_s`` for every call, as a real model takes time per batch."""

    def __init__(self, per_call_s: float) -> None:
        super().__init__()
        self.per_call_s = per_call_s

    def encode(self, texts, progress=False):
        time.sleep(self.per_call_s)
        return super().encode(texts, progress)


def test_a_long_encode_gives_the_same_vectors_in_batches():
    texts = [f"document number {i} about foxes" for i in range(100)]
    shared = SerializedEmbedder(HashEmbedder())
    assert np.array_equal(shared.encode(texts), HashEmbedder().encode(texts))
    assert shared.inner.calls == -(-100 // SerializedEmbedder.BATCH)


def test_a_question_is_embedded_during_a_large_add_not_after_it():
    shared = SerializedEmbedder(SlowEmbedder(per_call_s=0.05))
    texts = [f"passage {i}" for i in range(40 * SerializedEmbedder.BATCH)]  # 40 batches: ~2 s
    add = threading.Thread(target=shared.encode, args=(texts,))
    add.start()
    time.sleep(0.2)
    start = time.monotonic()
    shared.encode(["what does the fox say?"])
    waited = time.monotonic() - start
    still_adding = add.is_alive()
    add.join()
    assert still_adding and waited < 0.5, waited  # one batch ahead of it at most, not the whole add


def test_the_ticket_lock_serves_threads_in_arrival_order():
    lock, order = TicketLock(), []
    with lock:
        threads = []
        for i in range(5):
            thread = threading.Thread(target=lambda i=i: (lock.__enter__(), order.append(i), lock.__exit__()))
            thread.start()
            threads.append(thread)
            time.sleep(0.05)  # arrive one after another
    for thread in threads:
        thread.join(5)
    assert order == [0, 1, 2, 3, 4]
