"""Load limits (``specdraft.apps.service.limits``): the generation gate and its 429s, the time limit,
and stopping generations whose clients have gone (over real HTTP, on waitress)."""

import json
import socket
import threading
import time

import pytest
from live_server import LiveServer
from tiny_service import make_app, make_chat_model

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.apps.service.limits import GenerationGate, LimitConfig, Overloaded

LONG = 400  # tokens: the tiny model's context is 512 (after "hello world" it does not stop earlier)


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


def gate_of(app) -> GenerationGate:
    return app.extensions["specdraft.gate"]


# --- the gate -------------------------------------------------------------------------------------
def test_the_gate_admits_max_concurrent_queues_max_queue_and_refuses_the_rest():
    gate = GenerationGate(LimitConfig(max_concurrent=1, max_queue=1, queue_timeout_s=30))
    first = gate.enter()
    admitted = threading.Event()
    waiter = threading.Thread(target=lambda: (gate.enter(), admitted.set()))
    waiter.start()
    deadline = time.monotonic() + 5
    while gate.waiting == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gate.waiting == 1 and not admitted.is_set()
    with pytest.raises(Overloaded) as refused:
        gate.enter()
    assert refused.value.retry_after_s >= 1 and gate.rejected == 1
    gate.leave(first)
    waiter.join(5)
    assert admitted.is_set() and gate.running == 1 and gate.waiting == 0


def test_a_queued_request_is_refused_after_the_queue_timeout():
    gate = GenerationGate(LimitConfig(max_concurrent=1, max_queue=4, queue_timeout_s=0.2))
    gate.enter()
    start = time.monotonic()
    with pytest.raises(Overloaded, match="within 0.2 s"):
        gate.enter()
    assert 0.15 < time.monotonic() - start < 5 and gate.waiting == 0


@pytest.mark.parametrize(
    "field, value",
    [("max_concurrent", 0), ("max_queue", -1), ("queue_timeout_s", 0), ("request_timeout_s", float("nan"))],
)
def test_bad_limits_are_refused(field, value):
    with pytest.raises(ValueError, match=field):
        LimitConfig(**{field: value})


# --- 429 ---------------------------------------------------------------------------------------------
def test_a_full_server_answers_429_with_retry_after_and_recovers(model):
    app = make_app(model, limits=LimitConfig(max_concurrent=1, max_queue=0))
    client = app.test_client()
    held = client.post("/v1/completions", json={"prompt": "hi", "max_tokens": 8, "stream": True}, buffered=False)
    assert held.status_code == 200 and gate_of(app).running == 1  # a stream holds its place while it streams
    for path, body in [
        ("/v1/completions", {"prompt": "hi", "max_tokens": 2}),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}),
    ]:
        busy = client.post(path, json=body)
        assert busy.status_code == 429
        assert int(busy.headers["Retry-After"]) >= 1
        assert busy.get_json()["error"]["code"] == "server_busy"
    assert client.get("/healthz").status_code == 200  # what does not generate is still answered
    held.get_data()  # the stream runs to its end ...
    held.close()
    assert gate_of(app).running == 0  # ... and gives its place back
    assert client.post("/v1/completions", json={"prompt": "hi", "max_tokens": 2}).status_code == 200


def test_a_request_rejected_by_validation_gives_its_place_back(model):
    app = make_app(model, limits=LimitConfig(max_concurrent=1, max_queue=0))
    client = app.test_client()
    for _ in range(3):
        assert client.post("/v1/completions", json={"prompt": "hi", "max_tokens": -1}).status_code == 400
    assert gate_of(app).running == 0


# --- the time limit -----------------------------------------------------------------------------------
def test_the_time_limit_ends_a_generation_with_a_prefix_of_the_targets_own_text(model):
    prompt = "hello world"  # the tiny model does not stop on its own within LONG tokens after it
    full = SpeculativeGenerator(model).generate(model.encode(prompt), None, GenerationConfig(max_new_tokens=LONG))
    assert len(full.token_ids) == LONG
    app = make_app(model, limits=LimitConfig(request_timeout_s=0.05))
    client = app.test_client()
    request = {"prompt": prompt, "max_tokens": LONG, "drafter": "none"}  # one pass per token: far longer than 0.05 s
    body = client.post("/v1/completions", json=request).get_json()
    assert body["speculation"]["time_limit_reached"] is True
    assert body["choices"][0]["finish_reason"] == "length"
    assert 0 < body["usage"]["completion_tokens"] < LONG
    assert full.text.startswith(body["choices"][0]["text"])
    stream = client.post("/v1/completions", json={**request, "stream": True}).get_data(as_text=True)
    events = [e[len("data: ") :] for e in stream.split("\n\n") if e]
    assert events[-1] == "[DONE]"
    last = json.loads(events[-2])
    assert last["speculation"]["time_limit_reached"] is True and last["choices"][0]["finish_reason"] == "length"
    text = "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1])
    assert full.text.startswith(text) and len(text) < len(full.text)
    assert gate_of(app).running == 0


# --- clients that go away -----------------------------------------------------------------------------
def _post_then_hang_up(url: str, body: dict, after_s: float, read_first: bool = False) -> None:
    host, port = url.removeprefix("http://").split(":")
    payload = json.dumps(body).encode()
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            f"POST /v1/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        if read_first:
            sock.recv(256)  # the stream has begun
        time.sleep(after_s)


def _seconds_until_idle(app, limit_s: float = 60) -> float:
    start = time.monotonic()
    while gate_of(app).running and time.monotonic() - start < limit_s:
        time.sleep(0.02)
    return time.monotonic() - start


class CountingModel:
    """The real model, counting the target passes of every request made on it."""

    def __init__(self, model) -> None:
        self._model = model
        self.passes = 0

    def __getattr__(self, name):
        return getattr(self._model, name)

    def new_target(self, chooser):
        target = self._model.new_target(chooser)
        verify = target.verify

        def counted(draft):
            self.passes += 1
            return verify(draft)

        target.verify = counted
        return target


@pytest.mark.parametrize("stream", [False, True])
def test_a_generation_stops_when_its_client_goes_away(model, stream):
    counting = CountingModel(model)
    app = make_app(counting)
    body = {"prompt": "hello world", "max_tokens": LONG, "stream": stream, "drafter": "none"}  # one pass per token
    with LiveServer(app) as server:
        _post_then_hang_up(server.url, body, after_s=0.05, read_first=stream)
        _seconds_until_idle(app)
    assert gate_of(app).running == 0
    assert counting.passes < LONG / 2, counting.passes  # a whole answer would take LONG passes
