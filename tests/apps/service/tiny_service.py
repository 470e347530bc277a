"""Building the service on tiny random-initialised models, for the service's tests.

The served model is named ``SERVED`` and has a chat template; ``DRAFT`` is a second, smaller model
requests may name; "no-such-model" is allowed by the config but cannot be loaded.
"""

from __future__ import annotations

import copy

from chat_checkpoint import CHAT_TEMPLATE  # noqa: F401 (re-exported for the service tests)
from tiny_models import make_tiny_model

from specdraft import SpeculationConfig, TransformersModel
from specdraft.apps.model_pool import ModelPool
from specdraft.apps.service import ServiceConfig, create_app

SERVED = "tiny"
DRAFT = "tiny-draft"
UNLOADABLE = "no-such-model"
# The served model's answers to a grammar correction begin with "=veda..." whatever the text; a
# text that begins the same way has tokens the model accepts from the copy of the input (drafted
# spans), and the rest of it gets edited.
GRAMMAR_TEXT = "=vedae6 the dog sleep. the quick brown fox jump over the lazy dog."


def make_chat_model(tokenizer) -> TransformersModel:
    """The served model: the shared tiny architecture (seed 0) with a chat template on its tokenizer."""
    chat_tokenizer = copy.deepcopy(tokenizer)
    chat_tokenizer.chat_template = CHAT_TEMPLATE
    return make_tiny_model(chat_tokenizer, seed=0)


def make_app(model: TransformersModel, draft_model: TransformersModel | None = None, embedder=None, **config):
    """The app serving ``model`` as ``SERVED`` (and ``draft_model`` as ``DRAFT``); ``config``
    overrides ``ServiceConfig`` fields; ``embedder`` embeds RAG documents (default: the config's)."""
    pool = ModelPool()
    pool.add(SERVED, model)
    if draft_model is not None:
        pool.add(DRAFT, draft_model)
    # fixed draft lengths, so that the drafts the tests rely on do not depend on timing
    config.setdefault("speculation", SpeculationConfig(initial_draft_len=4, adaptive=False))
    config.setdefault("grammar_speculation", SpeculationConfig(initial_draft_len=32, max_draft_len=512, adaptive=False))
    config.setdefault("rag_speculation", SpeculationConfig(initial_draft_len=4, adaptive=False))
    config.setdefault("grammar_model", SERVED)  # the tiny model corrects too (the real default loads a 0.5B)
    config.setdefault("extra_models", (DRAFT, UNLOADABLE))
    app = create_app(ServiceConfig(model=SERVED, **config), pool, embedder)
    app.testing = True
    return app
