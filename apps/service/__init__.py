"""The specdraft HTTP service: a Flask app factory with one blueprint per area.

``create_app(config, pool)`` builds the app; the target model is loaded from ``pool`` on the first
request that needs it, once, and shared by every request; KV caches and drafters never are.
Areas: ``health`` (``GET /healthz``, ``GET /v1/models``), ``completions`` (OpenAI-compatible
``POST /v1/completions`` and ``POST /v1/chat/completions``), ``responses_api`` (OpenAI's Responses API,
``POST /v1/responses``), ``grammar`` (``POST
/v1/grammar/correct``), ``rag`` (``POST /v1/rag/documents``, ``POST /v1/rag/query``, ``GET
/v1/rag/indexes``), ``metrics`` (``GET /metrics``, Prometheus), ``openapi``
(``GET /openapi.json``, the OpenAPI 3.1 document of every route) and ``demo`` (``GET /demo/grammar`` and ``GET
/demo/rag``, HTML pages over those APIs; ``GET /demo/`` serving an edge model, see ``edge_model``).
Every API error is JSON (see ``errors``).
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
