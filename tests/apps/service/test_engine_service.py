"""The service in front of an engine-backed target (``serve --backend engine``): greedy answers equal
the served model's own, sampling is a 400 naming temperature, an engine that stops answering is a 502.

The engine is the loopback server speaking vLLM's dialect on the tiny model
(``tests/core/backends/engine/vllm_dialect.py``); the real-engine tests are in ``tests/core/backends/engine``.
"""

from __future__ import annotations

import pytest
from live_server import LiveServer
from tiny_service import SERVED, make_app
from vllm_dialect import make_vllm_dialect_app

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.backends.engine import EngineConfig, EngineModel

PROMPT = "the cat sat on the mat and the cat sat"


@pytest.fixture()
def engine(tokenizer):
    from tiny_models import make_tiny_model

    model = make_tiny_model(tokenizer, seed=0)
    server = LiveServer(make_vllm_dialect_app(model)).__enter__()
    try:
        yield model, server, EngineModel(EngineConfig(server.url, "vllm", exact=True), model)
    finally:
        server.__exit__(None, None, None)


def test_greedy_answer_equals_the_served_model(engine) -> None:
    local, _, remote = engine
    client = make_app(remote).test_client()
    answer = client.post(
        "/v1/completions", json={"model": SERVED, "prompt": PROMPT, "max_tokens": 12, "temperature": 0}
    )
    assert answer.status_code == 200, answer.get_json()
    expected = SpeculativeGenerator(local).generate(local.encode(PROMPT), None, GenerationConfig(max_new_tokens=12))
    assert answer.get_json()["choices"][0]["text"] == local.decode(expected.token_ids)


def test_sampling_is_a_400_naming_temperature(engine) -> None:
    _, _, remote = engine
    client = make_app(remote).test_client()
    answer = client.post(
        "/v1/completions", json={"model": SERVED, "prompt": PROMPT, "max_tokens": 4, "temperature": 0.8}
    )
    assert answer.status_code == 400
    error = answer.get_json()["error"]
    assert error["param"] == "temperature" and "greedy" in error["message"]


def test_an_engine_that_stops_answering_is_a_502(engine) -> None:
    _, server, remote = engine
    client = make_app(remote).test_client()
    server.__exit__(None, None, None)
    answer = client.post("/v1/completions", json={"model": SERVED, "prompt": PROMPT, "max_tokens": 4, "temperature": 0})
    assert answer.status_code == 502
    assert "serving engine" in answer.get_json()["error"]["message"]


def test_a_constraint_is_a_400_naming_response_format(engine) -> None:
    """An engine returns no logits to mask: JSON mode is refused before anything is generated."""
    _, _, remote = engine
    client = make_app(remote).test_client()
    answer = client.post(
        "/v1/completions",
        json={"model": SERVED, "prompt": PROMPT, "max_tokens": 4, "response_format": {"type": "json_object"}},
    )
    assert answer.status_code == 400
    error = answer.get_json()["error"]
    assert error["param"] == "response_format" and "logits" in error["message"], error


def test_create_app_serves_the_engine_backend_from_the_config_alone(tiny_checkpoint, tmp_path) -> None:
    """``create_app(ServiceConfig(model=ModelConfig(..., backend="engine", engine=...)))`` with no pool:
    the app's own pool loads the engine's model, the checkpoint loaded here for its tokenizer, and
    greedy answers equal the served model's own."""
    from specdraft import ModelConfig
    from specdraft.apps.service import ServiceConfig, create_app

    path, model = tiny_checkpoint
    with LiveServer(make_vllm_dialect_app(model)) as server:
        engine = EngineConfig(server.url, "vllm", exact=True)
        config = ServiceConfig(
            model=ModelConfig(str(path), device="cpu", backend="engine", engine=engine), index_root=str(tmp_path)
        )
        app = create_app(config)
        answer = app.test_client().post(
            "/v1/completions", json={"model": str(path), "prompt": PROMPT, "max_tokens": 12, "temperature": 0}
        )
        assert answer.status_code == 200, answer.get_json()
        assert isinstance(app.extensions["specdraft"].target(), EngineModel)
    expected = SpeculativeGenerator(model).generate(model.encode(PROMPT), None, GenerationConfig(max_new_tokens=12))
    assert answer.get_json()["choices"][0]["text"] == model.decode(expected.token_ids)
