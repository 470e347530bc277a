"""The stored exactness verdict (``specdraft.backends.llama_cpp.probe_cache``): kept only when exact,
read back under the same key, probed again under any other key, off with ``SPECDRAFT_PROBE_CACHE=0``."""

from __future__ import annotations

import dataclasses

import pytest

from specdraft.backends.llama_cpp import probe_cache
from specdraft.backends.llama_cpp.exactness import Comparison
from specdraft.backends.llama_cpp.model import LlamaCppConfig
from specdraft.cost import PassCostProfile

pytestmark = pytest.mark.slow


@pytest.fixture
def model(real_model, tmp_path, monkeypatch):
    """The 135M GGUF with a fresh cost profile, and an empty folder for the verdicts."""
    loaded = real_model("smollm2-135m", "llama-cpp")
    monkeypatch.setattr(probe_cache, "cache_dir", lambda: tmp_path)
    monkeypatch.delenv("SPECDRAFT_PROBE_CACHE", raising=False)
    monkeypatch.setattr(loaded, "cost", PassCostProfile())
    return loaded


@pytest.fixture
def probes(monkeypatch):
    """The verdicts ``probe`` returned, in order (it still runs)."""
    calls: list[Comparison] = []
    real = probe_cache.probe

    def counted(model):
        calls.append(real(model))
        return calls[-1]

    monkeypatch.setattr(probe_cache, "probe", counted)
    return calls


def stored(tmp_path):
    return sorted((tmp_path / "llama-probe").glob("*.json"))


def test_an_exact_verdict_is_stored_and_read_back_with_fresh_pass_costs(model, probes, tmp_path):
    first = probe_cache.checked_exactness(model, model.file.path, model.config)
    assert first.exact and len(probes) == 1 and len(stored(tmp_path)) == 1
    model.cost = PassCostProfile()
    again = probe_cache.checked_exactness(model, model.file.path, model.config)
    assert again == first and len(probes) == 1  # not probed again
    assert [model.cost.known(n) for n in (1, 2, 4, 8, 16, 32)] == [True] * 6  # timed afresh


def test_another_build_setting_or_environment_is_another_key(model, probes, tmp_path, monkeypatch):
    key = probe_cache.probe_key(model.file.path, model.config)
    assert probe_cache.probe_key(model.file.path, dataclasses.replace(model.config, repack=False)) != key
    monkeypatch.setenv("GGML_CPU_TILED_MM_ALL_TYPES", "1")
    assert probe_cache.probe_key(model.file.path, model.config) != key
    monkeypatch.delenv("GGML_CPU_TILED_MM_ALL_TYPES")
    monkeypatch.setenv("LLAMA_CPP_LIB_PATH", str(tmp_path))  # other libraries (none here)
    assert probe_cache.probe_key(model.file.path, model.config) != key
    monkeypatch.delenv("LLAMA_CPP_LIB_PATH")
    assert probe_cache.probe_key(model.file.path, LlamaCppConfig()) == probe_cache.probe_key(
        model.file.path, LlamaCppConfig()
    )


def test_an_inexact_verdict_is_never_stored(model, tmp_path, monkeypatch):
    inexact = Comparison(context=4, width=8, rows_differing=3, max_abs_diff=0.25)
    monkeypatch.setattr(probe_cache, "probe", lambda model: inexact)
    for _ in range(2):
        assert probe_cache.checked_exactness(model, model.file.path, model.config) == inexact
    assert stored(tmp_path) == []


def test_a_damaged_or_inexact_file_is_probed_over(model, probes, tmp_path):
    probe_cache.checked_exactness(model, model.file.path, model.config)
    (path,) = stored(tmp_path)
    for text in ("{not json", '{"context": 4, "width": 8, "rows_differing": 2, "max_abs_diff": 0.1}'):
        path.write_text(text)
        assert probe_cache.checked_exactness(model, model.file.path, model.config).exact
    assert len(probes) == 3


def test_off_with_the_environment_variable(model, probes, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECDRAFT_PROBE_CACHE", "0")
    for _ in range(2):
        assert probe_cache.checked_exactness(model, model.file.path, model.config).exact
    assert len(probes) == 2 and stored(tmp_path) == []
