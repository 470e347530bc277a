"""The specdraft HTTP service: ``create_app(config, pool)``, a Flask app with one blueprint per area
(docs/service.md). The target model is loaded from ``pool`` on the first request that needs it and
shared; KV caches and drafters never are. Every API error is JSON (``errors``).
"""

from __future__ import annotations

from flask import Flask

from specdraft.apps.model_pool import ModelPool
from specdraft.retrieval.embedder import TextEmbedder

from . import completions, demo, grammar, health, metrics, openapi, rag, responses_api
from .access import AccessPolicy, install_access_control
from .api_keys import KeyRing
from .config import ServiceConfig
from .errors import register_error_handlers
from .limits import GenerationGate
from .state import EXTENSION, ServiceState, current_state

__all__ = ["ServiceConfig", "ServiceState", "create_app", "current_state"]


def create_app(
    config: ServiceConfig | None = None, pool: ModelPool | None = None, embedder: TextEmbedder | None = None
) -> Flask:
    """The service for ``config`` (default: ``ServiceConfig()``).

    ``pool`` supplies the models; by default a new ``ModelPool`` over ``config.model`` (its backend,
    device, dtype, context, engine). Tests pass a pool that already holds a model under
    ``config.model_name``.
    ``embedder`` embeds the RAG indexes' documents and questions; by default ``config.embedding_model``.
    Creating the app loads no model; it reads ``config.api_key_file`` (``KeyFileError`` when it is
    unusable). Every request passes ``access``'s checks; generating routes pass ``limits``' gate.
    """
    config = config if config is not None else ServiceConfig()
    pool = pool if pool is not None else ModelPool(config.model)
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = config.max_request_bytes
    app.json.sort_keys = False  # keep OpenAI's field order
    app.extensions[EXTENSION] = ServiceState(config, pool, embedder)
    register_error_handlers(app)
    service_metrics = metrics.init_app(app)  # first, so that its clock starts before any other check
    keys = KeyRing.load(config.api_key_file) if config.api_key_file is not None else None
    install_access_control(app, AccessPolicy(keys, config.allowed_origins, config.allowed_hosts))
    app.extensions["specdraft.gate"] = gate = GenerationGate(config.limits)
    service_metrics.set_load_readers(queued=lambda: gate.waiting, in_flight=lambda: gate.running)
    app.register_blueprint(health.bp)
    app.register_blueprint(completions.bp)
    app.register_blueprint(responses_api.bp)
    app.register_blueprint(grammar.bp)
    app.register_blueprint(rag.bp)
    app.register_blueprint(demo.bp)
    if config.model.edge is not None:  # an edge model served: the laptop's endpoint and its page
        app.register_blueprint(demo.edge_bp)
    app.register_blueprint(metrics.bp)
    app.register_blueprint(openapi.bp)
    if config.edge:  # the edge verify server (sessions holding KV caches), only when asked for
        from . import edge

        edge.install(app, config.edge_config)
    return app
