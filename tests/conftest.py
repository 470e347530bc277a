"""Shared fixtures: a tiny tokenizer and tiny random-initialised causal LMs (no weights needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from specdraft import TransformersModel


def _register_benchmarks() -> None:
    """The measurement scripts of benchmarks/ (not installed) import as ``benchmarks.<name>``, without
    the repository root on ``sys.path`` (tests/scripts/test_gpu_run.py keeps it off)."""
    folder = Path(__file__).resolve().parents[1] / "benchmarks"
    spec = importlib.util.spec_from_file_location(
        "benchmarks", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks"] = package
    spec.loader.exec_module(package)


_register_benchmarks()

CORPUS = [
    "The quick brown fox jumps over the lazy dog. The dog sleeps.",
    "Speculative decoding drafts tokens and the target verifies them in one pass.",
    "Grammar correction returns mostly the text it was given, with a few edits.",
    "def add(a, b):\n    return a + b\n\nprint(add(2, 3))",
    "Retrieval augmented generation quotes the documents it retrieved: ünïcödé, 日本語, emoji 🙂.",
]


def make_tokenizer(vocab_size: int = 400):
    """A byte-level BPE tokenizer trained in memory on CORPUS (works on any text)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 3, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>")


def make_tiny_model(tokenizer, seed: int, dtype=torch.float64, layers: int = 2, hidden: int = 64) -> TransformersModel:
    """A random-initialised Llama on CPU. float64 so argmax ties cannot flip between pass shapes."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        eos_token_id=None,
        bos_token_id=None,
        pad_token_id=None,
    )
    hf_model = LlamaForCausalLM(config).to(dtype)
    hf_model.generation_config.eos_token_id = None
    hf_model.generation_config.pad_token_id = None
    tokenizer_copy = tokenizer  # shared; tokenizers are read-only here
    model = TransformersModel(hf_model, tokenizer_copy, name=f"tiny-{seed}")
    return model


@pytest.fixture(scope="session")
def tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="session")
def tiny_model(tokenizer) -> TransformersModel:
    return make_tiny_model(tokenizer, seed=0)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, tokenizer):
    """(folder, model): a tiny float32 model saved as a transformers checkpoint, for the command
    line's real loading path."""
    model = make_tiny_model(tokenizer, seed=3, dtype=torch.float32)
    path = tmp_path_factory.mktemp("tiny-checkpoint")
    model.hf_model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path, model


@pytest.fixture(scope="session")
def tiny_draft_model(tokenizer) -> TransformersModel:
    return make_tiny_model(tokenizer, seed=1, layers=1, hidden=32)


import os

sys.path.insert(0, os.path.dirname(__file__))  # test helpers (oracle.py) importable from sub-folders
