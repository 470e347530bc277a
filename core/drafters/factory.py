"""Drafters by name, as the command line and the HTTP API spell them.

``none``: plain decoding. ``prompt-lookup``: n-gram lookup in the context. ``model:NAME``: a draft
model (registry name, local path or hub id) that shares the target's tokenizer; loaded once per
``ModelPool`` and shared by requests (each request gets its own cache).
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass

from ..drafter import Drafter
from ..sampling import PositionalRandom, SamplingParams
from ..transformers_backend import ModelConfig, TransformersModel
from .draft_model import DraftModelConfig, DraftModelDrafter, check_same_tokenizer
from .prompt_lookup import PromptLookupDrafter

DRAFTER_NAMES = ("none", "prompt-lookup", "model:NAME")


class ModelPool:
    """Loads each model once (thread-safe) and hands out the shared instance."""

    def __init__(self, device: str = "auto", dtype: str = "auto") -> None:
        self.device = device
        self.dtype = dtype
        self._models: dict[str, TransformersModel] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> TransformersModel:
        with self._lock:
            if name not in self._models:
                self._models[name] = TransformersModel.load(ModelConfig(name, self.device, self.dtype))
            return self._models[name]

    def add(self, name: str, model: TransformersModel) -> None:
        with self._lock:
            self._models[name] = model


@dataclass(frozen=True)
class DrafterSpec:
    kind: str  # "none", "prompt-lookup" or "model"
    model: str | None = None
    tree_width: int = 1

    @classmethod
    def parse(cls, text: str, tree_width: int = 1) -> "DrafterSpec":
        text = (text or "").strip()
        if text in ("none", "prompt-lookup"):
            return cls(text)
        if text.startswith("model:") and text[len("model:") :].strip():
            return cls("model", text[len("model:") :].strip(), tree_width)
        raise ValueError(f"unknown drafter {text!r}: choose one of {', '.join(DRAFTER_NAMES)}")

    def __str__(self) -> str:
        return f"model:{self.model}" if self.kind == "model" else self.kind

    def prepare(self, pool: ModelPool, target: TransformersModel) -> None:
        """Load what the drafter needs ahead of the first request (and check tokenizers)."""
        if self.kind == "model":
            check_same_tokenizer(pool.get(self.model), target)

    def build(
        self, pool: ModelPool, target: TransformersModel, sampling: SamplingParams, seed: int | None = None
    ) -> Drafter | None:
        """A fresh drafter for one request (None for plain decoding)."""
        if self.kind == "none":
            return None
        if self.kind == "prompt-lookup":
            return PromptLookupDrafter()
        rng = PositionalRandom(secrets.randbits(62) if seed is None else seed)
        return DraftModelDrafter(pool.get(self.model), target.vocab_size, sampling, rng, DraftModelConfig(self.tree_width))
