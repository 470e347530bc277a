"""Fixtures shared by the benchmark scripts' tests: ``chat_checkpoint``, a tiny chat checkpoint folder
for the load benchmarks' server processes."""

from pathlib import Path

import pytest
from chat_checkpoint import save_chat_checkpoint


@pytest.fixture(scope="module")
def chat_checkpoint(tmp_path_factory, tokenizer) -> Path:
    """A tiny float32 checkpoint whose tokenizer has a chat template (the chat route needs one)."""
    path = tmp_path_factory.mktemp("chat-checkpoint")
    save_chat_checkpoint(path, tokenizer)
    return path
