"""``GET /metrics``: Prometheus text, per-app registries, requests by URL rule, and generation
counters that equal the ``Stats`` each response reports."""

from __future__ import annotations

import json

import pytest
from hash_embedder import HashEmbedder
from prometheus_client.parser import text_string_to_metric_families
from tiny_service import GRAMMAR_TEXT, make_app, make_chat_model

from specdraft.apps.service import metrics
from specdraft.apps.service.limits import LimitConfig

MAX_TOKENS = 6
DOCS = [{"id": "fox", "text": "The fox answers =vedae6 to every question it is asked."}]


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


@pytest.fixture
def app(model, tmp_path):
    return make_app(model, embedder=HashEmbedder(), index_root=str(tmp_path / "indexes"))


@pytest.fixture
def client(app):
    return app.test_client()


def scrape(client) -> dict[tuple[str, tuple], float]:
    """Every sample of ``GET /metrics``: (name, sorted labels) -> value."""
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.content_type == "text/plain; version=0.0.4; charset=utf-8"
    samples = {}
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def generation_counts(samples, route: str, drafter: str) -> dict[str, float]:
    return {
        name: value(samples, f"specdraft_{name}_total", route=route, drafter=drafter) for name in metrics.STATS_COUNTERS
    }


def expected_counts(stats: dict) -> dict[str, float]:
    return {name: float(stats[name]) for name in metrics.STATS_COUNTERS}


def sse_payloads(response) -> list[dict]:
    events = response.get_data(as_text=True).split("\n\n")[:-1]
    assert events[-1] == "data: [DONE]"
    return [json.loads(e[len("data: ") :]) for e in events[:-1]]


def test_metrics_are_prometheus_text_with_every_family_declared(client):
    samples = scrape(client)
    names = {name for name, _ in samples}
    for gauge in ("specdraft_queued_requests", "specdraft_generations_in_flight"):
        assert gauge in names and value(samples, gauge) == 0.0
    text = client.get("/metrics").get_data(as_text=True)
    for histogram in ("specdraft_request_duration_seconds", "specdraft_time_to_first_token_seconds"):
        assert f"# TYPE {histogram} histogram\n" in text
    counters = ["requests", "generations", "rejected_requests", *metrics.STATS_COUNTERS]
    for counter in counters:
        assert f"# TYPE specdraft_{counter}_total counter\n" in text


def test_requests_are_counted_by_url_rule_and_status_never_by_raw_path(client):
    client.get("/v1/models", buffered=True)  # buffered: the test client closes the response (latency is observed then)
    client.get("/v1/models", buffered=True)
    client.post("/v1/completions", json={"prompt": "hi", "max_tokens": 0})
    client.get("/no/such/path/12345")
    client.get("/v1/completions")  # 405: no rule matched this method
    samples = scrape(client)
    assert value(samples, "specdraft_requests_total", route="/v1/models", method="GET", status="200") == 2
    assert value(samples, "specdraft_requests_total", route="/v1/completions", method="POST", status="400") == 1
    assert value(samples, "specdraft_requests_total", route=metrics.UNMATCHED, method="GET", status="404") == 1
    assert value(samples, "specdraft_requests_total", route=metrics.UNMATCHED, method="GET", status="405") == 1
    assert not any("12345" in str(labels) for _, labels in samples)
    assert value(samples, "specdraft_request_duration_seconds_count", route="/v1/models") == 2


def test_each_app_has_its_own_registry(model, tmp_path):
    first, second = make_app(model, index_root=str(tmp_path / "a")), make_app(model, index_root=str(tmp_path / "b"))
    first.test_client().get("/healthz")
    assert (
        value(scrape(first.test_client()), "specdraft_requests_total", route="/healthz", method="GET", status="200")
        == 1
    )
    assert (
        value(scrape(second.test_client()), "specdraft_requests_total", route="/healthz", method="GET", status="200")
        == 0
    )


def test_completion_counters_equal_the_stats_in_the_response(client):
    body = client.post(
        "/v1/completions", json={"prompt": "Grammar correction returns", "max_tokens": MAX_TOKENS}
    ).get_json()
    stats = body["speculation"]
    samples = scrape(client)
    assert generation_counts(samples, "/v1/completions", "prompt-lookup") == expected_counts(stats)
    assert stats["generated_tokens"] == body["usage"]["completion_tokens"] > 0
    assert value(samples, "specdraft_generations_total", route="/v1/completions", drafter="prompt-lookup") == 1
    assert value(samples, "specdraft_time_to_first_token_seconds_count", route="/v1/completions") == 1


