"""Datastore (REST): suffix-array lookups against brute force on random corpora (vocabularies past
16 and 32 bits), save/load round trip and crash safety, trees and budget, the `datastore build`
command, and lossless generation (== transformers' greedy generate) with a tiny model."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from oracle import greedy_continuations

from specdraft import ROOT, Draft, GenerationConfig, SpeculationConfig, SpeculativeGenerator
from specdraft.retrieval import datastore as datastore_module
from specdraft.retrieval.datastore import (
    MANIFEST,
    Datastore,
    DatastoreBuilder,
    DatastoreDraftConfig,
    DatastoreDrafter,
)
from specdraft.retrieval.suffix_index import SEPARATOR, build_suffix_array, concatenate
from specdraft.retrieval.token_trie import TokenTrie


def random_corpus(rng: np.random.Generator, vocab_size: int, num_sequences: int = 30) -> list[list[int]]:
    """Sequences over a few ids spread across the vocabulary, so n-grams repeat a lot."""
    alphabet = rng.integers(0, vocab_size, size=4)
    alphabet[0] = vocab_size - 1  # the largest id occurs
    return [alphabet[rng.integers(0, len(alphabet), size=rng.integers(0, 25))].tolist() for _ in range(num_sequences)]


def brute_force(sequences, tail, max_suffix, min_suffix, continuation_len):
    """(suffix length, every continuation) of the longest suffix of ``tail`` that occurs followed
    by at least one token, by scanning every sequence."""
    for n in range(min(max_suffix, len(tail)), min_suffix - 1, -1):
        gram = list(tail[len(tail) - n :])
        found = [
            tuple(seq[p + n : p + n + continuation_len])
            for seq in sequences
            for p in range(len(seq) - n)
            if seq[p : p + n] == gram
        ]
        if found:
            return n, found
    return 0, []


def test_suffix_array_sorts_every_suffix():
    rng = np.random.default_rng(0)
    for _ in range(100):
        sequences = [
            rng.integers(0, rng.integers(1, 5), size=rng.integers(0, 12)).tolist() for _ in range(rng.integers(0, 5))
        ]
        corpus, _ = concatenate(sequences)
        separators = np.cumsum(corpus == SEPARATOR)  # separators compare by position, below tokens

        def key(i):
            return [
                (-1, int(separators[j])) if corpus[j] == SEPARATOR else (0, int(corpus[j]))
                for j in range(i, len(corpus))
            ]

        assert build_suffix_array(corpus).tolist() == sorted(range(len(corpus)), key=key)


@pytest.mark.parametrize("vocab_size", [3, 50, 70_000, 3_000_000_000])
def test_lookup_matches_brute_force(vocab_size):
    rng = np.random.default_rng(vocab_size)
    sequences = random_corpus(rng, vocab_size)
    datastore = Datastore.build(sequences, vocab_size=vocab_size)
    assert datastore.index.corpus.dtype == (np.int64 if vocab_size > 2**31 else np.int32)
    flat = [t for seq in sequences for t in seq]
    tails = [flat[i - 9 : i] for i in rng.integers(9, len(flat), size=60)]  # mostly in the corpus
    tails += [rng.permutation(flat[:9]).tolist() for _ in range(20)]  # mostly shorter matches
    tails += [[vocab_size - 1] * 3, []]
    for tail in tails:
        for max_suffix, min_suffix in ((16, 2), (4, 1), (3, 3)):
            expected_len, expected = brute_force(sequences, tail, max_suffix, min_suffix, continuation_len=5)
            found = datastore.lookup(tail, max_suffix, min_suffix, max_continuations=10_000, continuation_len=5)
            assert found.suffix_len == expected_len
            assert found.occurrences == len(expected)
            assert found.continuations == sorted(expected)  # suffix-array order: sorted by tokens
            sampled = datastore.lookup(tail, max_suffix, min_suffix, max_continuations=3, continuation_len=5)
            assert len(sampled.continuations) == min(3, len(expected))
            assert not Counter(sampled.continuations) - Counter(expected)


def test_matches_never_span_two_sequences():
    datastore = Datastore.build([[1, 2], [3, 4, 5]])
    assert datastore.lookup([2, 3]).suffix_len == 0
    assert datastore.lookup([1, 2]).suffix_len == 0  # at the end of its sequence: no continuation
    assert datastore.lookup([3, 4]).continuations == [(5,)]


def test_huge_ranges_are_sampled_evenly():
    datastore = Datastore.build([[1, 2, 3]] * 900 + [[1, 2, 4]] * 100)
    found = datastore.lookup([1, 2], max_continuations=10)
    assert found.occurrences == 1000
    assert Counter(found.continuations) == {(3,): 9, (4,): 1}


def test_token_ids_are_checked():
    with pytest.raises(ValueError, match="outside the vocabulary"):
        DatastoreBuilder(vocab_size=10).add([3, 10])
    with pytest.raises(ValueError, match=">= 0"):
        Datastore.build([[1, -2]])


def test_save_and_load_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    sequences = random_corpus(rng, 151_936)
    built = Datastore.build(sequences, tokenizer="qwen2.5-coder-0.5b", vocab_size=151_936)
    built.save(tmp_path / "ds")
    loaded = Datastore.load(tmp_path / "ds")
    assert isinstance(loaded.index.suffix_array.base, np.memmap) or isinstance(loaded.index.suffix_array, np.memmap)
    manifest = json.loads((tmp_path / "ds" / MANIFEST).read_text())
    assert manifest["format_version"] == 1 and manifest["tokenizer"] == "qwen2.5-coder-0.5b"
    assert manifest["vocab_size"] == 151_936 and manifest["num_sequences"] == sum(1 for s in sequences if s)
    assert loaded.num_tokens == sum(map(len, sequences))
    for name in ("corpus", "suffix_array", "starts"):
        assert np.array_equal(getattr(loaded.index, name), getattr(built.index, name))
    flat = [t for seq in sequences for t in seq]
    for i in range(6, len(flat), 7):
        assert loaded.lookup(flat[i - 6 : i]) == built.lookup(flat[i - 6 : i])
    # saving again (here over the folder it was loaded from) leaves exactly one build's arrays
    loaded.save(tmp_path / "ds")
    assert len(list((tmp_path / "ds").glob("*.npy"))) == 3
    assert Datastore.load(tmp_path / "ds").lookup(flat[:4]) == built.lookup(flat[:4])


def test_a_save_that_dies_midway_leaves_the_previous_datastore(tmp_path, monkeypatch):
    folder = tmp_path / "ds"
    old = Datastore.build([[1, 2, 3, 4]])
    old.save(folder)
    (folder / ".corpus-dead.npy.4194305.tmp").write_bytes(b"left by a killed save")  # no such pid
    real_write = datastore_module._write_atomically
    written = []

    def dies_on_the_second_array(path, write):
        if written:
            raise KeyboardInterrupt("killed")
        written.append(path)
        real_write(path, write)

    monkeypatch.setattr(datastore_module, "_write_atomically", dies_on_the_second_array)
    with pytest.raises(KeyboardInterrupt):
        Datastore.build([[1, 2, 9, 9]]).save(folder)
    assert Datastore.load(folder).lookup([1, 2]).continuations == [(3, 4)]
    monkeypatch.undo()
    Datastore.build([[1, 2, 9, 9]]).save(folder)
    assert Datastore.load(folder).lookup([1, 2]).continuations == [(9, 9)]
    assert sorted(p.name.split("-")[0] for p in folder.iterdir()) == ["corpus", MANIFEST, "starts", "suffix_array"]


def test_load_refuses_what_is_not_a_datastore(tmp_path):
    with pytest.raises(ValueError, match="not a datastore"):
        Datastore.load(tmp_path)
    (tmp_path / MANIFEST).write_text(json.dumps({"format": "specdraft-datastore", "format_version": 99}))
    with pytest.raises(ValueError, match="version 99"):
        Datastore.load(tmp_path)
    Datastore.build([[1, 2, 3]]).save(tmp_path)
    next(tmp_path.glob("suffix_array-*.npy")).unlink()
    with pytest.raises(ValueError, match="incomplete"):
        Datastore.load(tmp_path)


# --- drafting ---------------------------------------------------------------------------------


def test_the_most_frequent_branches_are_drafted():
    datastore = Datastore.build([[1, 2, 3, 4]] * 3 + [[1, 2, 3, 5]] + [[1, 2, 6, 7]] * 2)
    drafter = DatastoreDrafter(datastore)
    # frequencies: 3: 4, 4: 3, 6: 2, 7: 2, 5: 1
    assert drafter.propose([0, 1, 2], 3) == Draft((3, 4, 6), (ROOT, 0, ROOT))
    assert drafter.propose([0, 1, 2], 5) == Draft((3, 4, 6, 7, 5), (ROOT, 0, ROOT, 2, 0))
    assert drafter.propose([0, 1, 2, 3], 5) == Draft((4, 5), (ROOT, ROOT))  # the longest suffix [1, 2, 3]


def test_equal_frequencies_go_to_the_shallower_node_then_the_smaller_token():
    datastore = Datastore.build([[1, 2, 9, 5]] + [[1, 2, 8, 6]])
    assert DatastoreDrafter(datastore).propose([1, 2], 3) == Draft((8, 9, 6), (ROOT, ROOT, 0))


def test_budget_candidates_and_continuation_length():
    datastore = Datastore.build([[1, 2, t, t + 1, t + 2, t + 3] for t in range(10, 100, 10)])
    for budget in range(0, 20):
        assert len(DatastoreDrafter(datastore).propose([1, 2], budget)) == min(budget, 36)
    config = DatastoreDraftConfig(max_candidates=2, continuation_len=2)
    assert DatastoreDrafter(datastore, config).propose([1, 2], 16).max_depth == 2
    assert len(DatastoreDrafter(datastore, config).propose([1, 2], 16).children(ROOT)) == 2
    assert DatastoreDrafter(datastore).propose([7, 7], 8) == Draft.empty()
    assert DatastoreDrafter(datastore, DatastoreDraftConfig(min_suffix=3)).propose([1, 2], 8) == Draft.empty()


def test_trie_selection_is_best_first_and_topological():
    trie = TokenTrie()
    trie.add([1, 2, 3], 3)
    trie.add([1, 4], 1)
    trie.add([5, 6], 2)
    assert [trie.tokens[n] for n in trie.select(10)] == [1, 2, 3, 5, 6, 4]
    # with decay 0.5: 1: 4, 5: 2, 2: 1.5, 6: 1, 3: 0.75, 4: 0.5
    assert [trie.tokens[n] for n in trie.select(10, depth_decay=0.5)] == [1, 5, 2, 6, 3, 4]
    assert trie.to_draft(4, depth_decay=0.5) == Draft((1, 5, 2, 6), (ROOT, ROOT, 0, 1))


def test_invalid_config_is_refused():
    for bad in ({"min_suffix": 0}, {"min_suffix": 5, "max_suffix": 4}, {"max_candidates": 0}, {"continuation_len": 0}):
        with pytest.raises(ValueError):
            DatastoreDraftConfig(**bad)


# --- the command line ---------------------------------------------------------------------------


@pytest.fixture
def tokenizer_folder(tokenizer, tmp_path):
    """A local model folder holding the tiny tokenizer (config.json marks it a checkpoint)."""
    folder = tmp_path / "tiny-model"
    tokenizer.save_pretrained(folder)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    return folder


def test_datastore_build_command(tokenizer, tokenizer_folder, tmp_path, capsys):
    from specdraft.apps.cli import main

    texts = ["The quick brown fox jumps over the lazy dog.", "ünïcödé, 日本語, emoji 🙂", "The dog sleeps."]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"text": t}) for t in texts) + "\n\n", encoding="utf-8")
    out = tmp_path / "ds"
    assert (
        main(
            [
                "datastore",
                "build",
                "--corpus",
                str(corpus),
                "--out",
                str(out),
                "--model",
                str(tokenizer_folder),
                "--limit",
                "2",
            ]
        )
        == 0
    )
    assert "2 texts" in capsys.readouterr().out
    datastore = Datastore.load(out)
    assert datastore.tokenizer == str(tokenizer_folder) and datastore.vocab_size == len(tokenizer)
    ids = tokenizer(texts[0], add_special_tokens=False).input_ids
    assert datastore.lookup(ids[:3]).continuations == [tuple(ids[3 : 3 + 16])]

    corpus.write_text('{"text": "fine"}\n{"title": "no text"}\n', encoding="utf-8")
    assert (
        main(["datastore", "build", "--corpus", str(corpus), "--out", str(out), "--model", str(tokenizer_folder)]) == 2
    )
    assert 'corpus.jsonl:2: needs a string field "text"' in capsys.readouterr().err
    assert Datastore.load(out).num_sequences == 2  # the failed build left the datastore alone


def test_datastore_build_from_sharegpt_json(tokenizer, tokenizer_folder, tmp_path, capsys):
    from specdraft.apps.cli import main

    conversations = [
        {"id": "a_0", "conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello there!"}]},
        {"id": "b_0", "conversations": [{"from": "gpt", "value": "  "}, {"from": "gpt", "value": "The dog sleeps."}]},
    ]
    text = json.dumps(conversations)
    sharegpt = tmp_path / "sharegpt.json"
    sharegpt.write_text(
        text[:-1] + ', {"id": "c_0", "conversations": [{"from": "gpt", "val', encoding="utf-8"
    )  # truncated
    out = tmp_path / "ds"
    args = [
        "datastore",
        "build",
        "--sharegpt",
        "--corpus",
        str(sharegpt),
        "--out",
        str(out),
        "--model",
        str(tokenizer_folder),
    ]
    assert main(args) == 0
    datastore = Datastore.load(out)
    assert datastore.num_sequences == 2
    assert datastore.num_tokens == sum(
        len(tokenizer(t, add_special_tokens=False).input_ids) for t in ("Hello there!", "The dog sleeps.")
    )


# --- lossless generation with a tiny random model ----------------------------------------------

PROMPTS = ["The quick brown fox", "def add(a, b):\n", "ünïcödé 🙂"]
N_NEW = 40


@pytest.fixture(scope="module")
def greedy(tiny_model, tokenizer):
    """prompt -> (prompt ids, the tiny model's own greedy continuation per transformers)."""
    return greedy_continuations(tiny_model, tokenizer, PROMPTS, N_NEW)


def corpus_for(expected: list[int], vocab_size: int, tokenizer, tree: bool) -> list[list[int]]:
    """Unrelated text and the continuation; for trees also two variants that differ from it every
    fifth / seventh token, so that lookups return several continuations."""
    unrelated = [tokenizer(t).input_ids for t in ("Grammar correction returns mostly the text.", "The dog sleeps.")]
    if not tree:
        return unrelated + [expected]
    variants = [[(t + 1) % vocab_size if i % k == k - 1 else t for i, t in enumerate(expected)] for k in (5, 7)]
    return unrelated + variants + [expected]


@pytest.mark.parametrize("shape", ["chain", "tree"])
def test_greedy_output_equals_transformers_generate(tiny_model, tokenizer, greedy, shape):
    generator = SpeculativeGenerator(tiny_model, SpeculationConfig(initial_draft_len=6, adaptive=False))
    trees = 0
    for prompt in PROMPTS:
        prompt_ids, expected = greedy[prompt]
        datastore = Datastore.build(corpus_for(expected, tiny_model.vocab_size, tokenizer, tree=shape == "tree"))
        drafts: list[Draft] = []
        drafter = DatastoreDrafter(datastore)
        propose = drafter.propose
        drafter.propose = lambda context, budget: drafts.append(propose(context, budget)) or drafts[-1]
        result = generator.generate(prompt_ids, drafter, GenerationConfig(max_new_tokens=N_NEW))
        assert result.token_ids == expected
        assert result.stats.accepted_tokens > N_NEW // 3
        trees += sum(not d.is_chain for d in drafts)
    if shape == "tree":
        assert trees > 0


def test_seeded_sampling_equals_plain_sampling(tiny_model, tokenizer, greedy):
    prompt_ids, expected = greedy[PROMPTS[0]]
    generator = SpeculativeGenerator(tiny_model, SpeculationConfig(initial_draft_len=6, adaptive=False))
    for seed in range(2):
        config = GenerationConfig(max_new_tokens=24, temperature=0.7, seed=seed)
        plain = generator.generate(prompt_ids, None, config)
        datastore = Datastore.build(
            corpus_for(expected, tiny_model.vocab_size, tokenizer, tree=True) + [plain.token_ids]
        )
        drafted = generator.generate(prompt_ids, DatastoreDrafter(datastore), config)
        assert drafted.token_ids == plain.token_ids
        assert drafted.stats.accepted_tokens > 0
