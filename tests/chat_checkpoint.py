"""A tiny chat model saved as a checkpoint folder, for tests that start the command line or a server
process (they load models by path). ``CHAT_TEMPLATE`` is the tiny models' chat template; the
``chat_checkpoint`` fixture (tests/benchmarks/conftest.py) is such a folder."""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from tiny_models import make_tiny_model

from specdraft import TransformersModel

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def save_chat_checkpoint(folder: Path, tokenizer, seed: int = 3) -> TransformersModel:
    """The shared tiny architecture (float32, ``seed``) with ``CHAT_TEMPLATE`` on a copy of
    ``tokenizer``, saved to ``folder``; returns the model as loaded in this process."""
    chat_tokenizer = copy.deepcopy(tokenizer)
    chat_tokenizer.chat_template = CHAT_TEMPLATE
    model = make_tiny_model(chat_tokenizer, seed=seed, dtype=torch.float32)
    model.hf_model.save_pretrained(folder)
    chat_tokenizer.save_pretrained(folder)
    return model
