"""``specdraft.backends.load_model``: the one place a backend name becomes a loader; and the declared
seams every backend implements (sessions, the prefix cache as a miss where there is none)."""

from __future__ import annotations

import pytest

from specdraft import ModelConfig, load_model
from specdraft.backends import _LOADERS, BACKENDS
from specdraft.backends.engine import EngineConfig, EngineModel, EngineTarget
from specdraft.prefix_cache import PrefixCache, PrefixCacheConfig
from specdraft.session import SessionsUnavailableError


def test_every_backend_name_has_one_loader():
    assert set(_LOADERS) == set(BACKENDS) - {"auto"}


def test_the_config_names_the_backend_and_the_model_run_here():
    assert ModelConfig("a/b").resolved_backend == "transformers"
    assert ModelConfig("x.GGUF").resolved_backend == "llama-cpp"
    engine = ModelConfig("m.gguf", backend="engine", engine=EngineConfig("http://h:1", "llama-cpp-server"))
    assert (
        engine.resolved_backend == "engine"
        and engine.local.resolved_backend == "llama-cpp"
        and engine.local.engine is None
    )
    assert ModelConfig("m", backend="engine", engine=EngineConfig("http://h:1")).local.backend == "auto"
    assert ModelConfig("m", backend="llama-cpp").local.backend == "llama-cpp"
    with pytest.raises(ValueError, match="engine backend"):
        ModelConfig("m", engine=EngineConfig("http://h:1"))
    with pytest.raises(ValueError, match="backend must be one of"):
        ModelConfig("m", backend="vllm")


def test_each_name_loads_its_backend(tiny_checkpoint):
    from specdraft.backends.fast_path import FastPathModel
    from specdraft.backends.transformers.model import TransformersModel

    path, _ = tiny_checkpoint
    plain = load_model(ModelConfig(str(path), device="cpu"))
    assert type(plain) is TransformersModel and plain.backend == "transformers"
    fast = load_model(ModelConfig(str(path), device="cpu", backend="fast-path"))
    assert isinstance(fast, FastPathModel)
    with pytest.raises(ValueError, match="needs an engine"):
        load_model(ModelConfig(str(path), backend="engine"))


def test_local_models_hand_out_sessions(tiny_model):
    session = tiny_model.new_session()
    logits = session.feed([1, 2, 3])
    assert len(session) == 3 and tuple(logits.shape) == (3, tiny_model.vocab_size)
    session.truncate(1)
    assert len(session) == 1
    session.close()
    assert len(session) == 0


def test_an_engine_model_has_no_session_and_its_target_reads_the_prefix_cache_as_a_miss():
    model = EngineModel.__new__(EngineModel)  # no engine to talk to: only what these calls read
    model.name = "served @ http://h:1"
    with pytest.raises(SessionsUnavailableError, match="serving engine"):
        model.new_session()
    target = EngineTarget(model)
    cache = PrefixCache(PrefixCacheConfig(min_tokens=1))
    assert target.prefill_cached([5, 6, 7], cache) == 0 and target.context_length == 3
    target.close()
    assert len(cache) == 0 and cache.stats()["lookups"] == 0
