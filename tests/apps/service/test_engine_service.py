"""The service in front of an engine-backed target (``serve --backend engine``): greedy answers equal
the served model's own, sampling is a 400 naming temperature, an engine that stops answering is a 502,
and JSON mode, JSON schemas and tool calls (the grammar here, the engine's ranked rows and its choice
among the allowed tokens there) give the same answers as the local model's own constrained decoding.

The engine is the loopback server speaking vLLM's dialect on the tiny model
(``tests/core/backends/engine/vllm_dialect.py``); the real-engine tests are in ``tests/core/backends/engine``.
"""

from __future__ import annotations

import json

import pytest
from live_server import LiveServer
from tiny_service import SERVED, make_app, make_chat_model
from vllm_dialect import make_vllm_dialect_app

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.backends.engine import EngineConfig, EngineModel

PROMPT = "the cat sat on the mat and the cat sat"


@pytest.fixture()
def engine(tokenizer):
    model = make_chat_model(tokenizer)  # the tiny model (seed 0) with a chat template
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


SCHEMA = {
    "type": "object",
    "properties": {"city": {"enum": ["Paris", "Rome"]}, "n": {"type": "integer"}},
    "required": ["city", "n"],
    "additionalProperties": False,
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"enum": ["Paris", "Rome"]}}, "required": ["city"]},
    },
}


def both(engine, path: str, body: dict) -> tuple[dict, dict]:
    """The same request answered through the engine and by the local model itself (with its logits)."""
    local, _, remote = engine
    answers = [make_app(model).test_client().post(path, json={"model": SERVED, **body}) for model in (remote, local)]
    for answer in answers:
        assert answer.status_code == 200, answer.get_json()
    return answers[0].get_json(), answers[1].get_json()


@pytest.mark.parametrize(
    "response_format",
    [{"type": "json_object"}, {"type": "json_schema", "json_schema": {"name": "w", "schema": SCHEMA}}],
    ids=["json_object", "json_schema"],
)
def test_json_through_the_engine_equals_local_constrained_decoding(engine, response_format) -> None:
    body = {"prompt": PROMPT, "max_tokens": 60, "temperature": 0, "response_format": response_format}
    remote, local = both(engine, "/v1/completions", body)
    assert remote["choices"][0]["text"] == local["choices"][0]["text"]
    assert remote["speculation"]["exact"] is True  # the test engine is configured exact
    if remote["choices"][0]["finish_reason"] == "stop" and response_format["type"] == "json_schema":
        assert json.loads(remote["choices"][0]["text"])["city"] in ("Paris", "Rome")


def test_a_tool_call_through_the_engine_equals_local_constrained_decoding(engine) -> None:
    body = {
        "messages": [{"role": "user", "content": "weather in Rome?"}],
        "tools": [WEATHER],
        "tool_choice": "required",
        "max_tokens": 60,
        "temperature": 0,
    }
    remote, local = both(engine, "/v1/chat/completions", body)
    calls = [c["function"] for c in remote["choices"][0]["message"]["tool_calls"]]
    assert calls == [c["function"] for c in local["choices"][0]["message"]["tool_calls"]]
    assert calls and calls[0]["name"] == "get_weather"
    assert remote["choices"][0]["finish_reason"] == local["choices"][0]["finish_reason"]


def test_a_constraint_asked_of_the_engine_with_sampling_is_a_400(engine) -> None:
    """Ranked rows verify greedy decoding only: sampling under a constraint is refused as any sampling."""
    _, _, remote = engine
    answer = (
        make_app(remote)
        .test_client()
        .post(
            "/v1/completions",
            json={
                "model": SERVED,
                "prompt": PROMPT,
                "max_tokens": 4,
                "temperature": 0.7,
                "response_format": {"type": "json_object"},
            },
        )
    )
    assert answer.status_code == 400
    assert answer.get_json()["error"]["param"] == "temperature"


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
