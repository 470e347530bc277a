"""Tiny test models built in memory: a byte-level BPE tokenizer trained on ``CORPUS`` and random
initialised Llamas (no weights to download). The session's shared instances are conftest.py's
fixtures (``tokenizer``, ``tiny_model``, ...); test modules and helper scripts that build their own
import the factories from here (``from tiny_models import make_tiny_model``)."""

from __future__ import annotations

import torch

from specdraft import TransformersModel

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
    return TransformersModel(hf_model, tokenizer, name=f"tiny-{seed}")  # the tokenizer is shared: read-only here
