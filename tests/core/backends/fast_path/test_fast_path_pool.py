"""``--fast-path`` (an alias of ``--backend fast-path``) on the command line and a pool on the
"fast-path" backend: transformers models load as ``FastPathModel`` (off by default); a GGUF file
(llama.cpp's) refuses it."""

import argparse

import pytest

from specdraft import GenerationConfig, ModelConfig, SpeculativeGenerator
from specdraft.apps.cli.model_args import add_model_args, model_pool
from specdraft.apps.model_pool import ModelPool
from specdraft.backends.fast_path import FastPathModel


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_model_args(parser, "smollm2-135m")
    return parser.parse_args(list(argv))


def test_the_flag_reaches_the_pool_and_is_off_by_default():
    assert model_pool(parsed()).model.backend == "auto"
    assert model_pool(parsed("--fast-path")).model.backend == "fast-path"
    assert parsed("--fast-path").backend == parsed("--backend", "fast-path").backend


def test_a_fast_pool_loads_a_fast_model_with_the_plain_output(tiny_checkpoint):
    path, reference = tiny_checkpoint
    fast = ModelPool(ModelConfig(device="cpu", backend="fast-path")).get(str(path))
    assert isinstance(fast, FastPathModel) and fast.backend == "transformers" and fast.exact
    plain = ModelPool(ModelConfig(device="cpu")).get(str(path))
    assert not isinstance(plain, FastPathModel)
    ids = reference.encode("The quick brown fox")
    config = GenerationConfig(max_new_tokens=16, ignore_eos=True)
    assert (
        SpeculativeGenerator(fast).generate(ids, None, config).token_ids
        == SpeculativeGenerator(plain).generate(ids, None, config).token_ids
    )


def test_other_backends_refuse_it():
    with pytest.raises(ValueError, match="transformers backend"):
        ModelPool(ModelConfig("smollm2-135m.gguf", backend="fast-path"))


def test_load_gives_a_fast_model(tiny_checkpoint):
    from specdraft import ModelConfig

    path, _ = tiny_checkpoint
    model = FastPathModel.load(ModelConfig(str(path), device="cpu"))
    assert isinstance(model, FastPathModel) and model.config.buckets[0] == 1