def test_several_choices_count_as_generations_with_one_time_to_first_token(client):
    body = client.post(
        "/v1/completions", json={"prompt": ["Grammar correction", "The fox"], "n": 2, "max_tokens": MAX_TOKENS}
    ).get_json()
    assert len(body["choices"]) == 4
    samples = scrape(client)
    assert value(samples, "specdraft_generations_total", route="/v1/completions", drafter="prompt-lookup") == 4
    assert (
        value(samples, "specdraft_generated_tokens_total", route="/v1/completions", drafter="prompt-lookup")
        == body["usage"]["completion_tokens"]
    )
    assert value(samples, "specdraft_time_to_first_token_seconds_count", route="/v1/completions") == 1


def test_streamed_chat_is_counted_when_the_stream_ends(client):
    messages = [{"role": "user", "content": "What does the fox do?"}]
    response = client.post(
        "/v1/chat/completions",
        json={"messages": messages, "max_tokens": MAX_TOKENS, "stream": True, "drafter": "none"},
        buffered=True,
    )
    stats = sse_payloads(response)[-1]["speculation"]
    samples = scrape(client)
    assert generation_counts(samples, "/v1/chat/completions", "none") == expected_counts(stats)
    assert value(samples, "specdraft_time_to_first_token_seconds_count", route="/v1/chat/completions") == 1
    ttft = value(samples, "specdraft_time_to_first_token_seconds_sum", route="/v1/chat/completions")
    assert 0 < ttft <= value(samples, "specdraft_request_duration_seconds_sum", route="/v1/chat/completions")


@pytest.mark.parametrize("stream", [False, True])
def test_rag_answers_are_counted_by_their_drafter(client, stream):
    assert client.post("/v1/rag/documents", json={"documents": DOCS}).status_code == 200
    response = client.post(
        "/v1/rag/query", json={"question": "What does the fox answer?", "max_tokens": MAX_TOKENS, "stream": stream}
    )
    stats = sse_payloads(response)[-1]["answer"]["stats"] if stream else response.get_json()["stats"]
    samples = scrape(client)
    assert generation_counts(samples, "/v1/rag/query", "reference") == expected_counts(stats)
    assert value(samples, "specdraft_time_to_first_token_seconds_count", route="/v1/rag/query") == 1
    assert value(samples, "specdraft_generations_total", route="/v1/rag/documents", drafter="reference") == 0


def test_grammar_corrections_count_both_ways_when_compared(client):
    body = client.post("/v1/grammar/correct", json={"text": GRAMMAR_TEXT, "compare": True}).get_json()
    samples = scrape(client)
    copy = generation_counts(samples, "/v1/grammar/correct", "copy")
    plain = generation_counts(samples, "/v1/grammar/correct", "none")
    assert copy == expected_counts(body["stats"])
    assert plain["generated_tokens"] == copy["generated_tokens"] and plain["drafted_tokens"] == 0
    assert plain["target_forward_passes"] == body["comparison"]["plain_forward_passes"]


def test_load_gauges_read_the_callables_plugged_in(app, client):
    app.extensions[metrics.EXTENSION].set_load_readers(queued=lambda: 3, in_flight=lambda: 2)
    samples = scrape(client)
    assert value(samples, "specdraft_queued_requests") == 3 and value(samples, "specdraft_generations_in_flight") == 2


def test_requests_refused_for_overload_are_counted(model, tmp_path):
    app = make_app(model, index_root=str(tmp_path), limits=LimitConfig(max_concurrent=1, max_queue=0))
    gate = app.extensions["specdraft.gate"]
    client = app.test_client()
    entered = gate.enter()  # the only place taken: the next generating request is refused
    try:
        assert value(scrape(client), "specdraft_generations_in_flight") == 1
        response = client.post("/v1/completions", json={"prompt": "hi", "max_tokens": 1})
    finally:
        gate.leave(entered)
    assert response.status_code == 429
    samples = scrape(client)
    assert value(samples, "specdraft_rejected_requests_total", route="/v1/completions", reason="overload") == 1
    assert value(samples, "specdraft_requests_total", route="/v1/completions", method="POST", status="429") == 1
