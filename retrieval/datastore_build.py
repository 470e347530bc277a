"""Building a REST datastore from texts: tokenize them in batches with the target's tokenizer and
index the tokens (``specdraft.retrieval.datastore``). Used by `specdraft datastore build` and the
benchmark's cached ShareGPT datastore."""

from __future__ import annotations

import sys
from itertools import islice
from typing import Iterable

from tqdm import tqdm

from specdraft import Tokenizer

from .datastore import Datastore, DatastoreBuilder

TOKENIZE_BATCH = 256  # texts per tokenizer call (fast tokenizers parallelise inside a batch)


def build_datastore(
    texts: Iterable[str], tokenizer: Tokenizer, tokenizer_name: str, limit: int | None = None
) -> Datastore:
    """Tokenize ``texts`` (the first ``limit``; special tokens not added) and build the datastore.
    A tokenizer with ``encode_batch`` (transformers' fast ones) tokenizes a batch at a time."""
    builder = DatastoreBuilder(tokenizer_name, tokenizer.vocab_size)
    encode_batch = getattr(tokenizer, "encode_batch", None) or (
        lambda batch: [tokenizer.encode(text) for text in batch]
    )
    texts = iter(texts if limit is None else islice(texts, limit))
    with tqdm(total=limit, desc="tokenizing", unit=" texts", file=sys.stderr, disable=None) as bar:
        while batch := list(islice(texts, TOKENIZE_BATCH)):
            for ids in encode_batch(batch):
                builder.add(ids)
            bar.update(len(batch))
    if builder.num_tokens == 0:
        raise ValueError("the corpus holds no text to index")
    return builder.build(progress=lambda message: print(f"specdraft: {message}", file=sys.stderr, flush=True))
