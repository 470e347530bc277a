"""The prefix cache through the HTTP service: ``usage.prompt_tokens_details.cached_tokens`` as OpenAI
reports it (streamed or not), the same text as without the cache, and the cache's size in /metrics."""

from __future__ import annotations

import json

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tiny_service import make_app, make_chat_model

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.prefix_cache import prefix_cache_for

SYSTEM = "Speculative decoding drafts tokens and the target verifies them in one pass. " * 3
MAX_TOKENS = 8


def chat(question: str, *earlier: dict) -> list[dict]:
    return [{"role": "system", "content": SYSTEM}, *earlier, {"role": "user", "content": question}]


@pytest.fixture(scope="module")
def model(tokenizer):
    """A served model of this module's own (its prefix cache starts empty)."""
    return make_chat_model(tokenizer)


@pytest.fixture(scope="module")
def client(model):
    return make_app(model).test_client()


def uncached_text(model, messages) -> str:
    config = GenerationConfig(max_new_tokens=MAX_TOKENS)
    return SpeculativeGenerator(model, prefix_cache=False).generate(model.encode_chat(messages), None, config).text


def post_chat(client, messages, **extra) -> dict:
    response = client.post("/v1/chat/completions", json={"messages": messages, "max_tokens": MAX_TOKENS, **extra})
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def test_usage_reports_cached_prompt_tokens_and_the_text_is_unchanged(client, model):
    system_tokens = len(model.tokenizer.encode(SYSTEM))
    first = post_chat(client, chat("What does the fox do?"))
    assert first["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}
    second = post_chat(client, chat("And the dog?"))
    cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert system_tokens <= cached < second["usage"]["prompt_tokens"]
    assert second["speculation"]["cached_prompt_tokens"] == cached
    assert second["choices"][0]["message"]["content"] == uncached_text(model, chat("And the dog?"))
    # the next turn of the first conversation reuses its prompt and answer
    answer = first["choices"][0]["message"]["content"]
    turn2 = chat("Why?", {"role": "user", "content": "What does the fox do?"}, {"role": "assistant", "content": answer})
    body = post_chat(client, turn2)
    assert body["usage"]["prompt_tokens_details"]["cached_tokens"] > cached
    assert body["choices"][0]["message"]["content"] == uncached_text(model, turn2)


def test_streamed_usage_chunk_carries_cached_tokens(client, model):
    post_chat(client, chat("Where is the fox?"))
    response = client.post(
        "/v1/chat/completions",
        json={
            "messages": chat("Where is the dog?"),
            "max_tokens": MAX_TOKENS,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    events = [
        json.loads(e[len("data: ") :])
        for e in response.get_data(as_text=True).split("\n\n")[:-1]
        if e != "data: [DONE]"
    ]
    usage = events[-1]["usage"]
    assert events[-1]["choices"] == [] and usage["prompt_tokens_details"]["cached_tokens"] >= len(
        model.tokenizer.encode(SYSTEM)
    )
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"])
    assert text == uncached_text(model, chat("Where is the dog?"))


def test_metrics_report_the_cache_size_and_cached_tokens(client, model):
    post_chat(client, chat("Who sleeps?"))
    post_chat(client, chat("Who jumps?"))
    samples = {}
    for family in text_string_to_metric_families(client.get("/metrics").get_data(as_text=True)):
        for sample in family.samples:
            samples[sample.name] = samples.get(sample.name, 0.0) + sample.value
    cache = prefix_cache_for(model)
    assert samples["specdraft_prefix_cache_bytes"] == cache.nbytes > 0
    assert samples["specdraft_prefix_cache_entries"] == len(cache) >= 1
    assert samples["specdraft_prefix_cache_tokens"] == cache.tokens
    assert samples["specdraft_prefix_cache_max_bytes"] == cache.config.max_bytes
    assert samples["specdraft_cached_prompt_tokens_total"] >= len(model.tokenizer.encode(SYSTEM))
