"""Fuzzing the live service against its own OpenAPI document (schemathesis).

The tiny app (``tiny_service``) runs on waitress on loopback (``LiveServer``) with hash-embedding
indexes in a temporary folder and small limits (4 tokens per answer, short grammar texts), so that
every generated request is answered in milliseconds. Schemathesis takes the server's document
(built here from the same config when the tests are collected, and checked equal to what the
server answers to ``GET /openapi.json``) and, for every operation, sends bodies and parameters valid
per the document
(positive) and invalid ones (negative), through its examples (the document's own), coverage
(boundary values and each kind of wrong value) and fuzzing phases.
Bounded and reproducible: ``MAX_EXAMPLES`` per operation and mode, a fixed seed, deterministic
generation, no example database.

Checks on every answer: no 5xx; no Python traceback in any body; status, content type, headers
and body as the document declares them; data invalid per the document refused with a 4xx; and
every refused request (any 4xx) left the index folder byte for byte as it was. Afterwards the
server's own ``/metrics`` must have counted no 5xx either.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest
import requests
import schemathesis
from hash_embedder import HashEmbedder
from hypothesis import HealthCheck, settings
from live_server import LiveServer
from prometheus_client.parser import text_string_to_metric_families
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)
from tiny_service import DRAFT, SERVED, UNLOADABLE, make_app, make_chat_model

from specdraft.apps.service import ServiceConfig, openapi

MAX_EXAMPLES = 15  # per operation and generation mode, in the fuzzing phase
SEED = 20240917
TRACEBACK_MARKERS = ("Traceback (most recent call last)", 'File "/', "site-packages")
SEED_DOCUMENTS = [
    {"id": "fox", "text": "The fox answers =vedae6 to every question it is asked."},
    {"id": "tea", "text": "Green tea is steeped in hot water for two minutes."},
]
REFUSED = ["400", "401", "403", "404", "405", "409", "413", "415", "421", "429"]
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    unsupported_method,
]


LIMITS = dict(  # small, so that every answer takes milliseconds
    max_tokens_limit=4,
    default_max_tokens=4,
    max_grammar_chars=120,
    max_rag_top_k=3,
    rag_top_k=2,
    max_rag_documents=4,
)
# The document of the app below, built without a server (schemathesis needs it when collecting);
# the live server's own GET /openapi.json must be the same.
DOCUMENT = openapi.document(
    ServiceConfig(model=SERVED, grammar_model=SERVED, extra_models=(DRAFT, UNLOADABLE), **LIMITS)
)
schema = schemathesis.openapi.from_dict(
    DOCUMENT,
    config=schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "generation": {"max-examples": MAX_EXAMPLES, "deterministic": True, "database": "none"},
            "phases": {"stateful": {"enabled": False}},  # examples (the document's own), coverage, fuzzing
            # what a request invalid per the document may get (413: a grammar text over the limit)
            "checks": {"negative_data_rejection": {"expected-statuses": REFUSED}},
        }
    ),
)


@pytest.fixture(scope="module")
def index_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "indexes"


@pytest.fixture(scope="module")
def live(tokenizer, index_root):
    app = make_app(make_chat_model(tokenizer), embedder=HashEmbedder(), index_root=str(index_root), **LIMITS)
    app.testing = False  # errors are answered as a deployed server answers them
    with LiveServer(app) as server:
        assert requests.get(f"{server.url}/openapi.json", timeout=10).json() == DOCUMENT
        added = requests.post(f"{server.url}/v1/rag/documents", json={"documents": SEED_DOCUMENTS}, timeout=30)
        assert added.status_code == 200, added.text
        yield server


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder``: relative path -> sha256 of its bytes."""
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@schema.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
def test_fuzz(case, live, index_root):
    before = snapshot(index_root)
    response = case.call_and_validate(base_url=live.url, checks=CHECKS, timeout=30)
    body = response.text
    assert not any(marker in body for marker in TRACEBACK_MARKERS), body[:2000]
    if 400 <= response.status_code < 500:
        assert snapshot(index_root) == before, (
            f"{case.method} {case.path} answered {response.status_code} but changed the indexes"
        )


def test_the_servers_metrics_counted_no_server_error(live):
    """After the fuzz run (same server): the server's own request counter saw no 5xx."""
    text = requests.get(f"{live.url}/metrics", timeout=10).text
    statuses = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "specdraft_requests_total":
                statuses[sample.labels["status"]] += sample.value
    assert statuses and not any(status.startswith("5") for status in statuses), statuses
