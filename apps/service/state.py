"""ServiceState: what the app's requests share, kept in ``app.extensions["specdraft"]``.

Shared: the config, the ``ModelPool`` and the target model (weights and tokenizer only; a model
holds no sequence state). Never shared: KV caches and drafters. Every request gets a fresh drafter
from ``drafter()`` and a fresh target session from the generator, so concurrent requests cannot see
each other's state.
"""

from __future__ import annotations

import threading
import time

from flask import current_app

from specdraft import Drafter, SamplingParams, TransformersModel
from specdraft.drafters.factory import DrafterSpec, ModelPool
from specdraft.models import ChecksumMismatchError, ModelNotInstalledError

from .config import ServiceConfig
from .validation import RequestError

EXTENSION = "specdraft"

# What loading a draft model a request named may raise when the name is bad: an unknown name or
# path, a missing hub id, a registry model that is not installed, a tokenizer unlike the target's.
_DRAFT_MODEL_ERRORS = (ValueError, OSError, ModelNotInstalledError, ChecksumMismatchError)


class ServiceState:
    """The config, the pool, and the target model, loaded on first use, once (thread-safe)."""

    def __init__(self, config: ServiceConfig, pool: ModelPool) -> None:
        self.config = config
        self.pool = pool
        self.started = int(time.time())  # Unix time the app was created (OpenAI's model "created")
        self._target: TransformersModel | None = None
        self._prepared: set[DrafterSpec] = set()  # drafters whose models are loaded and checked
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the target model has been loaded (requests load it; health checks do not)."""
        return self._target is not None

    def target(self) -> TransformersModel:
        """The served model, loading it on the first call; later calls return the same instance."""
        if self._target is None:
            with self._lock:
                if self._target is None:
                    self._target = self.pool.get(self.config.model)
        return self._target

    def drafter(self, spec: DrafterSpec, sampling: SamplingParams, seed: int | None) -> Drafter | None:
        """A fresh drafter for one request (None: plain decoding).

        The first request that names a draft model loads it and checks that it shares the target's
        tokenizer; raises ``RequestError`` (param "drafter") when that fails.
        """
        target = self.target()
        if spec.kind == "model" and not self.config.allows_draft_model(spec.model):
            allowed = ", ".join(f"model:{name}" for name in self.config.draft_models) or "none configured"
            raise RequestError(f"draft model {spec.model!r} is not served here (allowed: {allowed})", "drafter")
        if spec not in self._prepared:
            try:
                spec.prepare(self.pool, target)
            except _DRAFT_MODEL_ERRORS as error:
                raise RequestError(f"cannot use drafter {str(spec)!r}: {error}", "drafter") from None
            with self._lock:
                self._prepared.add(spec)
        return spec.build(self.pool, target, sampling, seed)


def current_state() -> ServiceState:
    """The state of the app handling the current request."""
    return current_app.extensions[EXTENSION]
