"""DocumentIndex chunking: sentence-bounded word windows with overlap, chunk ids and metadata."""

from __future__ import annotations

import random
import re

import pytest
from index_helpers import make_index

from specdraft.retrieval.index import split_into_chunks


def word_windows(text: str, chunks: list[str]) -> list[tuple[int, int]]:
    """[start, stop) word positions of each chunk (chunks are exact slices of text, in order)."""
    starts = [m.start() for m in re.finditer(r"\S+", text)]
    windows, offset = [], -1
    for chunk in chunks:
        offset = text.index(chunk, offset + 1)
        first = starts.index(offset)
        windows.append((first, first + len(chunk.split())))
    return windows


def test_short_text_is_one_chunk():
    assert split_into_chunks("  One short text.\n", 120, 20) == ["One short text."]
    assert split_into_chunks(" \n\t ", 120, 20) == []


def test_long_sentence_is_cut_by_words_with_exact_overlap():
    text = " ".join(f"w{i}" for i in range(30))
    chunks = split_into_chunks(text, chunk_words=10, chunk_overlap=3)
    assert word_windows(text, chunks) == [(0, 10), (7, 17), (14, 24), (21, 30)]


def test_windows_end_at_sentences_and_overlap_by_whole_sentences():
    sentences = [" ".join(f"s{n}w{i}" for i in range(4)) + "." for n in range(10)]  # 4 words each
    text = " ".join(sentences)
    chunks = split_into_chunks(text, chunk_words=13, chunk_overlap=5)
    # 13 words fit 3 whole sentences (12 words); the overlap is the last sentence (4 <= 5 words).
    assert chunks[0] == " ".join(sentences[0:3])
    assert chunks[1] == " ".join(sentences[2:5])
    assert all(chunk.endswith(".") for chunk in chunks)
    assert chunks[-1].endswith(sentences[-1])


def test_chunks_are_exact_slices_keeping_line_breaks():
    text = "Title line\n\nFirst paragraph has words.\nSecond line here.  Spaces  kept."
    for chunk in split_into_chunks(text, chunk_words=5, chunk_overlap=2):
        assert chunk in text
        assert chunk == chunk.strip()
    assert split_into_chunks(text, 5, 2)[0] == "Title line\n\nFirst paragraph has"  # a line break ends a sentence


@pytest.mark.parametrize("seed", range(20))
def test_windows_cover_every_word_within_limits(seed):
    rng = random.Random(seed)
    ends = ["", "", "", ".", "!", "?", '."', "\n"]
    words = [f"w{i}{rng.choice(ends)}" for i in range(rng.randint(1, 300))]  # unique, to locate the chunks
    text = " ".join(words)
    chunk_words = rng.randint(1, 40)
    overlap = rng.randint(0, chunk_words - 1)
    windows = word_windows(text, split_into_chunks(text, chunk_words, overlap))
    assert windows[0][0] == 0 and windows[-1][1] == len(text.split())
    for (start, stop), (next_start, _) in zip(windows, windows[1:]):
        assert start < next_start <= stop  # progress, no gap
        assert stop - next_start <= overlap
    assert all(0 < stop - start <= chunk_words for start, stop in windows)


def test_chunk_ids_doc_ids_and_metadata():
    index = make_index(chunk_words=6, chunk_overlap=2)
    metadata = {"source": "a.txt", "tags": ["x"]}
    text = "One two three four five. Six seven eight nine ten. Eleven twelve thirteen."
    index.add([{"id": "doc", "text": text, "metadata": metadata}, {"id": "other", "text": "Alone."}])
    chunks = [hit.chunk for hit in index.search("one two", k=10)]
    by_id = {chunk.id: chunk for chunk in chunks}
    assert set(by_id) == {"doc#0", "doc#1", "doc#2", "other#0"}
    assert by_id["doc#0"].text == "One two three four five."
    assert all(by_id[f"doc#{n}"].doc_id == "doc" and by_id[f"doc#{n}"].metadata == metadata for n in range(3))
    assert by_id["other#0"].metadata == {}
    metadata["source"] = "changed"  # the index keeps its own copy
    assert by_id["doc#0"].metadata["source"] == "a.txt"
    assert len(index) == 4 and index.documents == 2 and "doc" in index
