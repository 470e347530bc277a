"""Edge sessions prefill from the model's prefix cache: a session opened on a prompt that an earlier
session held (a chat's next turn) reuses its KV cache, and verifies exactly as a cold one does."""

from __future__ import annotations

import pytest
from tiny_service import make_app, make_chat_model

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.apps.service.edge_sessions import EdgeConfig
from specdraft.prefix_cache import prefix_cache_for

KEY = "edge-key-0123456789abcdef"
HEADERS = {"Authorization": f"Bearer {KEY}"}
PROMPT = "The quick brown fox jumps over the lazy dog while the cat watches from the warm windowsill"


@pytest.fixture()
def model(tokenizer):
    return make_chat_model(tokenizer)  # its own prefix cache, fresh for each test


@pytest.fixture()
def client(model, tmp_path):
    keys = tmp_path / "keys"
    keys.write_text(KEY + "\n")
    return make_app(
        model, api_key_file=str(keys), edge=True, edge_config=EdgeConfig(max_sessions_per_key=3)
    ).test_client()


def run_session(client, model, prompt: list[int], n: int) -> list[int]:
    """Open a session on ``prompt``, take ``n`` tokens with empty drafts (the target's own choices), close it."""
    opened = client.post(
        "/v1/edge/sessions", json={"prompt": prompt, "tokenizer": model.tokenizer.fingerprint()}, headers=HEADERS
    )
    assert opened.status_code == 201, opened.get_json()
    session = opened.get_json()["id"]
    tokens: list[int] = []
    while len(tokens) < n:
        answer = client.post(f"/v1/edge/sessions/{session}/verify", json={"tokens": [], "parents": []}, headers=HEADERS)
        assert answer.status_code == 200, answer.get_json()
        tokens.append(answer.get_json()["next_token"])
    assert client.delete(f"/v1/edge/sessions/{session}", json={}, headers=HEADERS).status_code == 200
    return tokens


def test_a_next_turn_session_reuses_the_cache_and_verifies_the_same(client, model) -> None:
    prompt = model.encode(PROMPT)
    assert len(prompt) >= 16  # long enough to be worth caching
    first = run_session(client, model, prompt, 6)
    cache = prefix_cache_for(model)
    assert cache is not None and cache.hits == 0
    follow_up = prompt + first
    second = run_session(client, model, follow_up, 6)
    assert cache.hits >= 1 and cache.reused_tokens >= len(follow_up) - 1
    expected = (
        SpeculativeGenerator(model, prefix_cache=False)
        .generate(follow_up, None, GenerationConfig(max_new_tokens=6, ignore_eos=True))
        .token_ids
    )
    assert second == expected
